"""One hook's walk through relaybay's modules: which modules a UserPromptSubmit that carries one
owner comment passes through, and how many times each is entered.

    .venv/bin/python bench/hook_walk.py [--backend sqlite|pg] [--json FILE]

Sets Django up on a throwaway data folder (or PostgreSQL database), migrates, starts a Claude
Code session with an exact link and warms the hook path with one prompt, writes one comment,
then calls sessions_app.hooks.ingest.ingest_hook with the next UserPromptSubmit under
sys.setprofile. For each of relaybay's own modules it counts the entries (a call into the
module from another module, relaybay's or a library's) and the calls (every function frame in
it, the entries included). Prints the modules in the order the walk first enters them; asserts
nothing. Run from another checkout's folder to compare two versions of the code.
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import django_in_process, hook_payload, throwaway_dir, write_json  # noqa: E402

# relaybay's server packages: every top-level package but the client, the tests and the benchmarks.
OWN = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"relaybay_hook", "tests", "bench"}


def module_of(filename):
    """relaybay's module a code object belongs to, as a dotted name, or None for a library's."""
    try:
        relative = Path(filename).resolve().relative_to(ROOT)
    except ValueError:
        return None
    if relative.parts[0] not in OWN:
        return None
    return ".".join(relative.with_suffix("").parts).removesuffix(".__init__")


def walk(call):
    """Run `call` under a profiler: {module: [entries, calls]} in order of first entry."""
    seen = {}
    modules = {}

    def profile(frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename not in modules:
            modules[code.co_filename] = module_of(code.co_filename)
        module = modules[code.co_filename]
        if module is None:
            return
        caller = frame.f_back
        if caller is not None and caller.f_code.co_filename not in modules:
            modules[caller.f_code.co_filename] = module_of(caller.f_code.co_filename)
        counts = seen.setdefault(module, [0, 0])
        counts[1] += 1
        if caller is None or modules[caller.f_code.co_filename] != module:
            counts[0] += 1

    sys.setprofile(profile)
    try:
        answer = call()
    finally:
        sys.setprofile(None)
    return seen, answer


def run(backend_kind, data_dir):
    backend = django_in_process(backend_kind, data_dir, "relaybay_bench_walk")
    from sessions_app.actions import do_write_comment
    from sessions_app.hooks.ingest import ingest_hook
    from sessions_app.models import HookLink

    hook = "bench-walk-0001"
    ingest_hook(hook_payload("SessionStart", hook, source="startup", relaybay_session="walker"))
    ingest_hook(hook_payload("UserPromptSubmit", hook))
    ingest_hook(hook_payload("Stop", hook))
    session = HookLink.objects.get(hook_session=hook).session
    do_write_comment(session=session, body="Please also update the changelog.")
    seen, answer = walk(lambda: ingest_hook(hook_payload("UserPromptSubmit", hook)))
    backend.cleanup()
    context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
    return {
        "backend": backend_kind,
        "delivered": "changelog" in context,
        "modules": [{"module": m, "entries": e, "calls": c} for m, (e, c) in seen.items()],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "pg"], default="sqlite")
    parser.add_argument("--json")
    args = parser.parse_args()
    with throwaway_dir("walk") as tmp:
        r = run(args.backend, tmp)
    rows = r["modules"]
    print(f"one UserPromptSubmit carrying one comment, {r['backend']} (comment delivered: {r['delivered']}):")
    print(f"  {'module':<36} {'entries':>7} {'calls':>6}")
    for row in rows:
        print(f"  {row['module']:<36} {row['entries']:>7} {row['calls']:>6}")
    print(f"  {len(rows)} modules, {sum(x['entries'] for x in rows)} entries, {sum(x['calls'] for x in rows)} calls")
    write_json(args.json, r)


if __name__ == "__main__":
    main()
