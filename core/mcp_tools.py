"""relaybay's MCP tools by name, below every app: the hooks (sessions_app) must know which calls
carry message text, and the MCP server (mcp_server) registers exactly these tools."""

# Whether a call to each tool carries message text in its input, its result or its error (the
# MCP SDK's validation error quotes the input). The hooks never store those fields of such a
# call (docs/rules.md §4.7, sessions_app/hooks/claude_native.py); build_server registers exactly these
# tools (tests/test_message_events.py), so a new tool cannot go without a decision here.
CARRIES_MESSAGE_TEXT = {
    "message_send": True,
    "message_broadcast": True,
    "messages_list": True,
    "message_ack": False,
    "session_link": False,
    "sessions_list": False,
    "files_reserve": False,
    "files_release": False,
    "files_list": False,
}
