"""Gemini CLI sessions on the board (docs/rules.md §1.6), with the real Gemini CLI 0.61.0 against
a scripted Gemini API server, connected the way a person connects it: `manage.py connect gemini`
into a throwaway HOME whose ~/.gemini/settings.json already holds the person's own settings."""

import json
import subprocess
import uuid

import pytest

from tests.e2e.agent_clis import Gemini, manage_as
from tests.e2e.cli_models import GeminiServer, text
from tests.e2e.model_server import tool
from tests.e2e.relaybay_cli import manage, query
from tests.live_server import LiveRelaybay, start_relaybay, stop_relaybay

# Once, on the embedded pass: what is Gemini's own here is its dialect (the payload in, the answer
# out) and the CLI's reading of its files, the same on either database; the delivery path they
# reach runs on both under Claude Code and in tests/e2e/test_mixed_fleet.py.
pytestmark = pytest.mark.embedded_only
SEND = "mcp__relaybay__message_send"


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


@pytest.fixture
def model():
    server = GeminiServer().start()
    yield server
    server.stop()


@pytest.fixture
def gemini(relaybay, model, tmp_path):
    cli = Gemini(tmp_path / "home", model.url)
    manage_as(relaybay, cli.home, "connect", "gemini")
    return cli


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "work" / f"docs{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True)
    return path


def links_of(live, folder):
    """(hook id, title, engine, exact, state) of the sessions started in `folder`, oldest first."""
    return query(
        live,
        "select l.hook_session, s.title, s.engine, l.exact, l.state from sessions_app_hooklink l "
        "join sessions_app_session s on s.id = l.session_id where l.cwd = ? order by l.id",
        str(folder),
    )


def test_a_plain_gemini_session_is_on_the_board_with_its_engine_named_after_its_folder(relaybay, gemini, model, folder):
    model.add_steps(text("gemini is here"))
    gemini.run("hello", cwd=folder)
    [(hook_session, title, engine, exact, state)] = links_of(relaybay, folder)
    assert (title, engine, bool(exact), state) == (folder.name, "gemini", True, "ended")
    # The identity reached the model with its first prompt, as Gemini CLI's <hook_context>.
    assert "<hook_context>relaybay: this Gemini CLI session is tracked as" in model.request_texts()[0]
    assert hook_session in model.request_texts()[0]
    listed = relaybay.call("GET", "/sessions_list", engine="gemini")[1]["sessions"]
    assert [(s["name"], s["engine"]) for s in listed] == [(folder.name, "gemini")]


def test_an_owner_comment_reaches_the_gemini_model_at_its_next_prompt_and_after_a_tool(relaybay, gemini, model, folder):
    model.add_steps(text("first turn"))
    gemini.run("hello", cwd=folder)
    manage(relaybay, "comment", folder.name, "owner-note-for-gemini-6262")
    # The next prompt: BeforeAgent's additionalContext, after the prompt.
    model.add_steps(text("second turn"))
    gemini.run("go on", cwd=folder, resume="latest")
    [(hook_session, *_)] = links_of(relaybay, folder)  # --resume keeps the session's id
    assert "owner-note-for-gemini-6262" in model.request_texts()[-1]
    # During a turn: after a tool's result (AfterTool), written while the tool ran.
    model.add_steps(
        tool("Bash", {"command": "echo tool-ran"}, before=lambda: manage(relaybay, "comment", folder.name, "mid-turn-note-7373")),
        text("third turn"),
    )
    gemini.run("run something", cwd=folder, resume="latest")
    after_tool = model.request_texts()[-1]
    assert "mid-turn-note-7373" in after_tool
    assert json.loads(json.dumps(after_tool))  # recorded
    assert query(relaybay, "select count(*) from sessions_app_comment where delivered_at is null")[0][0] == 0


def test_an_after_agent_continues_the_gemini_turn_with_what_waits_at_most_three_times(relaybay, gemini, model, folder):
    model.add_steps(text("first turn"))
    gemini.run("hello", cwd=folder)
    name = folder.name

    def comment(n):
        return lambda: manage(relaybay, "comment", name, f"gemini-stop-{n}")

    model.add_steps(
        text("answer 0", before=comment(0)),
        text("answer 1", before=comment(1)),
        text("answer 2", before=comment(2)),
        text("answer 3", before=comment(3)),
        text("answer 4"),
    )
    gemini.run("go on", cwd=folder, resume="latest")
    texts = model.request_texts()
    # The prompt's request, then one per continuation: the reason comes back as a user turn.
    assert len(texts) == 5, texts
    for n in range(3):
        assert f"gemini-stop-{n}" in texts[2 + n]
    assert "gemini-stop-3" not in "\n".join(texts)
    assert query(relaybay, "select count(*) from sessions_app_comment where delivered_at is null")[0][0] == 1


