"""Events of the MCP channel (docs/rules.md §4.7): names, ids and marks, never the text."""

import json

import pytest

from board.search import search
from sessions_app.models import Event

from .message_personas import rb  # noqa: F401

pytestmark = pytest.mark.django_db

SECRET = "zq-secret 4417 \"quoted\" \u00e9t\u00e9\nsecond line"
# Pieces of the text as it could appear anywhere: raw, JSON-escaped, or one line of it.
TRACES = ["zq-secret", "4417", "second line", "\\\"quoted\\\""]


@pytest.fixture
def pair(rb):
    return rb.live("alice", "hook-a"), rb.live("bob", "hook-b", busy=True)


def new_events(since, name=None):
    events = Event.objects.filter(pk__gt=since).order_by("id")
    return list(events.filter(name=name) if name else events)


def last_event_id():
    return Event.objects.order_by("-id").values_list("id", flat=True).first() or 0


def assert_no_text_in_events():
    for event in Event.objects.all():
        stored = json.dumps(event.data) + json.dumps(event.data, ensure_ascii=False) + event.name + event.hook_session
        for trace in TRACES:
            assert trace not in stored, (event.name, event.data)


def test_a_send_records_session_message_and_message_sent_with_names_and_ids(rb, pair):
    alice, bob = pair
    since = last_event_id()
    message_id = rb.sent(body=SECRET, to="bob", session="alice", hook_session="hook-a")["id"]
    edge = {"message": message_id, "from": alice.handle, "from_name": "alice", "to": bob.handle, "to_name": "bob"}
    events = new_events(since)
    assert [(e.name, e.session_id, e.data) for e in events] == [
        ("session.message", alice.pk, {**edge, "channel": "mcp"}),
        ("message.sent", alice.pk, {**edge, "verified": True, "depth": 0}),
    ]
    assert_no_text_in_events()


def test_an_unverified_reply_records_its_mark_and_depth(rb, pair):
    carol = rb.desktop("desk-c", "carol")
    parent = rb.sent(body="hi carol", to="carol", session="alice", hook_session="hook-a")["id"]
    since = last_event_id()
    reply = rb.sent(body=SECRET, in_reply_to=parent, session="carol")["id"]
    [sent] = new_events(since, "message.sent")
    assert sent.session_id == carol.pk
    assert (sent.data["message"], sent.data["verified"], sent.data["depth"]) == (reply, False, 1)
    # The reply marked its parent read, not verified: that is an event too.
    [read] = new_events(since, "message.read")
    assert read.data == {"message": parent, "from": "alice", "to": "carol", "verified": False}
    assert_no_text_in_events()


@pytest.mark.parametrize("carrier", ["PreToolUse", "Stop"])
def test_a_delivery_records_message_delivered_with_the_hook_that_carried_it(rb, pair, carrier):
    _, bob = pair
    message_id = rb.sent(body=SECRET, to="bob", session="alice", hook_session="hook-a")["id"]
    since = last_event_id()
    rb.hook(carrier, "hook-b", tool_name="Bash", tool_input={"command": "ls"})
    [delivered] = new_events(since, "message.delivered")
    assert (delivered.session_id, delivered.hook_session) == (bob.pk, "hook-b")
    assert delivered.data == {"message": message_id, "from": "alice", "to": "bob", "by": carrier}
    assert_no_text_in_events()


@pytest.mark.parametrize("how", ["ack", "reply"])
def test_reading_records_message_read_with_its_mark(rb, pair, how):
    _, bob = pair
    message_id = rb.sent(body=SECRET, to="bob", session="alice", hook_session="hook-a")["id"]
    rb.tool("hook-b")
    since = last_event_id()
    if how == "ack":
        rb.ack(message_id=message_id, session="bob", hook_session="hook-b")
    else:
        rb.sent(body="thanks", in_reply_to=message_id, session="bob", hook_session="hook-b")
    [read] = new_events(since, "message.read")
    assert read.session_id == bob.pk
    assert read.data == {"message": message_id, "from": "alice", "to": "bob", "verified": True}
    assert_no_text_in_events()


