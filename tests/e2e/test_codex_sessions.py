"""Codex CLI sessions on the board (docs/rules.md §1.6), with the real Codex CLI 0.171.0 against a
scripted Responses-API server, connected the way a person connects it: `manage.py connect codex`
into a throwaway CODEX_HOME that already holds the person's own settings.

`codex exec` runs the hooks as if the person had trusted them (--dangerously-bypass-hook-trust);
one test runs without, as a person who skipped /hooks does, and finds the board saying so.
"""

import json
import subprocess
import uuid

import pytest

from tests.e2e.agent_clis import Codex, manage_as
from tests.e2e.cli_models import ResponsesServer, text
from tests.e2e.model_server import tool
from tests.e2e.relaybay_cli import manage, query
from tests.live_server import LiveRelaybay, start_relaybay, stop_relaybay

# Once, on the embedded pass: what is Codex's own here is its dialect (the payload in, the answer
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
    server = ResponsesServer().start()
    yield server
    server.stop()


@pytest.fixture
def codex(relaybay, model, tmp_path):
    cli = Codex(tmp_path / "home", model.url)
    said = manage_as(relaybay, cli.home, "connect", "codex", codex_home=cli.codex_home).stdout
    assert "/hooks" in said, said
    return cli


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "work" / f"shop{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True)
    return path


def session_row(live, hook_session):
    rows = query(
        live,
        "select s.title, s.engine, l.exact, l.state from sessions_app_hooklink l join sessions_app_session s on s.id = l.session_id "
        "where l.hook_session = ?",
        hook_session,
    )
    return rows[0] if rows else None


def test_a_plain_codex_session_is_on_the_board_with_its_engine_named_after_its_folder(relaybay, codex, model, folder):
    model.add_steps(text("codex is here"))
    done = codex.exec("hello", cwd=folder)
    hook_session = Codex.session_id(done)
    title, engine, exact, state = session_row(relaybay, hook_session)
    assert (title, engine, bool(exact)) == (folder.name, "codex", True)
    assert state == "ended"  # codex exec ends the session with its turn
    # The model was told who it is, in its first request.
    assert "this Codex session is tracked as" in model.request_texts()[0]
    listed = relaybay.call("GET", "/sessions_list", engine="codex")[1]["sessions"]
    assert [(s["name"], s["engine"]) for s in listed] == [(folder.name, "codex")]


def test_an_owner_comment_reaches_the_codex_model_at_its_next_prompt(relaybay, codex, model, folder):
    model.add_steps(text("first turn"))
    hook_session = Codex.session_id(codex.exec("hello", cwd=folder))
    said = manage(relaybay, "comment", folder.name, "owner-note-for-codex-5151").stdout
    assert "ended" in said or "next prompt" in said, said
    model.add_steps(text("second turn"))
    codex.exec("go on", cwd=folder, resume=hook_session)
    last = model.request_texts()[-1]
    assert "owner-note-for-codex-5151" in last and "from the owner" in last
    [(confirmed,)] = query(relaybay, "select confirmed_at is not null or delivered_at is not null from sessions_app_comment")
    assert confirmed


def test_a_stop_continues_the_codex_turn_with_what_waits_at_most_three_times(relaybay, codex, model, folder):
    model.add_steps(text("first turn"))
    hook_session = Codex.session_id(codex.exec("hello", cwd=folder))
    name = folder.name

    def comment(n):
        return lambda: manage(relaybay, "comment", name, f"stop-comment-{n}")

    # Each answer of the turn is followed by a comment written just before it: the Stop that
    # ends the turn carries it back into the model, up to the cap of three a turn.
    model.add_steps(
        text("answer 0", before=comment(0)),
        text("answer 1", before=comment(1)),
        text("answer 2", before=comment(2)),
        text("answer 3", before=comment(3)),
        text("answer 4"),
    )
    codex.exec("go on", cwd=folder, resume=hook_session)
    texts = model.request_texts()
    # Request 2 is the prompt's; 3, 4 and 5 the continuations; the fourth comment waits.
    continued = [t for t in texts if "<hook_prompt" in t]
    assert len(texts) == 5 and len(continued) == 3, texts
    for n in range(3):
        assert f"stop-comment-{n}" in texts[2 + n]
    assert "stop-comment-3" not in "\n".join(texts)
    [(waiting,)] = query(relaybay, "select count(*) from sessions_app_comment where delivered_at is null")
    assert waiting == 1


def test_relaybay_tools_are_offered_and_a_message_from_codex_is_verified(relaybay, codex, model, folder):
    status, _ = relaybay.post("/desktop", {"desktop_id": "owner-inbox"})
    assert status == 200
    model.add_steps(tool(SEND, {"to": "owner-inbox", "body": "codex-says-hello-31"}), text("sent"))
    done = codex.exec("tell the inbox hello", cwd=folder)
    hook_session = Codex.session_id(done)
    offered = model.tool_names(model.requests[0])
    assert {"mcp__relaybay__message_send", "mcp__relaybay__sessions_list"} <= set(offered), offered
    # The tool's answer reached the model.
    assert '"id"' in model.request_texts()[1] and "owner-inbox" in model.request_texts()[1]
    [(sender, verified)] = query(
        relaybay,
        "select s.title, m.sender_verified from session_message m join sessions_app_session s on s.id = m.sender_id where m.body = ?",
        "codex-says-hello-31",
    )
    # The calling session was named by Codex itself (the call's _meta), not by the model.
    assert (sender, bool(verified)) == (folder.name, True)
    assert session_row(relaybay, hook_session)[1] == "codex"
    # The message's text is in no stored hook event.
    events = json.dumps(query(relaybay, "select data from sessions_app_event"))
    assert "codex-says-hello-31" not in events


