"""relaybay's MCP server over streamable HTTP beside MCP Agent Mail 0.1.0 and relaybay's stdio
server (this checkout's, and with --old another commit's), all through the official MCP SDK client.

    .venv/bin/python bench/mcp_http.py [--agentmail-python /tmp/agentmail-venv/bin/python]
        [--old REV] [--rounds 8] [--block 20] [--beside EXPERIMENT [--http-only]] [--json out.json]

Servers, on loopback:
  relaybay http    daphne on bench.empty_asgi (relaybay as `make run` serves it, embedded SQLite),
                   /mcp as shipped; /bench/mcp is an MCP server with one empty tool served the
                   same way: the framework's floor for a call
  relaybay-mcp     `python3 -S bin/relaybay-mcp`, what `connect` and `claude_config` install: the
                   local forwarder a session starts, passing its MCP messages to /mcp
  relaybay stdio   `python -m mcp_server.stdio` (`manage.py mcp`), the SDK's stdio server, a
                   client of the same relaybay's JSON API
  old stdio        with --old REV: `manage.py mcp` of that commit (a git worktree of it), beside
                   this checkout's stdio server
  Agent Mail       `python -m mcp_agent_mail.cli serve-http` from its own virtualenv (PyPI
                   `mcp-agent-mail` 0.1.0: pip install it there), default SQLite storage, in a
                   throwaway folder, LITELLM_LOCAL_MODEL_COST_MAP=True so it does not reach out

Figures, each case in interleaved blocks of --block calls so load from other work on the
machine hits every case alike:
  message_send     one message, verified (relaybay: the process proof over http, hook_session
                   over stdio; rotating over 20 senders to stay under 10 sends a minute each);
                   Agent Mail: send_message
  messages_list    20 messages with bodies (Agent Mail: fetch_inbox limit 20, include_bodies)
  empty tool       relaybay's floor (/bench/mcp); Agent Mail's lightest tool (health_check)
  relaybay's other tools, over http only, against the same floor: message_ack (a sender with
                   no mail), session_link (a sender to its own name, already exact),
                   sessions_list (every row the run made) and message_broadcast (to the 3
                   live sessions of a folder; they take their mail in after each block)
  empty tool, list's size  the floor's server answering, as sessions_list does, with as many
                   made-up rows as sessions_list returns: what the answer's size costs
  connect          from nothing to the first answer: a new client (http: new HTTP client and
                   connection; stdio: the process start), initialize, tools/list, one call
  memory           resident memory added per connected session: 20 more SDK sessions
                   connected (one call each) against the server's RSS; stdio: each process's RSS
--beside EXPERIMENT starts a second relaybay server with BENCH_EXPERIMENT=EXPERIMENT
(bench/experiments.py), seeded alike, and interleaves its http calls and its own empty tool
with the others: what a serving choice buys, each server against its own floor. With
--http-only the stdio servers and Agent Mail are left out, so the two servers get the same
calls (the stdio servers' calls go to the first one's database); its blocks are 1.5 s apart,
so each of the 20 senders stays under 10 sends a minute without the other cases between.

Prints medians, p90 and ratios; asserts nothing.
"""

import argparse
import asyncio
import contextlib
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench.harness import REPO_ROOT, Backend, Server, code_state, fmt_ms, machine_notes, ratio, summary, write_json  # noqa: E402
from relaybay_hook.proof import PROCESS_HEADER, process_proof  # noqa: E402
from tests.devserver import free_port  # noqa: E402

SENDERS = 20
FORWARDER = "relaybay-mcp"
SESSIONS_LIST = "sessions_list (all)"
ROWS_ANSWER = "empty tool, list's size"
BROADCAST_TO = 3
BROADCAST = f"message_broadcast ({BROADCAST_TO})"
GROUP_FOLDER = "/work/group"
EXTRA_SESSIONS = 20
BODY = "Please rebase onto main and run the tests touched by the hook change; reply when done."


