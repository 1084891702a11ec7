"""Board benchmark: server time of the busiest pages with 100,000 messages and 1,000 sessions,
and how long a refresh ping takes to reach an open page and get its fragment refetched.

    .venv/bin/python bench/board.py [--messages 100000] [--sessions 1000] [--runs 30] [--json FILE]

Everything happens in a throwaway data folder (SQLite, as `make run` uses). Prints figures;
asserts nothing. Server time is measured twice: in process (Django's handler alone, through
the test client) and over HTTP through daphne on loopback (what a browser waits for).
"""

import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
OWNER = ("owner", "bench-owner-password-1")

TARGET_MS = 150
PING_TARGET_MS = 300


def pages(task_id, session_handle, before):
    return [
        ("/messages/ first page", "/messages/"),
        ("/messages/ filtered by session", f"/messages/?session={session_handle}"),
        ("/messages/ filtered by task", f"/messages/?task={task_id}"),
        ("/messages/ page 20 (keyset)", f"/messages/?before={before}"),
        ("/messages/ not delivered yet", "/messages/?state=waiting"),
        ("sessions list", "/"),
        ("sessions list, live only", "/?state=live"),
        ("session page", f"/sessions/{session_handle[2:]}/"),
        ("task page", f"/tasks/{task_id}/"),
        ("inbox", "/inbox/"),
        ("events feed", "/events/"),
        ("map", "/map/"),
    ]


def summary(samples):
    samples = sorted(samples)
    return statistics.median(samples), samples[int(len(samples) * 0.9) - 1]


# --- Populating (runs in a child process with Django set up on the throwaway folder) --------


