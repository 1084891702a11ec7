"""Claude Code's own cross-session messages as relaybay's hooks see them (docs/rules.md §4.9).

Claude Code 2.1.328 sends messages between the sessions of one machine itself (`SendMessage`),
and every step passes through the hooks: the sender's tool call, the recipient's prompt
carrying the text in a `<cross-session-message …>` wrapper, the delivery notices the sender
gets, the recipient's approval notification. `read_native` says what one payload reports,
and `without_message_text` is the one rule that keeps every message text, relaybay's and
Claude Code's, out of what is stored.
"""

import hashlib
import hmac
import html
import re
from dataclasses import dataclass

from django.conf import settings

from core.mcp_tools import TOOLS

SEND_TOOL = "SendMessage"
# relaybay's own MCP tools whose calls carry message text, as Claude Code and Codex name them
# (mcp__<server>__<tool>, whatever the server is called in the config) and other CLIs do
# (mcp_<server>_<tool>).
RELAYBAY_MESSAGE_TOOLS = tuple(f"_{tool.name}" for tool in TOOLS if tool.carries_message_text)
MESSAGE_TEXT_PLACEHOLDER = "[not stored: message text]"
# SendMessage's fields that hold no text: addressing and outcome. Every other field is text
# or may quote it (`message` and `content` are the message, `summary` the sender's line about
# it, the result's `message` and `display` quote the summary), and a field a later Claude
# Code adds is not stored until it is known to hold none.
SEND_KEPT_FIELDS = {
    "tool_input": ("to", "type", "recipient", "recipient_kind", "notify_when_idle"),
    "tool_response": ("success", "msg_id"),
}

WRAPPER_OPEN = "<cross-session-message"
WRAPPER = re.compile(r"<cross-session-message\b([^>]*)>(.*?)</cross-session-message>", re.S)
ATTRIBUTE = re.compile(r'([\w-]+)="([^"]*)"')
NOTICE = "[Cross-session delivery notice]"
NOTICE_KINDS = ("held", "denied", "expired", "refused", "dropped")
NOTICE_ITEM = re.compile(r"\[Cross-session delivery notice\](.*?)(?=\[Cross-session delivery notice\]|\Z)", re.S)
MSG_ID = re.compile(r"msg_id:\s*([0-9A-Za-z-]{1,100})")
APPROVAL = "needs your approval"
# How relaybay frames one of its own messages in a hook answer (messaging.formatting.message_block).
# An interactive session woken by the asyncRewake hook gets that answer back as the prompt of
# its next turn, in Claude Code's <task-notification> (seen, 2.1.328).
RELAYBAY_MESSAGE = "[relaybay] Message M-"


@dataclass(frozen=True)
class Send:
    """The sender's SendMessage, once it ran: to whom, whether Claude Code took it, its id."""

    to: str
    digest: str
    success: bool
    msg_id: str


@dataclass(frozen=True)
class NativeReceipt:
    """The recipient's prompt carried a message: the sender's socket (verified by Claude
    Code) and the name it claims."""

    socket: str
    claimed_name: str
    digest: str


@dataclass(frozen=True)
class Notice:
    """A delivery notice to the sender: what became of one of its messages."""

    kind: str
    msg_id: str


@dataclass(frozen=True)
class Approval:
    """The recipient's terminal asks its user to deliver or deny a message."""


# What records native traffic as messages: messaging's AppConfig.ready adds its recorder, so
# ingestion reaches the message rows while sessions_app never imports messaging.
recorders = []


def report(link, traffic, now):
    """Hand what one payload reported (read_native) to the recorders. Inside the hook's
    transaction: the event and the message rows commit together."""
    for recorder in recorders:
        recorder(link=link, traffic=traffic, now=now)


def text_digest(text):
    """A keyed digest of a message text: lets a delivery be matched to its send without the
    text being stored, and cannot be reversed by trying short texts without the key."""
    normal = text.replace("\r\n", "\n").strip("\n")
    return hmac.new(settings.SECRET_KEY.encode(), normal.encode(), hashlib.sha256).hexdigest()


def socket_path(value):
    """`uds:/tmp/cc-socks/123.sock` or the bare path, as the path."""
    value = (value or "").strip()
    return value[4:] if value.startswith("uds:") else value


