"""What the edit check costs (docs/rules.md §7): a PreToolUse's server time beside the same hook on
the code without it, and the collision check among many live sessions' recent edits.

    .venv/bin/python bench/edit_collisions.py [--backend sqlite|pg] [--rounds 400] [--old REV]
        [--sessions 50] [--edits 1000] [--checks 300] [--json FILE]

Server time: three daphne processes, each on its own throwaway data folder (or PostgreSQL
database), side by side in one run, rounds rotating which is asked first, each on its own
keep-alive connection:
  new        this checkout
  check off  the committed code (HEAD, from `git archive`) with the hook's edit check taken out
             of sessions_app/hooks/ingest.py: what the check alone costs
  before     the code before edit collisions (REV's files, by default the commit before
             sessions_app/hooks/edits.py was added); the commits of other work since then are
             in both others
Every request is a Claude Code-sized PreToolUse of a session with an exact link, in a real git
checkout:
  edit   Edit of one of 100 files nobody else edits (the hook client's relaybay_tree included):
         this checkout notes the edit and finds no collision, no reservation
  bash   Bash, a tool that edits nothing
The ratios of the medians are the figures (bound: at most 1.1 for an edit).

The check: in process (Django on a throwaway database, PostgreSQL analysed after the load as
autovacuum would), `--sessions` live sessions with `--edits` recent edits each in one working
tree, and 50 reservations in force there; timed are
the collision rule (collisions.files.collisions) and the reservation rule (files.holding) for
a file no other session edited and for one every session edited, and the whole check of one
edit (collisions.edits.check_edit: both rules and the write of the edit). Bound: under 5 ms.
Prints medians and p90; asserts nothing.
"""

import argparse
import io
import json
import random
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, Backend, Client, Server, hook_payload, summary, throwaway_dir, write_json  # noqa: E402

EDIT_BOUND = 1.1
CHECK_BOUND_MS = 5.0
FILES = 100


