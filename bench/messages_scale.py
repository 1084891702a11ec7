"""messages_list and the delivery claim in a hook with 1,000 and with 1,000,000 stored messages.

    .venv/bin/python bench/messages_scale.py [--backend sqlite|pg] [--large 1000000] [--rounds 100] [--json FILE]

One daphne process on a throwaway data folder (or PostgreSQL database). 1,000 sessions start
with exact links through POST /api/hooks. Phase 1: 1,000 messages across them (the measured
session has 25 in its inbox and 25 sent, so a list returns a full page of 20 in both phases).
Phase 2: SQL adds messages up to `--large` (one INSERT … SELECT over a generated series,
every session sending to others; 99.9 % delivered, 75 % read). SQLite gets no ANALYZE (as a
running relaybay has none); PostgreSQL gets ANALYZE, as autovacuum would give it soon.

Per phase, interleaved rounds on keep-alive connections:
  empty view             POST /bench/empty (the framework's own cost, for reference)
  messages_list inbox    GET /api/messages_list?session=S-n               (limit 20)
  messages_list sent     GET /api/messages_list?session=S-n&box=sent
  messages_list all      GET /api/messages_list?session=S-n&box=all
  hook, nothing pending  POST /api/hooks PreToolUse
  hook claiming 1        POST /api/hooks PostToolUse with one pending message (SQL-inserted, untimed)
Prints medians and the 1M / 1k ratio; asserts nothing.
"""

import argparse
import json
import random
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import (  # noqa: E402
    DB,
    MESSAGE_COLUMNS,
    Backend,
    Client,
    Server,
    hook_payload,
    insert_message,
    ratio,
    start_sessions,
    summary,
    throwaway_dir,
    write_json,
)

SESSIONS = 1000
TARGET_N = 500
TARGET_MS = 5.0
RATIO_TARGET = 1.5
BODY = "the schema change is merged; rebase on main before you touch the migrations again, and tell me when the tests pass."


def seed_small(db, rows, count, ts):
    """`count` messages in Python: a ring, plus 25 in and 25 out for the measured session."""
    rng = random.Random(3)
    n = len(rows)
    target = rows[TARGET_N]
    values = []
    for x in range(count):
        if x < 25:
            sender, recipient = rows[(TARGET_N + 1 + x) % n], target
        elif x < 50:
            sender, recipient = target, rows[(TARGET_N + 1 + x) % n]
        else:
            sender = rows[x % n]
            recipient = rows[(x % n + 1 + rng.randrange(997)) % n]
        read = ts if x % 4 else None
        values.append((sender[0], sender[1], True, recipient[0], recipient[1], f"message {x}: {BODY}", ts, ts, read))
    db.execute("BEGIN")
    for v in values:
        db.execute(
            f"INSERT INTO session_message ({MESSAGE_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, 0, ?, ?, 'PreToolUse via bench', ?, TRUE, '', FALSE, NULL, 'mcp', 'sent', '', '')",
            v,
        )
    db.execute("COMMIT")


def seed_large(db, start, stop, ts):
    """Messages start..stop-1 in one INSERT … SELECT: sender n = x mod 1000, recipient another."""
    db.execute("DROP TABLE IF EXISTS bench_ids")
    db.execute("CREATE TEMP TABLE bench_ids AS SELECT (ROW_NUMBER() OVER (ORDER BY id)) - 1 AS n, id, title FROM sessions_app_session")
    n = db.value("SELECT COUNT(*) FROM bench_ids")
    if db.kind == "sqlite":
        series = "WITH RECURSIVE c(x) AS (SELECT ? UNION ALL SELECT x + 1 FROM c WHERE x + 1 < ?) "
        source = "FROM c"
    else:
        series = ""
        source = "FROM generate_series(?::bigint, ?::bigint - 1) AS c(x)"
    sql = (
        f"{series}INSERT INTO session_message ({MESSAGE_COLUMNS}) "
        "SELECT s.id, s.title, TRUE, r.id, r.title, NULL, 'message ' || c.x || ': ' || ?, NULL, 0, ?, "
        "CASE WHEN c.x % 1000 = 999 THEN NULL ELSE ? END, 'PreToolUse via bench', "
        "CASE WHEN c.x % 4 = 0 OR c.x % 1000 = 999 THEN NULL ELSE ? END, TRUE, '', FALSE, NULL, 'mcp', 'sent', '', '' "
        f"{source} JOIN bench_ids s ON s.n = c.x % {n} "
        f"JOIN bench_ids r ON r.n = (c.x % {n} + 1 + (c.x / {n}) % {n - 3}) % {n}"
    )
    if db.kind == "sqlite":
        params = (start, stop, BODY, ts, ts, ts)
    else:
        # generate_series' bounds come first in the text, after the SELECT list's parameters.
        params = (BODY, ts, ts, ts, start, stop)
    db.execute("BEGIN")
    db.execute(sql, params)
    db.execute("COMMIT")
    if db.kind == "sqlite":
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    else:
        db.execute("ANALYZE")


