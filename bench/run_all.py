"""Run every relaybay benchmark and write the table of docs/benchmarks.md (`make bench`).

    .venv/bin/python bench/run_all.py [--quick] [--only NAME,…] [--out docs/benchmarks.md] [--wait-quiet 180]

Each benchmark is its own script under bench/ (run one alone to look closer); each prints its
figures and writes them as JSON. This script gathers them into the one table of
docs/benchmarks.md, the part between the markers TABLE_START and TABLE_END, with the date,
the machine and the commit measured; the rest of that page is written by hand. The full
report (every benchmark's own tables, the command lines, the machine) goes to report.md in
the results folder. Nothing is asserted: a bound that is not met is reported with by how
much, never a failure. --quick shrinks every size for a smoke run; its figures are not the
published ones, so it leaves docs/benchmarks.md alone unless --out names a page.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, machine_notes  # noqa: E402

PY = sys.executable
PAGE = REPO_ROOT / "docs" / "benchmarks.md"
TABLE_START, TABLE_END = "<!-- bench:table -->", "<!-- /bench -->"
THROUGHPUT_GROUPS = "sqlite:1@ 2 wsgi2;pg:1 2@ wsgi2"


def plan(quick):
    q = quick
    return [
        ("hook_latency", "bench/hook_latency.py", ["--rounds", "60" if q else "300", "--spawns", "8" if q else "40", "--fresh", "20" if q else "100"]),
        ("hook_latency_pg", "bench/hook_latency.py", ["--backend", "pg", "--rounds", "40" if q else "150", "--spawns", "3" if q else "10", "--fresh", "10" if q else "50"]),
        ("hook_queries", "bench/hook_queries.py", ["--runs", "100" if q else "300"]),
        ("hook_queries_pg", "bench/hook_queries.py", ["--backend", "pg", "--runs", "60" if q else "200"]),
        ("edit_collisions", "bench/edit_collisions.py", ["--rounds", "60" if q else "400", "--edits", "100" if q else "1000", "--checks", "50" if q else "300"]),
        ("edit_collisions_pg", "bench/edit_collisions.py", ["--backend", "pg", "--rounds", "40" if q else "200", "--edits", "100" if q else "1000", "--checks", "50" if q else "200"]),
        ("serving", "bench/serving.py", ["--rounds", "40" if q else "200", "--duration", "2" if q else "3", "--repeats", "1" if q else "3"]),
        ("throughput", "bench/throughput.py", ["--groups", "sqlite:1@;pg:1 2@" if q else THROUGHPUT_GROUPS,
                                               "--duration", "3" if q else "4", "--repeats", "1" if q else "3", "--warmup", "2"]),
        ("messages_sqlite", "bench/messages_scale.py", ["--large", "20000" if q else "1000000", "--rounds", "20" if q else "100"]),
        ("messages_pg", "bench/messages_scale.py", ["--backend", "pg", "--large", "20000" if q else "1000000", "--rounds", "20" if q else "60"]),
        ("wakeup", "bench/wakeup.py", ["--wakes", "8" if q else "30"]),
        ("board", "bench/board.py", ["--messages", "5000" if q else "100000", "--runs", "8" if q else "30", "--sends", "5" if q else "20"]),
        ("profile_gil", "bench/profile_hook.py", ["--duration", "6" if q else "12"]),
        ("profile_wall", "bench/profile_hook.py", ["--wall", "--duration", "6" if q else "10"]),
        ("profile_empty", "bench/profile_hook.py", ["--target", "empty", "--duration", "6" if q else "10"]),
        ("plugin_turn", "bench/plugin_turn.py", ["--runs", "2" if q else "8"]),
    ]


def wait_for_quiet(limit):
    """Other work on the machine (a test suite) skews every figure: wait a while for it to end."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        load = os.getloadavg()[0]
        if load < 1.0:
            return load, time.monotonic() - started
        print(f"  load average {load:.2f}: waiting for a quieter machine ({limit - (time.monotonic() - started):.0f} s left) …", flush=True)
        time.sleep(15)
    return os.getloadavg()[0], time.monotonic() - started


# --- Markdown --------------------------------------------------------------------------------


