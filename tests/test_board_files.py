"""The board's Files page, a session's changed files and the Map's shared files (docs/rules.md §7.4),
from edits and reservations made through the JSON API as the hooks and the MCP server make them."""

import re

import pytest

from sessions_app.models import FileNotice, FileReservation, HookLink
from tests.board_fixtures import board, htmx_get, owner  # noqa: F401

from .file_personas import denial_of, fs, trees  # noqa: F401
from .message_personas import rb  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def busy_tree(fs, trees):
    """alpha and bravo edit src/app.py in one checkout; charlie edits it in a second worktree;
    alpha reserves docs/** exclusively."""
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    fs.start("charlie", "hook-c", trees.worktree)
    fs.edit("hook-a", trees.repo, trees.repo / "src" / "app.py")
    fs.edit("hook-b", trees.repo, trees.repo / "src" / "app.py")
    fs.edit("hook-c", trees.worktree, trees.worktree / "src" / "app.py")
    fs.reserved("hook-a", ["docs/**"], reason="rewriting the docs")
    denial_of(fs.edit("hook-b", trees.repo, trees.repo / "docs" / "index.md"))
    return fs


def row_of(html, marker):
    return re.search(rf'<tr class="{marker}">(.*?)</tr>', html, re.S).group(1)


def test_the_files_page_shows_files_two_live_sessions_edit_and_names_them(board, busy_tree, trees):
    html = board.get("/files/").content.decode()
    shared = row_of(html, "shared-file")
    assert "src/app.py" in shared and str(trees.repo) in shared
    assert "alpha" in shared and "bravo" in shared and "charlie" not in shared
    assert html.count('class="shared-file"') == 1


def test_the_same_path_in_another_worktree_is_shown_as_may_conflict_when_merged(board, busy_tree, trees):
    html = board.get("/files/").content.decode()
    merging = row_of(html, "merge-risk")
    assert "src/app.py" in merging and str(trees.repo) in merging and str(trees.worktree) in merging and "charlie" in merging


def test_the_files_page_lists_reservations_and_the_warnings_and_denials_over_time(board, busy_tree):
    html = board.get("/files/").content.decode()
    reservation = FileReservation.objects.get()
    held = re.search(rf'<tr id="reservation-{reservation.pk}">(.*?)</tr>', html, re.S).group(1)
    assert "docs/**" in held and "alpha" in held and "exclusive" in held and "rewriting the docs" in held and "Break" in held
    events = htmx_get(board, "/files/", "files-events").content.decode()
    assert "file.warned" in events and "file.denied" in events and "file.reserved" in events


def test_the_owner_breaks_a_reservation_and_the_edit_goes_through(board, busy_tree, trees):
    reservation = FileReservation.objects.get()
    response = board.post(f"/files/reservations/{reservation.pk}/break/")
    assert response.status_code == 302 and response["Location"] == "/files/"
    assert FileReservation.objects.get().ended == FileReservation.Ended.BROKEN
    assert FileNotice.objects.filter(kind=FileNotice.Kind.BROKEN, session=reservation.session).exists()
    assert denial_of(busy_tree.edit("hook-b", trees.repo, trees.repo / "docs" / "index.md")) is None
    html = board.get("/files/").content.decode()
    assert f'id="reservation-{reservation.pk}"' not in html
    assert "already ended" in board.post(f"/files/reservations/{reservation.pk}/break/", follow=True).content.decode()


def test_breaking_is_the_owners_only(client, busy_tree):
    reservation = FileReservation.objects.get()
    refused = client.post(f"/files/reservations/{reservation.pk}/break/", HTTP_AUTHORIZATION="Bearer test-token")
    assert refused.status_code == 302 and "login" in refused["Location"]
    assert FileReservation.objects.get().ended_at is None


def test_a_session_page_lists_the_files_its_session_changed(board, busy_tree, trees):
    bravo = HookLink.objects.get(hook_session="hook-b").session
    busy_tree.edit("hook-b", trees.repo, trees.repo / "src" / "app.py")
    html = htmx_get(board, f"/sessions/{bravo.pk}/", "session-files").content.decode()
    [changed] = re.findall(r'<tr class="changed-file">(.*?)</tr>', html, re.S)
    assert "src/app.py" in changed and '<td class="num">2</td>' in changed and "Edit" in changed


def test_the_map_draws_a_line_between_sessions_that_edit_the_same_files_when_asked(board, busy_tree):
    alpha = HookLink.objects.get(hook_session="hook-a").session
    bravo = HookLink.objects.get(hook_session="hook-b").session
    plain = board.get("/map/").content.decode()
    assert 'class="edge files"' not in plain
    shown = board.get("/map/?files=1").content.decode()
    [line] = re.findall(r'<path class="edge files"[^>]*>(.*?)</path>', shown, re.S)
    assert "alpha and bravo edited 1 of the same file lately" in line
    assert f'id="node-{alpha.handle}"' in shown and f'id="node-{bravo.handle}"' in shown
    assert 'marker-end' not in re.search(r'<path class="edge files"[^>]*>', shown).group(0)


def test_the_sidebar_leads_to_the_files_page(board):
    html = board.get("/").content.decode()
    assert '<a href="/files/" >Files</a>' in html or '<a href="/files/">Files</a>' in html
