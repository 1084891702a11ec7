"""The board's own 404 page and its favicon (docs/rules.md §5.1)."""

import pytest
from django.contrib.staticfiles import finders
from django.test import Client

from tests.board_fixtures import board, owner  # noqa: F401

pytestmark = pytest.mark.django_db


def test_an_unknown_board_page_is_a_styled_404_with_the_sidebar(board):
    response = board.get("/no/such/page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert "board.css" in page and "Nothing here" in page and "<code>/no/such/page/</code>" in page
    assert 'class="side"' in page, "the owner keeps the sidebar"


def test_a_missing_session_is_the_same_styled_404(board):
    page = board.get("/sessions/999/").content.decode()
    assert "Nothing here" in page and "board.css" in page


def test_a_visitor_gets_the_404_page_without_the_owners_sidebar():
    response = Client().get("/no/such/page/")
    page = response.content.decode()
    assert response.status_code == 404 and "Nothing here" in page
    assert 'class="side"' not in page and 'class="shell bare"' in page


def test_the_404_page_escapes_the_address():
    page = Client().get("/x<script>alert(1)</script>/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_every_page_names_the_favicon_and_favicon_ico_leads_to_it(board):
    assert '<link rel="icon" href="/static/board/favicon.svg" type="image/svg+xml">' in board.get("/").content.decode()
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/board/favicon.svg"
    # Static files are served by the ASGI handler, not the test client: find the file as it does.
    assert "<svg" in open(finders.find("board/favicon.svg")).read()
