"""Benchmark-only experiments: what a change to the product would buy, measured without making it.

Chosen with BENCH_EXPERIMENT (comma-separated) in the server's environment; bench/settings.py
and bench/empty_asgi.py apply them. Nothing here is used by relaybay itself.

  hook-lock    one in-process lock around each hook's ingestion, so a process's hook threads
               queue on a Python lock instead of on SQLite's busy handler (which sleeps 1-100 ms
               between retries of BEGIN IMMEDIATE).
  hook-thread  every hook's ingestion runs on one long-lived thread per process: writes queue
               in process, and that thread keeps its database connection open across requests
               (the request's own thread only waits for the result).
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

ACTIVE = {x.strip() for x in os.environ.get("BENCH_EXPERIMENT", "").split(",") if x.strip()}


def apply_settings(settings_globals):
    """Settings-level experiments (none at the moment)."""


def apply_app():
    if "hook-lock" in ACTIVE:
        from sessions_app import api

        original = api.ingest_hook
        lock = threading.Lock()

        def locked_ingest_hook(*args, **kwargs):
            with lock:
                return original(*args, **kwargs)

        api.ingest_hook = locked_ingest_hook
    if "hook-thread" in ACTIVE:
        from asgiref.sync import SyncToAsync

        from sessions_app import api

        original = api.ingest_hook
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hook-writer")

        def on_writer_thread(loop, pid, args, kwargs):
            # on-commit pings call async_to_sync: let them reach the server's event loop.
            SyncToAsync.threadlocal.main_event_loop = loop
            SyncToAsync.threadlocal.main_event_loop_pid = pid
            return original(*args, **kwargs)

        def queued_ingest_hook(*args, **kwargs):
            loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
            pid = getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None)
            return writer.submit(on_writer_thread, loop, pid, args, kwargs).result()

        api.ingest_hook = queued_ingest_hook
