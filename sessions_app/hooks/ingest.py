"""Hook ingestion: record the event, keep the link's state, answer with deliveries (docs/rules.md §2.1)."""

import json
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.errors import InvalidInput
from core.pings import ping, wake_waiters
from core.inputs import check_identifier, clean_json, clean_text
from engines import ENGINE_FIELD, MODEL_TEXT, dialect_of, is_wake_prompt

from .. import directory, identity
from ..actions import do_update_session, link_started_session
from ..feed import feed_row, record_events
from ..models import Event, HookLink, Session, fold_name
from . import claude_native, delivery, steps

DELIVERING_EVENTS = {"UserPromptSubmit", "PreToolUse", "PostToolUse"}
# The hook client's own fields are not the CLI's; the model's last answer (each engine's
# model_text: a Stop's or its like's) may quote a message.
DROPPED_FIELDS = {
    "transcript_path", "relaybay_session", "relaybay_native", "relaybay_tree",
    "relaybay_waits", "relaybay_hold", "relaybay_attended", ENGINE_FIELD,
}  # fmt: skip
# A permission request's detail (the command, the path) is shown only while it waits
# (docs/rules.md §8): its event keeps the tool's name.
# A Notification's `details` (a CLI's notice that a tool waits for permission) may hold an edit's file content.
DROPPED_FIELDS_OF_EVENT = {"PermissionRequest": {"tool_input", "permission_suggestions"}, "Notification": {"details"}}
FOREIGN_PROCESS = (
    "relaybay: this hook names a Claude Code session that another running process proves; "
    "relaybay leaves that session alone and delivers nothing here."
)
# "Last seen" times are written at most this often: most hooks of a busy turn then write
# only their event row.
SEEN_RESOLUTION = timedelta(seconds=5)


# The payload's fields that key a link or an event: refused when they could not be one (a
# number, a NUL, a lone surrogate, longer than the column), never altered. Every other field
# is text that is only kept and shown: made valid text (core/inputs.py).
IDENTIFIERS = {
    "session_id": HookLink._meta.get_field("hook_session").max_length,
    "hook_event_name": Event._meta.get_field("name").max_length - len("hook."),
}
OPTIONAL_IDENTIFIERS = {
    "cwd": HookLink._meta.get_field("cwd").max_length,
    "transcript_path": HookLink._meta.get_field("transcript_path").max_length,
    "tool_name": 200,
    ENGINE_FIELD: 20,
}
# Claude Code sends about a dozen fields; past this many only a count is kept, so no payload
# of many small keys can make a page of megabytes.
STORED_FIELDS_MAX = 40


def check_payload(payload):
    """The payload as ingestion uses it: identifiers checked, everything else valid text."""
    if not isinstance(payload, dict):
        raise InvalidInput("The hook payload must be a JSON object, as Claude Code sends it.")
    for key, limit in IDENTIFIERS.items():
        value = payload.get(key)
        if value is None:
            wrong = f"has no {key}"
        elif not isinstance(value, str):
            wrong = f"has a {key} that is not text (a JSON {_json_kind(value)})"
        elif not value.strip():
            wrong = f"has a blank {key}"
        else:
            wrong = ""
        if wrong:
            raise InvalidInput(f"The hook payload {wrong}; send the payload exactly as Claude Code gives it.")
        check_identifier(payload[key], what=f"hook payload's {key}", max_length=limit)
    for key, limit in OPTIONAL_IDENTIFIERS.items():
        check_identifier(payload.get(key), what=f"hook payload's {key}", max_length=limit, required=False)
    keys = {*IDENTIFIERS, *OPTIONAL_IDENTIFIERS}
    return {clean_text(k): (v if k in keys else clean_json(v)) for k, v in payload.items()}


def _json_kind(value):
    """What a JSON value other than a string or null is."""
    return "boolean" if isinstance(value, bool) else {dict: "object", list: "array"}.get(type(value), "number")


def _truncated(value, limit):
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return value
    return text[:limit] + f"… [truncated: {len(text)} characters in all]"


def stored_fields(payload, engine):
    """The event's data: the payload without message text and file content (its CLI's edit
    tools', cut before clipping, which would turn a field into a string holding the text) and
    with long fields clipped."""
    limit = settings.RELAYBAY_STORED_FIELD_CHARS
    dropped = DROPPED_FIELDS | MODEL_TEXT | DROPPED_FIELDS_OF_EVENT.get(payload.get("hook_event_name"), set())
    fields = [(k, v) for k, v in payload.items() if k not in dropped]
    data = engine.without_file_content(claude_native.without_message_text(dict(fields[:STORED_FIELDS_MAX])))
    data = {k: _truncated(v, limit) for k, v in data.items()}
    if len(fields) > STORED_FIELDS_MAX:
        data["relaybay_not_stored"] = f"{len(fields) - STORED_FIELDS_MAX} more fields"
    return data


def _next_state(link, event_name):
    State = HookLink.State
    if event_name == "SessionStart":
        return State.IDLE
    if link.state == State.ENDED:
        return State.ENDED
    if event_name in DELIVERING_EVENTS:
        return State.BUSY
    if event_name == "Stop":
        return State.IDLE
    if event_name == "SessionEnd":
        return State.ENDED
    return link.state


