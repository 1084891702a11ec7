"""Hostile input gets a clear JSON 4xx that writes nothing, or is stored as valid text that every
page can show: the same answers on SQLite and PostgreSQL (core/inputs.py)."""

import json

import pytest
from asgiref.testing import ApplicationCommunicator

from messaging.models import SessionMessage
from core.errors import ErrorCode
from sessions_app.models import Comment, Event, HookLink, Session, Task
from tests.board_fixtures import board, named_session, owner  # noqa: F401
from tests.conftest import TOKEN

pytestmark = pytest.mark.django_db

SURROGATE = "a\ud800b"


def rows():
    return Session.objects.count(), HookLink.objects.count(), Event.objects.count(), SessionMessage.objects.count()


def refused(response, status=400, phrase=None, code=None):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    if phrase:
        assert phrase in response.json()["detail"]
    if code:
        assert response.json()["code"] == code
    return True


def hook_body(**fields):
    return json.dumps({"session_id": "h-1", "hook_event_name": "UserPromptSubmit", "cwd": "/work/proj", **fields})


def test_a_lone_surrogate_in_text_is_stored_as_valid_text_and_every_page_still_answers(hook, board):
    response = hook.raw(hook_body(prompt=SURROGATE, tool_input={"k\ud800": ["x\udfff"]}))
    assert response.status_code == 200
    event = Event.objects.get(name="hook.UserPromptSubmit")
    assert event.data["prompt"] == "a\ufffdb"
    assert event.data["tool_input"] == {"k\ufffd": ["x\ufffd"]}
    session = event.session
    for url in ["/events/", f"/sessions/{session.pk}/", f"/sessions/{session.pk}/export.md", "/", "/search/?q=a"]:
        page = board.get(url)
        assert page.status_code == 200, url
        page.content.decode("utf-8")
    fragment = board.get("/events/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="events-rows")
    assert fragment.status_code == 200


@pytest.mark.parametrize("field", ["session_id", "hook_event_name", "cwd", "transcript_path"])
@pytest.mark.parametrize("bad", ["a\ud800b", "a\x00b"])
def test_a_lone_surrogate_or_nul_in_an_identifier_is_refused_with_400(hook, field, bad):
    before = rows()
    assert refused(hook.raw(hook_body(**{field: bad})), 400, field, ErrorCode.INVALID_IDENTIFIER)
    assert rows() == before


def test_nul_in_text_is_stored_as_the_replacement_character_on_both_databases(hook):
    assert hook.raw(hook_body(prompt="a\x00b", tool_response={"out": "x\x00"})).status_code == 200
    data = Event.objects.get(name="hook.UserPromptSubmit").data
    assert data["prompt"] == "a\ufffdb"
    assert data["tool_response"] == {"out": "x\ufffd"}


@pytest.mark.parametrize(
    "raw, phrase",
    [
        ('"prompt": NaN', "NaN"),
        ('"prompt": Infinity', "Infinity"),
        ('"prompt": -Infinity', "-Infinity"),
        ('"prompt": 1e400', "too large"),
        ('"prompt": 123456789012345678901234567890', "too large"),
    ],
)
def test_numbers_no_database_holds_are_refused_with_400(hook, raw, phrase):
    before = rows()
    body = '{"session_id": "h-1", "hook_event_name": "UserPromptSubmit", ' + raw + "}"
    assert refused(hook.raw(body), 400, phrase, ErrorCode.INVALID_JSON)
    assert rows() == before


@pytest.mark.parametrize("value", [12, ["Bash"], {"name": "Bash"}, True])
def test_a_tool_name_that_is_not_a_string_is_refused(hook, value):
    before = rows()
    assert refused(hook.raw(hook_body(tool_name=value)), 400, "tool_name must be a string", ErrorCode.INVALID_IDENTIFIER)
    assert rows() == before


@pytest.mark.parametrize("field", ["cwd", "transcript_path"])
@pytest.mark.parametrize("value", [12, ["/a"], {"p": "/a"}])
def test_a_cwd_or_transcript_path_that_is_not_a_string_is_refused(hook, field, value):
    before = rows()
    assert refused(hook.raw(hook_body(**{field: value})), 400, f"{field} must be a string", ErrorCode.INVALID_IDENTIFIER)
    assert rows() == before


@pytest.mark.parametrize("depth", [65, 100_000])
def test_deep_nesting_is_refused_without_a_recursion_error(hook, depth):
    before = rows()
    body = '{"session_id": "h-1", "hook_event_name": "UserPromptSubmit", "tool_input": ' + "[" * depth + "]" * depth + "}"
    assert refused(hook.raw(body), 400, "nested deeper", ErrorCode.INVALID_JSON)
    assert rows() == before


def test_nesting_within_the_limit_is_kept(hook):
    assert hook.raw(hook_body(tool_input=json.loads("[" * 60 + "]" * 60))).status_code == 200


@pytest.mark.parametrize(
    "field, length",
    [("hook_event_name", 56), ("hook_event_name", 200), ("session_id", 201), ("cwd", 1001), ("transcript_path", 1001)],
)
def test_identifiers_longer_than_their_column_are_refused_on_both_databases(hook, field, length):
    before = rows()
    assert refused(hook.raw(hook_body(**{field: "x" * length})), 400, "longer than", ErrorCode.INVALID_IDENTIFIER)
    assert rows() == before


def test_identifiers_as_long_as_their_column_are_stored(hook):
    assert hook.raw(hook_body(hook_event_name="E" * 55, cwd="/" + "c" * 999, session_id="s" * 200)).status_code == 200
    assert HookLink.objects.get().cwd == "/" + "c" * 999


def test_a_payload_of_many_small_keys_is_stored_with_a_bounded_number_of_fields(hook, board):
    payload = {"session_id": "h-1", "hook_event_name": "PostToolUse", **{f"k{i}": i for i in range(40_000)}}
    assert hook.raw(json.dumps(payload)).status_code == 200
    event = Event.objects.get(name="hook.PostToolUse")
    assert len(event.data) <= 41
    assert event.data["relaybay_not_stored"] == f"{40_002 - 40} more fields"
    page = board.get(f"/sessions/{event.session_id}/")
    assert page.status_code == 200
    assert len(page.content) < 500_000


def test_a_payload_of_more_values_than_the_cap_is_refused_with_413(hook):
    before = rows()
    payload = {"session_id": "h-1", "hook_event_name": "PostToolUse", "tool_response": [0] * 200_000}
    assert refused(hook.raw(json.dumps(payload)), 413, "values", ErrorCode.PAYLOAD_TOO_LARGE)
    assert rows() == before


async def _post_chunked(path, chunks):
    """POST through relaybay's ASGI entry point with no Content-Length, as a chunked client does."""
    from relaybay.asgi import application

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"authorization", f"Bearer {TOKEN}".encode()), (b"content-type", b"application/json"), (b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    for i, chunk in enumerate(chunks):
        await communicator.send_input({"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1})
    start = await communicator.receive_output(10)
    body = await communicator.receive_output(10)
    return start["status"], dict(start["headers"]), body["body"]


@pytest.mark.parametrize("path", ["/api/hooks", "/api/desktop"])
def test_a_chunked_body_over_the_cap_gets_the_json_413(settings, path):
    from asgiref.sync import async_to_sync

    settings.RELAYBAY_MAX_PAYLOAD = 1000
    status, headers, body = async_to_sync(_post_chunked)(path, [b'{"session_id": "' + b"x" * 800, b"x" * 800 + b'"}'])
    assert status == 413
    assert headers[b"Content-Type"].startswith(b"application/json")
    assert "over 1000 bytes" in json.loads(body)["detail"]
    assert json.loads(body)["code"] == ErrorCode.PAYLOAD_TOO_LARGE


def test_a_chunked_body_over_djangos_own_limit_gets_the_json_413(settings):
    from asgiref.sync import async_to_sync

    settings.RELAYBAY_MAX_PAYLOAD = 100
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 50
    status, headers, body = async_to_sync(_post_chunked)("/api/hooks", [b"{" + b" " * 200 + b"}"])
    assert status == 413
    assert "over 100 bytes" in json.loads(body)["detail"]


# --- The JSON routes: the same rules through django-ninja's validation ----------------------


@pytest.mark.parametrize(
    "path, data, phrase",
    [
        ("/desktop", {"desktop_id": "d\x00"}, "desktop id"),
        ("/desktop", {"desktop_id": "d", "title": "t\x00"}, "title"),
        ("/desktop", {"desktop_id": "d", "aliases": ["a\x00"]}, "aliases"),
        ("/desktop", {"desktop_id": "d", "folder": "f\x00"}, "folder"),
        ("/desktop", {"desktop_id": "d", "folder": "/" + "f" * 1000}, "longer than 1000"),
        ("/desktop", {"desktop_id": "d\ud800"}, "lone surrogate"),
        ("/desktop/edge", {"sender": "a\x00", "recipient": "b"}, "sender"),
        ("/desktop/edge", {"sender": "a", "recipient": "b\x00"}, "recipient"),
        ("/message_send", {"body": "hi", "to": "b\x00"}, "to"),
        ("/message_send", {"body": "hi", "to": "b", "hook_session": "h\ud800"}, "hook session"),
        ("/session_link", {"hook_session": "h\x00", "session": "x"}, "hook session"),
    ],
)
def test_nul_or_a_lone_surrogate_in_a_name_is_refused_with_400(api, path, data, phrase):
    named_session("b")
    before = rows()
    assert refused(api.post(path, data), 400, phrase, ErrorCode.INVALID_IDENTIFIER)
    assert rows() == before


@pytest.mark.parametrize("path, params", [("/messages_list", {"session": "b\x00"}), ("/sessions_list", {"folder": "f\x00"}), ("/hooks/wait", {"session_id": "h\x00", "timeout": 0})])
def test_nul_in_a_query_name_is_refused_with_400(api, path, params):
    assert refused(api.get(path, **params), 400, "NUL", ErrorCode.INVALID_IDENTIFIER)


@pytest.mark.parametrize("body", ['{"desktop_id": "d", "title": NaN}', '{"desktop_id": "d", "x": 1e400}', "[" * 100_000])
def test_every_json_route_parses_its_body_strictly(client, body):
    before = rows()
    response = client.post("/api/desktop", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert refused(response, 400, code=ErrorCode.INVALID_JSON)
    assert rows() == before


def test_a_message_body_with_nul_or_a_lone_surrogate_is_sent_as_valid_text(api):
    a = named_session("a")
    b = named_session("b")
    response = api.post("/message_send", {"body": "x\x00y\ud800z", "to": "b", "session": "a", "hook_session": a.hook_session})
    assert response.status_code == 200, response.content
    assert SessionMessage.objects.get(recipient=b).body == "x\ufffdy\ufffdz"


@pytest.mark.parametrize("ref", ["³", "¹", "١٢", "1" * 30, "M-³"])
def test_superscript_and_other_non_ascii_digits_are_not_ids(api, ref):
    a = named_session("a")
    named_session("b")
    response = api.post("/message_send", {"body": "hi", "to": "b", "session": "a", "hook_session": a.hook_session, "in_reply_to": ref})
    assert refused(response, 400, "not a message id")
    response = api.post("/message_ack", {"message_id": ref, "session": "a", "hook_session": a.hook_session})
    assert refused(response, 400, "not a message id")


@pytest.mark.parametrize("ref", ["³", "١", "9" * 30])
def test_a_task_filter_that_is_not_an_ascii_id_is_not_found(api, ref):
    a = named_session("a")
    named_session("b")
    assert refused(api.get("/sessions_list", task=ref), 404, "No task")
    response = api.post("/message_send", {"body": "hi", "to": "b", "session": "a", "hook_session": a.hook_session, "task": ref})
    assert refused(response, 404, "No task")


@pytest.mark.parametrize("ref", ["³", "١", "9" * 30, "\x00"])
@pytest.mark.parametrize("url", ["/", "/map/", "/messages/", "/events/", "/inbox/"])
def test_board_filters_ignore_ids_that_are_not_ascii_ids(board, url, ref):
    response = board.get(url, {"task": ref, "before": ref, "after": ref, "m_before": ref, "session": ref, "q": ref})
    assert response.status_code == 200


def test_the_board_edit_form_ignores_a_superscript_task(board):
    session = named_session("a")
    Task.objects.create(title="t")
    response = board.post(f"/sessions/{session.pk}/edit/", {"title": "a", "aliases": "", "task": "¹"})
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.task is None


def test_a_comment_with_nul_is_stored_as_valid_text(board):
    session = named_session("a")
    response = board.post(f"/sessions/{session.pk}/comment/", {"body": "hi\x00there"})
    assert response.status_code == 302
    assert Comment.objects.get().body == "hi\ufffdthere"
