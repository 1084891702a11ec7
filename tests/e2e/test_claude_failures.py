"""Failures the person meets, with the real Claude Code CLI under tmux and the board in
Chromium: a wrong token or an unreachable relaybay at session start is said on the session's
screen (the SessionStart answer's systemMessage), and the board warns about refused hooks."""

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import CHROMIUM, CHROMIUM_ARGS, OWNER, log_in
from tests.e2e.board_server import manage as manage_with_env
from tests.e2e.claude_cli import start_interactive
from tests.e2e.model_server import text
from tests.e2e.relaybay_cli import manage
from tests.live_server import free_port, live_relaybay  # noqa: F401  (fixture)

# What this module tests is the client's or the page's own behaviour, which neither database
# nor channel layer changes: make test runs it once, on the embedded pass.
pytestmark = pytest.mark.embedded_only


def wrong_token_settings(live, path):
    """claude_config's output as a relaybay with another token would print it (an old config)."""
    path.write_text(manage_with_env(live, "claude_config", "--url", live.url, RELAYBAY_TOKEN="an-old-token").stdout)
    return path


def test_a_wrong_token_is_said_on_the_sessions_screen_and_on_the_board(live_relaybay, model, project, home, tmp_path):
    settings = wrong_token_settings(live_relaybay, tmp_path / "old.json")
    model.add_steps(text("working anyway"))
    with start_interactive(model_url=model.url, cwd=project, home=home, settings_file=settings) as session:
        shown = session.wait_for_screen("relaybay refused this session's hooks (401")
        assert "SessionStart:startup says: relaybay refused this session's hooks (401" in shown
        session.send("go on")
        session.wait_for_screen("working anyway")
        assert session.exit()
    # The person at the board is told too.
    manage_with_env(live_relaybay, "createsuperuser", "--noinput", "--username", OWNER[0], "--email", "", DJANGO_SUPERUSER_PASSWORD=OWNER[1])
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            log_in(page, live_relaybay)
            warning = page.locator("#refused-hooks")
            playwright.expect(warning).to_contain_text("for a missing or wrong token")
            playwright.expect(warning).to_contain_text("python manage.py claude_config")
        finally:
            browser.close()


def test_an_unreachable_relaybay_is_said_on_the_sessions_screen(live_relaybay, model, project, home, tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    settings = tmp_path / "down.json"
    settings.write_text(manage(live_relaybay, "claude_config", "--url", down, "--spool", str(tmp_path / "spool.jsonl")).stdout)
    model.add_steps(text("working offline"))
    with start_interactive(model_url=model.url, cwd=project, home=home, settings_file=settings) as session:
        shown = session.wait_for_screen(f"relaybay is not reachable at {down}")
        assert "SessionStart:startup says: relaybay is not reachable" in shown
        session.send("go on")
        session.wait_for_screen("working offline")
        assert session.exit()
    assert (tmp_path / "spool.jsonl").exists()