def ms(v):
    return "–" if v is None else (f"{v:.2f} ms" if v < 10 else f"{v:.1f} ms" if v < 1000 else f"{v / 1000:.2f} s")


def met(ok, miss=""):
    return "**yes**" if ok else f"**no**{' — ' + miss if miss else ''}"


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def summary_rows(r):
    rows = []
    pt = r.get("plugin_turn")
    if pt:
        m, x, a = pt["medians_ms"], pt["ratio"], pt["added"]["plugin"]
        rows.append((f"`claude -p` turn with {pt['tool_calls']} tool calls under the plugin ÷ the same turn bare (interleaved)",
                     f"{ms(m[f'plugin | {pt['tool_calls']} tool calls'])} ÷ {ms(m[f'bare | {pt['tool_calls']} tool calls'])} = **{x:.2f}×** "
                     f"(+{a['per_tool_call_ms']:.0f} ms a tool call, +{a['per_session_start_ms']:.0f} ms a session start, "
                     f"≈{a['first_request_chars'] / 4:.0f} tokens in the first request)", "≤ 1.2×", met(x <= 1.2)))
    hl = r.get("hook_latency")
    if hl:
        t = hl["server_time"]
        x = hl["hook_ratio"]
        rows.append(("Hook server time, nothing pending ÷ empty bearer-auth ninja view (SQLite, 1 daphne, keep-alive)",
                     f"{ms(t['hook, idle']['median'])} ÷ {ms(t['empty view']['median'])} = **{x:.2f}×**", "≤ 1.3×",
                     met(x <= 1.3, f"{x / 1.3:.2f}× the bound, +{t['hook, idle']['median'] - 1.3 * t['empty view']['median']:.2f} ms")))
        if "empty, full chain" in t:
            chain = t["empty, full chain"]["median"]
            rows.append(("… for context: the same hook ÷ the empty view served through the board's whole middleware chain "
                         "(what `relaybay.asgi.APIHandler` leaves out)",
                         f"{ms(t['hook, idle']['median'])} ÷ {ms(chain)} = {t['hook, idle']['median'] / chain:.2f}×", "", ""))
        s = hl["spawn"]
        hook = s["command hook (python3 -S bin/relaybay-hook)"]["median"]
        bare = s["python3 -c pass"]["median"]
        x = hl["client_ratio"]
        rows.append(("Command hook client end to end ÷ `python3 -c pass`", f"{ms(hook)} ÷ {ms(bare)} = **{x:.2f}×**", "≤ 1.5×", met(x <= 1.5)))
    tp = r.get("throughput")
    if tp:
        c = tp["configs"]
        if "sqlite:1" in c:
            one = c["sqlite:1"]
            share = one["share"]
            rows.append(("Hook events/s ÷ empty view's, 50 sessions, 1 daphne, SQLite",
                         f"{one['hook']['rps']:.0f}/s vs {one['empty view']['rps']:.0f}/s: **{share:.0%}**", "≥ 70%",
                         met(share >= 0.7, f"{share / 0.7:.0%} of the bound")))
            p99 = one["hook"]["p99"]
            rows.append(("Hook p99 latency under that load (50 connections back to back)",
                         f"**{ms(p99)}** (p50 {ms(one['hook']['p50'])}; the empty view's own p99: {ms(one['empty view']['p99'])})", "< 100 ms",
                         met(p99 < 100, f"{p99 / 100:.1f}× the bound")))
            errs = one["hook"]["errors"]
            rows.append(("Hook errors under that load", f"**{errs}** of {one['hook']['requests_all_runs']:,}", "0", met(errs == 0)))
            paced = one.get("open hook")
            if paced:
                rows.append((f"Hook p99 latency, same 50 sessions paced at {tp.get('open_rate')} events/s in all (open loop)",
                             f"**{ms(paced['p99'])}** (p50 {ms(paced['median'])}; empty view p99 {ms(one['open empty view']['p99'])})",
                             "(same bound, realistic pacing)", met(paced["p99"] < 100, f"{paced['p99'] / 100:.1f}× the bound")))
        if "pg:1" in c and "pg:2" in c and "pg" in tp.get("scale", {}):
            x = tp["scale"]["pg"]["hook"]
            e2 = c["pg:2"]["hook"]["errors"]
            rows.append(("PostgreSQL + Redis: hook events/s, 2 daphne processes ÷ 1 (side by side)",
                         f"{c['pg:2']['hook']['rps']:.0f}/s vs {c['pg:1']['hook']['rps']:.0f}/s: **{x:.2f}×** "
                         f"(the empty view: {tp['scale']['pg']['empty view']:.2f}×)"
                         + (f" ({e2:,} errors with 2 processes, {c['pg:1']['hook']['errors']:,} with 1)" if e2 or c['pg:1']['hook']['errors'] else ""),
                         "≥ 1.6×", met(x >= 1.6 and not e2, "errors" if e2 and x >= 1.6 else f"{x / 1.6:.0%} of the bound")))
        for db, label in (("sqlite", "SQLite"), ("pg", "PostgreSQL + Redis")):
            w, d = c.get(f"{db}:wsgi2"), c.get(f"{db}:2")
            if w and d:
                rows.append((f"JSON API under WSGI: gunicorn, 2 sync workers vs 2 daphne processes, {label}",
                             f"empty view {w['empty view']['rps']:.0f}/s vs {d['empty view']['rps']:.0f}/s; "
                             f"hook {w['hook']['rps']:.0f}/s vs {d['hook']['rps']:.0f}/s "
                             f"(p99 {ms(w['hook']['p99'])} vs {ms(d['hook']['p99'])}; errors {w['hook']['errors']} vs {d['hook']['errors']})",
                             "measure; recommend if clearly faster", "see docs/scale-out.md"))
    for key, label in (("messages_sqlite", "SQLite"), ("messages_pg", "PostgreSQL")):
        m = r.get(key)
        if not m:
            continue
        for name, what in (("messages_list inbox", "`messages_list` (inbox) for one session"), ("hook claiming 1 message", "Delivery claim in a hook (1 pending)")):
            row = m["rows"][name]
            large, small, x = row["large"]["median"], row["small"]["median"], row["ratio"]
            rows.append((f"{what}, {m['stored'][1]:,} stored, {label}", f"**{ms(large)}** (1k: {ms(small)}, ×{x:.2f})", "≤ 5 ms, ≤ 1.5× of 1k",
                         met(large <= 5 and x <= 1.5, f"{large / 5:.1f}× the 5 ms" if large > 5 else f"{x:.2f}× of 1k")))
    w = r.get("wakeup")
    if w:
        for text, res in w["configs"].items():
            f = res["figures"].get("send → waiter answered")
            if f:
                rows.append((f"Wake-up, send → waiter answers ({res['backend']}, {res['server']})", f"**{ms(f['median'])}**", "≤ 100 ms", met(f["median"] <= 100)))
    b = r.get("board")
    if b:
        for label in ("/messages/ first page", "/messages/ filtered by session", "sessions list"):
            f = b["pages"].get(label)
            if f:
                v = f["http"][0]
                rows.append((f"Board {label}, {b['messages']:,} messages (HTTP, daphne)", f"**{ms(v)}** (in process {ms(f['in_process'][0])})", "≤ 150 ms", met(v <= 150)))
        p = b["ping"].get("send→refetched")
        if p:
            rows.append(("Board ping → fragment refetched (send → swapped, Chromium)", f"**{ms(p[0])}**", "≤ 300 ms", met(p[0] <= 300)))
    for key, label in (("edit_collisions", "SQLite"), ("edit_collisions_pg", "PostgreSQL + Redis")):
        e = r.get(key)
        if not e:
            continue
        t, r = e["server_time"], e["ratios"]
        x = r["edit ÷ check off"]
        rows.append((f"PreToolUse Edit with no collision, server time ÷ the same code with the edit check off ({label}, side by side)",
                     f"{ms(t['new edit']['median'])} ÷ {ms(t['check off edit']['median'])} = **{x:.2f}×** "
                     f"(÷ the code before edit collisions: {r['edit ÷ before']:.2f}×; Bash {r['bash ÷ check off']:.2f}× and {r['bash ÷ before']:.2f}×)",
                     "≤ 1.1×", met(x <= 1.1, f"{x / 1.1:.2f}× the bound")))
        check = e["check"]
        worst = max(v["median"] for name, v in check.items() if name.startswith("collision rule"))
        whole = next(v["median"] for name, v in check.items() if name.startswith("the whole check"))
        rows.append((f"Collision check, {e['sessions']} live sessions × {e['edits']:,} recent edits ({check['stored edits']:,} stored), {label}",
                     f"**{ms(worst)}** (the whole check of an edit, both rules and its write: {ms(whole)})", "< 5 ms", met(worst < 5)))
    return rows


