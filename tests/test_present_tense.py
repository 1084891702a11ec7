"""The repository speaks of relaybay as it is: what it does, why it is built so, and the current
figures. Which change came when, which run measured what and who asked for it is history, and
history lives in git. This test reads the docs, the README, bench/ and every tracked Python
file for the marks of history (a numbered stop, run or issue, a review, a commit's hash) and
lists each file:line it finds.

One place may name a commit: the header of docs/benchmarks.md's table, between its markers,
which `make bench` writes with the commit the figures were measured at."""

import bisect
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
TABLE_START, TABLE_END = "<!-- bench:table -->", "<!-- /bench -->"

# What follows "run 3" when it counts things rather than naming an experiment's run.
COUNTED = r"process|session|time|minute|second|call|worker|server|thread|request|message|hook|row|client|test|turn|start|round|block|event|send"
PATTERNS = {
    "a numbered stop": re.compile(r"\bstop \d+", re.IGNORECASE),
    "a numbered run": re.compile(
        rf"(?<![-\w])runs? \d+(?:\s*(?:[-–,]|and)\s*\d+)*\b(?!\.\d)(?!\s*(?:{COUNTED}))", re.IGNORECASE
    ),
    "an issue": re.compile(r"\bissues? \d+", re.IGNORECASE),
    "a review": re.compile(
        r"\b(?:a|an|the|after|second|this|that|code|one|each) review(?:er|ers|s)?\b|\breview(?:er|ers)? (?:found|asked|said|mends?)\b",
        re.IGNORECASE,
    ),
}
HEX = re.compile(r"\b[0-9a-f]{7,40}\b")


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def checked_files():
    """docs/, README.md, bench/ and every tracked Python file, this test left out."""
    names = set(git("ls-files", "--", "docs", "README.md", "bench").split()) | set(git("ls-files", "--", "*.py").split())
    return sorted(name for name in names - {THIS} if (ROOT / name).is_file())


def text_lines(name):
    try:
        return (ROOT / name).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        return []  # an image


class Commits:
    """Every commit of the repository, to tell a commit's hash from any other hex word."""

    def __init__(self):
        self.hashes = sorted(git("rev-list", "--all").split())

    def __contains__(self, word):
        i = bisect.bisect_left(self.hashes, word)
        return i < len(self.hashes) and self.hashes[i].startswith(word)


def history_marks(name, lines, commits):
    found = []
    in_table = False
    for number, line in enumerate(lines, 1):
        if line.strip() == TABLE_START:
            in_table = True
        elif line.strip() == TABLE_END:
            in_table = False
        for what, pattern in PATTERNS.items():
            for match in pattern.finditer(line):
                found.append(f"{name}:{number}: {what}: {match.group(0)!r}")
        if not in_table:
            for match in HEX.finditer(line):
                if match.group(0) in commits:
                    found.append(f"{name}:{number}: a commit: {match.group(0)!r}")
    return found


def test_the_repository_speaks_in_the_present_tense():
    commits = Commits()
    found = [mark for name in checked_files() for mark in history_marks(name, text_lines(name), commits)]
    assert not found, "History belongs in git; say what is true now and why:\n" + "\n".join(found)


def test_the_patterns_catch_history_and_leave_counts_alone():
    commits = Commits()
    head = git("rev-parse", "--short", "HEAD").strip()
    history = [
        "### Stop 27: the ack compiled",
        "Run 29 (on a new machine) gave 2.17x",
        "in runs 39-41 the send took 2.0x",
        "runs 30–32",
        "as measured in run 41.",
        "before issue 13",
        "the review at the end of the stop took it back out",
        "A reviewer found one reader the suite did not run",
        f"(at commit {head})",
    ]
    present = [
        "run 3 processes on one database",
        ".venv/bin/python bench/hook_queries.py --runs 300",
        "each case runs 20 calls in a block",
        "a ratio of 1.5 in a run 1.5x as long",
        "Can you review the parser change?",
        'named_session("Alpha Reviewer")',
        "At most 3 Stop blocks per turn",
        "a token like deadbeefcafe0000",
    ]
    assert all(history_marks("x", [line], commits) for line in history), [
        line for line in history if not history_marks("x", [line], commits)
    ]
    assert not any(history_marks("x", [line], commits) for line in present), [
        mark for line in present for mark in history_marks("x", [line], commits)
    ]
    table = [TABLE_START, f"Measured at commit {head}.", TABLE_END, f"commit {head}"]
    assert history_marks("x", table, commits) == [f"x:4: a commit: {head!r}"]


def test_the_mcp_page_says_what_is_in_under_250_lines():
    # How the MCP server works, how identity is proven, what happens when relaybay is down and
    # why the hot paths look as they do: a page for users and maintainers, not a log.
    lines = (ROOT / "docs" / "mcp.md").read_text().splitlines()
    assert len(lines) < 250, len(lines)
