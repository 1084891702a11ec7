"""The board shows both channels (docs/rules.md §4.9, §5): native rows with their channel and mark and
"text not stored", a channel filter, held ones in the Inbox, native edges on the Map, both
channels on the session page, names and marks in events and export."""

import pytest

from messaging.actions import do_send_message
from messaging.models import SessionMessage
from sessions_app.models import Session

from .board_fixtures import board, owner  # noqa: F401
from .native_payloads import APPROVAL, MSG_ID, SECRET, TRACES, native, notice, send_post, wrapped  # noqa: F401

pytestmark = pytest.mark.django_db

OTHER_ID = "5b1d7e52-0000-4000-8000-00000000beef"


def page(board, url, **params):
    response = board.get(url, params)
    assert response.status_code == 200
    text = response.content.decode()
    for trace in TRACES:
        assert trace not in text
    return text


@pytest.fixture
def exchange(native):
    """alpha sent bravo two native messages (one delivered, one not yet) and bravo wrote
    alpha-dev once through relaybay."""
    native.event("alpha", "PostToolUse", **send_post())
    native.event("bravo", "UserPromptSubmit", prompt=wrapped())
    native.event("alpha", "PostToolUse", **send_post(text="second text", msg_id=OTHER_ID))
    do_send_message(body="relaybay body 8181", to="alpha-dev", session="bravo-dev", hook_session="h-b")
    return native


def test_messages_shows_both_channels_with_marks_and_text_not_stored(board, exchange):
    text = page(board, "/messages/")
    assert text.count("text not stored") == 2
    assert text.count('class="badge channel native"') == 2 and text.count('class="badge channel mcp"') == 1
    assert "mark-native\" title=\"delivered" in text and "mark-native\" title=\"sent" in text
    assert "relaybay body 8181" in text


@pytest.mark.parametrize("channel, native_rows, mcp_rows", [("native", 2, 0), ("mcp", 0, 1), ("", 2, 1)])
def test_messages_filter_by_channel(board, exchange, channel, native_rows, mcp_rows):
    text = page(board, "/messages/", channel=channel)
    assert text.count('class="badge channel native"') == native_rows
    assert text.count('class="badge channel mcp"') == mcp_rows


def test_native_rows_are_never_listed_as_unread(board, exchange):
    text = page(board, "/messages/", state="unread")
    assert 'class="badge channel native"' not in text and "relaybay body 8181" in text


def test_the_session_page_shows_both_channels_in_and_out(board, exchange):
    bravo = exchange.row("bravo")
    text = page(board, f"/sessions/{bravo.pk}/")
    assert text.count('class="badge channel native"') == 2 and "relaybay body 8181" in text


def test_a_held_native_message_waits_in_the_inbox_until_denied(board, native):
    native.event("alpha", "PostToolUse", **send_post())
    native.event("bravo", "Notification", **APPROVAL)
    text = page(board, "/inbox/")
    assert "held for approval in <bdi>bravo</bdi>'s terminal" in text
    assert "Approve or deny it in that terminal" in text
    assert page(board, "/inbox/count/").count(">1<") == 1
    native.event("alpha", "UserPromptSubmit", prompt=notice("denied"))
    text = page(board, "/inbox/")
    assert "badge held" not in text and "Nothing waits on you." in text
    assert "mark-native\" title=\"denied" in page(board, "/messages/")


def test_the_map_draws_native_edges_with_counts_beside_relaybay_s(board, exchange):
    text = page(board, "/map/")
    assert "alpha-dev → bravo-dev: 2 native messages" in text
    assert "bravo-dev → alpha-dev: 1 message<" in text
    assert text.count('class="edge native"') == 1


def test_events_hold_names_and_marks_only(board, exchange):
    text = page(board, "/events/")
    assert "message.delivered" in text and MSG_ID in text and "native" in text


def test_the_export_has_native_marks_and_no_text(board, exchange):
    bravo = exchange.row("bravo")
    text = page(board, f"/sessions/{bravo.pk}/export.md")
    assert "| native | alpha |" in text and "text not stored" in text


def test_an_unreachable_send_says_so(board, native):
    native.event("alpha", "PostToolUse", **send_post(to="charlie", success=False))
    text = page(board, "/messages/")
    assert "mark-native\" title=\"unreachable" in text
    assert not Session.objects.filter(title="charlie").exists()
    assert SessionMessage.objects.get().recipient_name == "charlie"