def section_hook_latency(r, key, title):
    hl = r.get(key)
    if not hl:
        return ""
    t = hl["server_time"]
    empty = t["empty view"]["median"]
    rows = [(name, ms(s["median"]), ms(s["p90"]), ms(s["p99"]), f"{s['median'] / empty:.2f}×") for name, s in t.items()]
    fresh = [(name, ms(s["median"]), ms(s["p90"]), ms(s["p99"]), "") for name, s in hl["fresh"].items()]
    sp = hl["spawn"]
    bare = sp["python3 -c pass"]["median"]
    spawn_rows = [(name, ms(s["median"]), ms(s["p90"]), f"{s['median'] / bare:.2f}×") for name, s in sp.items()]
    return f"""
### {title}

{hl['backend']}, {hl['server']}; {hl['rounds']} interleaved rounds, each variant on its own keep-alive
connection (client-side round trip on loopback = server time + ~0.1 ms). Deliveries made:
{hl['delivered']}; non-200 answers: {sum(hl['errors'].values())}.

{md_table(["sequential request", "median", "p90", "p99", "× empty view"], rows + fresh)}

Spawned processes, {hl['spawns']} interleaved runs each, `python3` = `{hl['python3']}`
(failed runs {hl['spawn_failures']}; spool written, i.e. server not reached: {hl['spooled']}):

{md_table(["end to end", "median", "p90", "× python3 -c pass"], spawn_rows)}
"""


