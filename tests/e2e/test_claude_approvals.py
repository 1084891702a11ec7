"""Needs you with the real Claude Code CLI (docs/rules.md §8): a tool call that needs permission
waits for the owner, whose answer on relaybay reaches the CLI through the PermissionRequest hook
the hook client holds open; the terminal's own dialog stays usable, and the first answer wins.

Default permission mode, Bash not allowed: every Bash call asks. The scripted model proves what
the CLI did with the answer: its next request holds the tool's result, or the denial's message.
"""

import json
import subprocess
import time

import playwright.sync_api as playwright
import pytest

from tests.e2e.board_server import OWNER, log_in
from tests.e2e.claude_cli import claude_args, claude_env, parse_result, start_interactive
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import query, write_settings
from tests.e2e.test_claude_comments import wait_until
from tests.live_server import LiveRelaybay, restart_relaybay, start_relaybay, stop_relaybay

# A short expiry for the server of the tests that wait it out.
SHORT = 12


expect = playwright.expect
# What Claude Code's permission dialog shows while it waits (2.1.328).
DIALOG = "Do you want to proceed?"


@pytest.fixture(scope="module")
def relaybay(tmp_path_factory):
    url, token, process = start_relaybay(tmp_path_factory.mktemp("approvals"))
    live = LiveRelaybay(url, token, process)
    live.process.relaybay_server.create_owner(*OWNER)
    yield live
    stop_relaybay(live.process)


@pytest.fixture(scope="module")
def hasty(tmp_path_factory):
    """relaybay whose requests expire after SHORT seconds."""
    url, token, process = start_relaybay(tmp_path_factory.mktemp("hasty"), RELAYBAY_APPROVAL_SECONDS=str(SHORT))
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


def owner(live, method, path, data=None):
    return live.call(method, path, data, token=live.owner_token)


def pending(live, timeout=60):
    """The one request waiting on the owner, once it is on the board."""
    found = []

    def listed():
        status, body = owner(live, "GET", "/approvals")
        assert status == 200, body
        found[:] = body["pending"]
        return bool(found)

    wait_until(listed, timeout=timeout)
    [request] = found
    return request


def settled(live, pk):
    status, body = owner(live, "GET", "/approvals")
    return next((r for r in body["recent"] if r["id"] == pk), None)