def _native_names(link, payload, feed):
    """The process's native name and messaging socket, as the hook client read them
    (docs/rules.md §4.9): what changed of them, for the link, and its feed row added to `feed`.
    A rename (/rename) is followed; an event that reports neither (an http hook, SessionEnd)
    leaves them."""
    reported = payload.get("relaybay_native")
    if not isinstance(reported, dict):
        return {}
    updates = {}
    claude = reported.get("session") if isinstance(reported.get("session"), dict) else {}
    name, socket = claude.get("name"), reported.get("socket")
    if isinstance(name, str) and name.strip() and name.strip() != link.native_name:
        try:
            name = directory.check_name(name, what="native name")
        except InvalidInput:
            name = None
        if name is not None:
            updates.update(native_name=name, native_name_key=fold_name(name))
            feed.append(feed_row("link.native_name", session_id=link.session_id, hook_session=link.hook_session, data={"name": name, "was": link.native_name}))
            # A /rename is a native name that changes; the first one reported names the session
            # only while it goes by its folder's name (a start named by RELAYBAY_SESSION keeps
            # that name, docs/rules.md §1.5).
            renamed = bool(link.native_name)
            if renamed or not payload.get("relaybay_session"):
                _follow_rename(link, name, feed, renamed=renamed)
    if isinstance(socket, str) and 0 < len(socket) <= 500 and claude_native.socket_path(socket) != link.native_socket:
        updates["native_socket"] = claude_native.socket_path(socket)
    for field, value in updates.items():
        setattr(link, field, value)
    return updates


def _follow_rename(link, native_name, feed, *, renamed):
    """A native name the person gave (/rename, --name) becomes the session's name
    (docs/rules.md §1.5), unless another row goes by it already. `renamed`: it replaces an
    earlier native name; else it is the first reported, which names only a session that goes
    by its folder's name."""
    if identity.generated_native_name(native_name, link.cwd):
        return
    native_name = identity.default_name(link.cwd, native_name, directory.machine_elsewhere(link.process_proof))
    row = Session.objects.get(pk=link.session_id)
    if row.kind != Session.Kind.HOOK or fold_name(row.title) == fold_name(native_name):
        return
    if not renamed and not identity.folder_derived_name(row.title, link.cwd):
        return
    if any(other.pk != row.pk for other in directory.find_sessions(native_name)):
        feed.append(feed_row("session.rename_refused", session=row, hook_session=link.hook_session, data={"name": native_name, "reason": "in use"}))
        return
    do_update_session(session=row, title=native_name)


def is_owner_prompt(payload):
    """Whether a UserPromptSubmit carries what a person typed, rather than a wake-up."""
    return not is_wake_prompt(payload.get("prompt"))


def _stale(moment, now):
    return moment is None or now - moment >= SEEN_RESOLUTION


def _apply_event(link, event_name, payload, now, process):
    """Keep the link's state; write only what changed, and the times when they are stale.
    Returns the feed rows of what changed, for ingest_hook to write with the event's own."""
    updates = {}
    feed = []
    if process and process != link.process_proof:
        # One proof speaks for one hook id: the process's newest (after /clear or /resume).
        # ingest_hook has checked that this process may speak for the link.
        HookLink.objects.filter(process_proof=process).exclude(pk=link.pk).update(process_proof="")
        updates["process_proof"] = link.process_proof = process
    state = _next_state(link, event_name)
    if state != link.state:
        updates["state"] = state
    if event_name == "UserPromptSubmit" and not delivery.handed_back(payload.get("prompt")):
        # A prompt starts a turn, unless it is relaybay's own Stop reason handed back as the
        # next input (a CLI whose Stop goes on as a new user turn hooks it as a prompt): that
        # turn keeps its Stop blocks.
        updates["turn"] = F("turn") + 1
        updates["stop_blocks"] = 0
        if link.agent_wakes and is_owner_prompt(payload):
            # A prompt is the owner's action: messages may wake the session again.
            updates["agent_wakes"] = 0
    if event_name in ("SessionStart", "SessionEnd"):
        updates["waiter"] = ""
        if link.waiter:
            wake_waiters([link.hook_session])
    if payload.get("transcript_path") and payload["transcript_path"] != link.transcript_path:
        updates["transcript_path"] = payload["transcript_path"]
    updates.update(_native_names(link, payload, feed))
    updates.update(steps.link_updates(link, payload))
    if event_name == "SessionEnd":
        feed += steps.session_ended(link, payload.get("reason"), now)
    if updates or _stale(link.last_event_at, now):
        updates["last_event_at"] = now
        HookLink.objects.filter(pk=link.pk).update(**updates)
        Session.objects.filter(pk=link.session_id).update(last_seen_at=now)
    if "state" in updates:
        link.state = state
    if "state" in updates or "native_name" in updates:
        ping("sessions")
    return feed


