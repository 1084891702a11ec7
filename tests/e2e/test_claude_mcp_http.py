"""relaybay's http MCP server under the real Claude Code CLI, connected by the
`manage.py claude_config --session NAME --mcp-http` file: the five tools answer over /mcp, sends are
verified through the process proof (no hook_session written by the model), the proof follows
the session id after /clear in an interactive session, a session without a proof gets the
answers of a wrong hook_session, and no MCP process runs per session."""

import json
import uuid
from pathlib import Path

import pytest

from tests.e2e.claude_cli import parse_result, run_claude, start_interactive
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import query, write_settings
from tests.e2e.test_claude_messages import mcp_answer
from tests.live_server import live_relaybay  # noqa: F401  (fixture)

# What this module tests is the client's or the page's own behaviour, which neither database
# nor channel layer changes: make test runs it once, on the embedded pass.
pytestmark = pytest.mark.embedded_only

SEND, LIST, ACK, LINK, SESSIONS = (f"mcp__relaybay__{name}" for name in ("message_send", "messages_list", "message_ack", "session_link", "sessions_list"))


@pytest.fixture
def setup(live_relaybay, tmp_path):
    """(settings file, folder, HOME, model server) for a session named `name`."""
    servers = []

    def make(name, *extra):
        root = tmp_path / name
        (root / "project").mkdir(parents=True)
        settings = write_settings(live_relaybay, root / "settings.json", "--session", name, "--mcp-http", "--wait", "1", "--spool", str(root / "spool"), *extra)
        server = ModelServer().start()
        servers.append(server)
        return settings, root / "project", root / "home", server

    yield make
    for server in servers:
        server.stop()


def run(settings, cwd, home, model, prompt="go", resume=None, **env):
    completed = run_claude(
        prompt, model_url=model.url, cwd=cwd, home=home, settings_file=settings, mcp_config=settings,
        allowed_tools="Bash mcp__relaybay", extra_env=env, resume=resume,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-3000:]
    return parse_result(completed)


def processes_of(home):
    """Command lines of the running processes started with HOME=`home` (the CLI and all it started)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"HOME={home}".encode() in environ:
            found.append(cmdline)
    return found


def results(model, name):
    """Every result of tool `name` in the session's last request, in order."""
    calls, found = {}, []
    for message in model.requests[-1]["messages"]:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_use":
                calls[block["id"]] = block["name"]
            elif block.get("type") == "tool_result" and calls.get(block["tool_use_id"]) == name:
                content = block.get("content")
                found.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content))
    # Claude Code adds the tool's schema to the first error of a deferred tool: not relaybay's answer.
    return [answer.split("\n\nThis tool's input schema")[0] for answer in found]


def links_of(live, name):
    return query(
        live,
        "select l.hook_session, l.process_proof from sessions_app_hooklink l "
        "join sessions_app_session s on s.id = l.session_id where s.title = ? order by l.id",
        name,
    )


def test_the_five_tools_work_over_http_and_a_send_is_verified_by_the_process_proof(setup, live_relaybay):
    suffix = uuid.uuid4().hex[:6]
    alpha, beta = f"alpha-{suffix}", f"beta-{suffix}"
    status, _ = live_relaybay.post("/desktop", {"desktop_id": f"desk-{beta}", "title": beta})
    assert status == 200
    settings, cwd, home, model = setup(alpha)
    assert json.loads(settings.read_text())["mcpServers"]["relaybay"]["type"] == "http"
    seen = {}
    model.add_steps(
        tool(SESSIONS, {}, before=lambda: seen.setdefault("processes", processes_of(home))),
        # No session name and no hook_session: the proof alone says who writes.
        tool(SEND, {"to": beta, "body": "from alpha over http (http-5150)"}),
        tool(LIST, {"session": beta}),
        tool(LINK, {"session": alpha}),
        text("done"),
    )
    result = run(settings, cwd, home, model)
    # B answers; A acknowledges in a second run of the same session (resumed: a new process).
    status, reply = live_relaybay.post("/message_send", {"to": alpha, "session": beta, "body": "got it"})
    assert status == 200, reply
    model.add_steps(tool(ACK, {"message_id": reply["handle"]}), text("acked"))
    run(settings, cwd, home, model, "any news?", resume=result["session_id"])

    listed_sessions = mcp_answer(model, SESSIONS)
    assert alpha in [row["name"] for row in listed_sessions["sessions"]]
    sent = mcp_answer(model, SEND)
    assert (sent["sender"], sent["sender_verified"], sent["to"]) == (alpha, True, beta)
    listed = mcp_answer(model, LIST)
    assert listed["messages"][0]["body"] == json.dumps("from alpha over http (http-5150)")
    # What the model reads is the answer once, as compact JSON: no indentation to pay tokens for.
    [raw_list] = results(model, LIST)
    assert raw_list == json.dumps(listed, ensure_ascii=False, separators=(",", ":"))
    linked = mcp_answer(model, LINK)
    assert (linked["hook_session"], linked["exact"]) == (result["session_id"], True)
    acked = mcp_answer(model, ACK)
    assert (acked["marked"], acked["mark"]) == (1, "read")
    # The hooks reported the proof; the CLI ran no MCP server process of relaybay's.
    [(hook_session, proof)] = links_of(live_relaybay, alpha)
    assert hook_session == result["session_id"] and len(proof) == 64
    assert seen["processes"], "the CLI was running"
    assert not [cmd for cmd in seen["processes"] if "mcp_server" in cmd or "manage.py" in cmd], seen["processes"]