def numbered(n):
    """Each send's own text: the same text to the same recipient within 30 s is relaybay's
    duplicate, answered without writing a message; every send here writes one."""
    return f"{BODY} (send {n})"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def children_matching(text):
    """Pids of this process's children whose command line holds `text`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            stat = (proc / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == os.getpid() and text in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                found.append(int(proc.name))
    return found


@contextlib.asynccontextmanager
async def http_session(url, headers=None):
    async with httpx2.AsyncClient(headers=headers or {}, timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@contextlib.asynccontextmanager
async def stdio_session(command, args, env, cwd):
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def listed(session):
    """A session that has listed the server's tools, as Claude Code lists them when it connects.
    The SDK's client lists them on a session's first call otherwise (to validate results), and
    that round trip would be timed with the first call of each of the rotating senders."""
    await session.list_tools()
    return session


async def call(session, tool, args):
    started = time.perf_counter()
    result = await session.call_tool(tool, args)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text}")
    return elapsed


# --- relaybay ---------------------------------------------------------------------------------


class Relaybay:
    """The relaybay server, its named sessions (each a hook session with a process proof)."""

    def __init__(self, server):
        self.server = server
        self.http = httpx2.Client(timeout=30)
        self.mcp_url = f"{server.url}/mcp"
        self.auth = {"Authorization": f"Bearer {server.token}"}
        self.tag = secrets.token_hex(3)

    def start_session(self, name, cwd="/work/p", messaging_token=None):
        """A Claude Code session named `name` starts; its hook carries its process's proof."""
        proof = {PROCESS_HEADER: process_proof(messaging_token or secrets.token_hex(16))}
        payload = {"hook_event_name": "SessionStart", "session_id": f"hook-{name}", "source": "startup", "cwd": cwd, "relaybay_session": name}
        answer = self.http.post(f"{self.server.url}/api/hooks", json=payload, headers={**self.auth, **proof})
        answer.raise_for_status()
        return proof

    def seed(self):
        """Two recipients: one whose 20 waiting messages (from 20 sessions) messages_list returns,
        every status worked out, listed by the recipient itself (its process's messaging token:
        its mail is its own, docs/rules.md §4.4); and the inbox the sends go to, which takes its
        mail in after each block (take_in), as a working session does, so it stays under the
        unread cap (50 undelivered messages per recipient)."""
        self.recipient = f"recipient-{self.tag}"
        self.inbox = f"inbox-{self.tag}"
        self.recipient_token = secrets.token_hex(16)
        self.recipient_proof = self.start_session(self.recipient, messaging_token=self.recipient_token)
        self.start_session(self.inbox)
        # The three live sessions of a folder of their own, which each broadcast reaches.
        self.group = [f"group-{i}-{self.tag}" for i in range(BROADCAST_TO)]
        for name in self.group:
            self.start_session(name, cwd=GROUP_FOLDER)
        # Each from a session of its own: a sender's budget is 10 sends a minute.
        for i in range(20):
            seed = f"seed-{i}-{self.tag}"
            self.start_session(seed)
            answer = self.http.post(
                f"{self.server.url}/api/message_send",
                json={"body": f"{BODY} ({i})", "to": self.recipient, "session": seed, "hook_session": f"hook-{seed}"},
                headers=self.auth,
            )
            answer.raise_for_status()

    def take_in(self):
        """The inbox's and the folder's sessions' prompts carry their waiting messages into
        their context, until none wait."""
        for name, cwd in [(self.inbox, "/work/p")] + [(name, GROUP_FOLDER) for name in self.group]:
            payload = {"hook_event_name": "UserPromptSubmit", "session_id": f"hook-{name}", "prompt": "go on", "cwd": cwd}
            for _ in range(100):
                answer = self.http.post(f"{self.server.url}/api/hooks", json=payload, headers=self.auth)
                answer.raise_for_status()
                if not answer.json():
                    break
            else:
                raise RuntimeError(f"{name}'s messages were not all delivered")