def measure(server, db, target, hook_session, rounds, writer):
    make = lambda: Client(server.url, server.token)  # noqa: E731
    handle = f"S-{target[0]}"
    pre = json.dumps(hook_payload("PreToolUse", hook_session)).encode()
    post = json.dumps(hook_payload("PostToolUse", hook_session)).encode()
    claimed = {"n": 0, "listed": 0}

    def claim(client):
        insert_message(db, writer, target, f"ping: {BODY}")
        status, body, ms = client.request("POST", "/api/hooks", post)
        claimed["n"] += b"additionalContext" in body
        return status, body, ms

    def listing(box):
        def call(client):
            status, body, ms = client.request("GET", f"/api/messages_list?session={handle}&hook_session={quote(hook_session)}&box={box}")
            claimed["listed"] = len(json.loads(body).get("messages", [])) if status == 200 else -1
            return status, body, ms
        return call

    variants = {
        "empty view": lambda c: c.request("POST", "/bench/empty", pre),
        "messages_list inbox": listing("inbox"),
        "messages_list sent": listing("sent"),
        "messages_list all": listing("all"),
        "hook, nothing pending": lambda c: c.request("POST", "/api/hooks", pre),
        "hook claiming 1 message": claim,
    }
    clients = {name: make() for name in variants}
    samples = {name: [] for name in variants}
    errors = 0
    warmup = 20
    for i in range(warmup + rounds):
        for name, call in variants.items():
            status, _, ms = call(clients[name])
            errors += status != 200
            if i >= warmup:
                samples[name].append(ms)
    for c in clients.values():
        c.close()
    return {name: summary(v) for name, v in samples.items()}, errors, claimed["n"] - warmup, claimed["listed"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--small", type=int, default=1000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--json")
    args = parser.parse_args()

    backend = Backend(args.backend, pg_name="relaybay_bench_messages")
    backend.prepare()
    phases = {}
    try:
        with throwaway_dir("messages") as workdir, Server(workdir, backend) as server:
            db = DB(backend, server.data_dir)
            client = Client(server.url, server.token)
            print(f"messages_list and delivery claim, {backend.label}, {server.label}: {SESSIONS:,} sessions …", flush=True)
            started = time.perf_counter()
            names = [f"peer {i:04}" for i in range(SESSIONS)]
            ids = start_sessions(client, names, busy=False)
            client.request("POST", "/api/hooks", hook_payload("UserPromptSubmit", ids[names[TARGET_N]]))
            client.close()
            rows = [tuple(r) for r in db.rows("SELECT id, title FROM sessions_app_session ORDER BY id")]
            print(f"  sessions started in {time.perf_counter() - started:.1f} s", flush=True)
            target, writer = rows[TARGET_N], rows[TARGET_N - 1]
            ts = db.timestamp()
            seed_small(db, rows, args.small, ts)
            stored = db.value("SELECT COUNT(*) FROM session_message")
            print(f"  {stored:,} messages stored: measuring …", flush=True)
            phases["1k"] = measure(server, db, target, ids[names[TARGET_N]], args.rounds, writer) + (stored, 0.0)
            started = time.perf_counter()
            seed_large(db, args.small, args.large, ts)
            load_s = time.perf_counter() - started
            stored = db.value("SELECT COUNT(*) FROM session_message")
            print(f"  {stored:,} messages stored (bulk insert {load_s:.1f} s): measuring …", flush=True)
            phases["1M"] = measure(server, db, target, ids[names[TARGET_N]], args.rounds, writer) + (stored, load_s)
            db.close()
    finally:
        backend.cleanup()

    small, large = phases["1k"], phases["1M"]
    print(f"\n{'':26} {small[4]:>10,} stored {large[4]:>12,} stored   1M/1k   target ≤ {TARGET_MS} ms, ≤ {RATIO_TARGET}×")
    rows_out = {}
    for name in small[0]:
        a, b = small[0][name]["median"], large[0][name]["median"]
        r = ratio(b, a)
        rows_out[name] = {"small": small[0][name], "large": large[0][name], "ratio": r}
        print(f"{name:26} {a:10.2f} ms       {b:10.2f} ms        {r:5.2f}×")
    print(f"claims made: {small[2]} / {large[2]}; messages per list page: {small[3]} / {large[3]}; "
          f"non-200 answers: {small[1] + large[1]}")
    write_json(args.json, {
        "backend": backend.label,
        "server": server.label,
        "server_commands": server.command_lines(),
        "stored": [small[4], large[4]],
        "bulk_insert_s": large[5],
        "rounds": args.rounds,
        "rows": rows_out,
        "errors": small[1] + large[1],
        "claims": [small[2], large[2]],
        "page": [small[3], large[3]],
    })


if __name__ == "__main__":
    main()