def test_relaybay_tools_are_offered_and_a_message_from_gemini_is_verified(relaybay, gemini, model, folder):
    status, _ = relaybay.post("/desktop", {"desktop_id": "owner-inbox"})
    assert status == 200
    model.add_steps(tool(SEND, {"to": "owner-inbox", "body": "gemini-says-hello-41"}), text("sent"))
    gemini.run("tell the inbox hello", cwd=folder)
    offered = model.tool_names(model.requests[0])
    assert {"mcp_relaybay_message_send", "mcp_relaybay_sessions_list"} <= set(offered), offered
    assert "owner-inbox" in model.request_texts()[1]
    [(sender, verified)] = query(
        relaybay,
        "select s.title, m.sender_verified from session_message m join sessions_app_session s on s.id = m.sender_id where m.body = ?",
        "gemini-says-hello-41",
    )
    # The session was named by its own BeforeTool hook, which filled in hook_session.
    assert (sender, bool(verified)) == (folder.name, True)
    events = json.dumps(query(relaybay, "select data from sessions_app_event"))
    assert "gemini-says-hello-41" not in events


def test_disconnect_leaves_gemini_as_it_was_and_its_sessions_unconnected(relaybay, model, tmp_path, folder):
    cli = Gemini(tmp_path / "home", model.url)
    path = cli.home / ".gemini" / "settings.json"
    before = path.read_text()
    manage_as(relaybay, cli.home, "connect", "gemini")
    assert json.loads(path.read_text())["mcpServers"]["relaybay"]["trust"] is True
    manage_as(relaybay, cli.home, "disconnect", "gemini")
    assert path.read_text() == before
    # No file under HOME holds the token, nor relaybay's own configuration files.
    assert not [p for p in cli.home.rglob("*") if p.is_file() and relaybay.token.encode() in p.read_bytes()]
    confs = (relaybay.process.relaybay_data / "hook-config").glob("*.conf")
    assert not [conf for conf in confs if f"RELAYBAY_CONNECTED=gemini {path.parent}" in conf.read_text()]
    model.add_steps(text("on my own"))
    cli.run("hello", cwd=folder)
    assert links_of(relaybay, folder) == []
    assert not any(name.startswith("mcp_relaybay") for name in model.tool_names(model.requests[0]))


def test_a_gemini_edit_of_a_file_another_session_reserved_is_blocked_and_the_file_untouched(relaybay, gemini, model, folder, tmp_path):
    """Two Gemini sessions in one checkout: the first reserves notes/*.md with relaybay's tool and,
    while its turn runs, the second's write_file of notes/plan.md is stopped by its BeforeTool
    hook (Gemini's deny), so the file keeps its text and the model is told who holds it."""
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    (folder / "notes").mkdir()
    plan = folder / "notes" / "plan.md"
    plan.write_text("the original plan\n")
    with GeminiServer() as second_model:
        second = Gemini(tmp_path / "home-second", second_model.url)
        manage_as(relaybay, second.home, "connect", "gemini")
        second_model.add_steps(tool("write_file", {"file_path": str(plan), "content": "gemini-overwrite-58"}), text("second done"))
        model.add_steps(
            tool("mcp__relaybay__files_reserve", {"paths": ["notes/*.md"], "reason": "rewriting the notes"}),
            text("reserved", before=lambda: second.run("rewrite the plan", cwd=folder, approval_mode="auto_edit")),
        )
        gemini.run("reserve the notes", cwd=folder)
        told = "\n".join(second_model.request_texts())
    assert plan.read_text() == "the original plan\n"
    assert "Tool execution blocked: relaybay denied this edit" in told and "rewriting the notes" in told, told[-2000:]
    # The tool's result as Gemini sends it back is JSON, its quotes escaped.
    assert f'reserved exclusively by another live session, \\"{folder.name}\\"' in told
    assert query(relaybay, "select count(*) from sessions_app_event where name = 'file.denied'")[0][0] == 1
    assert "gemini-overwrite-58" not in json.dumps(query(relaybay, "select data from sessions_app_event"))