def test_no_event_of_a_whole_conversation_holds_the_text(rb, pair):
    rb.desktop("desk-c", "carol")
    first = rb.sent(body=SECRET, to="bob", session="alice", hook_session="hook-a")["id"]
    rb.stop("hook-b")
    reply = rb.sent(body=SECRET, in_reply_to=first, session="bob", hook_session="hook-b")["id"]
    rb.prompt("hook-a")
    rb.ack(message_id=reply, session="alice", hook_session="hook-a")
    rb.sent(body=SECRET, to="bob", session="carol")
    rb.ack(session="bob", hook_session="hook-b")
    rb.messages("bob", box="all")
    rb.send(body=SECRET, to="nobody", session="alice", hook_session="hook-a")
    rb.send(body=SECRET + '"' * 3990, to="bob", session="alice", hook_session="hook-a")
    rb.end("hook-b")
    rb.start("hook-b", "xavier", source="resume")
    assert Event.objects.filter(name__startswith="message.").count() >= 6
    assert_no_text_in_events()


TOOL_EVENTS = [
    ("PreToolUse", "mcp__relaybay__message_send", {"tool_input": {"to": "bob", "body": SECRET}}),
    ("PermissionRequest", "mcp__relaybay__message_send", {"tool_input": {"to": "bob", "body": SECRET}}),
    (
        "PostToolUse",
        "mcp__relaybay__message_send",
        {"tool_input": {"to": "bob", "body": SECRET}, "tool_response": [{"type": "text", "text": SECRET}]},
    ),
    (
        "PostToolUseFailure",
        "mcp__relaybay__message_send",
        {"tool_input": {"to": "bob", "body": SECRET}, "error": "too long"},
    ),
    (
        # The MCP SDK's error for a body that is not text quotes it.
        "PostToolUseFailure",
        "mcp__relaybay__message_broadcast",
        {
            "tool_input": {"folder": "/w", "body": {"text": SECRET}},
            "error": f"Error executing tool message_broadcast: 1 validation error for message_broadcastArguments\nbody\n"
            f"  Input should be a valid string [type=string_type, input_value={{'text': {SECRET!r}}}, input_type=dict]",
        },
    ),
    ("PreToolUse", "mcp__relaybay__messages_list", {"tool_input": {"session": "bob"}}),
    (
        "PostToolUse",
        "mcp__relaybay__messages_list",
        {"tool_input": {"session": "bob"}, "tool_response": {"messages": [{"body": json.dumps(SECRET)}]}},
    ),
    ("PostToolUse", "mcp__relaybay-dev__message_send", {"tool_input": {"body": SECRET}, "tool_response": SECRET}),
    ("PreToolUse", "mcp__relaybay__message_broadcast", {"tool_input": {"folder": "/w", "body": SECRET}}),
    ("PermissionRequest", "mcp__relaybay__message_broadcast", {"tool_input": {"folder": "/w", "body": SECRET}}),
    (
        "PostToolUse",
        "mcp__relaybay__message_broadcast",
        {"tool_input": {"folder": "/w", "body": SECRET}, "tool_response": [{"type": "text", "text": '{"broadcast": "B-1"}'}]},
    ),
]


@pytest.mark.parametrize("event, tool_name, fields", TOOL_EVENTS, ids=[f"{e}-{t}" for e, t, _ in TOOL_EVENTS])
def test_hook_events_of_message_tool_calls_never_store_the_text(rb, pair, event, tool_name, fields):
    since = last_event_id()
    rb.hook(event, "hook-a", tool_name=tool_name, tool_use_id="toolu_1", **fields)
    [recorded] = new_events(since, f"hook.{event}")
    assert recorded.data["tool_name"] == tool_name
    # A permission request's input is kept only while it waits (approvals/), so its event drops it.
    for key in ("tool_input", "tool_response", "error"):
        if key in fields:
            assert recorded.data.get(key, "[not stored: message text]") == "[not stored: message text]"
    assert_no_text_in_events()


def test_the_model_s_last_message_at_stop_is_not_stored(rb, pair):
    rb.hook("Stop", "hook-a", stop_hook_active=False, last_assistant_message=f"I sent bob: {SECRET}")
    assert_no_text_in_events()


