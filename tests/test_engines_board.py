"""The board shows which CLI each session runs in and what that CLI allows (docs/rules.md §1.6,
§5.2): an engine badge and a filter on the Sessions page, the engine on a session's page and on
the Map, an idle Codex or Gemini session said truthfully not to be woken, and a Codex session
whose hooks never arrived flagged until they do."""

import pytest

import engines
from sessions_app.actions import do_note_unheard_session
from sessions_app.hooks.ingest import ingest_hook
from sessions_app.models import Session, UnheardSession
from tests.board_fixtures import board, htmx_get, named_session, owner, send  # noqa: F401

pytestmark = pytest.mark.django_db


def start(engine, hook_session, folder):
    ingest_hook({"hook_event_name": "SessionStart", "session_id": hook_session, "cwd": folder, "relaybay_engine": engine})
    return Session.objects.get(links__hook_session=hook_session)


@pytest.fixture
def fleet(db):
    return {
        "claude": start("claude-code", "cc-1", "/work/api"),
        "codex": start("codex", "cx-1", "/work/shop"),
        "gemini": start("gemini", "gm-1", "/work/docs"),
    }


def row_html(page, session):
    html = page.content.decode()
    start = html.index(f'id="session-{session.pk}"')
    return html[start : html.index("</tr>", start)]


def test_each_session_shows_the_cli_it_runs_in_and_the_page_filters_by_it(board, fleet):  # noqa: F811
    page = board.get("/")
    for engine, label in (("claude", "Claude Code"), ("codex", "Codex"), ("gemini", "Gemini CLI")):
        hue = engines.of(fleet[engine].engine).hue
        assert f'<span class="badge engine" style="--hue: {hue}" title="the CLI it runs in">{label}</span>' in row_html(page, fleet[engine])
    filtered = board.get("/?engine=codex").content.decode()
    assert 'id="session-%d"' % fleet["codex"].pk in filtered
    assert 'id="session-%d"' % fleet["claude"].pk not in filtered and 'id="session-%d"' % fleet["gemini"].pk not in filtered
    # An engine relaybay does not know filters nothing out.
    assert 'id="session-%d"' % fleet["claude"].pk in board.get("/?engine=<vim>").content.decode()


def test_an_idle_codex_or_gemini_session_is_said_to_get_its_mail_at_its_next_prompt(board, fleet):  # noqa: F811
    page = board.get("/")
    for engine in ("codex", "gemini"):
        assert "relaybay has no wake-up" in row_html(page, fleet[engine])
    assert "relaybay has no wake-up" not in row_html(page, fleet["claude"])
    detail = board.get(f"/sessions/{fleet['codex'].pk}/").content.decode()
    assert 'id="not-woken"' in detail and "next prompt or tool call" in detail
    assert "Codex session id" in detail
    # Busy, it gets its mail at its next tool call: nothing to warn of.
    ingest_hook({"hook_event_name": "UserPromptSubmit", "session_id": "cx-1", "cwd": "/work/shop", "relaybay_engine": "codex", "prompt": "go"})
    assert "relaybay has no wake-up" not in row_html(board.get("/"), fleet["codex"])


def test_a_codex_session_whose_hooks_never_arrived_is_flagged_until_they_do(board, fleet):  # noqa: F811
    do_note_unheard_session(engine="codex", hook_session="<b>cx-untrusted</b>")
    do_note_unheard_session(engine="codex", hook_session="<b>cx-untrusted</b>")
    assert UnheardSession.objects.get().calls == 2
    page = htmx_get(board, "/", "sessions-rows").content.decode()
    assert 'id="unheard-sessions"' in page and "/hooks" in page and "2 times" in page
    # Agent-supplied text is escaped.
    assert "<b>cx-untrusted</b>" not in page and "&lt;b&gt;cx-untrusted&lt;/b&gt;" in page
    # A session relaybay hears from is never flagged, and one flagged is not once its first hook arrives.
    assert do_note_unheard_session(engine="codex", hook_session="cx-1") is False
    start("codex", "<b>cx-untrusted</b>", "/work/shop")
    assert not UnheardSession.objects.exists()
    assert 'id="unheard-sessions"' not in board.get("/").content.decode()


def test_the_map_names_the_cli_of_each_session_that_is_not_claude_code(board, fleet):  # noqa: F811
    for session, hook_session in ((fleet["claude"], "cc-1"), (fleet["codex"], "cx-1"), (fleet["gemini"], "gm-1")):
        session.hook_session = hook_session
    send(fleet["codex"], fleet["claude"], "hello from codex")
    send(fleet["gemini"], fleet["codex"], "hello from gemini")
    page = board.get("/map/").content.decode()
    assert "(S-%d, Codex)" % fleet["codex"].pk in page and "(S-%d, Gemini CLI)" % fleet["gemini"].pk in page
    assert '<tspan class="engine">· Codex</tspan>' in page and '<tspan class="engine">· Gemini CLI</tspan>' in page
    assert '<tspan class="engine">· Claude Code</tspan>' not in page