class RelaybayHTTP:
    def __init__(self, relaybay, label="relaybay http"):
        self.r = relaybay
        self.label = label
        self.turn = 0

    async def __aenter__(self):
        self.stack = contextlib.AsyncExitStack()
        await self.stack.__aenter__()
        proofs = [self.r.start_session(self.sender_name(i)) for i in range(SENDERS)]
        self.senders = [await listed(await self.stack.enter_async_context(http_session(self.r.mcp_url, {**self.r.auth, **p}))) for p in proofs]
        self.reader = await listed(await self.stack.enter_async_context(self.connect()))
        self.floor = await listed(await self.stack.enter_async_context(http_session(f"{self.r.server.url}/bench/mcp", self.r.auth)))
        return self

    async def __aexit__(self, *exc):
        await self.stack.__aexit__(*exc)

    async def send(self):
        self.turn += 1
        session = self.senders[self.turn % SENDERS]
        return await call(session, "message_send", {"body": numbered(self.turn), "to": self.r.inbox})

    async def list(self):
        return await call(self.reader, "messages_list", {"session": self.r.recipient, "limit": 20})

    async def empty(self):
        return await call(self.floor, "empty", {})

    async def ack(self):
        """A sender marks its mail read (it has none: the ack rule's proof and the lookup)."""
        self.turn += 1
        return await call(self.senders[self.turn % SENDERS], "message_ack", {"session": self.sender_name(self.turn)})

    async def link(self):
        """A sender links itself to its own name again (already exact: nothing moves)."""
        self.turn += 1
        return await call(self.senders[self.turn % SENDERS], "session_link", {"session": self.sender_name(self.turn)})

    async def sessions(self):
        return await call(self.reader, "sessions_list", {})

    async def broadcast(self):
        """A sender writes to the live sessions of the group's folder: one message each."""
        self.turn += 1
        args = {"body": numbered(self.turn), "folder": GROUP_FOLDER, "session": self.sender_name(self.turn)}
        return await call(self.senders[self.turn % SENDERS], "message_broadcast", args)

    async def rows_answer(self):
        """The empty tool's server answering with as many rows as sessions_list gives, made up:
        what the size of that answer costs, with none of the work."""
        return await call(self.floor, "rows", {"count": self.rows})

    async def sessions_listed(self):
        """How many rows sessions_list returns: every session the run made."""
        result = await self.reader.call_tool("sessions_list", {})
        return len(json.loads(result.content[0].text)["sessions"])

    def sender_name(self, turn):
        return f"http-sender-{turn % SENDERS}-{self.r.tag}"

    def connect(self):
        """A connection of the recipient's own Claude Code process: it lists its own mail."""
        return http_session(self.r.mcp_url, {**self.r.auth, **self.r.recipient_proof})

    first_call = ("messages_list", None)


class RelaybayStdio:
    def __init__(self, relaybay, label, command, args, cwd, extra_env=None):
        self.r = relaybay
        self.label = label
        self.command, self.args, self.cwd = command, args, cwd
        # Started by the recipient's Claude Code process: its proof lists the recipient's mail; the
        # sends name each sender's hook_session.
        self.env = {
            "PATH": os.environ["PATH"],
            "RELAYBAY_URL": relaybay.server.url,
            "RELAYBAY_TOKEN": relaybay.server.token,
            "CLAUDE_CODE_MESSAGING_TOKEN": relaybay.recipient_token,
            **(extra_env or {}),
        }
        self.turn = 0

    async def __aenter__(self):
        self.stack = contextlib.AsyncExitStack()
        await self.stack.__aenter__()
        self.senders = [f"{self.label.replace(' ', '-')}-sender-{i}-{self.r.tag}" for i in range(SENDERS)]
        for name in self.senders:
            self.r.start_session(name)
        self.session = await listed(await self.stack.enter_async_context(self.connect()))
        return self

    async def __aexit__(self, *exc):
        await self.stack.__aexit__(*exc)

    def connect(self):
        return stdio_session(self.command, self.args, self.env, self.cwd)

    async def send(self):
        self.turn += 1
        name = self.senders[self.turn % SENDERS]
        return await call(self.session, "message_send", {"body": numbered(self.turn), "to": self.r.inbox, "session": name, "hook_session": f"hook-{name}"})

    async def list(self):
        return await call(self.session, "messages_list", {"session": self.r.recipient, "limit": 20})