def _link(hook_session, dialect, payload, process, now):
    """The hook id's link, made or moved by who the session is (docs/rules.md §1.5), and a note
    for the session when it could not have the name it asked for."""
    link = directory.link_of(hook_session)
    if link is None:
        # The first events of a hook id may arrive at two processes at once: one links it.
        directory.serialize_on("hook", hook_session)
        link = directory.link_of(hook_session)
    if link is None or (dialect.event == "SessionStart" and payload.get("relaybay_session")):
        return link_started_session(hook_session=hook_session, link=link, payload=payload, process=process, now=now, engine=dialect.engine.name)
    return link, ""


def _delivers(link, dialect):
    """Whether this hook's answer may carry what waits for the session (docs/rules.md §2.2)."""
    return link.live_exact and (dialect.delivers_context or dialect.event == "Stop")


def _answer(link, dialect, payload, note, confirming, check=steps.NOTHING, *, feed=None):
    """The hook answer, in the CLI's dialect (engines/): what it carries (_carried), and
    before a call of relaybay's own tools the call's arguments naming its caller
    (Engine.caller_filled_in) beside it. `feed`: the hook's feed rows, not written yet; a
    delivery adds its own for the caller to write with them."""
    answer = _carried(link, dialect, payload, note, confirming, check, feed)
    filled_in = dialect.engine.caller_filled_in(dialect.name, payload)
    if not filled_in:
        return answer
    return {**answer, "hookSpecificOutput": {**answer.get("hookSpecificOutput", {}), **filled_in["hookSpecificOutput"]}}


def _carried(link, dialect, payload, note, confirming, check, feed=None):
    """The session's identity at its start, else the edit check's denial, else its warning and
    what waits for the session, claimed within what the warning leaves of the budget (left
    offered until the hook client confirms it, when it does: docs/rules.md §2.6)."""
    event_name = dialect.event
    if event_name == "SessionStart":
        text = directory.identity_text(link) + (f"\n{note}" if note else "")
        answer = dialect.engine.context(dialect.name, text)
        # The person sees why the session does not go by the name it asked for.
        return {**answer, "systemMessage": note} if note else answer
    if check.deny:
        # The tool does not run; what waits goes with the session's next hook.
        return check.deny_answer(dialect)
    warned = delivery.context_answer(dialect, delivery.Delivery(), before=check.warning) if check.warning else {}
    if not _delivers(link, dialect):
        return warned
    waiting = delivery.pending(link.session_id)
    if not waiting:
        return warned
    if event_name == "Stop":
        return delivery.do_block_stop(link, dialect, waiting, confirming=confirming, feed=feed)
    room = delivery.BUDGET - (len(check.warning) + 2 if check.warning else 0)
    claimed = delivery.do_claim_pending(link, event_name, waiting, confirming=confirming, budget=room, feed=feed)
    return delivery.context_answer(dialect, claimed, before=check.warning) if claimed else warned


def ingest_hook(payload, *, replay=False, spooled_at=None, process="", confirming=False):
    """One hook event, in one pass (docs/rules.md §2.1): parse the payload, link the hook id to
    its session, apply the event to the link, write its feed rows once, claim what waits and
    answer with it. `process` is the proof of the Claude Code process that ran the hook
    (directory.process_proof); a replayed event is long past and proves nothing. `confirming`:
    the hook client confirms what it prints (docs/rules.md §2.6)."""
    payload = check_payload(payload)
    dialect = dialect_of(payload)
    event_name, hook_session, now = dialect.event, payload["session_id"], timezone.now()
    process = "" if replay else process
    with transaction.atomic():
        link, note = _link(hook_session, dialect, payload, process, now)
        event = feed_row(f"hook.{event_name}", session_id=link.session_id, hook_session=hook_session, data=stored_fields(payload, dialect.engine), replay=replay, happened_at=spooled_at)
        if not replay:
            try:
                identity.access_link(link, process, now)
            except identity.AnotherProcess:
                # The hook names a session another running process proves (docs/rules.md §1.5):
                # recorded for the owner, and nothing of that session changes or is handed over.
                event.data["relaybay_refused"] = "another running process's session"
                record_events([event])
                return {"systemMessage": FOREIGN_PROCESS} if event_name == "SessionStart" else {}
        feed = _apply_event(link, event_name, payload, now, process)
        followed = steps.NOTHING_FOLLOWED if replay else steps.follow(link, dialect, payload, now)
        feed += followed.feed
        # Before the feed rows are written: the check's own go with them, in the one INSERT,
        # and so do the rows of what the answer delivers.
        check = steps.check(link, dialect, payload, now, replay=replay, happened_at=spooled_at)
        rows = [*feed, event, *check.feed]
        traffic = claude_native.read_native(payload)
        if traffic:
            # The native messages' feed rows follow the hook's own.
            record_events(rows)
            rows = []
            claude_native.report(link, traffic, now)
        # Nobody waits for a replayed event's answer: nothing is delivered through it.
        if replay:
            answer = {}
        elif followed.answer is not None:
            answer = followed.answer
        else:
            answer = _answer(link, dialect, payload, note, confirming, check, feed=rows)
        record_events(rows)
        return answer
