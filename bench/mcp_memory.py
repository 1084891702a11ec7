"""What relaybay's MCP tools cost in memory per connected session, each way a session can reach
them, with N sessions connected at once through the official MCP SDK client.

    .venv/bin/python bench/mcp_memory.py [--sessions 20] [--sdk 5] [--json out.json]

  relaybay-mcp    bin/relaybay-mcp, what `connect` and `claude_config` install: a process per
                  session (python3 -S, stdlib only) forwarding to relaybay's /mcp
  http            relaybay's /mcp connected directly: what relaybay's one server process adds
                  per connected session
  SDK stdio       `python -m mcp_server.stdio` (`manage.py mcp`): a process per session with the
                  MCP SDK (--sdk of them, 0 to leave it out: each is about 73 MB)

Each session initializes, lists the tools and makes one call (sessions_list), and stays
connected while memory is read. Per process: resident set (RSS) and proportional set (PSS,
the shared pages divided among the processes sharing them). Prints figures; asserts nothing.
"""

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, Backend, Server, code_state, machine_notes, write_json  # noqa: E402
from bench.mcp_http import Relaybay, children_matching, http_session, rss_kib, stdio_session  # noqa: E402


def pss_kib(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    return 0


async def connected(stack, connect, n):
    for _ in range(n):
        session = await stack.enter_async_context(connect())
        await session.list_tools()
        result = await session.call_tool("sessions_list", {})
        if result.is_error:
            raise RuntimeError(result.content[0].text)
    await asyncio.sleep(1.0)


async def per_process(connect, marker, n):
    """(RSS, PSS) KiB of each of the n processes `connect` starts, all connected at once."""
    async with contextlib.AsyncExitStack() as stack:
        await connected(stack, connect, n)
        pids = children_matching(marker)
        return [rss_kib(pid) for pid in pids], [pss_kib(pid) for pid in pids]


async def added_to_server(pid, connect, n):
    await asyncio.sleep(0.5)
    before = rss_kib(pid)
    async with contextlib.AsyncExitStack() as stack:
        await connected(stack, connect, n)
        after = rss_kib(pid)
    return (after - before) / n


async def measure(args, relaybay):
    home = tempfile.mkdtemp(prefix="relaybay-bench-home-")
    base_env = {"PATH": os.environ["PATH"], "HOME": home, "RELAYBAY_URL": relaybay.server.url, "RELAYBAY_TOKEN": relaybay.server.token}
    figures = {}
    forwarder = str(REPO_ROOT / "bin" / "relaybay-mcp")
    rss, pss = await per_process(lambda: stdio_session("python3", ["-S", forwarder], base_env, home), "bin/relaybay-mcp", args.sessions)
    figures["relaybay-mcp"] = {"processes": len(rss), "rss_kib": rss, "pss_kib": pss}
    figures["http"] = {"added_kib_per_session": await added_to_server(
        relaybay.server.pids[0], lambda: http_session(relaybay.mcp_url, relaybay.auth), args.sessions)}  # fmt: skip
    if args.sdk:
        env = {**base_env, "PYTHONPATH": str(REPO_ROOT)}
        rss, pss = await per_process(lambda: stdio_session(sys.executable, ["-m", "mcp_server.stdio"], env, home), "mcp_server.stdio", args.sdk)
        figures["SDK stdio"] = {"processes": len(rss), "rss_kib": rss, "pss_kib": pss}
    return figures


def report(figures, sessions):
    print(f"\nresident memory per connected session ({sessions} sessions connected at once; medians over the processes):")
    mib = 1024
    forwarder = figures["relaybay-mcp"]
    f_rss, f_pss = statistics.median(forwarder["rss_kib"]) / mib, statistics.median(forwarder["pss_kib"]) / mib
    print(f"  relaybay-mcp  RSS {f_rss:5.1f} MiB  PSS {f_pss:5.1f} MiB  (a process per session, {forwarder['processes']} running; "
          f"all of them: RSS {sum(forwarder['rss_kib']) / mib:.0f} MiB)")  # fmt: skip
    print(f"  http          {figures['http']['added_kib_per_session'] / mib:5.2f} MiB added to relaybay's one server process")
    if "SDK stdio" in figures:
        sdk = figures["SDK stdio"]
        s_rss, s_pss = statistics.median(sdk["rss_kib"]) / mib, statistics.median(sdk["pss_kib"]) / mib
        print(f"  SDK stdio     RSS {s_rss:5.1f} MiB  PSS {s_pss:5.1f} MiB  (a process per session, {sdk['processes']} running)")
        print(f"  relaybay-mcp ÷ SDK stdio: RSS {f_rss / s_rss:.2f}×, PSS {f_pss / s_pss:.2f}×; "
              f"{sessions} sessions: {sum(forwarder['rss_kib']) / mib:.0f} MiB against about {s_rss * sessions:.0f} MiB")  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--sdk", type=int, default=5, help="SDK stdio servers to start (0: none)")
    parser.add_argument("--json")
    args = parser.parse_args()
    print(machine_notes())
    print(code_state())
    with tempfile.TemporaryDirectory(prefix="relaybay-bench-memory-") as tmp:
        with Server(Path(tmp) / "relaybay", Backend("sqlite")) as server:
            figures = asyncio.run(measure(args, Relaybay(server)))
    report(figures, args.sessions)
    write_json(args.json, figures)


if __name__ == "__main__":
    main()