def section_queries(r):
    parts = []
    for key in ("hook_queries", "hook_queries_pg"):
        q = r.get(key)
        if not q:
            continue
        rows = [(f"{m:.3f} ms", f"×{f:.2f}", f"`{sql}`") for sql, m, f in q["statements"]]
        parts.append(f"""
### {q['backend']}

`ingest_hook` called in process (no HTTP, no thread hop), PreToolUse/PostToolUse with nothing pending:
median **{ms(q['ingest_median'])}** per hook, {q['queries_per_hook']:.0f} SQL statements whose own execution adds up to about
{ms(q['sql_median_sum'])}; the rest is Python (the ORM building and compiling each query, the transaction, the event's
fields). Getting a database connection, which every request pays when its sync view runs on a new
thread (a new SQLite connection; a pool checkout on PostgreSQL): {ms(q['connect_median'])}. One hook Event insert: {q['event_insert_with_fts']:.3f} ms with the full-text trigger,
{q['event_insert_without_fts']:.3f} ms without.

{md_table(["median", "per hook", "statement"], rows)}

`GET /api/messages_list` (a page of 20) in process through Django's test client: median
**{ms(q['list_median'])}**, {q['list_queries']:.0f} SQL statements whose execution adds up to about {ms(q['list_sql_median_sum'])}.
""")
    return "\n## One hook inside Django, statement by statement (bench/hook_queries.py)\n" + "".join(parts) if parts else ""