# --- Agent Mail -------------------------------------------------------------------------------


class AgentMail:
    label = "Agent Mail"
    turn = 0

    def __init__(self, python, folder):
        self.python = python
        self.folder = Path(folder)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp/"
        self.process = None

    def start(self):
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.folder),
            "STORAGE_ROOT": str(self.folder / "mailbox"),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        self.log = open(self.folder / "agentmail.log", "wb")  # noqa: SIM115 - kept open for the child's lifetime
        self.process = subprocess.Popen(
            [self.python, "-m", "mcp_agent_mail.cli", "serve-http", "--port", str(self.port)],
            cwd=self.folder, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Agent Mail exited:\n{(self.folder / 'agentmail.log').read_text()[-3000:]}")
            with contextlib.suppress(httpx2.HTTPError):
                httpx2.get(f"http://127.0.0.1:{self.port}/health/liveness", timeout=2)
                return self
            time.sleep(0.3)
        raise RuntimeError("Agent Mail did not come up")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()

    async def __aenter__(self):
        self.stack = contextlib.AsyncExitStack()
        await self.stack.__aenter__()
        self.session = await listed(await self.stack.enter_async_context(http_session(self.url)))
        self.project = str(self.folder / "project")
        await call(self.session, "ensure_project", {"human_key": self.project})
        names = []
        for _ in range(2):
            result = await self.session.call_tool("register_agent", {"project_key": self.project, "program": "claude-code", "model": "bench"})
            names.append(result.structured_content.get("name") if result.structured_content else None)
        self.sender, self.recipient = names
        for i in range(20):
            await self.send_body(f"{BODY} ({i})")
        return self

    async def __aexit__(self, *exc):
        await self.stack.__aexit__(*exc)

    async def send_body(self, body):
        args = {"project_key": self.project, "sender_name": self.sender, "to": [self.recipient], "subject": "rebase", "body_md": body}
        return await call(self.session, "send_message", args)

    async def send(self):
        self.turn += 1
        return await self.send_body(numbered(self.turn))

    async def list(self):
        return await call(self.session, "fetch_inbox", {"project_key": self.project, "agent_name": self.recipient, "limit": 20, "include_bodies": True})

    async def empty(self):
        return await call(self.session, "health_check", {})

    def connect(self):
        return http_session(self.url)


# --- measuring --------------------------------------------------------------------------------


async def timed_connect(target, tool, args):
    started = time.perf_counter()
    async with target.connect() as session:
        await session.list_tools()
        result = await session.call_tool(tool, args)
        elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text}")
    return elapsed


async def added_rss_per_session(pid, connect, first_call):
    """KiB of resident memory the server holds per connected session (20 connected, one call each)."""
    await asyncio.sleep(0.5)
    before = rss_kib(pid)
    async with contextlib.AsyncExitStack() as stack:
        for _ in range(EXTRA_SESSIONS):
            session = await stack.enter_async_context(connect())
            await first_call(session)
        await asyncio.sleep(0.5)
        after = rss_kib(pid)
    return (after - before) / EXTRA_SESSIONS


HTTP_OPS = ("message_send", "messages_list (20)", "message_ack", "session_link", SESSIONS_LIST, BROADCAST, "empty tool")


