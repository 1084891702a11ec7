"""The owner acts on a message from its row: a comment to its sender or its recipient in one
step (docs/rules.md §5.3, docs/board.md), through the same composer and action as the session page's."""

import pytest

from sessions_app.models import Comment, Session
from tests.board_fixtures import board, named_session, owner, send  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def message(db):
    alpha, beta = named_session("alpha"), named_session("beta")
    return send(alpha, beta, "Is the schema final?")


def comment(board, message, to, body, htmx=True):
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return board.post(f"/messages/{message.pk}/comment/", {"to": to, "body": body}, **headers)


def test_every_message_row_offers_a_comment_to_its_sender_and_its_recipient(board, message):
    page = board.get("/messages/").content.decode()
    assert f'action="/messages/{message.pk}/comment/"' in page and f'hx-post="/messages/{message.pk}/comment/"' in page
    assert 'name="to" value="sender">Comment to <bdi>alpha</bdi>' in page
    assert 'name="to" value="recipient">Comment to <bdi>beta</bdi>' in page


@pytest.mark.parametrize("to, name", [("sender", "alpha"), ("recipient", "beta")])
def test_a_comment_from_a_message_row_goes_to_the_chosen_session(board, message, to, name):
    answer = comment(board, message, to, "Please settle this between you.").content.decode()
    saved = Comment.objects.get()
    assert saved.session == Session.objects.get(title=name) and saved.body == "Please settle this between you."
    assert saved.author.username == "owner"
    assert "data-sent" in answer and f"Comment saved for {name}" in answer
    assert "Please settle this between you." not in answer, "the composer comes back empty"


def test_a_refused_comment_comes_back_with_its_text_and_the_reason(board, message):
    answer = comment(board, message, "sender", "   ").content.decode()
    assert not Comment.objects.exists()
    assert "The comment is empty" in answer and "composer-status error" in answer and "data-sent" not in answer


def test_a_comment_to_a_session_row_that_is_gone_says_so_and_keeps_the_text(board, message):
    message.sender.delete()
    answer = comment(board, message, "sender", "still there?").content.decode()
    assert not Comment.objects.exists()
    assert "The session row of &quot;alpha&quot; is gone" in answer and ">still there?</textarea>" in answer


def test_without_htmx_the_comment_is_saved_and_the_thread_shown_with_a_note(board, message):
    response = comment(board, message, "recipient", "From the thread page.", htmx=False)
    assert response.status_code == 302 and response["Location"] == f"/messages/{message.pk}/"
    assert Comment.objects.get().session.title == "beta"
    assert "Comment saved for beta" in board.get(response["Location"]).content.decode()


def test_agent_names_on_the_buttons_are_escaped(board):
    sender, recipient = named_session("<b>mallory</b>"), named_session("beta")
    send(sender, recipient, "hi")
    page = board.get("/messages/").content.decode()
    assert "Comment to <bdi>&lt;b&gt;mallory&lt;/b&gt;</bdi>" in page and "<b>mallory</b>" not in page