def section_throughput(r):
    tp = r.get("throughput")
    if not tp:
        return ""
    rows = []
    for text, c in tp["configs"].items():
        h, e = c["hook"], c["empty view"]
        def cpu(x):
            if x.get("server_cpu") is None:
                return "–"
            return f"{x['server_cpu']:.0%} + {x.get('services_cpu') or 0:.0%} ({x.get('machine_cpu', 0):.0%})"

        rows.append((f"`{text}`", c["server"], f"{e['rps']:.0f}/s", f"{h['rps']:.0f}/s", f"{c['share']:.0%}",
                     ms(h["p50"]), ms(h["p99"]), f"{h['errors']:,}", cpu(e), cpu(h), ms(e["p99"])))
    paced = []
    for text, c in tp["configs"].items():
        for name in ("empty view", "hook"):
            o = c.get(f"open {name}")
            if o:
                paced.append((f"`{text}`", c["server"], name, ms(o["median"]), ms(o["p90"]), ms(o["p99"]), ms(o["max"]), f"{o['errors']:,} of {o['done']:,}"))
    paced_text = ""
    if paced:
        paced_text = f"""
Latency at a paced load: the same 50 sessions and bodies, {tp.get('open_rate')} requests/s offered in all at fixed
times (each session one request every {50 / tp.get('open_rate', 50):.0f} s), measured from each request's scheduled time
(open loop, no coordinated omission), {tp['duration']} s each:

{md_table(["config", "server", "route", "p50", "p90", "p99", "max", "errors"], paced)}
"""
    errors = []
    for text, c in tp["configs"].items():
        for line in c.get("server_errors", [])[:3]:
            errors.append(f"- `{text}` server log: `{line}`")
    error_text = ("\nExceptions in the server logs:\n\n" + "\n".join(errors) + "\n") if errors else ""
    return f"""
## Hook throughput, 50 concurrent sessions

wrk, one thread, 50 keep-alive connections; a Lua script rotates through 50 sessions (exact
links, started beforehand), each running turns of UserPromptSubmit, PreToolUse, PostToolUse,
PreToolUse, PostToolUse, Stop with nothing pending; the empty view gets the same 300 bodies.
Servers of one database run side by side: every repeat runs each server's empty view then its
hooks, {tp['repeats']} repeats × {tp['duration']} s after a warm-up; the median run is shown (errors summed over all
runs), and ratios are medians of the ratios within each repeat (groups: `{tp.get('groups', '')}`).
"CPU" is the server processes' CPU + PostgreSQL's and Redis's (the whole machine's in brackets),
100 % = one core; the machine has {r['_machine']['cores']} cores, shared by wrk, the servers, PostgreSQL and Redis. Rows with
`+experiment` are not relaybay as shipped: see bench/experiments.py.

{md_table(["config", "server", "empty view", "hook", "hook ÷ empty", "hook p50", "hook p99", "hook errors", "CPU, empty view", "CPU, hooks", "empty p99"], rows)}
{paced_text}{error_text}"""


SERVING_NOTES = {
    "relaybay": "as shipped: /api/ without the middleware chain, sync code on a database thread, its pings made on the loop before the answer",
    "no db threads": "plain Django under daphne: each request's sync code on a thread made for it",
    "full chain": "/api/ through the board's middleware chain (no `APIHandler`)",
    "waited sends": "pings handed to the loop by the database thread, which waits for each",
    "old": "the checkout given with --old",
    "gunicorn": "the JSON API under gunicorn, 2 sync workers (docs/scale-out.md)",
    "gunicorn old": "the --old checkout under gunicorn, 2 sync workers",
}


def section_serving(r):
    s = r.get("serving")
    if not s:
        return ""
    labels = ["hook, idle", "hook +comment", "empty view"]
    base = s["server_time"]["relaybay"]
    time_rows = [
        (f"`{name}`", *(f"{t[k]['median']:.2f} ms ({t[k]['median'] / base[k]['median']:.2f}×)" for k in labels), SERVING_NOTES.get(name, ""))
        for name, t in s["server_time"].items()
    ]
    tp_rows = [
        (f"`{name}`", t["label"], f"{t['cpu_ms']['hook']:.2f} ms ({t['cpu_ratio']['hook']:.2f}×)",
         f"{t['cpu_ms']['empty view']:.2f} ms ({t['cpu_ratio']['empty view']:.2f}×)",
         f"{t['hook']['rps']:.0f}/s ({t['ratio']['hook']:.2f}×)", ms(t["hook"]["p99"]), t["hook"]["errors"],
         f"{t['empty view']['rps']:.0f}/s ({t['ratio']['empty view']:.2f}×)")
        for name, t in s["throughput"].items()
    ]
    return f"""
## What relaybay's serving choices buy (bench/serving.py)

{'SQLite, in-memory layer' if s['backend'] == 'sqlite' else 'PostgreSQL + Redis'}; each variant is one server on a data folder of its own, and
each undoes one choice (bench/experiments.py), so its row is the plain alternative measured beside
relaybay in the same run. Server time: sequential keep-alive requests, interleaved round by round
over the variants (medians; × relaybay's); every hook +comment delivered its comment
({s['delivered'].get('relaybay', 0)} each) and no answer was an error ({sum(s['errors'].values())} non-200).

{md_table(["variant", "hook, idle", "hook +comment", "empty view", "what"], time_rows)}

Throughput: wrk, 50 connections rotating through 50 sessions' turns with nothing pending, each
repeat running every variant's empty view then its hooks (median; × relaybay's within each
repeat). The server processes' CPU time per request is the steadier figure on a shared machine:
a closed loop gets only the CPU that other work leaves it, which moves requests/s far more.

{md_table(["variant", "server", "CPU per hook", "CPU per empty view", "hooks", "hook p99", "errors", "empty view"], tp_rows)}
"""


