"""Claude Code's native messages (docs/rules.md §4.9): no byte of their text is stored, in events, the
search index or anywhere else in the database; only kinds, ids and names are kept."""

import pytest

from sessions_app.hooks.claude_native import MESSAGE_TEXT_PLACEHOLDER
from sessions_app.models import Event
from board.search import search

from .native_payloads import APPROVAL, MSG_ID, SOCKET_A, SUMMARY, assert_no_native_text, notice, send_post, send_pre, wrapped

pytestmark = pytest.mark.django_db


def recorded(name):
    return Event.objects.filter(name=name).latest("id").data


def test_the_sender_s_tool_call_keeps_the_address_and_not_the_text(hook):
    hook("PreToolUse", "h-a", **send_pre())
    data = recorded("hook.PreToolUse")
    assert data["tool_name"] == "SendMessage"
    assert data["tool_input"] == {
        "to": "bravo",
        "summary": MESSAGE_TEXT_PLACEHOLDER,
        "message": MESSAGE_TEXT_PLACEHOLDER,
        "type": "message",
        "recipient": "bravo",
        "recipient_kind": "name",
        "content": MESSAGE_TEXT_PLACEHOLDER,
    }
    assert_no_native_text()


def test_the_sender_s_tool_result_keeps_success_and_msg_id_only(hook):
    hook("PostToolUse", "h-a", **send_post())
    data = recorded("hook.PostToolUse")
    assert data["tool_input"] == {"to": "bravo", "summary": MESSAGE_TEXT_PLACEHOLDER, "message": MESSAGE_TEXT_PLACEHOLDER}
    assert data["tool_response"] == {"success": True, "message": MESSAGE_TEXT_PLACEHOLDER, "display": MESSAGE_TEXT_PLACEHOLDER, "msg_id": MSG_ID}
    assert_no_native_text()


def test_an_unreachable_send_keeps_its_failure(hook):
    hook("PostToolUse", "h-a", **send_post(to="alpha", success=False))
    assert recorded("hook.PostToolUse")["tool_response"] == {"success": False, "message": MESSAGE_TEXT_PLACEHOLDER}
    assert_no_native_text()


def test_a_failed_tool_call_s_error_is_not_stored(hook):
    hook("PostToolUseFailure", "h-a", tool_name="SendMessage", tool_input=send_pre()["tool_input"], error=f"could not send {SUMMARY}")
    assert recorded("hook.PostToolUseFailure")["error"] == MESSAGE_TEXT_PLACEHOLDER
    assert_no_native_text()


def test_the_recipient_s_prompt_keeps_the_sender_s_socket_and_claimed_name(hook):
    hook("UserPromptSubmit", "h-b", prompt=wrapped())
    data = recorded("hook.UserPromptSubmit")
    assert data["prompt"] == MESSAGE_TEXT_PLACEHOLDER
    assert (data["native"], data["from"], data["from_name"]) == (["delivered"], [f"uds:{SOCKET_A}"], ["alpha"])
    assert_no_native_text()


def test_a_prompt_with_a_message_after_the_user_s_own_words_is_not_stored_either(hook):
    hook("UserPromptSubmit", "h-b", prompt="please look\n" + wrapped() + "\n" + wrapped(name="charlie"))
    data = recorded("hook.UserPromptSubmit")
    assert data["prompt"] == MESSAGE_TEXT_PLACEHOLDER
    assert data["from_name"] == ["alpha", "charlie"]
    assert_no_native_text()


@pytest.mark.parametrize("kind", ["held", "denied", "expired", "refused", "dropped"])
def test_a_delivery_notice_keeps_only_its_kind_and_msg_id(hook, kind):
    hook("UserPromptSubmit", "h-a", prompt=notice(kind))
    data = recorded("hook.UserPromptSubmit")
    assert data["prompt"] == MESSAGE_TEXT_PLACEHOLDER
    assert (data["native"], data["msg_id"]) == ([kind], [MSG_ID])
    assert "recipient" not in str(data)


def test_the_approval_notification_is_kept_as_it_is(hook):
    hook("Notification", "h-b", **APPROVAL)
    assert recorded("hook.Notification")["message"] == APPROVAL["message"]


def test_an_ordinary_prompt_is_kept(hook):
    hook("UserPromptSubmit", "h-a", prompt="fix the failing test in cross-session code")
    assert recorded("hook.UserPromptSubmit")["prompt"] == "fix the failing test in cross-session code"


def test_a_long_native_tool_input_is_cut_before_it_is_clipped(hook, settings):
    # Clipping turns a long field into a string; were it clipped first, the text would be in it.
    settings.RELAYBAY_STORED_FIELD_CHARS = 50
    hook("PreToolUse", "h-a", **send_pre(text="nq-native-secret " * 40))
    assert_no_native_text()


def test_search_finds_the_events_and_never_the_text(hook):
    hook("PreToolUse", "h-a", **send_pre())
    hook("PostToolUse", "h-a", **send_post())
    hook("UserPromptSubmit", "h-b", prompt=wrapped())
    assert search("nq-native-secret").total == 0
    assert search("zq7713x").total == 0
    assert search(SUMMARY).total == 0
    assert search(MSG_ID).hits["event"]
    assert_no_native_text()
