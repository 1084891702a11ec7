"""What a session is doing now, in words, for the Sessions page and a session's page: "running
Bash `npm test`", "woken by relaybay for M-3 from api", "waiting for you: Bash `npm test`" —
never the CLI's raw wake-up notice or the mark left where message text is not stored."""

from datetime import timedelta

from approvals import lib as requests
from engines import is_wake_prompt
from sessions_app.hooks.claude_native import MESSAGE_TEXT_PLACEHOLDER
from sessions_app.hooks.delivery import handed_back
from sessions_app.models import Event, HookLink

SHOWN_INPUT = 120
# The deliveries one wake-up hands over are written together, just before its prompt.
WAKE_WINDOW = timedelta(seconds=5)


def is_wake_up(prompt):
    """Whether a stored prompt is relaybay's own delivery handed back, not what a person typed."""
    text = (prompt or "").lstrip()
    return text == MESSAGE_TEXT_PLACEHOLDER or is_wake_prompt(text) or handed_back(text)


def woken_by(session, at):
    """'M-3 from api, C-4 from the owner': what the wake-up that started the prompt at `at` carried."""
    carried = list(
        Event.objects.filter(session=session, name__in=("message.delivered", "comment.delivered"), data__by__startswith="wake-up", created_at__lte=at + WAKE_WINDOW)
        .order_by("-id")
        .only("name", "data", "created_at")[:5]
    )
    if not carried:
        return ""
    newest = carried[0].created_at
    said = []
    for row in carried:
        if newest - row.created_at > WAKE_WINDOW:
            break
        if row.name == "message.delivered":
            said.append(f"M-{row.data.get('message')} from {row.data.get('from') or 'a session'}")
        else:
            said.append(f"C-{row.data.get('comment')} from the owner")
    return ", ".join(reversed(said))


def prompt_words(session, prompt, at):
    """A prompt as the board shows it: a wake-up in words, anything else as it was typed."""
    if not is_wake_up(prompt):
        return prompt
    carried = woken_by(session, at) if at else ""
    return f"woken by relaybay for {carried}" if carried else "woken by relaybay"


def _clip(text):
    text = " ".join(str(text).split())
    return text if len(text) <= SHOWN_INPUT else text[: SHOWN_INPUT - 1] + "…"


def words(session, activity, waiting=None):
    """One line: what the session waits for, else what it runs, else its state."""
    if waiting is not None:
        return f"waiting for you: {requests.short_reason(waiting)}"
    if activity.state == HookLink.State.BUSY:
        if activity.tool:
            return f"running {activity.tool}" + (f" `{_clip(activity.tool_summary)}`" if activity.tool_summary else "")
        if activity.prompt and is_wake_up(activity.prompt):
            return prompt_words(session, activity.prompt, activity.prompt_at)
        return "working on its prompt"
    if activity.state == HookLink.State.IDLE:
        return "idle, waiting for a prompt"
    if activity.state == HookLink.State.ENDED:
        return "ended"
    return ""
