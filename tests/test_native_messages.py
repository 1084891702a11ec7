"""Claude Code's native messages as rows of channel `native` (docs/rules.md §4.9): one per send, its
mark following the hooks, matched to its delivery without its text; native names and
sockets are names relaybay resolves."""

from datetime import timedelta

import pytest
from django.utils import timezone

from messaging import reads
from messaging.models import SessionMessage
from sessions_app.directory import find_sessions
from sessions_app.models import Event, HookLink, Session

from .native_payloads import APPROVAL, MSG_ID, SECRET, SOCKET_A, assert_no_native_text, native, notice, send_post, wrapped  # noqa: F401

pytestmark = pytest.mark.django_db

OTHER_ID = "5b1d7e52-0000-4000-8000-00000000beef"


def only_native():
    [message] = SessionMessage.objects.filter(channel="native")
    return message


def marks(message):
    return list(Event.objects.filter(name__startswith="message.", data__message=message.pk).order_by("id").values_list("name", flat=True))


def test_a_send_becomes_a_native_row_marked_sent_then_delivered(native):
    native.event("alpha", "PostToolUse", **send_post())
    message = only_native()
    assert (message.sender, message.recipient, message.sender_name, message.recipient_name) == (
        native.row("alpha"),
        native.row("bravo"),
        "alpha",
        "bravo",
    )
    assert (message.state, message.native_id, message.body, message.delivered_at) == ("sent", MSG_ID, "", None)
    edge = Event.objects.get(name="session.message", data__message=message.pk)
    assert (edge.data["channel"], edge.data["from"], edge.data["to"]) == ("native", native.row("alpha").handle, native.row("bravo").handle)

    native.event("bravo", "UserPromptSubmit", prompt=wrapped())
    message.refresh_from_db()
    assert message.delivered_at is not None
    assert message.delivered_by == "UserPromptSubmit via h-b"
    assert marks(message) == ["message.sent", "message.delivered"]
    assert_no_native_text()


def test_a_delivery_seen_before_its_send_is_one_row(native):
    native.event("bravo", "UserPromptSubmit", prompt=wrapped())
    native.event("alpha", "PostToolUse", **send_post())
    message = only_native()
    assert (message.sender, message.recipient, message.native_id) == (native.row("alpha"), native.row("bravo"), MSG_ID)
    assert message.delivered_at is not None
    assert_no_native_text()


# An idle recipient woken by a native message, as its hooks may reach relaybay: the sender's
# SendMessage result (S), the recipient's prompt carrying the message (A), the sender's
# SessionEnd once `claude -p` exits (E), and S again as the hook client's spool replays it when
# relaybay recorded S but its answer came too late for the client (R, before the sender's
# next hooks).
ORDERS = ["SAE", "ASE", "SEA", "SARE", "ASRE", "SRAE", "SREA"]


@pytest.mark.parametrize("order", ORDERS)
def test_a_woken_recipient_s_message_ends_one_row_marked_delivered_whatever_the_order_of_its_hooks(native, order):
    steps = {
        "S": lambda: native.event("alpha", "PostToolUse", **send_post()),
        "R": lambda: native.event("alpha", "PostToolUse", replay=True, **send_post()),
        "A": lambda: native.event("bravo", "UserPromptSubmit", prompt=wrapped()),
        "E": lambda: native.event("alpha", "SessionEnd", reason="other"),
    }
    for step in order:
        steps[step]()
    message = only_native()
    assert (message.sender, message.recipient, message.native_id) == (native.row("alpha"), native.row("bravo"), MSG_ID)
    assert message.delivered_at is not None and message.delivered_by == "UserPromptSubmit via h-b"


def test_a_different_text_is_not_taken_for_the_send(native):
    native.event("alpha", "PostToolUse", **send_post())
    native.event("bravo", "UserPromptSubmit", prompt=wrapped(text="something else entirely"))
    sent, arrived = SessionMessage.objects.filter(channel="native").order_by("id")
    assert (sent.delivered_at, arrived.native_id) == (None, "")
    assert arrived.sender == native.row("alpha")


def test_a_send_to_an_exited_session_is_unreachable(native):
    native.event("alpha", "PostToolUse", **send_post(to="charlie", success=False))
    message = only_native()
    assert (message.state, message.recipient, message.recipient_name, message.native_id) == ("unreachable", None, "charlie", "")
    assert marks(message) == ["message.unreachable"]
    # Not a relaybay message whose recipient row is gone: nothing for the owner's Inbox.
    assert reads.inbox_count() == 0
    assert_no_native_text()