def default_old():
    """The commit before the edit check: the parent of the one that added its hook module."""
    added = subprocess.run(
        ["git", "log", "--format=%H", "--diff-filter=A", "--", "sessions_app/hooks/edits.py"],
        cwd=REPO_ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    if not added:
        raise SystemExit("no commit adds sessions_app/hooks/edits.py: pass --old REV")
    return added[-1] + "^"


def checkout_of(rev, folder):
    """The files of commit `rev` in `folder` (git archive: no worktree is registered)."""
    archive = subprocess.run(["git", "archive", rev], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return Path(folder)


# The hook's one call of the edit check, and what "check off" puts in its place.
CHECK_CALL = "check = steps.check("
CHECK_OFF = "check = steps.NOTHING  # check off: "


def check_off(folder):
    """HEAD's files in `folder`, with the hook's edit check taken out."""
    root = checkout_of("HEAD", folder)
    ingest = root / "sessions_app" / "hooks" / "ingest.py"
    text = ingest.read_text()
    if text.count(CHECK_CALL) != 1:
        raise SystemExit(f"sessions_app/hooks/ingest.py no longer calls {CHECK_CALL!r} once: update bench/edit_collisions.py")
    ingest.write_text(text.replace(CHECK_CALL, CHECK_OFF + CHECK_CALL.replace("(", "_(")))
    return root


def git_tree(folder):
    folder.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    (folder / "src").mkdir()
    return folder.resolve()


def edit_payload(hook_session, tree, i):
    from relaybay_hook import tree as working_tree

    path = str(tree / "src" / f"module_{i % FILES}.py")
    old = "    return compute(items, key=lambda item: item.weight)\n" * 3
    payload = hook_payload(
        "PreToolUse", hook_session, cwd=str(tree), tool_name="Edit",
        tool_input={"file_path": path, "old_string": old, "new_string": old.replace("weight", "size"), "replace_all": False},
    )  # fmt: skip
    payload["relaybay_tree"] = json.loads(working_tree.report(str(tree)))
    return payload


LABELS = ("new", "check off", "before")


def server_time(backend_kind, rounds, old_rev):
    with throwaway_dir("edits") as work:
        roots = {"new": REPO_ROOT, "check off": check_off(work / "check-off-code"), "before": checkout_of(old_rev, work / "before-code")}
        tree = git_tree(work / "checkout")
        servers, clients, sessions = {}, {}, {}
        try:
            for n, (label, root) in enumerate(roots.items()):
                backend = Backend(backend_kind, pg_name=f"relaybay_bench_edits_{n}")
                backend.prepare()
                server = servers[label] = Server(work / f"server-{n}", backend, root=root)
                server.backend = backend
                server.start()
                client = clients[label] = Client(server.url, server.token)
                hook = sessions[label] = f"bench-edits-{n}"
                for payload in (
                    hook_payload("SessionStart", hook, cwd=str(tree), source="startup", relaybay_session=f"editor-{n}"),
                    hook_payload("UserPromptSubmit", hook, cwd=str(tree)),
                ):
                    status, _, _ = client.request("POST", "/api/hooks", payload)
                    assert status == 200, status
            samples = {(label, case): [] for label in servers for case in ("edit", "bash")}
            warmup = 30
            for i in range(rounds + warmup):
                order = LABELS[i % 3 :] + LABELS[: i % 3]
                for case in ("edit", "bash"):
                    for label in order:
                        hook = sessions[label]
                        payload = edit_payload(hook, tree, i) if case == "edit" else hook_payload("PreToolUse", hook, cwd=str(tree))
                        status, body, ms = clients[label].request("POST", "/api/hooks", json.dumps(payload).encode())
                        assert status == 200 and body == b"{}", (label, case, status, body[:200])
                        if i >= warmup:
                            samples[label, case].append(ms)
            return {f"{label} {case}": summary(values) for (label, case), values in samples.items()}
        finally:
            for client in clients.values():
                client.close()
            for server in servers.values():
                server.stop()
                server.backend.cleanup()


def check_cost(backend_kind, sessions, edits, checks):
    from bench.harness import django_in_process

    with throwaway_dir("edit-check") as work:
        backend = django_in_process(backend_kind, work, "relaybay_bench_edit_check")
        try:
            return _check_cost(work, sessions, edits, checks)
        finally:
            from django.db import connections

            connections.close_all()
            backend.cleanup()


def _check_cost(work, sessions, edits, checks):
    from datetime import timedelta

    from django.db import connection, transaction
    from django.utils import timezone

    from collisions import files, paths
    from core import capabilities
    from collisions import edits as edit_check
    from engines import dialect_of
    from sessions_app.hooks.ingest import ingest_hook
    from sessions_app.models import FileEdit, FileReservation, HookLink

    tree = git_tree(work / "checkout")
    now = timezone.now()
    hooks = []
    for n in range(sessions):
        hook = f"bench-check-{n}"
        ingest_hook(hook_payload("SessionStart", hook, cwd=str(tree), source="startup", relaybay_session=f"editor-{n}"))
        hooks.append(hook)
    links = {link.hook_session: link for link in HookLink.objects.filter(hook_session__in=hooks).select_related("session")}
    rows = []
    for n, hook in enumerate(hooks):
        link = links[hook]
        for k in range(edits):
            # Each session's own files, and one file every session edited (src/shared.py).
            relative = "src/shared.py" if k == 0 else f"src/s{n}/f{k}.py"
            place = paths.Place(str(tree / relative), str(tree), str(tree))
            # The measured session's own edit of the shared file is older than the others': all
            # of theirs came after it, so each is a collision.
            moment = now - timedelta(seconds=60 * 28 if (n, k) == (0, 0) else random.uniform(0, 60 * 25))
            rows.append(FileEdit(session_id=link.session_id, path_key=place.path_key, file_key=place.file_key, path=place.path, root=place.root,
                                 repository=place.repository, hook_session=hook, tool="Edit", first_at=moment, last_at=moment))
    FileEdit.objects.bulk_create(rows, batch_size=2000)
    if capabilities.of(connection).plans_by_statistics:
        # As autovacuum would soon after such a load: without statistics PostgreSQL plans the
        # lookup by file as a walk of every live session's edits. SQLite gets none, as a running
        # relaybay has none.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    FileReservation.objects.bulk_create(
        [FileReservation(session_id=links[hooks[n % sessions]].session_id, root=str(tree), pattern=f"docs/part{n}/**", exclusive=True,
                         created_at=now, expires_at=now + timedelta(hours=1)) for n in range(50)]
    )  # fmt: skip
    me = links[hooks[0]]
    lonely = paths.place_of(str(tree / "src" / "nobody.py"), str(tree))
    shared = paths.place_of(str(tree / "src" / "shared.py"), str(tree))
    assert len(files.collisions(shared, me.session_id, timezone.now()).same_file) == sessions - 1
    assert not files.collisions(lonely, me.session_id, timezone.now()).same_file
    cases = {
        "collision rule, a file nobody else edited": lambda: files.collisions(lonely, me.session_id, timezone.now()),
        f"collision rule, a file {sessions - 1} others edited": lambda: files.collisions(shared, me.session_id, timezone.now()),
        "reservation rule (50 in force in the tree)": lambda: files.holding(lonely, me.session_id, timezone.now()),
    }
    payload = edit_payload(me.hook_session, tree, 0)
    payload["tool_input"]["file_path"] = str(tree / "src" / "nobody.py")
    dialect = dialect_of(payload)

    def whole_check():
        with transaction.atomic():
            edit_check.check_edit(me, dialect, payload, timezone.now())
            transaction.set_rollback(True)  # the same edit stays "nobody else's" every time

    cases["the whole check of one edit (both rules, the edit written)"] = whole_check
    for case in cases.values():
        for _ in range(20):
            case()
    samples = {name: [] for name in cases}
    for _ in range(checks):
        for name, case in cases.items():
            started = time.perf_counter()
            case()
            samples[name].append((time.perf_counter() - started) * 1000)
    return {"stored edits": FileEdit.objects.count(), **{name: summary(values) for name, values in samples.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--old", help="the code without the edit check (default: the commit before it)")
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--checks", type=int, default=300)
    parser.add_argument("--json")
    args = parser.parse_args()
    old = args.old or default_old()
    print(f"server time, {args.backend}, {args.rounds} rounds; before: {old} …", flush=True)
    timed = server_time(args.backend, args.rounds, old)
    for name, figures in timed.items():
        print(f"  {name:15} median {figures['median']:.2f} ms  p90 {figures['p90']:.2f} ms")
    ratios = {
        f"{case} ÷ {reference}": timed[f"new {case}"]["median"] / timed[f"{reference} {case}"]["median"]
        for case in ("edit", "bash")
        for reference in ("check off", "before")
    }
    for name, ratio in ratios.items():
        bound = f" (bound ≤ {EDIT_BOUND}: {'met' if ratio <= EDIT_BOUND else 'not met'})" if name.startswith("edit") else ""
        print(f"  PreToolUse {name}: {ratio:.3f}×{bound}")
    print(f"collision check, {args.backend}, {args.sessions} live sessions × {args.edits} recent edits …", flush=True)
    checked = check_cost(args.backend, args.sessions, args.edits, args.checks)
    for name, figures in checked.items():
        if isinstance(figures, dict):
            bound = f"  (bound < {CHECK_BOUND_MS} ms: {'met' if figures['median'] < CHECK_BOUND_MS else 'not met'})" if name.startswith("collision rule") else ""
            print(f"  {name}: median {figures['median']:.3f} ms  p90 {figures['p90']:.3f} ms{bound}")
        else:
            print(f"  {name}: {figures}")
    write_json(
        args.json,
        {"backend": args.backend, "old": old, "rounds": args.rounds, "sessions": args.sessions, "edits": args.edits, "server_time": timed, "ratios": ratios, "check": checked},
    )


if __name__ == "__main__":
    main()
