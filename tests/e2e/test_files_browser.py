"""The Files page in Chromium (docs/rules.md §7.4): sessions named with the board's hostile corpus
edit files whose paths and reservations carry it too; the page shows every one of them as
text, runs none of them, and updates itself when two sessions start sharing a file. The owner
breaks a reservation with its button."""

import os
import subprocess

import playwright.sync_api as playwright
import pytest

from board.pages import is_invisible
from tests.e2e.board_server import log_in, shot, start_board, stop_board
from tests.test_board_escaping import CORPUS

expect = playwright.expect
LIVE_TIMEOUT = 5000


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A board whose sessions, paths and reasons are the hostile corpus, in a real checkout."""
    root = tmp_path_factory.mktemp("files-board")
    tree = root / "tree"
    (tree / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    server = start_board(root)
    server.tree = tree.resolve()
    server.start_session("hook-peer", "peer", cwd=str(server.tree))
    for i, text in enumerate(CORPUS):
        hook = f"hook-hostile-{i}"
        server.start_session(hook, f"{text} {i}", cwd=str(server.tree))
        for who in (hook, "hook-peer"):
            edit(server, who, f"src/{text} {i}.py")
        status, answer = server.post("/files_reserve", {"paths": [f"lib/{text} {i}.py"], "reason": text, "hook_session": hook})
        assert status == 200, answer
    yield server
    stop_board(server)


def edit(live, hook_session, relative):
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": hook_session,
        "cwd": str(live.tree),
        "tool_name": "Edit",
        "tool_input": {"file_path": str(live.tree / relative), "old_string": "a", "new_string": "b"},
    }
    status, answer = live.post("/hooks", payload)
    assert status == 200, answer
    return answer


def shown(text):
    return "".join(f"U+{ord(ch):04X}" if is_invisible(ch) else ch for ch in text)


@pytest.fixture
def page(context, live):
    page = context.new_page()
    page.on("dialog", lambda dialog: pytest.fail(f"a script ran on the Files page: {dialog.message}"))
    log_in(page, live)
    return page


@pytest.mark.embedded_only
def test_hostile_names_paths_and_reasons_are_shown_as_text_and_never_run(page, live):
    page.goto(f"{live.url}/files/")
    shared, held = page.locator("#files-shared"), page.locator("#files-reservations")
    for i, text in enumerate(CORPUS):
        # Paths as relaybay keeps them (`//` in the corpus's link is one folder separator), and
        # as the board shows agent text: invisible characters written out.
        expect(shared).to_contain_text(shown(os.path.normpath(f"src/{text} {i}.py")))
        expect(shared).to_contain_text(shown(f"{text} {i}"))
        expect(held).to_contain_text(shown(os.path.normpath(f"lib/{text} {i}.py")))
    expect(shared).to_contain_text("abcU+202Edcba 5")
    # Nothing of the corpus became markup: no image, no handler, no script of its own.
    assert page.locator("main img").count() == 0
    assert page.locator("main [onmouseover], main [onfocus], main [onerror]").count() == 0
    assert page.locator("main script").count() == 0
    assert page.locator("main strong, main em").count() == 0
    assert "\u202e" not in page.locator("main").inner_text()
    shot(page, "files-hostile")


def test_the_page_shows_a_file_as_soon_as_a_second_session_edits_it(page, live):
    page.goto(f"{live.url}/files/")
    shared = page.locator("#files-shared")
    expect(shared).not_to_contain_text("src/fresh.py")
    live.start_session("hook-fresh-1", "fresh-one", cwd=str(live.tree))
    live.start_session("hook-fresh-2", "fresh-two", cwd=str(live.tree))
    edit(live, "hook-fresh-1", "src/fresh.py")
    edit(live, "hook-fresh-2", "src/fresh.py")
    row = shared.locator("tr.shared-file", has_text="src/fresh.py")
    expect(row).to_contain_text("fresh-one", timeout=LIVE_TIMEOUT)
    expect(row).to_contain_text("fresh-two")


def test_the_owner_breaks_a_reservation_and_the_edit_it_denied_goes_through(page, live):
    live.start_session("hook-holder", "holder", cwd=str(live.tree))
    live.start_session("hook-waiter", "waiter", cwd=str(live.tree))
    status, answer = live.post("/files_reserve", {"paths": ["docs/guide.md"], "reason": "rewriting", "hook_session": "hook-holder"})
    assert status == 200, answer
    denied = edit(live, "hook-waiter", "docs/guide.md")
    assert denied["hookSpecificOutput"]["permissionDecision"] == "deny"
    page.goto(f"{live.url}/files/")
    row = page.locator("#files-reservations tr", has_text="docs/guide.md")
    expect(row).to_contain_text("holder")
    row.get_by_role("button", name="Break").click()
    expect(page.locator(".flash")).to_contain_text("Reservation of docs/guide.md broken")
    expect(page.locator("#files-reservations")).not_to_contain_text("docs/guide.md")
    assert "permissionDecision" not in edit(live, "hook-waiter", "docs/guide.md").get("hookSpecificOutput", {})
