"""The top of a session's page says what it is doing now, and its events read at a glance
with their details on demand (docs/rules.md §5.2, docs/board.md)."""

import re

import pytest

from board.doing import is_wake_up
from relaybay_hook.codex_wake import NUDGE
from sessions_app.hooks.ingest import ingest_hook
from tests.board_fixtures import board, htmx_get, named_session, owner  # noqa: F401

pytestmark = pytest.mark.django_db


def hook(session, event, **fields):
    return ingest_hook({"hook_event_name": event, "session_id": session.hook_session, "cwd": "/work/alpha", **fields})


def now_panel(board, session):
    fragment = htmx_get(board, f"/sessions/{session.pk}/", "session-now").content.decode()
    assert f"{session.handle} · " in fragment, "the heading comes first"
    return re.search(r'<div class="panel now">(.*)</div>\s*$', fragment, re.S).group(1)


def test_a_busy_session_shows_its_current_tool_and_its_last_prompt(board):
    alpha = named_session("alpha")
    hook(alpha, "UserPromptSubmit", prompt="Split the <ledger> module")
    hook(alpha, "PreToolUse", tool_name="Bash", tool_input={"command": "pytest -q tests/ledger", "description": "run tests"})
    panel = now_panel(board, alpha)
    assert "busy" in panel and 'running <span class="mono"><bdi>Bash</bdi></span>' in panel
    assert "command: pytest -q tests/ledger" in panel and "since" in panel
    assert "Last prompt" in panel and "Split the &lt;ledger&gt; module" in panel


def test_a_session_between_tools_is_working_on_its_prompt(board):
    alpha = named_session("alpha")
    hook(alpha, "UserPromptSubmit", prompt="go")
    hook(alpha, "PreToolUse", tool_name="Read", tool_input={"file_path": "/a"})
    hook(alpha, "PostToolUse", tool_name="Read", tool_input={"file_path": "/a"}, tool_response="text")
    panel = now_panel(board, alpha)
    assert "working on its prompt" in panel and "running" not in panel


def test_an_idle_session_says_since_when(board):
    alpha = named_session("alpha")
    hook(alpha, "UserPromptSubmit", prompt="go")
    hook(alpha, "Stop", stop_hook_active=False)
    stop = alpha.events.get(name="hook.Stop")
    panel = now_panel(board, alpha)
    assert "idle" in panel and "waiting for a prompt" in panel
    assert f'idle since {stop.created_at:%Y-%m-%d %H:%M:%S}' in panel


def test_a_session_without_a_hook_link_says_so(board):
    from sessions_app.actions import do_register_desktop

    desk = do_register_desktop(desktop_id="desk-1", title="ui", status="active").session
    panel = now_panel(board, desk)
    assert "no hook link" in panel and "desktop status: <bdi>active</bdi>" in panel


def test_events_show_what_reads_at_a_glance_and_keep_the_rest_behind_details(board):
    alpha = named_session("alpha")
    hook(
        alpha, "Stop", stop_hook_active=False, background_tasks=[], session_crons=[],
        effort={"level": "high"}, permission_mode="default", prompt_id="p-1",
    )  # fmt: skip
    events = htmx_get(board, f"/sessions/{alpha.pk}/", "session-events").content.decode()
    row = re.search(r'<td class="nowrap">hook.Stop.*?</tr>', events, re.S).group(0)
    summary, details = row.split('<td class="small event-summary">', 1)[1].split("<details", 1)
    for dump in ("effort", "background_tasks", "session_crons", "permission_mode", "prompt_id", "{…}", "=", "stop_hook_active"):
        assert dump not in summary, dump
    assert "<summary>all fields" in details
    assert "&quot;effort&quot;: {" in details and "&quot;level&quot;: &quot;high&quot;" in details


def test_a_tool_call_event_reads_as_its_tool_and_input(board):
    alpha = named_session("alpha")
    hook(alpha, "PreToolUse", tool_name="Bash", tool_input={"command": "make <test>"}, tool_use_id="t-1")
    events = htmx_get(board, f"/sessions/{alpha.pk}/", "session-events").content.decode()
    assert '<span class="muted">tool_name</span> <bdi>Bash</bdi>' in events
    assert '<span class="muted">tool_input</span> <bdi>command: make &lt;test&gt;</bdi>' in events
    assert "tool_use_id</span>" not in events


def test_an_event_whose_marks_show_everything_has_no_details_to_expand(board):
    alpha = named_session("alpha")
    link_exact = alpha.events.get(name="link.exact")
    events = htmx_get(board, f"/sessions/{alpha.pk}/", "session-events").content.decode()
    row = re.search(rf'<tr id="event-{link_exact.pk}">.*?</tr>', events, re.S).group(0)
    assert "<details" not in row and '<span class="muted">name</span> <bdi>alpha</bdi>' in row


def test_marks_that_show_every_field_in_full_need_no_details_but_a_long_one_does(board):
    from sessions_app.feed import record_event

    alpha = named_session("alpha")
    short = record_event("session.updated", session=alpha, data={"session": alpha.handle, "fields": ["task"], "verified": True})
    long = record_event("session.updated", session=alpha, data={"session": alpha.handle, "note": "x" * 500})
    events = htmx_get(board, f"/sessions/{alpha.pk}/", "session-events").content.decode()
    assert "<details" not in re.search(rf'<tr id="event-{short.pk}">.*?</tr>', events, re.S).group(0)
    assert "<details" in re.search(rf'<tr id="event-{long.pk}">.*?</tr>', events, re.S).group(0)


def test_the_now_panel_also_refetches_itself_every_few_seconds(board):
    # A tool call within a busy turn sends no ping, yet the panel names the current tool.
    alpha = named_session("alpha")
    page = board.get(f"/sessions/{alpha.pk}/").content.decode()
    container = re.search(r'<div id="session-now" ([^>]*)>', page).group(1)
    assert "every 10s" in container and "ping-sessions from:body" in container


def test_a_codex_waiters_nudge_reads_as_a_wake_up():
    assert is_wake_up(NUDGE)
    assert is_wake_up("<task-notification>hook done</task-notification>")
    assert not is_wake_up("run the tests")