def section_messages(r, key, title):
    m = r.get(key)
    if not m:
        return ""
    rows = [(name, ms(row["small"]["median"]), ms(row["large"]["median"]), f"{row['ratio']:.2f}×", ms(row["large"]["p90"]))
            for name, row in m["rows"].items()]
    return f"""
### {title}

{m['backend']}, {m['server']}; 1,000 sessions; {m['rounds']} interleaved rounds per size; bulk insert of
{m['stored'][1] - m['stored'][0]:,} rows took {m['bulk_insert_s']:.1f} s. Claims made: {m['claims']}; messages per page: {m['page']};
non-200 answers: {m['errors']}.

{md_table(["keep-alive request", f"{m['stored'][0]:,} stored", f"{m['stored'][1]:,} stored", "ratio", "p90 (large)"], rows)}
"""


def section_wakeup(r):
    w = r.get("wakeup")
    if not w:
        return ""
    rows = []
    for text, res in w["configs"].items():
        for name, f in res["figures"].items():
            rows.append((f"`{text}` {res['server']}", name, ms(f["median"]), ms(f["p90"])))
        rows.append((f"`{text}`", "outcomes", json.dumps(res["outcomes"]), ""))
    return f"""
## Wake-up latency

An idle session's wake-up waiter (GET /api/hooks/wait) is waiting; another session sends it a
message with POST /api/message_send; {w['wakes']} wakes per configuration, timed on the client.

{md_table(["configuration", "interval", "median", "p90"], rows)}
"""


def section_board(r):
    b = r.get("board")
    if not b:
        return ""
    rows = [(label, ms(f["in_process"][0]), ms(f["in_process"][1]), ms(f["http"][0]), ms(f["http"][1])) for label, f in b["pages"].items()]
    ping = [(name, ms(v[0]), ms(v[1])) for name, v in b["ping"].items()]
    return f"""
## Board with {b['messages']:,} messages and {b['sessions']:,} sessions (bench/board.py)

SQLite; populated in {b['populate_s']} s; {b['runs']} requests per page (median, p90); in process = Django test client,
HTTP = daphne on loopback with the owner's session cookie. Target ≤ 150 ms.

{md_table(["page", "in process", "p90", "over HTTP", "p90"], rows)}

Refresh ping in Chromium with /messages/ open, {b['sends']} sends (target: send → refetched ≤ 300 ms):

{md_table(["interval", "median", "p90"], ping)}
"""


def section_profiles(r):
    parts = []
    for key, title in (("profile_gil", "hook load, CPU (py-spy --gil)"), ("profile_wall", "hook load, wall clock of every thread (py-spy --idle)"),
                       ("profile_empty", "empty-view load, CPU (py-spy --gil)")):
        p = r.get(key)
        if not p:
            continue
        buckets = [(f"{share:.1%}", label.strip()) for label, share in p["buckets"] if share >= 0.005]
        top = [(f"{share:.1%}", f"`{frame}`") for frame, share in p["top_self"][:12]]
        parts.append(f"""
### {title}

{p['rps']:.0f} requests/s during the profile, {p['samples']:,} samples.

{md_table(["inclusive", "frames under"], buckets)}

{md_table(["self", "frame"], top)}
""")
    return "\n## Profiles of one daphne process (SQLite)\n" + "".join(parts) if parts else ""