def test_without_the_messaging_token_the_hook_names_the_caller_whatever_the_model_wrote(setup, live_relaybay):
    suffix = uuid.uuid4().hex[:6]
    alpha, beta = f"alpha-{suffix}", f"beta-{suffix}"
    live_relaybay.post("/desktop", {"desktop_id": f"desk-{beta}", "title": beta})
    settings, cwd, home, model = setup(alpha)
    model.add_steps(
        tool(SEND, {"to": beta, "session": alpha, "body": "no proof"}),
        tool(SEND, {"to": beta, "session": alpha, "body": "wrong id", "hook_session": "not-my-session-id"}),
        tool(ACK, {"session": alpha}),
        tool(ACK, {"session": alpha, "hook_session": "not-my-session-id"}),
        text("done"),
    )
    # Native messaging off: no CLAUDE_CODE_MESSAGING_TOKEN, so no proof from hooks or helper.
    # The PreToolUse of each call fills in the session's own hook id (updatedInput), replacing
    # a missing or wrong one the model wrote (docs/mcp.md).
    result = run(settings, cwd, home, model, CLAUDE_CODE_HARBOR_KITE="0")
    sends = [json.loads(answer) for answer in results(model, SEND)]
    assert [(sent["sender"], sent["sender_verified"]) for sent in sends] == [(alpha, True), (alpha, True)]
    acks = [json.loads(answer) for answer in results(model, ACK)]
    assert [ack["mark"] for ack in acks] == ["read", "read"]
    assert links_of(live_relaybay, alpha) == [(result["session_id"], "")]


def test_after_clear_the_proof_follows_the_new_session_id(setup, live_relaybay):
    suffix = uuid.uuid4().hex[:6]
    alpha, beta = f"alpha-{suffix}", f"beta-{suffix}"
    live_relaybay.post("/desktop", {"desktop_id": f"desk-{beta}", "title": beta})
    settings, cwd, home, model = setup(alpha)
    model.add_steps(
        tool(SEND, {"to": beta, "body": "before clear"}), text("first-turn-done"),
        tool(LINK, {"session": alpha}), tool(SEND, {"to": beta, "body": "after clear"}), text("second-turn-done"),
    )  # fmt: skip
    with start_interactive(model_url=model.url, cwd=cwd, home=home, settings_file=settings, mcp_config=settings, allowed_tools="Bash mcp__relaybay") as session:
        session.send("first")
        session.wait_for_screen("first-turn-done", timeout=60)
        before = mcp_answer(model, SEND)
        [(first_id, proof)] = links_of(live_relaybay, alpha)
        session.send("/clear")
        model.wait_for(lambda m: len(links_of(live_relaybay, alpha)) == 2, timeout=30)
        session.send("second")
        session.wait_for_screen("second-turn-done", timeout=60)
        after = mcp_answer(model, SEND)
        linked = mcp_answer(model, LINK)
        links = links_of(live_relaybay, alpha)
        assert session.exit()
    assert (before["sender"], before["sender_verified"]) == (alpha, True)
    second_id = links[1][0]
    assert second_id != first_id
    # One proof, now on the new id; session_link without a hook_session links that id.
    assert links == [(first_id, ""), (second_id, proof)]
    assert (linked["hook_session"], linked["exact"]) == (second_id, True)
    assert (after["sender"], after["sender_verified"]) == (alpha, True)


def test_a_plain_session_takes_a_name_with_session_link_and_is_told_it_is_linked(live_relaybay, tmp_path):
    # The config `make run` prints (no --session): the session goes by its folder's name and
    # takes another with session_link, its own row going with it.
    suffix = uuid.uuid4().hex[:6]
    gamma = f"gamma-{suffix}"
    status, _ = live_relaybay.post("/desktop", {"desktop_id": f"desk-{gamma}", "title": gamma})
    assert status == 200
    (tmp_path / "project").mkdir()
    settings = write_settings(live_relaybay, tmp_path / "settings.json", "--mcp-http", "--wait", "1", "--spool", str(tmp_path / "spool"))
    with ModelServer() as model:
        model.add_steps(tool(LINK, {"session": gamma}), text("linked"))
        result = run(settings, tmp_path / "project", tmp_path / "home", model)
        linked = mcp_answer(model, LINK)
    assert (linked["hook_session"], linked["exact"], linked["moved"]) == (result["session_id"], True, True)
    # The row the link moved to is described as it is now, not as it was loaded before the move.
    assert (linked["session"]["name"], linked["session"]["link"], linked["session"]["state"]) == (gamma, "exact", "busy")
