"""One `claude -p` turn under relaybay's full default config beside the same turn without it.

    .venv/bin/python bench/p_turn.py [--runs 8]

The real Claude Code CLI (the pinned npm package) against the scripted model server, one
relaybay (daphne, SQLite) on a throwaway data folder. Cases, run interleaved turn by turn so
load from other work hits all alike:
  bare          `claude -p` with no relaybay settings at all
  hooks         `--settings FILE` (every hook event and the wake-up hook, `claude_config`'s default)
  hooks + MCP   `--settings FILE --mcp-config FILE` (the README's connect command)
Each turn is one prompt answered with text: SessionStart, UserPromptSubmit, Stop (and the
wake-up hook, which returns at once in an unattended session) and SessionEnd fire. Prints
wall-time medians and the ratios to the bare turn; asserts nothing.
"""

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, Backend, Server, ratio, summary, throwaway_dir  # noqa: E402
from tests.devserver import MANAGE  # noqa: E402
# The real CLI needs the scripted model server, which lives with the end-to-end tests.
from tests.e2e.claude_cli import claude_args, claude_env  # noqa: E402
from tests.e2e.model_server import ModelServer, text  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="turns per case")
    args = parser.parse_args()

    backend = Backend("sqlite")
    with throwaway_dir("p-turn") as workdir:
        server = Server(workdir, backend)
        model = ModelServer().start()
        try:
            server.start()
            settings = Path(workdir) / "relaybay.json"
            printed = subprocess.run(
                [sys.executable, str(MANAGE), "claude_config", "--url", server.url, "--session", "bench-p-turn"],
                cwd=REPO_ROOT, env=server.env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            settings.write_text(printed.stdout)
            cases = {
                "bare": {},
                "hooks": {"settings_file": settings},
                "hooks + MCP": {"settings_file": settings, "mcp_config": settings},
            }
            project, home = Path(workdir) / "project", Path(workdir) / "home"
            project.mkdir()
            env = claude_env(model.url, home, cwd=project)
            samples = {name: [] for name in cases}
            failures = {name: 0 for name in cases}
            print(f"claude -p, {args.runs} turns per case, interleaved (+1 warm-up each) …", flush=True)
            for i in range(args.runs + 1):
                for name, files in cases.items():
                    model.add_steps(text(f"done {name} {i}"))
                    started = time.perf_counter()
                    run = subprocess.run(
                        claude_args("one turn", **files), cwd=project, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300
                    )
                    elapsed = (time.perf_counter() - started) * 1000
                    ok = run.returncode == 0 and f"done {name} {i}" in run.stdout
                    failures[name] += not ok
                    if i:
                        samples[name].append(elapsed)
        finally:
            model.stop()
            server.stop()

    stats = {name: summary(values) for name, values in samples.items()}
    bare = stats["bare"]["median"]
    print(f"\n{'case':14} {'median':>10} {'p90':>10}  × bare   failed")
    for name, s in stats.items():
        print(f"{name:14} {s['median']:8.0f}ms {s['p90']:8.0f}ms  {ratio(s['median'], bare):5.2f}×   {failures[name]}")
    print(f"full default config ÷ bare: {ratio(stats['hooks + MCP']['median'], bare):.2f}×; "
          f"hooks alone ÷ bare: {ratio(stats['hooks']['median'], bare):.2f}×")


if __name__ == "__main__":
    main()