def http_cases(http):
    return dict(
        zip(
            [(op, http.label) for op in HTTP_OPS],
            [http.send, http.list, http.ack, http.link, http.sessions, http.broadcast, http.empty],
            strict=True,
        )
    )


async def measure(args, relaybay, agentmail, old_dir, beside=None):
    http = RelaybayHTTP(relaybay)
    other = RelaybayHTTP(beside, f"http {args.beside}") if beside else None
    forwarder = RelaybayStdio(relaybay, FORWARDER, "python3", ["-S", str(REPO_ROOT / "bin" / "relaybay-mcp")], tempfile.gettempdir(), {"HOME": tempfile.mkdtemp(prefix="relaybay-bench-home-")})
    new_stdio = RelaybayStdio(relaybay, "relaybay stdio", sys.executable, ["-m", "mcp_server.stdio"], tempfile.gettempdir(), {"PYTHONPATH": str(REPO_ROOT)})
    data = Path(tempfile.mkdtemp(prefix="relaybay-bench-old-stdio-"))
    old_stdio = None
    if old_dir:
        old_stdio = RelaybayStdio(relaybay, "old stdio", sys.executable, [str(old_dir / "manage.py"), "mcp"], old_dir, {"RELAYBAY_DATA": str(data)})
    samples = {}
    async with contextlib.AsyncExitStack() as stack:
        for server in (http, other) if args.http_only else (http, forwarder, new_stdio, old_stdio, agentmail, other):
            if server is not None:
                await stack.enter_async_context(server)
        cases = {**http_cases(http), **(http_cases(other) if other else {})}
        http.rows = await http.sessions_listed()
        cases[(ROWS_ANSWER, http.label)] = http.rows_answer
        if not args.http_only:
            cases |= {
                ("message_send", forwarder.label): forwarder.send,
                ("messages_list (20)", forwarder.label): forwarder.list,
                ("message_send", new_stdio.label): new_stdio.send,
                ("message_send", agentmail.label): agentmail.send,
                ("messages_list (20)", new_stdio.label): new_stdio.list,
                ("messages_list (20)", agentmail.label): agentmail.list,
                ("health_check", agentmail.label): agentmail.empty,
            }
            if old_stdio:
                cases |= {("message_send", old_stdio.label): old_stdio.send, ("messages_list (20)", old_stdio.label): old_stdio.list}
        connects = {} if args.http_only else {
            http.label: lambda: timed_connect(http, "messages_list", {"session": relaybay.recipient, "limit": 1}),
            forwarder.label: lambda: timed_connect(forwarder, "messages_list", {"session": relaybay.recipient, "limit": 1}),
            new_stdio.label: lambda: timed_connect(new_stdio, "messages_list", {"session": relaybay.recipient, "limit": 1}),
            agentmail.label: lambda: timed_connect(agentmail, "health_check", {}),
        }
        if old_stdio and not args.http_only:
            connects[old_stdio.label] = lambda: timed_connect(old_stdio, "messages_list", {"session": relaybay.recipient, "limit": 1})
        for fn in cases.values():  # warm-up, untimed
            for _ in range(3):
                await fn()
        relaybay.take_in()
        if beside:
            beside.take_in()
        rng = random.Random(13)
        for _round in range(args.rounds):
            order = list(cases.items())
            rng.shuffle(order)
            for key, fn in order:
                for _ in range(args.block):
                    samples.setdefault(key, []).append(await fn())
                if key[0] in ("message_send", BROADCAST) and key[1] != AgentMail.label:
                    (beside if other and key[1] == other.label else relaybay).take_in()  # untimed
                # Each block starts with every server done with the last one's work (Agent
                # Mail goes on writing its git archive after it answers a send).
                await asyncio.sleep(args.settle)
            # Connecting: a few per round, also interleaved (stdio starts are slow: fewer).
            corder = list(connects.items())
            rng.shuffle(corder)
            for label, fn in corder:
                for _ in range(2):
                    samples.setdefault(("connect to first answer", label), []).append(await fn())
        rows_listed = await http.sessions_listed()
        memory = {} if args.http_only else {
            http.label: await added_rss_per_session(
                relaybay.server.pids[0], http.connect, lambda s: s.call_tool("messages_list", {"session": relaybay.recipient, "limit": 1})
            ),
            agentmail.label: await added_rss_per_session(agentmail.process.pid, agentmail.connect, lambda s: s.call_tool("health_check", {})),
            forwarder.label: sum(rss_kib(pid) for pid in children_matching("bin/relaybay-mcp")),
            new_stdio.label: sum(rss_kib(pid) for pid in children_matching("mcp_server.stdio")),
        }
        if old_stdio and not args.http_only:
            memory[old_stdio.label] = sum(rss_kib(pid) for pid in children_matching("manage.py mcp"))
    shutil.rmtree(data, ignore_errors=True)
    return samples, memory, rows_listed