def test_a_codex_session_whose_hooks_are_not_trusted_is_flagged_on_the_board(relaybay, codex, model, folder):
    model.add_steps(tool("mcp__relaybay__sessions_list", {}), text("listed"))
    done = codex.exec("who is there", cwd=folder, trust_hooks=False)
    hook_session = Codex.session_id(done)
    # Codex skipped every hook without a word: relaybay heard none of this session...
    assert session_row(relaybay, hook_session) is None
    # ...but its MCP call named it: the board's Sessions page warns of it (tests/test_engines_board.py).
    [(engine, calls)] = query(relaybay, "select engine, calls from sessions_app_unheardsession where hook_session = ?", hook_session)
    assert (engine, calls) == ("codex", 1)
    # Once its hooks run, the warning goes.
    model.add_steps(text("trusted now"))
    codex.exec("again", cwd=folder, resume=hook_session)
    assert query(relaybay, "select count(*) from sessions_app_unheardsession")[0][0] == 0


def test_disconnect_leaves_codex_as_it_was_and_its_sessions_unconnected(relaybay, model, tmp_path, folder):
    cli = Codex(tmp_path / "home", model.url)
    config = cli.codex_home / "config.toml"
    before = config.read_text()
    dry = manage_as(relaybay, cli.home, "connect", "codex", "--dry-run", codex_home=cli.codex_home).stdout
    assert "+[mcp_servers.relaybay]" in dry and relaybay.token not in dry
    assert config.read_text() == before and not (cli.codex_home / "hooks.json").exists()
    manage_as(relaybay, cli.home, "connect", "codex", codex_home=cli.codex_home)
    manage_as(relaybay, cli.home, "disconnect", "codex", codex_home=cli.codex_home)
    assert config.read_text() == before and not (cli.codex_home / "hooks.json").exists()
    # No file under HOME holds the token, nor relaybay's own configuration files.
    assert not [p for p in cli.home.rglob("*") if p.is_file() and relaybay.token.encode() in p.read_bytes()]
    confs = (relaybay.process.relaybay_data / "hook-config").glob("*.conf")
    assert not [conf for conf in confs if f"RELAYBAY_CONNECTED=codex {cli.codex_home}" in conf.read_text()]
    # Codex runs as before: the person's provider still answers, and relaybay hears nothing.
    model.add_steps(text("on my own"))
    done = cli.exec("hello", cwd=folder)
    assert session_row(relaybay, Codex.session_id(done)) is None
    assert not any(name.startswith("mcp__relaybay") for name in model.tool_names(model.requests[0]))


def test_a_codex_patch_of_a_file_another_session_reserved_is_blocked_and_the_file_untouched(relaybay, codex, model, folder, tmp_path):
    """Two Codex sessions in one checkout: the first reserves notes/** with relaybay's tool and,
    while its turn runs, the second's apply_patch of notes/plan.md is stopped by its PreToolUse
    hook, so the file keeps its text and the model is told who holds it. apply_patch is offered
    to a model Codex knows to take it (gpt-5.5), in a sandbox that lets it write."""
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    (folder / "notes").mkdir()
    plan = folder / "notes" / "plan.md"
    plan.write_text("the original plan\n")
    patch = "*** Begin Patch\n*** Update File: notes/plan.md\n@@\n-the original plan\n+codex-overwrite-71\n*** End Patch\n"
    with ResponsesServer() as second_model:
        second = Codex(tmp_path / "home-second", second_model.url)
        manage_as(relaybay, second.home, "connect", "codex", codex_home=second.codex_home)
        second_model.add_steps(tool("apply_patch", {"patch": patch}), text("second done"))
        writes = {"model": "gpt-5.5", "sandbox_mode": "workspace-write", "approval_policy": "never"}
        model.add_steps(
            tool("mcp__relaybay__files_reserve", {"paths": ["notes/**"], "reason": "rewriting the notes"}),
            text("reserved", before=lambda: second.exec("rewrite the plan", cwd=folder, config=writes)),
        )
        codex.exec("reserve the notes", cwd=folder)
        offered = second_model.tool_names(second_model.requests[0])
        told = "\n".join(second_model.request_texts())
    assert "apply_patch" in offered, offered
    assert plan.read_text() == "the original plan\n"
    assert "Command blocked by PreToolUse hook: relaybay denied this edit" in told and "rewriting the notes" in told, told[-2000:]
    assert f'reserved exclusively by another live session, "{folder.name}"' in told
    assert query(relaybay, "select count(*) from sessions_app_event where name = 'file.denied'")[0][0] == 1
    assert "codex-overwrite-71" not in json.dumps(query(relaybay, "select data from sessions_app_event"))
