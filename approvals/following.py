"""What a session's hooks say of what it waits on the owner for (docs/rules.md §8), from hooks
only, never the screen. sessions_app's hook pass calls `RequestStep.follow` (sessions_app/hooks/steps.py).

- A permission request (Claude Code's and Codex CLI's PermissionRequest) waits; when the hook
  client says it holds the hook open (`relaybay_waits`), the owner can answer it and the answer
  names the request for the client to wait on.
- A question to the person (Claude Code's AskUserQuestion, an MCP server's Elicitation), and a
  session waiting at its prompt (Notification `idle_prompt`), wait for the terminal.
- The Notification by which a CLI with no hook to answer says a tool waits for the person's
  permission (its engine's `permission_notice`): the terminal only.
- Any other hook of the session means the person went on: what waited is answered elsewhere.
"""

from sessions_app.hooks.steps import Followed, Step

from . import actions, answers
from .models import Request

Kind = Request.Kind
# Hooks that say nothing of what the person did: they never answer what waits.
SILENT_EVENTS = frozenset({"PermissionRequest", "Notification", "Elicitation", "ElicitationResult", "PreCompact", "PostCompact"})
QUESTION_TOOLS = frozenset({"AskUserQuestion"})
# Claude Code's Notification types (seen, 2.1.328): its own permission dialog, and the prompt
# waiting for the person after a turn.
PERMISSION_PROMPT = "permission_prompt"
# Auto mode's dialog when its server-side check does not get through (seen, 2.1.328): it fires
# no PermissionRequest, this notice at once and permission_prompt some 6 s later.
AGENT_NEEDS_INPUT = "agent_needs_input"
IDLE_PROMPT = "idle_prompt"
WAITING_FOR_INPUT = "waiting for your input after its turn"


class RequestStep(Step):
    def follow(self, link, dialect, payload, now):
        return follow_hook(link, dialect, payload, now)


def follow_hook(link, dialect, payload, now):
    """The feed rows of what changed of the session's requests, and the hook's answer when the
    hook is a permission request the client waits on."""
    followed = Followed()
    event = dialect.event
    tool = payload.get("tool_name") if isinstance(payload.get("tool_name"), str) else ""
    if event not in SILENT_EVENTS:
        followed.feed += actions.settle_answered_elsewhere(link=link, now=now)
    question = tool in QUESTION_TOOLS
    if event == "PermissionRequest" and question:
        # Claude Code asks its question through PreToolUse, then PermissionRequest, then a
        # permission_prompt Notification (seen, 2.1.328): one request, from the first.
        if not Request.objects.waiting(now).filter(hook_session=link.hook_session, kind=Kind.QUESTION).exists():
            _, followed.feed = _opened(followed.feed, link, dialect, Kind.QUESTION, tool, answers.question_of(payload.get("tool_input")), now)
    elif event == "PermissionRequest" and payload.get("relaybay_hold") is not False:
        waits = payload.get("relaybay_waits") is True and dialect.engine.answers_permissions
        summary = answers.summary_of(payload.get("tool_input"))
        request, feed = actions.open_request(
            link=link, engine=dialect.engine.name, kind=Kind.PERMISSION, tool=tool,
            summary=summary, answerable=waits, attended=payload.get("relaybay_attended") is not False, now=now,
        )  # fmt: skip
        followed.feed += feed
        if waits:
            followed.answer = {"relaybay_request": request.pk}
    elif event == "PreToolUse" and question:
        _, followed.feed = _opened(followed.feed, link, dialect, Kind.QUESTION, tool, answers.question_of(payload.get("tool_input")), now)
    elif event == "Elicitation":
        server = payload.get("mcp_server_name") if isinstance(payload.get("mcp_server_name"), str) else ""
        said = payload.get("message") if isinstance(payload.get("message"), str) else ""
        _, followed.feed = _opened(followed.feed, link, dialect, Kind.QUESTION, server, answers.summary_of(said), now)
    elif event == "Notification":
        followed.feed += _notified(link, dialect, payload, now)
    return followed


def _opened(feed, link, dialect, kind, tool, summary, now):
    request, more = actions.open_request(link=link, engine=dialect.engine.name, kind=kind, tool=tool, summary=summary, answerable=False, now=now)
    return request, feed + more


# What of a CLI's notice that a tool waits for permission (engines: `permission_notice`) says
# what the tool would do: its `details`' command, else its file. An edit's `fileDiff`,
# `originalContent` and `newContent` there are file content, never read.
NOTICE_SAYS = ("command", "filePath", "serverName", "prompt", "urls")


def _notice_parts(payload, said):
    """(tool, summary) of a CLI's notice that a tool waits for the person's permission."""
    details = payload.get("details") if isinstance(payload.get("details"), dict) else {}
    tool = str(details.get("title") or details.get("type") or "")[:200]
    shown = next((details[key] for key in NOTICE_SAYS if isinstance(details.get(key), (str, list)) and details[key]), said)
    return tool, answers.summary_of(" ".join(map(str, shown)) if isinstance(shown, list) else shown)


def _notified(link, dialect, payload, now):
    kind_of = payload.get("notification_type")
    said = payload.get("message") if isinstance(payload.get("message"), str) else ""
    if dialect.engine.permission_notice:
        if kind_of != dialect.engine.permission_notice:
            return []
        return _opened([], link, dialect, Kind.PERMISSION, *_notice_parts(payload, said), now)[1]
    if kind_of == IDLE_PROMPT:
        if Request.objects.waiting(now).filter(hook_session=link.hook_session).exists():
            return []
        return _opened([], link, dialect, Kind.INPUT, "", WAITING_FOR_INPUT, now)[1]
    if kind_of in (PERMISSION_PROMPT, AGENT_NEEDS_INPUT):
        # The dialog of a request relaybay holds already, or one no hook reported (a native
        # message held for approval, auto mode's choice): the latter waits for the terminal.
        if Request.objects.waiting(now).filter(hook_session=link.hook_session).exists():
            return []
        return _opened([], link, dialect, Kind.PERMISSION, "", answers.summary_of(said), now)[1]
    return []