def test_a_wake_up_handed_back_as_the_next_prompt_is_not_stored(rb, pair):
    # An interactive session woken by the asyncRewake hook starts its next turn with a
    # UserPromptSubmit whose prompt quotes the hook's stderr, the delivery itself (seen, 2.1.328).
    rb.stop("hook-b")
    rb.sent(body=SECRET, to="bob", session="alice", hook_session="hook-a")
    delivery = rb.stop("hook-b")["reason"]
    assert "zq-secret" in delivery
    since = last_event_id()
    rb.prompt(
        "hook-b",
        "<task-notification>\n<summary>Stop hook feedback</summary>\n</task-notification>\n<system-reminder>\n"
        f'Stop hook blocking error from command "Stop": {delivery}\n</system-reminder>',
    )
    [recorded] = new_events(since, "hook.UserPromptSubmit")
    assert recorded.data["prompt"] == "[not stored: message text]"
    assert_no_text_in_events()
    assert not search("zq-secret").total


def test_the_migration_takes_a_broadcasts_text_out_of_events_stored_before(rb, pair):
    """Events stored before message_broadcast was among the message tools lose its text, and
    their search entries follow (written again from what is left)."""
    import importlib

    from django.apps import apps as django_apps

    from board.search import search
    from tests.test_search import Editor

    def leaked(name, tool="mcp__relaybay__message_broadcast", **data):
        return Event.objects.create(
            name=f"hook.{name}", hook_session="hook-a",
            data={"tool_name": tool, "tool_input": {"folder": "/w", "body": SECRET}, **data},
        )  # fmt: skip

    indexed = leaked("PreToolUse")
    assert [row.pk for row in search("zq secret").hits["event"]] == [indexed.pk]  # written, then indexed
    waiting = leaked("PostToolUse")  # written, not indexed yet on SQLite
    failed = leaked("PostToolUseFailure", "mcp__relaybay__message_send", error=f"input_value={SECRET!r}")
    migration = importlib.import_module("sessions_app.migrations.0012_broadcast_text_not_stored")
    migration.text_not_stored(django_apps, Editor())
    for event in (indexed, waiting, failed):
        event.refresh_from_db()
        assert event.data["tool_input"] == "[not stored: message text]"
    assert failed.data["error"] == "[not stored: message text]"
    assert search("zq secret").hits["event"] == []
    assert indexed.pk in {row.pk for row in search("PreToolUse relaybay broadcast").hits["event"]}
    assert waiting.pk in {row.pk for row in search("PostToolUse relaybay broadcast").hits["event"]}
    assert_no_text_in_events()


def test_every_mcp_tool_is_decided_as_carrying_message_text_or_not():
    """A seventh tool cannot be added without saying whether its calls carry message text:
    message_broadcast was once left out of the tools whose hook fields are not stored."""
    import asyncio

    from core.limits import Limits
    from core.mcp_tools import CARRIES_MESSAGE_TEXT, TOOLS
    from mcp_server.tools import build_server
    from sessions_app.hooks.claude_native import RELAYBAY_MESSAGE_TOOLS

    tools = asyncio.run(build_server(object(), limits=Limits()).list_tools())
    assert {tool.name for tool in tools} == {tool.name for tool in TOOLS}
    # Any tool with a body parameter carries text.
    for tool in tools:
        if "body" in tool.input_schema["properties"]:
            assert tool.name in CARRIES_MESSAGE_TEXT, tool.name
            assert f"mcp__relaybay__{tool.name}".endswith(RELAYBAY_MESSAGE_TOOLS)


def test_each_transport_serves_the_tools_as_core_mcp_tools_describes_them():
    """The tools are described once (core/mcp_tools.py): the http server has an operation for
    each, the JSON API serves a tool that only reads as GET and the others as POST, and a tool
    names its caller exactly when its schema takes hook_session."""
    import asyncio

    from core.api import api
    from core.limits import Limits
    from core.mcp_tools import BY_NAME, NAMES_CALLER, TOOLS
    from mcp_server.http import OPERATIONS
    from mcp_server.tools import build_server

    assert set(OPERATIONS) == set(BY_NAME)
    methods = {path.removeprefix("/api/"): set(ops) for path, ops in api.get_openapi_schema()["paths"].items()}
    for tool in TOOLS:
        assert methods[tool.name] == ({"get"} if tool.reads else {"post"}), tool.name
    listed = asyncio.run(build_server(object(), limits=Limits()).list_tools())
    assert {tool.name for tool in listed if "hook_session" in tool.input_schema["properties"]} == NAMES_CALLER
