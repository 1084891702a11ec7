"""A mixed fleet on one board (docs/rules.md §1.6): a Codex session messages a Claude Code session,
which replies; a Gemini session messages the Codex session. Three real CLIs, each against its own
scripted model server, so text in one model's requests that the test never gave that model can
only have come through relaybay. Codex and Gemini sessions cannot be woken while idle: each gets
its mail at its next prompt (`codex exec resume`, `gemini --resume latest`), and marks it read
with message_ack."""

import uuid

import pytest

from tests.e2e.agent_clis import Codex, Gemini, manage_as
from tests.e2e.claude_cli import parse_result, run_claude
from tests.e2e.cli_models import GeminiServer, ResponsesServer
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import query, write_settings
from tests.live_server import LiveRelaybay, start_relaybay, stop_relaybay

SEND = "mcp__relaybay__message_send"
ACK = "mcp__relaybay__message_ack"


@pytest.fixture
def relaybay(tmp_path):
    url, token, process = start_relaybay(tmp_path / "server")
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


@pytest.fixture
def models():
    servers = {"claude": ModelServer(), "codex": ResponsesServer(), "gemini": GeminiServer()}
    for server in servers.values():
        server.start()
    yield servers
    for server in servers.values():
        server.stop()


def message(live, body):
    """(id, sender, recipient, verified, delivered, read) of the message with `body`."""
    [row] = query(
        live,
        "select m.id, s.title, r.title, m.sender_verified, m.delivered_at is not null, m.read_at is not null "
        "from session_message m join sessions_app_session s on s.id = m.sender_id "
        "join sessions_app_session r on r.id = m.recipient_id where m.body = ?",
        body,
    )
    return row


def acking(live, body):
    """A step that marks the message with `body` read, its id looked up as the step is sent."""
    step = tool(ACK, {})
    step["before"] = lambda: step["content"][0]["input"].update(message_id=message(live, body)[0])
    return step


def replying(live, body, reply):
    step = tool(SEND, {"body": reply})
    step["before"] = lambda: step["content"][0]["input"].update(in_reply_to=message(live, body)[0])
    return step


def test_codex_to_claude_code_and_back_and_gemini_to_codex(relaybay, models, tmp_path):
    tag = uuid.uuid4().hex[:6]
    folders = {engine: tmp_path / "work" / f"{engine}{tag}" for engine in ("claude", "codex", "gemini")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    names = {engine: folder.name for engine, folder in folders.items()}

    claude_home = tmp_path / "claude-home"
    settings = write_settings(relaybay, tmp_path / "claude.json")

    def claude(prompt, resume=None):
        done = run_claude(
            prompt, model_url=models["claude"].url, cwd=folders["claude"], home=claude_home, settings_file=settings,
            mcp_config=settings, allowed_tools="Bash mcp__relaybay", resume=resume,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return parse_result(done)

    codex = Codex(tmp_path / "codex-home", models["codex"].url)
    manage_as(relaybay, codex.home, "connect", "codex", codex_home=codex.codex_home)
    gemini = Gemini(tmp_path / "gemini-home", models["gemini"].url)
    manage_as(relaybay, gemini.home, "connect", "gemini")

    # The Claude Code session starts, and is on the board under its folder's name.
    models["claude"].add_steps(text("claude is here"))
    claude_id = claude("hello")["session_id"]

    # Codex writes to it.
    models["codex"].add_steps(tool(SEND, {"to": names["claude"], "body": "codex-to-claude-1"}), text("codex sent"))
    codex_id = Codex.session_id(codex.exec("tell claude", cwd=folders["codex"]))
    assert message(relaybay, "codex-to-claude-1")[1:4] == (names["codex"], names["claude"], True)

    # Claude Code's next prompt carries it; it replies, which marks it read.
    models["claude"].add_steps(replying(relaybay, "codex-to-claude-1", "claude-to-codex-2"), text("claude replied"))
    claude("go on", resume=claude_id)
    assert "codex-to-claude-1" in models["claude"].request_texts()[1]
    assert message(relaybay, "codex-to-claude-1")[4:] == (True, True)
    assert message(relaybay, "claude-to-codex-2")[1:4] == (names["claude"], names["codex"], True)

    # Gemini writes to Codex too.
    models["gemini"].add_steps(tool(SEND, {"to": names["codex"], "body": "gemini-to-codex-3"}), text("gemini sent"))
    gemini.run("tell codex", cwd=folders["gemini"])
    assert message(relaybay, "gemini-to-codex-3")[1:4] == (names["gemini"], names["codex"], True)

    # Codex's next prompt carries both; it marks them read.
    models["codex"].add_steps(acking(relaybay, "claude-to-codex-2"), acking(relaybay, "gemini-to-codex-3"), text("codex read them"))
    codex.exec("any mail?", cwd=folders["codex"], resume=codex_id)
    shown = models["codex"].request_texts()[2]
    assert "claude-to-codex-2" in shown and "gemini-to-codex-3" in shown
    for body in ("claude-to-codex-2", "gemini-to-codex-3"):
        assert message(relaybay, body)[4:] == (True, True), body
    [(verified_reads,)] = query(relaybay, "select count(*) from session_message where read_verified")
    assert verified_reads == 3
    # No message's text is in a stored event, whichever CLI's hooks carried it.
    events = "\n".join(str(row) for row in query(relaybay, "select data from sessions_app_event"))
    for body in ("codex-to-claude-1", "claude-to-codex-2", "gemini-to-codex-3"):
        assert body not in events
