"""relaybay's MCP tools, described once, below every app: the hooks (sessions_app, engines) must
know which calls carry message text and which name their caller, and the MCP server
(mcp_server) registers exactly these tools and derives from them what each transport does."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Tool:
    name: str
    # Whether a call carries message text in its input, its result or its error (the MCP SDK's
    # validation error quotes the input): the hooks never store those fields of such a call
    # (docs/rules.md §4.7, sessions_app/hooks/claude_native.py).
    carries_message_text: bool
    # Whether it names its caller: it takes hook_session, which the transport fills in with
    # the caller's proof (docs/mcp.md).
    names_caller: bool
    # Whether it cannot go on without that proof.
    needs_proof: bool = False
    # Whether it only reads: the JSON API serves it as GET.
    reads: bool = False


TOOLS = (
    Tool("message_send", carries_message_text=True, names_caller=True),
    Tool("message_broadcast", carries_message_text=True, names_caller=True),
    Tool("messages_list", carries_message_text=True, names_caller=True, reads=True),
    Tool("message_ack", carries_message_text=False, names_caller=True),
    Tool("session_link", carries_message_text=False, names_caller=True, needs_proof=True),
    Tool("sessions_list", carries_message_text=False, names_caller=False, reads=True),
    Tool("files_reserve", carries_message_text=False, names_caller=True),
    Tool("files_release", carries_message_text=False, names_caller=True),
    Tool("files_list", carries_message_text=False, names_caller=True, reads=True),
)
BY_NAME = {tool.name: tool for tool in TOOLS}
CARRIES_MESSAGE_TEXT = frozenset(tool.name for tool in TOOLS if tool.carries_message_text)
NAMES_CALLER = frozenset(tool.name for tool in TOOLS if tool.names_caller)
READS = frozenset(tool.name for tool in TOOLS if tool.reads)
