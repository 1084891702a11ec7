"""What one hook event costs each CLI: the command-hook client run as each CLI relaybay knows
(engines/) runs it, one process per event, against relaybay (one daphne, SQLite).

    .venv/bin/python bench/engine_hooks.py [--rounds 60]

Each CLI's events are named as its engine declares (engines/): the prompt's event, the events
around one tool call and the turn's end, for a session with an exact link and nothing pending,
through the hook command `manage.py connect` writes for it (`--engine NAME` but for Claude
Code's). The runs are interleaved round by round, beside `python3 -S -c pass`, so load from
other work hits every case alike. Prints medians and ratios; asserts nothing.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import engines  # noqa: E402
from bench.harness import real_python3  # noqa: E402
from tests.devserver import Server  # noqa: E402

CLIENT = ROOT / "bin" / "relaybay-hook"
TOOL = {"tool_name": "run", "tool_input": {"command": "ls"}, "tool_use_id": "call_1", "turn_id": "t1"}
# One turn with one tool call, by relaybay's names for its events, with their fields.
TURN = [
    ("UserPromptSubmit", {"prompt": "go", "turn_id": "t1"}),
    ("PreToolUse", TOOL),
    ("PostToolUse", {**TOOL, "tool_response": "x"}),
    ("Stop", {"turn_id": "t1", "stop_hook_active": False}),
]


def turns():
    """Per CLI: its hook command's arguments, and its names for the turn's events with their fields."""
    for engine in engines.ENGINES:
        default = engine is engines.DEFAULT
        flag = [] if default else ["--engine", engine.name]
        # Claude Code's connection hooks PostToolUse only for SendMessage (the plugin's matcher).
        turn = [(event, fields) for event, fields in TURN if not (default and event == "PostToolUse")]
        events = [(engine.name_of(event), fields) for event, fields in turn if engine.name_of(event)]
        yield engine.label, flag, events


def run(python, args, payload, env):
    started = time.perf_counter()
    subprocess.run([python, "-S", *args], input=payload, env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=60)
    options = parser.parse_args()
    python = real_python3()
    with tempfile.TemporaryDirectory(prefix="relaybay-bench-") as folder:
        server = Server(Path(folder) / "data", token="bench-token", env={}).start()
        try:
            env = {"RELAYBAY_URL": server.url, "RELAYBAY_TOKEN": server.token, "RELAYBAY_SPOOL": f"{folder}/spool.jsonl", "HOME": folder}
            cases = {"python3 -S -c pass": [(["-c", "pass"], b"")]}
            for cli, flag, events in turns():
                session = f"bench-{cli.split()[0].lower()}"
                args = [str(CLIENT), *flag]
                start = {"hook_event_name": "SessionStart", "session_id": session, "cwd": f"{folder}/{session}", "source": "startup"}
                run(python, args, json.dumps(start).encode(), env)
                for event, fields in events:
                    payload = {"session_id": session, "hook_event_name": event, "cwd": f"{folder}/{session}", **fields}
                    cases.setdefault(f"{cli} {event}", []).append((args, json.dumps(payload).encode()))
            times = {case: [] for case in cases}
            for _ in range(options.rounds):
                for case, runs in cases.items():
                    for args, payload in runs:
                        times[case].append(run(python, args, payload, env))
        finally:
            server.stop()
    floor = statistics.median(times["python3 -S -c pass"])
    print(f"{'event':34} {'median ms':>10} {'x python3 -S':>13}")
    for case, measured in times.items():
        median = statistics.median(measured)
        print(f"{case:34} {median:10.1f} {median / floor:13.2f}")
    for cli, _, events in turns():
        total = sum(statistics.median(times[f"{cli} {event}"]) for event, _ in events)
        print(f"{cli}: {len(events)} hook processes for a turn with one tool call, {total:.1f} ms in all")


if __name__ == "__main__":
    main()