def test_a_send_to_a_name_relaybay_does_not_know_keeps_the_name(native):
    native.event("alpha", "PostToolUse", **send_post(to="delta"))
    message = only_native()
    assert (message.state, message.recipient, message.recipient_name) == ("sent", None, "delta")


def test_the_sender_s_notices_mark_held_then_denied_and_the_inbox_follows(native):
    native.event("alpha", "PostToolUse", **send_post())
    native.event("alpha", "UserPromptSubmit", prompt=notice("held"))
    message = only_native()
    assert message.state == "held"
    assert [m.pk for qs in reads.inbox_querysets() for m in qs] == [message.pk]
    native.event("alpha", "UserPromptSubmit", prompt=notice("denied"))
    message.refresh_from_db()
    assert message.state == "denied"
    assert reads.inbox_count() == 0
    assert marks(message) == ["message.sent", "message.held", "message.denied"]


@pytest.mark.parametrize("kind", ["expired", "refused", "dropped"])
def test_each_notice_marks_its_message(native, kind):
    native.event("alpha", "PostToolUse", **send_post())
    native.event("alpha", "PostToolUse", **send_post(text="another one", msg_id=OTHER_ID))
    native.event("alpha", "UserPromptSubmit", prompt=notice(kind, msg_id=OTHER_ID))
    states = dict(SessionMessage.objects.values_list("native_id", "state"))
    assert states == {MSG_ID: "sent", OTHER_ID: kind}


def test_the_recipient_s_approval_prompt_marks_the_message_held_until_delivered(native):
    native.event("alpha", "PostToolUse", **send_post())
    native.event("bravo", "Notification", **APPROVAL)
    message = only_native()
    assert message.state == "held"
    assert reads.inbox_count() == 1
    native.event("bravo", "UserPromptSubmit", prompt=wrapped())
    message.refresh_from_db()
    assert message.delivered_at is not None
    assert reads.inbox_count() == 0


@pytest.mark.parametrize("approval_first", [False, True], ids=["send-then-approval", "approval-then-send"])
def test_the_approval_prompt_marks_its_send_held_whichever_reaches_relaybay_first(native, approval_first):
    # Two processes' hooks: the recipient's Notification may be posted before the sender's
    # PostToolUse of SendMessage has made the row it is about.
    events = [("alpha", "PostToolUse", send_post()), ("bravo", "Notification", APPROVAL)]
    for who, event, fields in reversed(events) if approval_first else events:
        native.event(who, event, **fields)
    message = only_native()
    assert message.state == "held"
    assert marks(message) == ["message.sent", "message.held"]
    assert [m.pk for qs in reads.inbox_querysets() for m in qs] == [message.pk]
    assert HookLink.objects.get(hook_session="h-b").approval_asked_at is None


def test_an_approval_prompt_kept_for_its_send_holds_that_send_only(native):
    native.event("bravo", "Notification", **APPROVAL)
    native.event("alpha", "PostToolUse", **send_post())
    native.event("alpha", "PostToolUse", **send_post(text="another one", msg_id=OTHER_ID))
    assert dict(SessionMessage.objects.values_list("native_id", "state")) == {MSG_ID: "held", OTHER_ID: "sent"}


def test_an_approval_prompt_answered_before_its_send_arrived_holds_nothing_later(native):
    # Approved at once: the recipient's prompt carried the message before the sender's result came.
    native.event("bravo", "Notification", **APPROVAL)
    native.event("bravo", "UserPromptSubmit", prompt=wrapped())
    native.event("alpha", "PostToolUse", **send_post())
    native.event("alpha", "PostToolUse", **send_post(text="another one", msg_id=OTHER_ID))
    delivered, later = SessionMessage.objects.filter(channel="native").order_by("id")
    assert (delivered.native_id, delivered.delivered_at is not None) == (MSG_ID, True)
    assert (later.native_id, later.state) == (OTHER_ID, "sent")


def test_an_approval_prompt_no_send_followed_for_a_minute_holds_nothing(native):
    native.event("bravo", "Notification", **APPROVAL)
    HookLink.objects.filter(hook_session="h-b").update(approval_asked_at=timezone.now() - timedelta(minutes=2))
    native.event("alpha", "PostToolUse", **send_post())
    assert only_native().state == "sent"


def test_a_notice_for_a_message_relaybay_never_saw_changes_nothing(native):
    native.event("alpha", "UserPromptSubmit", prompt=notice("denied", msg_id=OTHER_ID))
    assert not SessionMessage.objects.exists()
    assert Event.objects.filter(name="hook.UserPromptSubmit", data__msg_id=[OTHER_ID]).exists()