def render_table(r, quick, elapsed):
    """docs/benchmarks.md's table: what was measured against its bound, when, where, at which commit."""
    machine = r["_machine"]
    rows = summary_rows(r)
    failed = "".join(f"\n- `{name}` failed: {err}" for name, err in r.get("_failed", {}).items())
    quick_note = " **A --quick run: small sizes, not the published figures.**" if quick else ""
    return f"""{TABLE_START}
Measured by `make bench` on {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}: {machine['cores']} cores ({machine['cpu'] or 'CPU unknown'}),
{machine['code']}; SQLite {machine['sqlite']}, PostgreSQL {machine.get('postgresql', '?')}, Redis {machine.get('redis', '?')};
{elapsed / 60:.1f} minutes, load average {machine.get('load_average_at_start', '?')} at the start.{quick_note}

{md_table(["what", "measured", "bound", "met"], rows)}
{failed}
{TABLE_END}"""


def replace_table(page, table):
    """The page with the part between the markers (the markers included) replaced by `table`."""
    start, end = page.find(TABLE_START), page.find(TABLE_END)
    if start < 0 or end < start:
        raise SystemExit(f"the page has no {TABLE_START} … {TABLE_END} section to replace")
    return page[:start] + table + page[end + len(TABLE_END):]


def render_report(r, commands, notes, quick, elapsed, load):
    """The full report: every benchmark's own tables, the command lines and the machine."""
    rows = summary_rows(r)
    machine = r["_machine"]
    machine_rows = [(k.replace("_", " "), v) for k, v in machine.items()]
    machine_rows.append(("load average at the end", load))
    failed = [f"- `{name}` failed: {err}" for name, err in r.get("_failed", {}).items()]
    loads = r.get("_loads", {})
    cmd_lines = "\n".join(
        f"    {c}" + (f"    # {loads[c][2]:.0f} s; load average {loads[c][0]:.2f} → {loads[c][1]:.2f}" if c in loads else "")
        for c in commands
    )
    return f"""# relaybay benchmarks: the full report

Written by `bench/run_all.py` on {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')} in {elapsed / 60:.1f} minutes{' — **--quick run: small sizes, not the published figures**' if quick else ''}.
Every figure is measured on this machine in one run, side by side with its reference; medians
unless marked. The scripts print figures and ratios and assert nothing; a bound that is not
met is reported here with by how much. Re-run one benchmark alone with its command below.

## Against the bounds

{md_table(["what", "measured", "bound", "met"], rows)}
{chr(10).join(failed)}

## Machine

{md_table(["", ""], machine_rows)}

Servers run on throwaway data folders (SQLite in WAL mode as `make run` uses it) or on a fresh
PostgreSQL database each, with Redis database 13 as the channel layer; daphne is started the way
`make run` starts it (access log on), through the benchmark-only module `bench/empty_asgi.py`,
which adds `POST /bench/empty` (an empty django-ninja view with relaybay's bearer auth, `def`),
`/bench/empty_async` (the same, `async def`) and `/bench/bare` (a bare ASGI answer before Django)
next to relaybay's own routes. Several daphne processes listen on one port, each on its own
SO_REUSEPORT socket (`daphne --fd`): the kernel spreads connections evenly. (A single socket shared
by all processes balances badly: the process that wakes first accepts a whole burst of wrk's
keep-alive connections, and a "2-process" run used one core's worth of CPU.)

## Commands

Each line: how long it took, and the machine's 1-minute load average when it started and ended.
The benchmarks themselves keep it around 1–3; `run_all.py` first waits (up to --wait-quiet seconds)
for it to fall below 1, since other work on these 2 cores, such as a test suite, slows every figure.

{cmd_lines}

Servers: {notes['servers']}

wrk: `{notes['wrk']}`
{section_hook_latency(r, 'hook_latency', 'Hook server time and the hook clients (SQLite)').replace('### ', '## ', 1)}
{section_hook_latency(r, 'hook_latency_pg', 'Hook server time and the hook clients (PostgreSQL + Redis)')}
{section_queries(r)}
{section_throughput(r)}
{section_serving(r)}
## messages_list and the delivery claim at 1k and 1M stored messages
{section_messages(r, 'messages_sqlite', 'SQLite')}
{section_messages(r, 'messages_pg', 'PostgreSQL')}
{section_wakeup(r)}
{section_board(r)}
{section_profiles(r)}
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", help="comma-separated benchmark names (" + ", ".join(n for n, *_ in plan(False)) + ")")
    parser.add_argument("--out", help=f"the page whose table to replace (default {PAGE.relative_to(REPO_ROOT)}; none with --quick)")
    parser.add_argument("--results", help="keep each benchmark's JSON and the full report (report.md) in this folder")
    parser.add_argument("--wait-quiet", type=int, default=180, help="seconds to wait for a 1-minute load average below 1")
    parser.add_argument("--render-only", action="store_true", help="rewrite the page from the JSON kept in --results")
    args = parser.parse_args()
    if args.render_only:
        return render_only(args)

    started = time.monotonic()
    load, waited = wait_for_quiet(args.wait_quiet)
    print(f"load average {load:.2f} after waiting {waited:.0f} s", flush=True)
    results = {"_machine": machine_notes(), "_failed": {}, "_loads": {}}
    results["_machine"]["load_average_at_start"] = f"{load:.2f} (1 min)"
    commands = []
    only = set(args.only.split(",")) if args.only else None
    results_dir = Path(args.results) if args.results else Path(tempfile.mkdtemp(prefix="relaybay-bench-results-"))
    results_dir.mkdir(parents=True, exist_ok=True)
    for name, script, script_args in plan(args.quick):
        if only and name not in only:
            continue
        out = results_dir / f"{name}.json"
        cmd = [PY, script, *script_args, "--json", str(out)]
        shown = " ".join([".venv/bin/python", script, *script_args])
        commands.append(shown)
        print(f"\n=== {name}: {shown}  (load {os.getloadavg()[0]:.2f})", flush=True)
        t0 = time.monotonic()
        load_before = os.getloadavg()[0]
        run = subprocess.run(cmd, cwd=REPO_ROOT)
        results["_loads"][shown] = (load_before, os.getloadavg()[0], time.monotonic() - t0)
        print(f"=== {name}: {time.monotonic() - t0:.0f} s", flush=True)
        if run.returncode or not out.exists():
            results["_failed"][name] = f"exit status {run.returncode}"
            continue
        results[name] = json.loads(out.read_text())

    results["_commands"] = commands
    results["_elapsed"] = time.monotonic() - started
    results["_quick"] = args.quick
    results["_load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    (results_dir / "_run.json").write_text(json.dumps(results, indent=1))
    write_page(results, args, results_dir)
    print(f"\nDone in {results['_elapsed'] / 60:.1f} minutes (JSON and report.md in {results_dir}).")


def render_only(args):
    results = json.loads((Path(args.results) / "_run.json").read_text())
    write_page(results, args, Path(args.results))


def write_page(results, args, results_dir):
    """The full report into the results folder; the table into docs/benchmarks.md."""
    servers = set()
    for key in ("hook_latency", "throughput", "wakeup", "messages_sqlite"):
        data = results.get(key) or {}
        for c in [data, *(data.get("configs") or {}).values()]:
            if isinstance(c, dict):
                servers.update(c.get("server_commands", []))
    tp = (results.get("throughput") or {}).get("configs", {})
    wrk = next((c["hook"]["command"] for c in tp.values()), "wrk -t1 -c50 -dNs --timeout=5s -s hooks.lua URL")
    notes = {"servers": "; ".join(f"`{s}`" for s in sorted(servers)), "wrk": wrk}
    report = results_dir / "report.md"
    report.write_text(render_report(results, results["_commands"], notes, results["_quick"], results["_elapsed"], results["_load_end"]))
    print(f"Wrote the full report to {report}")
    out = Path(args.out) if args.out else None if results["_quick"] else PAGE
    if out:
        out.write_text(replace_table(out.read_text(), render_table(results, results["_quick"], results["_elapsed"])))
        print(f"Wrote the table of {out}")


if __name__ == "__main__":
    main()
