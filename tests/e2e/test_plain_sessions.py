"""Sessions as people start them: relaybay connected once for every session (its hooks and env
in ~/.claude/settings.json, its MCP server registered for all projects with the real
`claude mcp add-json … --scope user`), then plain `claude` typed in project folders, under tmux.

Each session has its own scripted model server, so text in one session's requests that the
test never gave that model can only have come through relaybay. Nobody types into a recipient:
what reaches it wakes it.
"""

import json
import subprocess
import time
import uuid

import pytest

from tests.e2e.claude_cli import claude_bin, claude_env, prepare_home, start_interactive
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import manage, query
from tests.e2e.test_claude_comments import wait_until
from tests.live_server import LiveRelaybay, start_relaybay, stop_relaybay

SEND = "mcp__relaybay__message_send"
TOOLS = "Bash mcp__relaybay"


def connect_once(live, home, *extra):
    """The README's one way to connect every session: the hooks and env of `claude_config`
    merged into ~/.claude/settings.json, its MCP server registered for all projects."""
    config = json.loads(manage(live, "claude_config", "--url", live.url, *extra).stdout)
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"env": config["env"], "hooks": config["hooks"]}))
    server = json.dumps(config["mcpServers"]["relaybay"])
    added = subprocess.run(
        [claude_bin(), "mcp", "add-json", "relaybay", server, "--scope", "user"],
        env=claude_env("http://127.0.0.1:9", home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert added.returncode == 0, added.stderr


def row_of_folder(live, folder):
    """(title, link exact, waiter, polled) of the live session started in `folder`."""
    rows = query(
        live,
        "select s.title, l.exact, l.waiter, l.waiter_polled_at from sessions_app_hooklink l "
        "join sessions_app_session s on s.id = l.session_id where l.cwd = ? and l.state in ('idle', 'busy')",
        str(folder),
    )
    return rows[0] if rows else None


def waiting(live, folder):
    row = row_of_folder(live, folder)
    return bool(row and row[2])


@pytest.fixture(scope="module")
def relaybay(tmp_path_factory):
    """One relaybay for the module (each test's sessions have folders and names of their own; the
    restart test leaves it running again on the same port)."""
    url, token, process = start_relaybay(tmp_path_factory.mktemp("server"))
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


@pytest.fixture
def fleet(relaybay, tmp_path):
    """Two folders with a plain interactive `claude` each, connected once in one HOME."""
    home = tmp_path / "home"
    home.mkdir()
    connect_once(relaybay, home)
    tag = uuid.uuid4().hex[:6]
    sessions = {}
    models = []
    folders = {name: tmp_path / "work" / f"{name}{tag}" for name in ("api", "web")}
    for folder in folders.values():
        folder.mkdir(parents=True)
    # Trusted before any session starts: a running claude rewrites ~/.claude.json.
    prepare_home(home, *folders.values())
    try:
        for name, folder in folders.items():
            model = ModelServer()
            model.start()
            models.append(model)
            model.add_steps(text(f"{name} is idle"))
            session = start_interactive(model_url=model.url, cwd=folder, home=home, allowed_tools=TOOLS)
            sessions[name] = (session, model, folder, f"{name}{tag}")
        for name, (session, model, folder, _) in sessions.items():
            session.send("start")
            session.wait_for_screen(f"{name} is idle", timeout=60)
            wait_until(lambda folder=folder: waiting(relaybay, folder), timeout=30)
        yield sessions
    finally:
        for session, *_ in sessions.values():
            session.close()
        for model in models:
            model.stop()


def test_plain_sessions_go_by_their_folders_and_a_message_and_a_comment_wake_the_idle_one(relaybay, fleet):
    api, api_model, api_folder, api_name = fleet["api"]
    web, web_model, web_folder, web_name = fleet["web"]
    # Linked exactly from the first hook, under the folder's name.
    title, exact, *_ = row_of_folder(relaybay, web_folder)
    assert (title, bool(exact)) == (web_name, True)

    web_model.add_steps(text("web read the message"))
    api_model.add_steps(tool(SEND, {"to": web_name, "body": "plain-hello-7781"}), text("api sent it"))
    sent_at = time.monotonic()
    api.send("tell web hello")
    api.wait_for_screen("api sent it", timeout=60)
    # The idle recipient, with nobody typing, is woken and its model is shown the body.
    web_model.wait_for_text("plain-hello-7781", timeout=30)
    woken_after = time.monotonic() - sent_at
    # The sender was identified by its process proof: verified, and not told to prove itself.
    assert "NOT verified" not in json.dumps(api_model.request_texts())
    [(verified,)] = query(relaybay, "select sender_verified from session_message where body like ?", "%plain-hello-7781%")
    assert bool(verified)
    web.wait_for_screen("web read the message", timeout=30)

    # An owner comment to a plain session, by its folder name, wakes it too.
    wait_until(lambda: waiting(relaybay, web_folder), timeout=30)
    web_model.add_steps(text("web saw the owner"))
    said = manage(relaybay, "comment", web_name, "owner-note-4242").stdout
    assert "being woken" in said, said
    web_model.wait_for_text("owner-note-4242", timeout=30)
    print(f"send to the idle recipient's model request: {woken_after:.2f} s (includes the sender's own turn)")


def test_a_short_wait_bound_ends_and_then_a_send_says_the_message_waits_for_the_next_prompt(relaybay, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    connect_once(relaybay, home, "--wait", "3")
    folder = tmp_path / "work" / f"short{uuid.uuid4().hex[:6]}"
    folder.mkdir(parents=True)
    with ModelServer() as model:
        model.add_steps(text("short is idle"))
        with start_interactive(model_url=model.url, cwd=folder, home=home, allowed_tools=TOOLS) as session:
            session.send("start")
            session.wait_for_screen("short is idle", timeout=60)
            wait_until(lambda: waiting(relaybay, folder), timeout=30)
            # Its last poll ends the wait: nobody is told it is being woken any more.
            wait_until(lambda: not waiting(relaybay, folder), timeout=30)
            name = row_of_folder(relaybay, folder)[0]
            status, answer = relaybay.post("/message_send", {"to": name, "body": "later", "session": "owner-script"})
            assert status == 200, answer
            assert "next prompt" in answer["status"] and "being woken" not in answer["status"], answer