def test_relaybay_s_hooks_never_deliver_a_native_message(native, hook):
    native.event("alpha", "PostToolUse", **send_post())
    assert native.event("bravo", "PreToolUse", tool_name="Bash", tool_input={"command": "ls"}) == {}
    assert native.event("bravo", "Stop", stop_hook_active=False) == {}
    bravo = native.row("bravo")
    assert reads.unread_counts([bravo.pk]) == {}
    assert only_native().delivered_at is None


def test_a_delivery_from_a_socket_relaybay_does_not_know_keeps_the_claimed_name(native):
    native.event("bravo", "UserPromptSubmit", prompt=wrapped(socket="/tmp/cc-socks/999.sock", name="mallory"))
    message = only_native()
    assert (message.sender, message.sender_name, message.sender_verified) == (None, "mallory", False)
    assert message.recipient == native.row("bravo")


# Names


def test_native_names_and_sockets_resolve_to_their_rows(native):
    alpha = native.row("alpha")
    assert find_sessions("alpha") == [alpha]
    assert find_sessions("ALPHA ") == [alpha]
    assert find_sessions(f"uds:{SOCKET_A}") == [alpha]
    assert find_sessions(SOCKET_A) == [alpha]
    assert find_sessions("/tmp/cc-socks/999.sock") == []


def test_a_rename_is_followed(native):
    native.event("alpha", "PreToolUse", tool_name="Bash", tool_input={}, relaybay_native={"socket": SOCKET_A, "session": {"name": "alpha-2"}})
    alpha = native.row("alpha")
    assert find_sessions("alpha-2") == [alpha]
    assert find_sessions("alpha") == []
    renamed = Event.objects.get(name="link.native_name", data__name="alpha-2")
    assert renamed.data["was"] == "alpha"


def test_an_event_without_native_names_keeps_them(native):
    native.event("alpha", "SessionEnd", reason="other", relaybay_native=None)
    link = HookLink.objects.get(hook_session="h-a")
    assert (link.native_name, link.native_socket) == ("alpha", SOCKET_A)


def test_names_of_an_ended_session_no_longer_resolve(native):
    native.event("alpha", "SessionEnd", reason="other", relaybay_native=None)
    assert find_sessions("alpha") == []
    assert find_sessions(f"uds:{SOCKET_A}") == []
    assert find_sessions("alpha-dev") == [Session.objects.get(title="alpha-dev")]


def test_a_native_name_with_a_line_break_is_ignored(native):
    native.event("alpha", "PreToolUse", tool_name="Bash", tool_input={}, relaybay_native={"socket": SOCKET_A, "session": {"name": "evil\nname"}})
    assert HookLink.objects.get(hook_session="h-a").native_name == "alpha"


def test_the_whole_exchange_leaves_no_text_anywhere(native):
    native.event("alpha", "PreToolUse", tool_name="SendMessage", tool_input={"to": "bravo", "message": SECRET})
    native.event("alpha", "PostToolUse", **send_post())
    native.event("bravo", "Notification", **APPROVAL)
    native.event("alpha", "UserPromptSubmit", prompt=notice("held"))
    native.event("bravo", "UserPromptSubmit", prompt=wrapped())
    assert_no_native_text()


def test_a_held_message_leaves_the_inbox_once_claude_code_would_have_expired_it(native):
    native.event("alpha", "PostToolUse", **send_post())
    native.event("bravo", "Notification", **APPROVAL)
    assert reads.inbox_count() == 1
    SessionMessage.objects.update(created_at=only_native().created_at - reads.NATIVE_HOLD)
    assert reads.inbox_count() == 0



def test_messages_list_shows_native_rows_with_their_mark_and_no_text(native, api):
    native.event("alpha", "PostToolUse", **send_post())
    native.event("bravo", "UserPromptSubmit", prompt=wrapped())
    listed = api.get("/messages_list", session="bravo-dev", hook_session="h-b").json()["messages"]
    [message] = listed
    assert (message["channel"], message["from"], message["to"], message["mark"], message["body"]) == (
        "native",
        "alpha-dev",
        "bravo-dev",
        "delivered",
        None,
    )
    # The rows' names now; the native names the message was sent under stay with it.
    assert message["names_when_sent"] == {"from": "alpha", "to": "bravo"}
    assert message["native_id"] == MSG_ID and "not stored" in message["note"]
    sent = api.get("/messages_list", session="alpha-dev", box="sent", hook_session="h-a").json()["messages"]
    assert [m["mark"] for m in sent] == ["delivered"]
    # No read mark exists for them: an unread listing leaves them out.
    assert api.get("/messages_list", session="bravo-dev", unread_only=True, hook_session="h-b").json()["messages"] == []
