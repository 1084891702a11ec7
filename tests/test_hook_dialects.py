"""One hook path, three dialects (docs/rules.md §1.6): Codex CLI's and Gemini CLI's hook payloads
go through ingestion as Claude Code's do, and each answer is written the way its CLI reads it
(engines/). The payloads are the CLIs' own, as seen from Codex CLI 0.171.0
and Gemini CLI 0.61.0 (tests/e2e drives the real ones)."""

import json

import pytest

from messaging.models import SessionMessage
from sessions_app import directory
from sessions_app.actions import do_write_comment
from sessions_app.hooks.delivery import STOP_BLOCKS_PER_TURN
from sessions_app.models import Comment, Event, HookLink, Session
from tests.conftest import TOKEN

pytestmark = pytest.mark.django_db

CODEX = {"relaybay_engine": "codex", "model": "gpt-5-fake", "permission_mode": "bypassPermissions"}
GEMINI = {"relaybay_engine": "gemini", "timestamp": "2026-01-01T10:00:00.000Z"}


def codex(hook, event, session_id, **fields):
    return hook(event, session_id, **CODEX, turn_id="turn-1", **fields)


def gemini(hook, event, session_id, **fields):
    return hook(event, session_id, **GEMINI, **fields)


def context(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def row_of(hook_session):
    return HookLink.objects.select_related("session").get(hook_session=hook_session).session


# --- Codex CLI: Claude Code's dialect ------------------------------------------------------


def test_a_codex_session_is_exact_from_its_first_hook_named_after_its_folder_with_its_engine(hook):
    answer = codex(hook, "SessionStart", "cx-1", cwd="/work/shop", source="startup")
    row = row_of("cx-1")
    assert (row.title, row.engine, row.kind) == ("shop", "codex", "hook")
    assert HookLink.objects.get(hook_session="cx-1").exact
    # The identity the model reads names its CLI, and says an idle Codex session is not woken.
    said = context(answer)
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "this Codex session is tracked as" in said and "next prompt or tool call" in said
    assert "SendMessage" not in said


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PreToolUse", "PostToolUse"])
def test_a_comment_reaches_a_codex_session_as_additional_context(hook, event):
    codex(hook, "SessionStart", "cx-2", cwd="/work/shop")
    do_write_comment(session=row_of("cx-2"), body="codex please run the tests")
    answer = codex(hook, event, "cx-2", tool_name="Bash", tool_input={"command": "ls"}, prompt="go")
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    assert "codex please run the tests" in context(answer)


def test_a_codex_stop_blocks_with_what_waits_at_most_three_times_a_turn(hook):
    codex(hook, "SessionStart", "cx-3", cwd="/work/shop")
    codex(hook, "UserPromptSubmit", "cx-3", prompt="go")
    row = row_of("cx-3")
    for n in range(STOP_BLOCKS_PER_TURN):
        do_write_comment(session=row, body=f"stop-comment-{n}")
        answer = codex(hook, "Stop", "cx-3", stop_hook_active=n > 0, last_assistant_message="done")
        assert answer["decision"] == "block" and f"stop-comment-{n}" in answer["reason"]
    do_write_comment(session=row, body="after the cap")
    assert codex(hook, "Stop", "cx-3", stop_hook_active=True) == {}
    # The rest waits for the next prompt.
    assert "after the cap" in context(codex(hook, "UserPromptSubmit", "cx-3", prompt="next"))


# --- Gemini CLI: its own event names and Stop -------------------------------------------------


def test_gemini_events_without_an_engine_are_known_by_their_names(hook):
    hook("SessionStart", "gm-0", cwd="/work/docs", **{"timestamp": "2026-01-01T10:00:00.000Z"})
    hook("BeforeAgent", "gm-0", cwd="/work/docs", prompt="hello")
    # SessionStart alone cannot tell: Claude Code's too. Its BeforeAgent can, but the row was made.
    assert row_of("gm-0").engine == "claude-code"
    hook("BeforeAgent", "gm-00", cwd="/work/docs", prompt="hello")
    assert row_of("gm-00").engine == "gemini"
    assert Event.objects.filter(name="hook.UserPromptSubmit", hook_session="gm-00").exists()


def test_gemini_before_agent_and_after_tool_carry_a_comment_and_before_tool_does_not(hook):
    gemini(hook, "SessionStart", "gm-1", cwd="/work/docs", source="startup")
    row = row_of("gm-1")
    assert row.engine == "gemini"
    do_write_comment(session=row, body="gemini first comment")
    answer = gemini(hook, "BeforeAgent", "gm-1", prompt="hello")
    assert answer["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "gemini first comment" in context(answer)
    assert HookLink.objects.get(hook_session="gm-1").state == "busy"

    do_write_comment(session=row, body="gemini second comment")
    # Gemini CLI ignores additionalContext at BeforeTool: relaybay hands nothing over there.
    assert gemini(hook, "BeforeTool", "gm-1", tool_name="run_shell_command", tool_input={"command": "ls"}) == {}
    assert Comment.objects.get(body="gemini second comment").delivered_at is None
    answer = gemini(hook, "AfterTool", "gm-1", tool_name="run_shell_command", tool_input={"command": "ls"}, tool_response={"llmContent": "x"})
    assert answer["hookSpecificOutput"]["hookEventName"] == "AfterTool"
    assert "gemini second comment" in context(answer)


def test_gemini_after_agent_denies_with_what_waits_and_the_handed_back_prompt_keeps_the_cap(hook, api):
    hook("SessionStart", "cc-2", cwd="/work/api")
    gemini(hook, "SessionStart", "gm-2", cwd="/work/docs")
    gemini(hook, "BeforeAgent", "gm-2", prompt="hello")
    row = row_of("gm-2")
    for n in range(STOP_BLOCKS_PER_TURN):
        if n == 0:
            sent = api.post("/message_send", {"to": "docs", "body": "secret-gemini-body", "session": "api", "hook_session": "cc-2"})
            assert sent.status_code == 200, sent.content
        else:
            do_write_comment(session=row, body=f"gemini-stop-{n}")
        answer = gemini(hook, "AfterAgent", "gm-2", prompt="hello", prompt_response="the model's own words", stop_hook_active=n > 0)
        assert set(answer) == {"decision", "reason"} and answer["decision"] == "deny", answer
        assert ("secret-gemini-body" if n == 0 else f"gemini-stop-{n}") in answer["reason"]
        # Gemini CLI sends the reason as a new user turn, with a BeforeAgent of its own: not a
        # new turn for the cap, whose blocks would otherwise never run out.
        gemini(hook, "BeforeAgent", "gm-2", prompt=answer["reason"])
    do_write_comment(session=row, body="after the gemini cap")
    assert gemini(hook, "AfterAgent", "gm-2", prompt="x", stop_hook_active=True) == {}
    assert "after the gemini cap" in context(gemini(hook, "BeforeAgent", "gm-2", prompt="the owner's next prompt"))
    # The handed-back prompt held a message's text: it is not stored, nor the model's answers.
    stored = json.dumps(list(Event.objects.filter(hook_session="gm-2").values_list("data", flat=True)))
    assert "secret-gemini-body" not in stored and "the model's own words" not in stored


def test_gemini_before_tool_fills_in_the_session_for_relaybay_tools_and_only_those(hook):
    gemini(hook, "SessionStart", "gm-3", cwd="/work/docs")
    mcp = {"server_name": "relaybay", "tool_name": "message_send", "url": "http://127.0.0.1:8000/mcp"}
    answer = gemini(hook, "BeforeTool", "gm-3", tool_name="mcp_relaybay_message_send", tool_input={"to": "x", "body": "hi", "hook_session": "someone-else"}, mcp_context=mcp)
    # The call's arguments come back whole (Gemini takes them as the call's), with the CLI's id
    # in place of the one the model wrote.
    filled_in = {"to": "x", "body": "hi", "hook_session": "gm-3"}
    assert answer == {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": filled_in}}
    listing = {**mcp, "tool_name": "sessions_list"}
    assert gemini(hook, "BeforeTool", "gm-3", tool_name="mcp_relaybay_sessions_list", tool_input={}, mcp_context=listing) == {}
    other = {**mcp, "server_name": "github"}
    assert gemini(hook, "BeforeTool", "gm-3", tool_name="mcp_github_message_send", tool_input={}, mcp_context=other) == {}
    # The message's text in the call is not stored.
    stored = json.dumps(list(Event.objects.filter(hook_session="gm-3", name="hook.PreToolUse").values_list("data", flat=True)))
    assert '"hi"' not in stored and "not stored" in stored


# --- One board for the three ----------------------------------------------------------------


def test_a_gemini_edit_of_a_file_another_session_holds_is_denied_in_gemini_s_dialect(hook, api, tmp_path):
    """Gemini CLI's write_file and replace are edit tools (its engine's edit_tools, engines/gemini.py): an exclusive
    reservation of another live session stops them with Gemini's own deny, and the edit check
    runs as for Claude Code's Edit."""
    (tmp_path / ".git").mkdir()
    hook("SessionStart", "cc-holder", cwd=str(tmp_path), source="startup")
    reserved = api.post("/files_reserve", {"paths": ["notes/*.md"], "hook_session": "cc-holder", "reason": "rewriting the notes"})
    assert reserved.status_code == 200, reserved.content
    gemini(hook, "SessionStart", "gm-editor", cwd=str(tmp_path))
    target = str(tmp_path / "notes" / "plan.md")
    for tool, tool_input in (("write_file", {"file_path": target, "content": "gemini-file-content-31"}),
                             ("replace", {"file_path": target, "old_string": "a", "new_string": "gemini-file-content-32"})):
        answer = gemini(hook, "BeforeTool", "gm-editor", cwd=str(tmp_path), tool_name=tool, tool_input=tool_input)
        assert answer["decision"] == "deny" and "hookSpecificOutput" not in answer, answer
        assert "reserved exclusively by another live session" in answer["reason"] and "rewriting the notes" in answer["reason"]
    assert Event.objects.filter(name="file.denied").count() == 2
    # Its file content is stored no more than Claude Code's: the calls and their results.
    gemini(hook, "AfterTool", "gm-editor", cwd=str(tmp_path), tool_name="write_file",
           tool_input={"file_path": target, "content": "gemini-file-content-33"},
           tool_response={"llmContent": "Successfully wrote: gemini-file-content-33", "returnDisplay": {"fileDiff": "+gemini-file-content-33"}})
    stored = json.dumps([e.data for e in Event.objects.all()])
    assert "gemini-file-content" not in stored and target in stored


def test_a_gemini_edit_is_noted_and_the_claude_session_that_edited_the_file_hears_of_it(hook, tmp_path):
    (tmp_path / ".git").mkdir()
    target = str(tmp_path / "src" / "app.py")
    hook("SessionStart", "cc-editor", cwd=str(tmp_path), source="startup")
    hook("PreToolUse", "cc-editor", cwd=str(tmp_path), tool_name="Edit", tool_input={"file_path": target, "old_string": "a", "new_string": "b"})
    gemini(hook, "SessionStart", "gm-second", cwd=str(tmp_path))
    answer = gemini(hook, "BeforeTool", "gm-second", cwd=str(tmp_path), tool_name="replace", tool_input={"file_path": target, "old_string": "b", "new_string": "c"})
    assert "decision" not in answer
    heard = context(hook("UserPromptSubmit", "cc-editor", cwd=str(tmp_path), prompt="go on"))
    assert f'session "{row_of("gm-second").public_name}" is now editing src/app.py' in heard, heard


PATCH = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-codex-old-line-61\n+codex-new-line-62\n*** Add File: notes/plan.md\n+codex-new-file-63\n*** End Patch\n"


def test_a_codex_apply_patch_is_checked_for_every_file_its_patch_names(hook, api, tmp_path):
    """Codex CLI's apply_patch names its files inside the patch (its engine's patch_tools, engines/codex.py):
    a file another session edited is warned of, one another holds exclusively is denied in
    Claude Code's dialect, which Codex speaks, and the patch itself is not stored."""
    (tmp_path / ".git").mkdir()
    hook("SessionStart", "cc-owner", cwd=str(tmp_path), source="startup")
    hook("PreToolUse", "cc-owner", cwd=str(tmp_path), tool_name="Edit", tool_input={"file_path": str(tmp_path / "src" / "app.py"), "old_string": "a", "new_string": "b"})
    codex(hook, "SessionStart", "cx-patcher", cwd=str(tmp_path))
    warned = codex(hook, "PreToolUse", "cx-patcher", cwd=str(tmp_path), tool_name="apply_patch", tool_input={"command": PATCH})
    assert "src/app.py" in context(warned) and "another live session's file too" in context(warned)
    heard = context(hook("UserPromptSubmit", "cc-owner", cwd=str(tmp_path), prompt="go on"))
    assert f'session "{row_of("cx-patcher").public_name}" is now editing src/app.py' in heard, heard
    reserved = api.post("/files_reserve", {"paths": ["notes/**"], "hook_session": "cc-owner", "reason": "planning"})
    assert reserved.status_code == 200, reserved.content
    denied = codex(hook, "PreToolUse", "cx-patcher", cwd=str(tmp_path), tool_name="apply_patch", tool_input={"command": PATCH})
    output = denied["hookSpecificOutput"]
    assert output["permissionDecision"] == "deny" and "notes/plan.md" in output["permissionDecisionReason"], denied
    stored = json.dumps([e.data for e in Event.objects.all()])
    assert "codex-old-line" not in stored and "codex-new" not in stored
    assert '"files": ["src/app.py", "notes/plan.md"]' in stored


def test_a_session_of_another_cli_in_the_same_folder_gets_a_row_of_its_own(hook):
    hook("SessionStart", "cc-1", cwd="/work/shop")
    hook("SessionEnd", "cc-1", cwd="/work/shop", reason="exit")
    codex(hook, "SessionStart", "cx-4", cwd="/work/shop")
    # The ended Claude Code session's row (and its mail) is not the Codex session's to take.
    assert (row_of("cc-1").title, row_of("cx-4").title) == ("shop", "shop-2")
    codex(hook, "SessionEnd", "cx-4", reason="other")
    codex(hook, "SessionStart", "cx-5", cwd="/work/shop")
    assert row_of("cx-5").title == "shop-2"


def test_an_idle_codex_or_gemini_session_is_told_apart_from_a_wakeable_one(hook, api):
    codex(hook, "SessionStart", "cx-6", cwd="/work/a")
    gemini(hook, "SessionStart", "gm-6", cwd="/work/b")
    hook("SessionStart", "cc-6", cwd="/work/c")
    for name in ("a", "b"):
        assert directory.arrival(Session.objects.get(title=name)) == directory.Arrival.UNWAKEABLE
    assert directory.arrival(Session.objects.get(title="c")) == directory.Arrival.IDLE
    sent = api.post("/message_send", {"to": "a", "body": "hello codex", "session": "c", "hook_session": "cc-6"}).json()
    assert "relaybay has no wake-up" in sent["status"] and "next prompt" in sent["status"]
    assert SessionMessage.objects.get().body == "hello codex"


def test_sessions_list_gives_each_engine_and_filters_by_it(hook, api):
    codex(hook, "SessionStart", "cx-7", cwd="/work/a")
    gemini(hook, "SessionStart", "gm-7", cwd="/work/b")
    hook("SessionStart", "cc-7", cwd="/work/c")
    listed = api.get("/sessions_list").json()["sessions"]
    assert {s["name"]: s["engine"] for s in listed} == {"a": "codex", "b": "gemini", "c": "claude-code"}
    assert [s["name"] for s in api.get("/sessions_list", engine="gemini").json()["sessions"]] == ["b"]
    refused = api.get("/sessions_list", engine="vim")
    assert refused.status_code == 422 and refused.json()["code"] == "invalid_request", refused.content


# --- Hostile payloads in each dialect -------------------------------------------------------


@pytest.mark.parametrize(
    "payload, code",
    [
        ({"hook_event_name": "SessionStart", "session_id": "x1", "relaybay_engine": "vim"}, "invalid_input"),
        ({"hook_event_name": "SessionStart", "session_id": "x2", "relaybay_engine": 5}, "invalid_identifier"),
        ({"hook_event_name": "SessionStart", "session_id": "x3", "relaybay_engine": "codex\x00"}, "invalid_identifier"),
        ({"hook_event_name": "BeforeAgent", "relaybay_engine": "gemini", "prompt": "hi"}, "invalid_input"),
        ({"hook_event_name": "AfterAgent", "session_id": ["gm"], "relaybay_engine": "gemini"}, "invalid_input"),
        ({"hook_event_name": "BeforeTool", "session_id": "x6", "relaybay_engine": "gemini", "cwd": 7}, "invalid_identifier"),
        ({"hook_event_name": "Stop", "session_id": "x7" * 200, "relaybay_engine": "codex"}, "invalid_identifier"),
    ],
)
def test_a_hostile_payload_in_any_dialect_is_refused_and_nothing_is_stored(hook, payload, code):
    response = hook.raw(json.dumps(payload))
    assert response.status_code == 400, response.content
    assert response.json()["code"] == code
    assert not Session.objects.exists() and not Event.objects.exists() and not HookLink.objects.exists()


def test_a_gemini_tool_payload_with_odd_mcp_context_is_only_recorded(hook):
    gemini(hook, "SessionStart", "gm-8", cwd="/work/docs")
    for odd in ("relaybay", ["relaybay"], {"server_name": ["relaybay"], "tool_name": "message_send"}, {"server_name": "relaybay", "tool_name": {"x": 1}}):
        answer = hook.raw(json.dumps({"hook_event_name": "BeforeTool", "session_id": "gm-8", "relaybay_engine": "gemini", "tool_name": "t", "mcp_context": odd}), token=TOKEN)
        assert answer.status_code == 200 and answer.json() == {}, answer.content


def test_an_idle_codex_session_with_its_waiter_connected_is_being_woken(hook, api):
    from sessions_app.hooks.delivery import do_register_waiter

    codex(hook, "SessionStart", "cx-9", cwd="/work/a")
    hook("SessionStart", "cc-9", cwd="/work/c")
    # The waiter Codex's Stop hook leaves behind polls as Claude Code's wake-up hook does.
    assert do_register_waiter("cx-9", "waiter-1")
    assert directory.arrival(Session.objects.get(title="a")) == directory.Arrival.WAKING
    sent = api.post("/message_send", {"to": "a", "body": "wake up codex", "session": "c", "hook_session": "cc-9"}).json()
    assert "being woken" in sent["status"]


@pytest.mark.parametrize(
    "meta, read",
    [
        ({"x-codex-turn-metadata": {"session_id": "cx-42", "turn_id": "t"}}, "cx-42"),
        (None, ""),
        ({"sessionId": "cx-42"}, ""),  # only Codex's own turn metadata names the session
        ({"x-codex-turn-metadata": "cx-42"}, ""),
        ({"x-codex-turn-metadata": {"session_id": 42}}, ""),
        ({"x-codex-turn-metadata": {"session_id": "cx\x0042"}}, ""),
        ({"x-codex-turn-metadata": {"session_id": "  "}}, ""),
        ({"x-codex-turn-metadata": {"session_id": "x" * 201}}, ""),
    ],
)
def test_the_session_a_codex_call_names_is_read_only_when_it_could_be_one(meta, read):
    from mcp_server.http import cli_session

    engine, hook_session = cli_session(meta)
    assert hook_session == read
    assert (engine.name if engine else None) == ("codex" if read else None)