def headless(live, model, project, home, settings, prompt="make the file", extra_env=None):
    """`claude -p` with relaybay's config and Bash not allowed: Popen, for the test to act while it waits."""
    args = claude_args(prompt, settings_file=settings, allowed_tools=None)
    return subprocess.Popen(
        args, cwd=project, env=claude_env(model.url, home, extra_env, cwd=project), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finished(run, timeout=120):
    out, err = run.communicate(timeout=timeout)
    return subprocess.CompletedProcess(run.args, run.returncode, out, err)


def tool_results(model):
    """The tool_result blocks of the model's last request."""
    last = model.main_requests()[-1]
    return [b for m in last["messages"] if isinstance(m.get("content"), list) for b in m["content"] if b.get("type") == "tool_result"]


def test_a_headless_worker_waits_for_the_owner_who_allows_it_through_the_api(relaybay, model, project, home, tmp_path):
    settings = write_settings(relaybay, tmp_path / "settings.json")
    made = project / "allowed.txt"
    model.add_steps(tool("Bash", {"command": f"touch {made}"}), text("made it"))
    run = headless(relaybay, model, project, home, settings)
    try:
        request = pending(relaybay)
        assert (request["tool"], request["summary"], request["engine"]) == ("Bash", f"touch {made}", "claude-code")
        assert not made.exists()
        status, body = owner(relaybay, "POST", f"/approvals/{request['id']}", {"decision": "allow", "scope": "once"})
        assert (status, body["state"]) == (200, "allowed")
        done = finished(run)
    finally:
        run.kill()
    assert done.returncode == 0, done.stderr
    assert parse_result(done)["result"] == "made it"
    assert made.exists()
    [result] = tool_results(model)
    assert not result.get("is_error")


def test_a_headless_worker_nobody_answers_is_denied_with_relaybays_reason(hasty, model, project, home, tmp_path):
    settings = write_settings(hasty, tmp_path / "settings.json")
    made = project / "never.txt"
    model.add_steps(tool("Bash", {"command": f"touch {made}"}), text("could not"))
    run = headless(hasty, model, project, home, settings)
    try:
        pending(hasty)
        done = finished(run, timeout=SHORT + 90)
    finally:
        run.kill()
    assert done.returncode == 0, done.stderr
    assert not made.exists()
    [result] = tool_results(model)
    assert result.get("is_error") and "nobody answered this permission request" in json.dumps(result)


def test_a_headless_worker_started_with_approvals_off_is_denied_at_once_as_without_relaybay(relaybay, model, project, home, tmp_path):
    settings = write_settings(relaybay, tmp_path / "settings.json")
    made = project / "not-asked.txt"
    model.add_steps(tool("Bash", {"command": f"touch {made}"}), text("denied at once"))
    started = time.monotonic()
    run = headless(relaybay, model, project, home, settings, extra_env={"RELAYBAY_APPROVAL_UNATTENDED": "0"})
    done = finished(run)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60 and not made.exists()
    [result] = tool_results(model)
    assert result.get("is_error") and "nobody answered" not in json.dumps(result)
    # Nothing was put before the owner.
    assert query(relaybay, "select count(*) from approvals_request where hook_session = ?", parse_result(done)["session_id"]) == [(0,)]


@pytest.fixture
def terminal(relaybay, model, project, home, tmp_path):
    """An interactive Claude Code under tmux, connected with relaybay's config, Bash not allowed."""
    settings = write_settings(relaybay, tmp_path / "settings.json")
    with start_interactive(model_url=model.url, cwd=project, home=home, settings_file=settings, allowed_tools=None) as session:
        yield session


def asks(model, terminal, made):
    model.add_steps(tool("Bash", {"command": f"touch {made}"}), text("turn over"))
    terminal.send("make the file")
    terminal.wait_for_screen(DIALOG, timeout=60)


def test_allow_on_the_board_closes_the_terminals_dialog_and_runs_the_tool(relaybay, model, project, terminal, page):
    made = project / "from-the-board.txt"
    asks(model, terminal, made)
    request = pending(relaybay)
    page.goto(f"{relaybay.url}/needs-you/")
    item = page.locator(f"#request-{request['id']}")
    expect(item).to_contain_text(f"touch {made}")
    assert DIALOG in terminal.screen()
    item.get_by_role("button", name="Allow once").click()
    terminal.wait_for_screen("turn over", timeout=60)
    assert made.exists() and DIALOG not in terminal.screen()
    [result] = tool_results(model)
    assert not result.get("is_error")
    expect(page.locator("#needs-you-empty")).to_be_visible()
    assert settled(relaybay, request["id"])["decided_by"] == f"owner ({OWNER[0]})"


def test_deny_with_a_message_reaches_the_model_as_the_tools_error(relaybay, model, project, terminal, page):
    made = project / "denied.txt"
    asks(model, terminal, made)
    request = pending(relaybay)
    page.goto(f"{relaybay.url}/needs-you/")
    item = page.locator(f"#request-{request['id']}")
    item.get_by_placeholder("why not").fill("use the build folder, deny-5150")
    item.get_by_role("button", name="Deny").click()
    terminal.wait_for_screen("turn over", timeout=60)
    assert not made.exists()
    [result] = tool_results(model)
    assert result.get("is_error") and "use the build folder, deny-5150" in json.dumps(result)


def test_yes_in_the_terminal_first_shows_answered_in_the_terminal_and_a_late_answer_is_409(relaybay, model, project, terminal, page):
    made = project / "from-the-terminal.txt"
    asks(model, terminal, made)
    request = pending(relaybay)
    page.goto(f"{relaybay.url}/needs-you/")
    expect(page.locator(f"#request-{request['id']}").get_by_role("button", name="Allow once")).to_be_visible()
    terminal.send("1", enter=False)  # "1. Yes"
    terminal.wait_for_screen("turn over", timeout=60)
    assert made.exists()
    wait_until(lambda: (settled(relaybay, request["id"]) or {}).get("state") == "answered_elsewhere", timeout=30)
    row = page.locator(f"#request-{request['id']}")
    expect(row).to_contain_text("answered in the terminal")
    expect(row.get_by_role("button")).to_have_count(0)
    status, body = owner(relaybay, "POST", f"/approvals/{request['id']}", {"decision": "allow"})
    assert (status, body["state"]) == (409, "answered_elsewhere")


@pytest.fixture
def page(browser, relaybay):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, relaybay)
    yield page
    context.close()