def populate(n_messages, n_sessions):
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "relaybay.settings")
    django.setup()
    from django.db import transaction

    from messaging.models import SessionMessage
    from sessions_app.models import Event, HookLink, Session, Task

    rng = random.Random(7)
    started = time.perf_counter()
    with transaction.atomic():
        tasks = Task.objects.bulk_create([Task(title=f"task {i:02}") for i in range(20)])
        sessions = Session.objects.bulk_create(
            Session(
                kind=rng.choice(["hook", "hook", "mcp", "desktop"]),
                title=f"session {i:04}",
                folder=f"/work/project-{i % 50:02}",
                task=tasks[i % 20] if i % 3 else None,
                desktop_id=None,
            )
            for i in range(n_sessions)
        )
        states = ["busy", "idle", "idle", "ended"]
        HookLink.objects.bulk_create(
            HookLink(hook_session=f"hook-{s.pk:05}", session=s, exact=i % 5 != 0, state=states[i % 4], cwd=s.folder)
            for i, s in enumerate(sessions[: n_sessions * 7 // 10])
        )
        Session.objects.update(last_seen_at=django.utils.timezone.now())
    now = django.utils.timezone.now()
    # Sessions mostly write to a few peers of their own project, as real crews do.
    peers = {s.pk: [sessions[(i + k) % n_sessions] for k in (1, 2, 3, 5, 8)] for i, s in enumerate(sessions)}
    batch = 5000
    for start in range(0, n_messages, batch):
        rows = []
        for i in range(start, min(start + batch, n_messages)):
            sender = rng.choice(sessions)
            recipient = rng.choice(peers[sender.pk]) if rng.random() < 0.9 else rng.choice(sessions)
            if recipient == sender:
                recipient = peers[sender.pk][0]
            delivered = rng.random() < 0.8
            rows.append(
                SessionMessage(
                    sender=sender, sender_name=sender.title, sender_verified=rng.random() < 0.7,
                    recipient=recipient, recipient_name=recipient.title, task=sender.task,
                    body=f"message {i}: " + "lorem ipsum dolor sit amet " * 8,
                    delivered_at=now if delivered else None,
                    read_at=now if delivered and rng.random() < 0.75 else None,
                    read_verified=True,
                    depth=0,
                )
            )
        with transaction.atomic():
            created = SessionMessage.objects.bulk_create(rows)
            Event.objects.bulk_create(
                Event(
                    name="session.message", session_id=m.sender_id,
                    data={"message": m.pk, "from": f"S-{m.sender_id}", "from_name": m.sender_name,
                          "to": f"S-{m.recipient_id}", "to_name": m.recipient_name, "channel": "mcp"},
                )
                for m in created
            )
    with transaction.atomic():
        # The history is from earlier in the day, not this second.
        earlier = now - django.utils.timezone.timedelta(hours=3)
        SessionMessage.objects.update(created_at=earlier)
        Event.objects.update(created_at=earlier)
        # A few replies and Inbox items, like a real board has.
        ids = list(SessionMessage.objects.order_by("-id").values_list("id", flat=True)[:2000])
        for child, parent in zip(ids[:500], ids[500:1000]):
            SessionMessage.objects.filter(pk=child).update(parent_id=parent, depth=1)
        SessionMessage.objects.filter(pk__in=ids[1000:1010]).update(needs_owner=True)
    return {"populate_s": round(time.perf_counter() - started, 1), "task": tasks[1].pk, "session": sessions[n_sessions // 2].handle}


def in_process(paths, runs):
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1")  # a host relaybay answers to (the test client says "testserver")
    client.force_login(get_user_model().objects.get(username="owner"))
    results = {}
    for label, path in paths:
        for _ in range(3):
            client.get(path)
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            response = client.get(path)
            samples.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, (path, response.status_code)
        results[label] = summary(samples)
    connection.close()
    return results


def child(args):
    info = populate(args.messages, args.sessions)
    from messaging.models import SessionMessage

    before = SessionMessage.objects.order_by("-id").values_list("id", flat=True)[50 * 19]
    paths = pages(info["task"], info["session"], before)
    info["paths"] = paths
    info["in_process"] = in_process(paths, args.runs)
    print(json.dumps(info))


# --- Over HTTP, and the browser --------------------------------------------------------------


def over_http(live, cookie, paths, runs):
    host = urlsplit(live.url)
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    results = {}
    for label, path in paths:
        samples = []
        for i in range(runs + 3):
            started = time.perf_counter()
            connection.request("GET", path, headers={"Cookie": cookie})
            response = connection.getresponse()
            response.read()
            if i >= 3:
                samples.append((time.perf_counter() - started) * 1000)
            assert response.status == 200, (path, response.status)
        results[label] = summary(samples)
    return results


def ping_latency(live, sends):
    from playwright.sync_api import sync_playwright

    from tests.devserver import CHROMIUM, CHROMIUM_ARGS, log_in

    from bench.harness import Client

    api = Client(live.url, live.token)
    figures = {"send→ping": [], "ping→refetched": [], "send→refetched": [], "commit→refetched": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        log_in(page, live.url, *OWNER)
        cookie = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())
        page.goto(f"{live.url}/messages/")
        page.wait_for_function("document.documentElement.dataset.live === 'on'")
        page.evaluate(
            """() => {
                window.__marks = {};
                document.body.addEventListener('ping-messages', () => { window.__marks.ping = Date.now(); });
                document.body.addEventListener('htmx:afterSwap', (e) => {
                    if (e.target.id === 'messages-rows') window.__marks.swapped = Date.now();
                });
            }"""
        )
        for i in range(sends):
            page.evaluate("window.__marks = {}")
            body = f"latency probe {i} {time.time()}"
            started = time.time() * 1000
            status, answer = api.json("POST", "/api/message_send", {"body": body, "to": "S-1", "session": f"bench sender {i % 20}"})
            committed = time.time() * 1000
            assert status == 200, answer
            page.wait_for_function("(body) => document.querySelector('#messages-rows').textContent.includes(body)", arg=body)
            page.wait_for_function("window.__marks.swapped !== undefined")
            marks = page.evaluate("window.__marks")
            figures["send→ping"].append(marks["ping"] - started)
            figures["ping→refetched"].append(marks["swapped"] - marks["ping"])
            figures["send→refetched"].append(marks["swapped"] - started)
            figures["commit→refetched"].append(marks["swapped"] - committed)
            time.sleep(0.2)
        browser.close()
    return {name: summary(values) for name, values in figures.items()}, cookie


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--sends", type=int, default=20)
    parser.add_argument("--json", help="also write the figures to this file (bench/run_all.py reads it)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    from tests.devserver import Server

    with tempfile.TemporaryDirectory(prefix="relaybay-bench-") as tmp:
        # The probes are sent faster than a sender's budget allows (RELAYBAY_SENDS_PER_MINUTE).
        live = Server(Path(tmp) / "relaybay-data", env={"RELAYBAY_SENDS_PER_MINUTE": str(max(10, args.sends))}).start()
        try:
            live.create_owner(*OWNER)
            print(f"Populating {args.messages:,} messages and {args.sessions:,} sessions (SQLite, {tmp}) …", flush=True)
            env = live.env
            run = subprocess.run(
                [sys.executable, __file__, "--child", f"--messages={args.messages}", f"--sessions={args.sessions}", f"--runs={args.runs}"],
                env=env, cwd=REPO_ROOT, capture_output=True, text=True, check=False,
            )
            if run.returncode:
                sys.exit(run.stderr[-3000:])
            info = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"  populated in {info['populate_s']} s\n")
            latency, cookie = ping_latency(live, args.sends)
            http_figures = over_http(live, cookie, info["paths"], args.runs)
        finally:
            live.stop()

    print(f"{'page':34} {'in process':>22} {'over HTTP (daphne)':>24}   target {TARGET_MS} ms")
    print(f"{'':34} {'median':>10} {'p90':>10} {'median':>12} {'p90':>10}")
    for label, _ in info["paths"]:
        (m1, p1), (m2, p2) = info["in_process"][label], http_figures[label]
        flag = "" if m2 <= TARGET_MS else "  over target"
        print(f"{label:34} {m1:8.1f}ms {p1:8.1f}ms {m2:10.1f}ms {p2:8.1f}ms{flag}")
    print(f"\nRefresh ping in Chromium, /messages/ open, {args.sends} sends through POST /api/message_send:")
    for name, (median, p90) in latency.items():
        print(f"  {name:18} median {median:6.1f} ms   p90 {p90:6.1f} ms")
    ratio = latency["send→refetched"][0] / PING_TARGET_MS
    print(f"  send→refetched median is {ratio:.2f}× the {PING_TARGET_MS} ms target")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "messages": args.messages, "sessions": args.sessions, "runs": args.runs, "sends": args.sends,
            "populate_s": info["populate_s"],
            "pages": {label: {"in_process": info["in_process"][label], "http": http_figures[label]} for label, _ in info["paths"]},
            "ping": latency,
        }, indent=1))


if __name__ == "__main__":
    main()
