"""The statements relaybay compiles once (core/compiled.py), each beside the ORM doing the
same, in process (no HTTP): what building a query costs against running it.

    .venv/bin/python bench/compiled_queries.py [--backend sqlite|pg] [--runs 400] [--json FILE]

Sets Django up on a throwaway data folder (or PostgreSQL database) with 100 sessions, each
with a hook link, and 2,000 messages; then times, interleaved in blocks, each statement of a
send and a messages_list written both ways: the same queryset as the ORM builds it on every
call, and the compiled one (core/compiled.py proves each answers as its queryset does). Both
answer the same rows (checked once). Prints medians and ratios; asserts nothing.
"""

import argparse
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import django_in_process, hook_payload, throwaway_dir, write_json  # noqa: E402

SESSIONS = 100
MESSAGES = 2000


def median_us(fn, runs):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1e6)
    return statistics.median(times)


def run(backend_kind, runs, data_dir):
    backend = django_in_process(backend_kind, data_dir, "relaybay_bench_compiled")
    from django.db import transaction
    from django.utils import timezone

    from messaging import fleet
    from messaging import formatting
    from messaging.models import Dispatch, SessionMessage
    from core.compiled import insert
    from sessions_app import directory
    from sessions_app.hooks.ingest import ingest_hook
    from sessions_app.models import Event, HookLink, Session, fold_name

    for i in range(SESSIONS):
        ingest_hook(hook_payload("SessionStart", f"hook-{i}", source="startup", relaybay_session=f"session-{i}"), process=f"{i:064x}")
    rows = {row.title: row for row in Session.objects.all()}
    alpha, beta = rows["session-1"], rows["session-2"]
    SessionMessage.objects.bulk_create(
        SessionMessage(sender=rows[f"session-{i % SESSIONS}"], sender_name="x", recipient=beta if i % 3 else alpha, recipient_name="y", body=f"body {i}")
        for i in range(MESSAGES)
    )
    now = timezone.now()

    def orm_find_sessions(name):
        # find_sessions's querysets, built by the ORM: the rows going by the name, their links.
        found = list(Session.objects.filter(directory._going_by(name, fold_name(name), 0)))
        for row in found:
            row.loaded_links = list(directory.LINKS_NEWEST_FIRST.filter(session_id=row.pk))
        return found

    cases = {
        "the hook id's link (every hook, every verified call)": (
            lambda: HookLink.objects.select_related("session").filter(hook_session="hook-7").first(),
            lambda: directory.link_of("hook-7", with_session=True),
        ),
        "the process proof's hook id (every http tool call)": (
            lambda: HookLink.objects.filter(process_proof=f"{7:064x}").order_by("pk").values_list("hook_session", flat=True).first(),
            lambda: directory.hook_session_of_process(f"{7:064x}"),
        ),
        "find_sessions: a name's rows and their links": (lambda: orm_find_sessions("session-2"), lambda: directory.find_sessions("session-2")),
        "dedupe: the same text within 30 s": (
            lambda: list(
                SessionMessage.objects.filter(sender_id=alpha.pk, recipient_id__in=[beta.pk], created_at__gt=now - timedelta(seconds=30), body="body 1", channel="mcp").order_by("id")
            ),
            lambda: fleet.first_of_duplicate(alpha, beta, "body 1", now),
        ),
        "rate: the sender's slots in the last minute": (
            lambda: list(Dispatch.objects.filter(sender=alpha, created_at__gt=now - timedelta(minutes=1)).order_by("created_at").values_list("created_at", flat=True)[:10]),
            lambda: fleet._slots_taken(alpha.pk, now - timedelta(minutes=1)),
        ),
        "unread cap: waiting messages, up to 50": (
            lambda: len(fleet.waiting_for(beta.pk, now).values_list("pk", flat=True)[:50]),
            lambda: len(fleet._waiting_up_to_cap(beta.pk, now)),
        ),
        "messages_list: a page of 20": (
            lambda: list(SessionMessage.objects.filter(recipient_id=beta.pk).order_by("-id")[:20]),
            lambda: formatting._page("inbox", False, False, 20)[0](beta.pk),
        ),
    }
    checks = {name: (orm(), compiled()) for name, (orm, compiled) in cases.items()}
    assert len(checks["find_sessions: a name's rows and their links"][0]) == 1
    assert [m.pk for m in checks["messages_list: a page of 20"][0]] == [m.pk for m in checks["messages_list: a page of 20"][1]]

    def event():
        return Event(name="bench.event", session_id=alpha.pk, data={"message": 1, "from": "S-1", "to": "S-2", "channel": "mcp"})

    writes = {
        "a feed row (two a send, one a hook)": (lambda: Event.objects.create(name=event().name, session_id=alpha.pk, data=event().data), lambda: insert(event())),
        "a dispatch (a send's rate slot)": (
            lambda: Dispatch.objects.create(sender=alpha, kind="send", request_id="", created_at=now),
            lambda: insert(Dispatch(sender=alpha, kind="send", request_id="", created_at=now)),
        ),
    }
    results = {}
    for _round in range(4):
        for name, (orm, compiled) in cases.items():
            results.setdefault(name, ([], []))
            results[name][0].append(median_us(orm, runs // 4))
            results[name][1].append(median_us(compiled, runs // 4))
        for name, (orm, compiled) in writes.items():
            results.setdefault(name, ([], []))
            with transaction.atomic():
                results[name][0].append(median_us(orm, runs // 4))
                results[name][1].append(median_us(compiled, runs // 4))
    backend.cleanup()
    return {name: {"orm_us": statistics.median(a), "compiled_us": statistics.median(b)} for name, (a, b) in results.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--json")
    args = parser.parse_args()
    with throwaway_dir("compiled") as data_dir:
        figures = run(args.backend, args.runs, data_dir)
    print(f"in process, {args.backend}, median of {args.runs} calls each, µs:")
    print(f"{'statement':56} {'ORM':>8} {'compiled':>9} {'ORM ÷ compiled':>15}")
    for name, f in figures.items():
        print(f"{name:56} {f['orm_us']:8.0f} {f['compiled_us']:9.0f} {f['orm_us'] / f['compiled_us']:14.1f}×")
    write_json(args.json, {"backend": args.backend, "figures": figures})


if __name__ == "__main__":
    main()
