"""What one hook costs inside Django, query by query (no HTTP): where the hook's extra time goes.

    .venv/bin/python bench/hook_queries.py [--backend sqlite|pg] [--runs 300] [--json FILE]

Sets Django up on a throwaway data folder (or PostgreSQL database), migrates, starts a session
with an exact link, then calls sessions_app.hooks.ingest.ingest_hook directly, as the view does,
timing every SQL statement through connection.execute_wrapper. Also times, separately:
opening a database connection (what a request pays when it runs on a fresh thread, as Django's
ASGI handler gives every sync view), and inserting one hook Event with and without the
full-text trigger (dropped on this throwaway database only, to size it). Prints medians;
asserts nothing.
"""

import argparse
import importlib
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import django_in_process, hook_payload, throwaway_dir, write_json  # noqa: E402


def shape(sql):
    sql = re.sub(r"\s+", " ", sql)
    sql = re.sub(r"\(\s*%s(, %s)*\s*\)|\(\s*\?(, \?)*\s*\)", "(…)", sql)
    return sql[:110] + ("…" if len(sql) > 110 else "")


def med(values):
    return statistics.median(values) if values else float("nan")


def run(backend_kind, runs, data_dir):
    backend = django_in_process(backend_kind, data_dir, "relaybay_bench_queries")
    from django.db import connection

    from core import capabilities

    from sessions_app.hooks.ingest import ingest_hook
    from django.utils.timezone import now as timezone_now

    from sessions_app.models import Event

    hook = "bench-queries-0001"
    ingest_hook(hook_payload("SessionStart", hook, source="startup", relaybay_session="quiet"))
    ingest_hook(hook_payload("UserPromptSubmit", hook))
    pre, post = hook_payload("PreToolUse", hook), hook_payload("PostToolUse", hook)

    per_statement = defaultdict(list)
    totals, counts = [], []
    current = []

    def wrapper(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            current.append((shape(sql), (time.perf_counter() - started) * 1000))

    for i in range(runs + 20):
        current.clear()
        with connection.execute_wrapper(wrapper):
            started = time.perf_counter()
            ingest_hook(pre if i % 2 else post)
            total = (time.perf_counter() - started) * 1000
        if i >= 20:
            totals.append(total)
            counts.append(len(current))
            seen = defaultdict(float)
            for sql, ms in current:
                seen[sql] += ms
            for sql, ms in seen.items():
                per_statement[sql].append(ms)

    # messages_list for the same session, by itself (its hook id), in process through Django's test
    # client (WSGI handler, middleware, ninja): 40 messages in its inbox, a page of 20.
    from django.test import Client

    from messaging.models import SessionMessage
    from sessions_app.models import Session

    row = Session.objects.get(title="quiet")
    other = Session.objects.create(kind="hook", title="writer")
    SessionMessage.objects.bulk_create(
        SessionMessage(sender=other, sender_name="writer", sender_verified=True, recipient=row, recipient_name="quiet",
                       body=f"message {i}: the tests pass", delivered_at=timezone_now(), delivered_by="bench")
        for i in range(40)
    )
    # Addressed as loopback, one of the hosts relaybay answers to (Django's test client says
    # "testserver" otherwise, which relaybay refuses outside the test runner).
    client = Client(headers={"Authorization": "Bearer bench"}, HTTP_HOST="127.0.0.1")
    list_totals, list_counts = [], []
    list_statements = defaultdict(list)
    for i in range(runs // 2 + 10):
        current.clear()
        with connection.execute_wrapper(wrapper):
            started = time.perf_counter()
            response = client.get(f"/api/messages_list?session=S-{row.pk}&hook_session={hook}")
            total = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content
        if i >= 10:
            list_totals.append(total)
            list_counts.append(len(current))
            seen = defaultdict(float)
            for sql, ms in current:
                seen[sql] += ms
            for sql, ms in seen.items():
                list_statements[sql].append(ms)
    connects = []
    for _ in range(50):
        connection.close()
        started = time.perf_counter()
        connection.ensure_connection()
        connects.append((time.perf_counter() - started) * 1000)

    def insert_events(n):
        samples = []
        for _ in range(n):
            started = time.perf_counter()
            Event.objects.create(name="hook.PostToolUse", hook_session=hook, data=post)
            samples.append((time.perf_counter() - started) * 1000)
        return med(samples)

    if capabilities.of(connection).feed_indexed_in_batches:
        # As shipped, SQLite indexes feed rows in batches (sessions_app/search_index.py): the
        # trigger it had comes back for the "with" figure.
        batches = importlib.import_module("sessions_app.migrations.0011_feed_search_in_batches")
        with connection.cursor() as cursor:
            cursor.execute(batches.FEED_TRIGGER)
    with_trigger = insert_events(200)
    with connection.cursor() as cursor:
        if capabilities.of(connection).feed_indexed_in_batches:
            cursor.execute("DROP TRIGGER IF EXISTS board_search_event_ai")
        else:
            cursor.execute("DROP TRIGGER IF EXISTS board_search_event ON sessions_app_event")
    without_trigger = insert_events(200)
    connection.close()
    backend.cleanup()

    statements = sorted(((sql, med(v), len(v) / runs) for sql, v in per_statement.items()), key=lambda x: -x[1] * x[2])
    n_list = len(list_totals)
    list_rows = sorted(((sql, med(v), len(v) / n_list) for sql, v in list_statements.items()), key=lambda x: -x[1] * x[2])
    return {
        "list_median": med(list_totals),
        "list_queries": med(list_counts),
        "list_sql_median_sum": sum(m * f for _, m, f in list_rows),
        "list_statements": list_rows,
        "backend": backend.label,
        "ingest_median": med(totals),
        "queries_per_hook": med(counts),
        "sql_median_sum": sum(m * f for _, m, f in statements),
        "statements": statements,
        "connect_median": med(connects),
        "event_insert_with_fts": with_trigger,
        "event_insert_without_fts": without_trigger,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json")
    args = parser.parse_args()
    with throwaway_dir("queries") as tmp:
        r = run(args.backend, args.runs, tmp)
    print(f"ingest_hook in process, {r['backend']}, PreToolUse/PostToolUse with nothing pending, {args.runs} calls:")
    print(f"  median {r['ingest_median']:.2f} ms, {r['queries_per_hook']:.0f} SQL statements, "
          f"of which SQL execution ≈ {r['sql_median_sum']:.2f} ms (sum of per-statement medians)")
    for sql, ms, freq in r["statements"]:
        print(f"  {ms:6.3f} ms ×{freq:4.2f}  {sql}")
    print(f"messages_list (GET /api/messages_list, a page of 20, in process through the test client): "
          f"median {r['list_median']:.2f} ms, {r['list_queries']:.0f} SQL statements, SQL execution ≈ {r['list_sql_median_sum']:.2f} ms")
    for sql, ms, freq in r["list_statements"]:
        print(f"  {ms:6.3f} ms ×{freq:4.2f}  {sql}")
    print(f"opening a database connection (what each request on a fresh thread pays): median {r['connect_median']:.2f} ms")
    print(f"one hook Event insert: {r['event_insert_with_fts']:.3f} ms with the full-text trigger, "
          f"{r['event_insert_without_fts']:.3f} ms without")
    write_json(args.json, r)


if __name__ == "__main__":
    main()