def _arrivals(prompt):
    found = []
    for attributes, body in WRAPPER.findall(prompt):
        attrs = {key: html.unescape(value) for key, value in ATTRIBUTE.findall(attributes)}
        # Claude Code writes a closing tag inside the text as `<\/cross-session-message>`.
        text = body.replace("<\\/cross-session-message>", "</cross-session-message>")
        found.append(NativeReceipt(socket_path(attrs.get("from", "")), attrs.get("from-name", ""), text_digest(text)))
    return found


def _notices(prompt):
    found = []
    for item in NOTICE_ITEM.findall(prompt):
        sentence = item.split(".")[0].lower()
        kind = next((k for k in NOTICE_KINDS if re.search(rf"\b{k}\b", sentence)), "unknown")
        match = MSG_ID.search(item)
        found.append(Notice(kind, match.group(1) if match else ""))
    return found


def read_native(payload):
    """What one hook payload reports of native messaging: a list of Send, NativeReceipt, Notice and
    Approval items (empty for everything else)."""
    event = payload.get("hook_event_name")
    if event == "PostToolUse" and payload.get("tool_name") == SEND_TOOL:
        given = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
        answer = payload.get("tool_response") if isinstance(payload.get("tool_response"), dict) else {}
        text = given.get("message")
        if not isinstance(text, str) or not isinstance(given.get("to"), str):
            return []
        msg_id = answer.get("msg_id") if isinstance(answer.get("msg_id"), str) else ""
        return [Send(given["to"].strip(), text_digest(text), answer.get("success") is True, msg_id)]
    if event == "UserPromptSubmit" and isinstance(payload.get("prompt"), str):
        prompt = payload["prompt"]
        return [*(_arrivals(prompt) if WRAPPER_OPEN in prompt else []), *(_notices(prompt) if NOTICE in prompt else [])]
    if event == "Notification" and APPROVAL in str(payload.get("message") or ""):
        if "another session" in str(payload.get("message")):
            return [Approval()]
    return []


def _marks(items):
    """What the stored event keeps of native items: kinds, ids and names, never text."""
    marks = {}
    for item in items:
        if isinstance(item, NativeReceipt):
            marks.setdefault("native", []).append("delivered")
            marks.setdefault("from", []).append("uds:" + item.socket)
            marks.setdefault("from_name", []).append(item.claimed_name)
        elif isinstance(item, Notice):
            marks.setdefault("native", []).append(item.kind)
            marks.setdefault("msg_id", []).append(item.msg_id)
    return marks


def without_message_text(payload):
    """The payload as it may be stored (docs/rules.md §4.7, §4.9): relaybay's message tools' inputs,
    results and errors, SendMessage's text fields, and every prompt that carries a cross-session message,
    a delivery notice or a relaybay message (a wake-up handed back as a prompt) replaced by
    MESSAGE_TEXT_PLACEHOLDER; of those prompts only kinds, ids and names stay."""
    tool = payload.get("tool_name") or ""
    data = dict(payload)
    if isinstance(tool, str) and tool.startswith("mcp_") and tool.endswith(RELAYBAY_MESSAGE_TOOLS):
        # A failure's error may quote the input: the MCP SDK's validation error does
        # ("input_value={'text': …}" for a body that is not text).
        for key in ("tool_input", "tool_response", "error"):
            if key in data:
                data[key] = MESSAGE_TEXT_PLACEHOLDER
    elif tool == SEND_TOOL:
        for key, kept in SEND_KEPT_FIELDS.items():
            value = data.get(key)
            if isinstance(value, dict):
                data[key] = {k: (v if k in kept else MESSAGE_TEXT_PLACEHOLDER) for k, v in value.items()}
            elif key in data:
                data[key] = MESSAGE_TEXT_PLACEHOLDER
        if "error" in data:  # PostToolUseFailure's error may quote what was sent
            data["error"] = MESSAGE_TEXT_PLACEHOLDER
    prompt = data.get("prompt")
    if isinstance(prompt, str) and any(mark in prompt for mark in (WRAPPER_OPEN, NOTICE, RELAYBAY_MESSAGE)):
        data["prompt"] = MESSAGE_TEXT_PLACEHOLDER
        data.update(_marks(read_native(payload)))
    return data