def print_beside(med, label):
    """The experiment's server beside the shipped one: each against its own empty tool."""
    http = "relaybay http"
    print(f"\n{label} beside relaybay http (each ÷ its own empty tool; the experiment ÷ shipped):")
    for op in HTTP_OPS[:-1]:
        shipped, tried = ratio(med[(op, http)], med[("empty tool", http)]), ratio(med[(op, label)], med[("empty tool", label)])
        print(f"  {op:22} shipped {shipped:.2f}×  {label} {tried:.2f}×  {label} ÷ shipped {ratio(med[(op, label)], med[(op, http)]):.3f}")


def print_report(samples, memory, rows_listed, beside_label=None, http_only=False):
    stats = {key: summary(values) for key, values in samples.items()}
    med = {key: value["median"] for key, value in stats.items()}
    print(f"\n{'call':22} {'server':16} {'median':>10} {'p90':>10} {'n':>5}")
    for (op, label), s in stats.items():
        print(f"{op:22} {label:16} {fmt_ms(s['median']):>10} {fmt_ms(s['p90']):>10} {s['n']:>5}")
    if http_only:
        print_beside(med, beside_label)
        return stats
    http, stdio, old, am = "relaybay http", "relaybay stdio", "old stdio", "Agent Mail"
    floor = med[("empty tool", http)]
    print("\nratios (medians):")
    for op in ("message_send", "messages_list (20)"):
        print(
            f"  {op} through what connect installs: Agent Mail ÷ relaybay-mcp = {ratio(med[(op, am)], med[(op, FORWARDER)]):.1f}×; "
            f"relaybay-mcp ÷ relaybay http = {ratio(med[(op, FORWARDER)], med[(op, http)]):.2f}×"
        )
        against_old = f"relaybay stdio ÷ old stdio = {ratio(med[(op, stdio)], med[(op, old)]):.2f}×; " if (op, old) in med else ""
        print(
            f"  {op}: Agent Mail ÷ relaybay http = {ratio(med[(op, am)], med[(op, http)]):.1f}×; "
            f"relaybay http ÷ its empty tool = {ratio(med[(op, http)], floor):.2f}×; "
            f"{against_old}"
            f"relaybay stdio ÷ relaybay http = {ratio(med[(op, stdio)], med[(op, http)]):.1f}×"
        )
    others = ", ".join(f"{op} {ratio(med[(op, http)], floor):.2f}×" for op in ("message_ack", "session_link", SESSIONS_LIST, BROADCAST))
    print(f"  relaybay http's other tools ÷ its empty tool: {others} (sessions_list returned {rows_listed} rows)")
    print(
        f"  the empty tool's server answering with {rows_listed} made-up rows as sessions_list does ÷ its empty tool: "
        f"{ratio(med[(ROWS_ANSWER, http)], floor):.2f}× (what the answer's size costs; sessions_list ÷ it: "
        f"{ratio(med[(SESSIONS_LIST, http)], med[(ROWS_ANSWER, http)]):.2f}×)"
    )
    connect = "connect to first answer"
    print(
        f"  connect: relaybay http {fmt_ms(med[(connect, http)])}, Agent Mail {fmt_ms(med[(connect, am)])}, "
        f"relaybay-mcp {fmt_ms(med[(connect, FORWARDER)])}, relaybay stdio {fmt_ms(med[(connect, stdio)])}"
        + (f", old stdio {fmt_ms(med[(connect, old)])}" if (connect, old) in med else "")
    )
    print("\nresident memory per connected session:")
    for label, kib in memory.items():
        kind = "a process per session" if label in ("relaybay stdio", "old stdio", FORWARDER) else "added to the one server"
        print(f"  {label:16} {kib / 1024:7.1f} MiB  ({kind})")
    if beside_label:
        print_beside(med, beside_label)
    return stats


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agentmail-python", default="/tmp/agentmail-venv/bin/python", help="python of a virtualenv with mcp-agent-mail 0.1.0")
    parser.add_argument("--old", metavar="REV", help="also run the stdio server of this commit (a git revision) beside this checkout's")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--settle", type=float, help="seconds of quiet between blocks (0.5; 1.5 with --http-only)")
    parser.add_argument("--beside", help="a bench/experiments.py experiment: a second relaybay server with it, measured alike")
    parser.add_argument("--http-only", action="store_true", help="with --beside: only the two relaybay servers' http calls, so both get the same calls")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.http_only and not args.beside:
        parser.error("--http-only compares two relaybay servers: name an experiment with --beside")
    if args.settle is None:
        # Without the other cases' blocks between, each of the 20 senders would pass 10 sends a minute.
        args.settle = 1.5 if args.http_only else 0.5
    if not args.http_only and not Path(args.agentmail_python).is_file():
        sys.exit(
            f"{args.agentmail_python} does not exist: this benchmark runs MCP Agent Mail 0.1.0 from a virtualenv of its own. "
            "Make one (python3.13 -m venv /tmp/agentmail-venv && /tmp/agentmail-venv/bin/pip install mcp-agent-mail==0.1.0) "
            "or name its python with --agentmail-python."
        )
    print(machine_notes())
    print(code_state(), f"; old stdio: {args.old or 'none'}; calls per case: {args.rounds * args.block}")
    with tempfile.TemporaryDirectory(prefix="relaybay-bench-mcp-") as tmp:
        tmp = Path(tmp)
        old_dir = tmp / "old" if args.old and not args.http_only else None
        if old_dir:
            subprocess.run(["git", "worktree", "add", "--detach", str(old_dir), args.old], cwd=REPO_ROOT, capture_output=True, check=True)
        try:
            (tmp / "agentmail").mkdir()
            agentmail = None if args.http_only else AgentMail(args.agentmail_python, tmp / "agentmail").start()
            try:
                with contextlib.ExitStack() as servers:
                    relaybay = Relaybay(servers.enter_context(Server(tmp / "relaybay", Backend("sqlite"))))
                    relaybay.seed()
                    beside = None
                    if args.beside:
                        beside = Relaybay(servers.enter_context(Server(tmp / "beside", Backend("sqlite"), extra_env={"BENCH_EXPERIMENT": args.beside})))
                        beside.seed()
                    samples, memory, rows_listed = asyncio.run(measure(args, relaybay, agentmail, old_dir, beside))
            finally:
                if agentmail:
                    agentmail.stop()
        finally:
            if old_dir:
                subprocess.run(["git", "worktree", "remove", "--force", str(old_dir)], cwd=REPO_ROOT, capture_output=True)
    stats = print_report(samples, memory, rows_listed, f"http {args.beside}" if args.beside else None, args.http_only)
    write_json(args.json, {"stats": {f"{op} | {label}": s for (op, label), s in stats.items()}, "memory_kib": memory, "sessions_listed": rows_listed})


if __name__ == "__main__":
    main()
