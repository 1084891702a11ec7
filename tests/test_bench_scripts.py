"""The benchmarks run: every script under bench/ imports, and the two that drive relaybay in
process through Django's test client (the hook's queries, the board's pages) run a small round.
What they measure is `make bench`'s; this only keeps them from breaking unseen when what they
import or the hosts relaybay answers to change."""

import json
import subprocess
import sys

import pytest

from tests.devserver import REPO_ROOT

# Their own servers on the embedded default, whatever the pass's configuration: run once.
pytestmark = pytest.mark.embedded_only

SCRIPTS = sorted(path.stem for path in (REPO_ROOT / "bench").glob("*.py") if "\ndef main(" in path.read_text())


def run(*args, timeout=180):
    return subprocess.run([sys.executable, *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)


def test_every_benchmark_script_imports():
    assert {"board", "hook_queries", "plugin_turn", "run_all"} <= set(SCRIPTS), SCRIPTS
    done = run("-c", "; ".join(f"import bench.{name}" for name in SCRIPTS))
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.parametrize(
    "script, args",
    [
        ("bench/hook_queries.py", ["--runs", "10"]),
        ("bench/board.py", ["--messages", "5000", "--sessions", "50", "--runs", "2", "--sends", "2"]),
    ],
)
def test_an_in_process_benchmark_runs_a_small_round(script, args, tmp_path):
    figures = tmp_path / "figures.json"
    done = run(script, *args, "--json", str(figures))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert figures.stat().st_size > 0


def test_the_soak_runs_a_tiny_fleet_with_its_faults_and_reports_its_windows(tmp_path):
    figures = tmp_path / "soak.json"
    done = run("bench/soak.py", "--minutes", "0.3", "--sessions", "3", "--window", "6", "--fault-every", "5", "--idle", "4",
               "--drain", "40", "--json", str(figures), timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "after the drain, by window" in done.stdout
    report = json.loads(figures.read_text())
    assert report["windows"] and report["faults"], report
    assert sum(window["stored"] for window in report["windows"]) > 0
