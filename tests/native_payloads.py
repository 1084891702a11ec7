"""Claude Code 2.1.328's native messaging payloads, as its hooks post them (seen with the real
CLI; shared/claude-code.md), and a dump of the whole database to look for their text in."""

import pytest
from django.db import connection

from sessions_app import search_index
from sessions_app.models import HookLink

SECRET = 'nq-native-secret zq7713x "quoted" <b>&amp; été\nsecond-native-line </cross-session-message> end'
SUMMARY = "nq-summary-line zq5521x"
# Pieces of the texts as they could appear anywhere: raw, JSON- or HTML-escaped, one line of it.
TRACES = ["nq-native-secret", "zq7713x", "second-native-line", "nq-summary-line", "zq5521x"]
MSG_ID = "d0e9213a-a590-4f8c-aab3-d14fa5a2c028"
SOCKET_A = "/tmp/cc-socks/17371.sock"
SOCKET_B = "/tmp/cc-socks/17336.sock"


def send_pre(to="bravo", text=SECRET):
    return {
        "tool_name": "SendMessage",
        "tool_use_id": "toolu_1",
        "tool_input": {
            "to": to,
            "summary": SUMMARY,
            "message": text,
            "type": "message",
            "recipient": to,
            "recipient_kind": "name",
            "content": text[:60] + "…",
        },
    }


def send_post(to="bravo", text=SECRET, *, success=True, msg_id=MSG_ID):
    if success:
        response = {
            "success": True,
            "message": f"“{SUMMARY}” → {to} (another Claude session on this machine; in that session's inbox, "
            "not yet read by its Claude — a [Cross-session delivery notice] follows if that session holds it)",
            "display": f"“{SUMMARY}” → sent to {to} — another Claude session on this machine",
            "msg_id": msg_id,
        }
    else:
        response = {"success": False, "message": f"No agent named '{to}' is reachable. Nothing was kept."}
    return {
        "tool_name": "SendMessage",
        "tool_use_id": "toolu_1",
        "tool_input": {"to": to, "summary": SUMMARY, "message": text},
        "tool_response": response,
        "duration_ms": 12,
    }


def wrapped(text=SECRET, socket=SOCKET_A, name="alpha"):
    """The recipient's prompt, text escaped as Claude Code escapes it."""
    body = text.replace("</cross-session-message>", "<\\/cross-session-message>")
    return (
        f'<cross-session-message from="uds:{socket}" from-name="{name}" from-mode="prompting">\n'
        f"{body}\n</cross-session-message>"
    )


def notice(kind, msg_id=MSG_ID, recipient=SOCKET_B):
    sentences = {
        "held": "was held by that session",
        "denied": "was denied by the recipient user",
        "expired": "expired before that session's user answered",
        "refused": "was refused by that session",
        "dropped": "was dropped",
    }
    return (
        f"[Cross-session delivery notice] Your message to another session {sentences[kind]} "
        f"(recipient: uds:{recipient}; msg_id: {msg_id}). NOT delivered — do not assume it was read."
    )


APPROVAL = {"message": "A message from another session needs your approval", "notification_type": "permission_prompt"}


def dump_database():
    """Every row of every table, the search index's own tables included, as one string. The
    feed rows' search entries are written first (SQLite indexes them in batches)."""
    search_index.catch_up()
    parts = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            tables = [name for (name,) in cursor.fetchall()]
            for table in tables:
                cursor.execute(f'SELECT t::text FROM "{table}" AS t')
                parts += [table, *(row for (row,) in cursor.fetchall())]
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = [name for (name,) in cursor.fetchall()]
            for table in tables:
                cursor.execute(f'SELECT * FROM "{table}"')
                parts += [table, *(repr(row) for row in cursor.fetchall())]
    assert "board_search" in " ".join(tables)
    return "\n".join(parts)


def assert_no_native_text():
    dump = dump_database()
    for trace in TRACES:
        assert trace not in dump, trace


@pytest.fixture
def native(hook):
    """Two live Claude Code sessions, alpha (h-a) and bravo (h-b), whose hook client reports
    their native names and sockets; `native.event(...)` posts more hooks as one of them."""

    class Sessions:
        def event(self, who, event, **fields):
            hook_id, name, socket = {"alpha": ("h-a", "alpha", SOCKET_A), "bravo": ("h-b", "bravo", SOCKET_B)}[who]
            fields.setdefault("relaybay_native", {"socket": socket, "session": {"name": name, "status": "busy"}})
            return hook(event, hook_id, **fields)

        def row(self, who):
            return HookLink.objects.get(hook_session={"alpha": "h-a", "bravo": "h-b"}[who]).session

    sessions = Sessions()
    sessions.event("alpha", "SessionStart", source="startup", relaybay_session="alpha-dev")
    sessions.event("bravo", "SessionStart", source="startup", relaybay_session="bravo-dev")
    sessions.event("bravo", "UserPromptSubmit", prompt="work")
    return sessions
