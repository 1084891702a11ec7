"""Messaging for a fleet through the MCP tools (docs/rules.md §4.8), driven by the official MCP
SDK client over stdio and over streamable HTTP: the same names, answers and refusals as the JSON
API (tests/test_broadcast.py and the other rule tables hold the whole tables)."""

import uuid

from tests.live_server import live_relaybay  # noqa: F401  (fixture)
from tests.test_mcp_server import answer, error_text, mcp_session, names  # noqa: F401  (fixtures)


async def test_the_tools_tell_the_model_it_may_retry_with_the_same_request_id(mcp_session, live_relaybay, tmp_path):
    async with mcp_session(live_relaybay, tmp_path) as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
    for name in ("message_send", "message_broadcast"):
        assert "retry safely with the same request_id" in " ".join(tools[name].description.split())
        assert "request_id" in tools[name].input_schema["properties"]
    assert set(tools["message_broadcast"].input_schema["properties"]) >= {
        "body", "task", "folder", "dry_run", "request_id", "session", "session_title", "hook_session"
    }


async def test_a_repeated_request_id_returns_the_first_answer_through_the_tool(mcp_session, live_relaybay, names, tmp_path):
    alpha, beta = names("Alpha"), names("Beta")
    live_relaybay.start_session(f"hook-{alpha}", alpha)
    live_relaybay.start_session(f"hook-{beta}", beta)
    request_id = uuid.uuid4().hex
    call = {"body": "rebase please", "to": beta, "session": alpha, "request_id": request_id}
    async with mcp_session(live_relaybay, tmp_path, claude_session=f"hook-{alpha}") as mcp:
        first = answer(await mcp.call_tool("message_send", call))
        repeat = answer(await mcp.call_tool("message_send", {**call, "body": "something else"}))
        again = answer(await mcp.call_tool("message_send", {**call, "request_id": None, "body": "rebase please"}))
    assert "call it again with the same request_id" in first["retry"]
    assert repeat == {**first, "repeat": True}
    assert again["duplicate"] is True and again["id"] == first["id"]
    status, listed = live_relaybay.get("/messages_list", session=beta, hook_session=f"hook-{beta}")
    assert [m["id"] for m in listed["messages"]] == [first["id"]]


async def test_a_broadcast_through_the_tool_reports_each_recipient(mcp_session, live_relaybay, names, tmp_path):
    lead, one, two = names("Lead"), names("One"), names("Two")
    folder = f"/work/{names('folder')}"
    for name in (lead, one, two):
        live_relaybay.start_session(f"hook-{name}", name, cwd=folder)
    assert live_relaybay.post(f"/sessions/{two}/inbound", {"policy": "hold"}, token=live_relaybay.owner_token)[0] == 200
    async with mcp_session(live_relaybay, tmp_path, claude_session=f"hook-{lead}") as mcp:
        sent = answer(await mcp.call_tool("message_broadcast", {"body": "stand-up", "folder": folder, "session": lead}))
        nobody = error_text(await mcp.call_tool("message_broadcast", {"body": "x", "folder": "/nowhere", "session": lead}))
    outcomes = {entry["to"]: entry["outcome"] for entry in sent["recipients"]}
    assert outcomes == {one: "not delivered yet", two: "held"}
    assert sent["broadcast"].startswith("B-") and sent["sender_verified"] is True
    assert "would reach nobody" in nobody and "broadcast_reaches_nobody" in nobody


async def test_a_refusing_recipient_is_a_tool_error_saying_so(mcp_session, live_relaybay, names, tmp_path):
    alpha, beta = names("Alpha"), names("Beta")
    live_relaybay.start_session(f"hook-{alpha}", alpha)
    live_relaybay.start_session(f"hook-{beta}", beta)
    assert live_relaybay.post(f"/sessions/{beta}/inbound", {"policy": "refuse"}, token=live_relaybay.owner_token)[0] == 200
    async with mcp_session(live_relaybay, tmp_path, claude_session=f"hook-{alpha}") as mcp:
        text = error_text(await mcp.call_tool("message_send", {"body": "hi", "to": beta, "session": alpha}))
    assert "refuses messages from other sessions" in text and "inbound_refused" in text
    status, listed = live_relaybay.get("/messages_list", session=beta, hook_session=f"hook-{beta}")
    assert listed["messages"] == []
