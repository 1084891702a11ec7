"""Every error answer carries a stable code (core/errors.py) beside its sentence: programs
and tests rely on the code and a key phrase, people and models read the sentence. One table
maps each code to its HTTP status; the MCP tool error and the board show the same sentence."""

import pytest

from core.errors import HTTP_STATUS, ErrorCode, RelaybayError, tool_error_text
from sessions_app.models import Session

from .message_personas import rb  # noqa: F401

pytestmark = pytest.mark.django_db


def code_of(response, code, phrase):
    body = response.json()
    assert (response.status_code, body["code"]) == (HTTP_STATUS[code], code), body
    assert phrase in body["detail"]


def test_every_code_has_one_http_status():
    assert set(HTTP_STATUS) == set(ErrorCode)


def test_an_error_raised_with_a_code_keeps_it_and_its_class_gives_the_default():
    assert RelaybayError("x", code=ErrorCode.SELF_MESSAGE).status == 403
    assert RelaybayError("x").code == ErrorCode.INVALID_INPUT


def test_refusals_of_a_send_answer_with_their_codes(rb):
    rb.live("alpha", "hook-a")
    rb.live("bravo", "hook-b")
    code_of(rb.send(body="x", to="nobody", session="alpha", hook_session="hook-a"), ErrorCode.NOT_FOUND, 'No session goes by "nobody"')
    code_of(rb.send(body="x", to="alpha", session="alpha", hook_session="hook-a"), ErrorCode.SELF_MESSAGE, "cannot write to itself")
    code_of(rb.send(body="x", to="bravo", session="alpha"), ErrorCode.SENDER_REFUSED, "is linked to a live Claude Code session")
    code_of(rb.send(body="x" * 4001, to="bravo", session="alpha", hook_session="hook-a"), ErrorCode.BODY_TOO_LONG, "the limit is 4000")


def test_a_name_several_sessions_go_by_is_a_conflict(rb):
    rb.desktop("desk-1", "twin")
    rb.desktop("desk-2", "twin")
    code_of(rb.send(body="x", to="twin", session="alpha"), ErrorCode.AMBIGUOUS_NAME, 'Several sessions go by "twin"')
    assert Session.objects.filter(title="alpha").count() == 0


def test_acknowledging_in_another_sessions_name_is_refused_with_its_code(rb):
    rb.live("bravo", "hook-b")
    code_of(rb.ack(session="bravo", hook_session="hook-x"), ErrorCode.ACK_NOT_PROVEN, "acknowledge with its hook_session")


def test_the_apis_own_answers_carry_codes_too(rb, client):
    code_of(client.get("/api/sessions_list", HTTP_AUTHORIZATION="Bearer wrong"), ErrorCode.UNAUTHORIZED, "token")
    code_of(client.get("/api/no-such-thing", HTTP_AUTHORIZATION="Bearer wrong"), ErrorCode.NO_SUCH_ROUTE, "no API route")
    code_of(rb.api.get("/messages_list", session="x", limit=101), ErrorCode.INVALID_REQUEST, "Invalid request")


def test_a_tool_error_is_the_sentence_then_its_code():
    assert tool_error_text(ErrorCode.SELF_MESSAGE, "A session cannot write to itself.") == (
        "A session cannot write to itself. (error code: self_message)"
    )