def test_esc_in_the_terminal_settles_the_request_at_once(relaybay, model, project, terminal):
    made = project / "escaped.txt"
    asks(model, terminal, made)
    request = pending(relaybay)
    terminal.tmux("send-keys", "-t", terminal.name, "Escape")
    # Claude Code stops the hook; its client says so, before any later hook of the session.
    wait_until(lambda: (settled(relaybay, request["id"]) or {}).get("state") == "answered_elsewhere", timeout=30)
    assert not made.exists()
    names = [name for (name,) in query(relaybay, "select name from sessions_app_event where session_id = (select session_id from approvals_request where id = ?) order by id", request["id"])]
    after = names[len(names) - names[::-1].index("hook.PermissionRequest"):]
    assert "approval.answered_elsewhere" in after and not [n for n in after if n.startswith("hook.") and n != "hook.Notification"], after
    status, body = owner(relaybay, "POST", f"/approvals/{request['id']}", {"decision": "allow"})
    assert (status, body["state"]) == (409, "answered_elsewhere")


def test_a_relaybay_restart_while_a_request_waits_loses_none(relaybay, model, project, terminal, page):
    made = project / "after-the-restart.txt"
    asks(model, terminal, made)
    request = pending(relaybay)
    stop_relaybay(relaybay.process)
    time.sleep(2)  # the waiting hook finds relaybay gone and keeps trying
    relaybay.process = restart_relaybay(relaybay.process)
    assert pending(relaybay)["id"] == request["id"]
    page.goto(f"{relaybay.url}/needs-you/")
    page.locator(f"#request-{request['id']}").get_by_role("button", name="Allow once").click()
    terminal.wait_for_screen("turn over", timeout=60)
    assert made.exists()


@pytest.fixture
def hasty_terminal(hasty, model, project, home, tmp_path):
    settings = write_settings(hasty, tmp_path / "settings.json")
    with start_interactive(model_url=model.url, cwd=project, home=home, settings_file=settings, allowed_tools=None) as session:
        yield session


def test_a_request_nobody_answers_expires_and_the_terminals_dialog_stays(hasty, model, project, hasty_terminal, browser):
    made = project / "expired.txt"
    asks(model, hasty_terminal, made)
    request = pending(hasty)
    wait_until(lambda: (settled(hasty, request["id"]) or {}).get("state") == "expired", timeout=SHORT + 30)
    time.sleep(2)
    assert DIALOG in hasty_terminal.screen() and not made.exists()
    hasty.process.relaybay_server.create_owner(*OWNER)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log_in(page, hasty)
    page.goto(f"{hasty.url}/needs-you/")
    row = page.locator(f"#request-{request['id']}")
    expect(row).to_contain_text("Expired")
    expect(row.get_by_role("button")).to_have_count(0)
    status, body = owner(hasty, "POST", f"/approvals/{request['id']}", {"decision": "allow"})
    assert (status, body["state"]) == (409, "expired")
    context.close()
