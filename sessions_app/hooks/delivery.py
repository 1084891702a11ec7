"""Claiming what is pending for a session and turning it into one hook answer (docs/rules.md §2.2-§2.5).

What a hook can carry comes in kinds: the owner's comments (registered here, by
sessions_app) and messages between sessions (registered by messaging). Each kind is a
`Deliverable` registered in its app's `AppConfig.ready`, so this module composes answers
without importing the apps whose things it carries, and messaging depends on sessions_app,
never the other way round.

Claims are compare-and-set updates (`filter(pk=…, delivered_at=None).update(…)`), so when
several hooks of one session run at once each item goes to exactly one of them, on SQLite
and PostgreSQL alike, whichever process serves the hook.
"""

import functools
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.compiled import Statement
from core.pings import ping

from .. import directory, identity
from ..feed import record_event
from ..models import Comment, HookLink

BUDGET = 8000
STOP_BLOCKS_PER_TURN = 3
SCAN = 50


class Deliverable:
    """One kind of thing a hook carries to a session. A subclass names its model, the field
    naming the session it goes to, and what of it is pending; and says how one item is
    written in an answer, how it is claimed, and who it comes from."""

    name = ""
    order = 0
    model = None
    session_field = ""
    pending = Q()
    # Whether the owner wrote it: only other items count toward the wake-up cap (docs/rules.md §4.8).
    from_owner = False

    def waiting(self, session_id):
        """The items pending for the session: the one definition of "pending" for this kind."""
        return self.model.objects.filter(self.pending, **{self.session_field + "_id": session_id})

    def block(self, item):
        raise NotImplementedError

    def claim(self, item, *, now, by):
        """Mark `item` delivered unless another hook did first; whether this one did."""
        raise NotImplementedError

    def source(self, items):
        """Who the items come from, as the answer's header says it."""
        raise NotImplementedError

    def delivered_event(self, item, carrier):
        """The name and data of the feed row of one delivery."""
        raise NotImplementedError


_kinds = []


def register(kind):
    """Add a kind of deliverable (from an AppConfig.ready); answers carry kinds by `order`."""
    if all(known.name != kind.name for known in _kinds):
        _kinds.append(kind)
        _kinds.sort(key=lambda known: known.order)


def kinds():
    return tuple(_kinds)


def comment_block(comment):
    written = timezone.localtime(comment.created_at).strftime("%Y-%m-%d %H:%M UTC")
    return f"[relaybay] Comment C-{comment.pk} from the owner (written {written}):\n{comment.body}"


class Comments(Deliverable):
    name = "comment"
    order = 10
    model = Comment
    session_field = "session"
    pending = Q(delivered_at=None)
    from_owner = True

    def block(self, item):
        return comment_block(item)

    def claim(self, item, *, now, by):
        return bool(Comment.objects.filter(pk=item.pk, delivered_at=None).update(delivered_at=now, delivered_by=by))

    def source(self, items):
        return "the owner"

    def delivered_event(self, item, carrier):
        return "comment.delivered", {"comment": item.pk, "by": carrier}


@dataclass
class Delivery:
    """The items of one hook answer, each (kind, item, block), in the order they are carried."""

    items: list = field(default_factory=list)

    def __bool__(self):
        return bool(self.items)

    def of(self, kind):
        return [item for known, item, _ in self.items if known is kind]

    def source(self):
        return " and ".join(kind.source(self.of(kind)) for kind in kinds() if self.of(kind))

    def header(self):
        count = len(self.items)
        return f"relaybay: {count} new item{'s' if count > 1 else ''} for you, from {self.source()}. Read below."

    def text(self):
        return "\n\n".join([self.header(), *(block for _, _, block in self.items)])

    def fits(self, kind, item, block):
        """Whether one more whole item keeps the answer, header included, within BUDGET."""
        return len(Delivery([*self.items, (kind, item, block)]).text()) <= BUDGET


def answer_size(kind, item, block):
    """The length of a hook answer carrying `item`, written as `block`, alone."""
    return len(Delivery([(kind, item, block)]).text())


@functools.cache
def _pending_statements(registered, vendor):
    """Each kind's `waiting` queryset as a statement compiled once (core/compiled.py): the same
    definition as the ORM's, with the session id its only parameter."""
    return tuple(Statement(lambda session_id: kind.waiting(session_id).order_by().values_list("pk")[:1], (int,)) for kind in registered)


def pending_sql(session_id):
    """The one statement asking each kind whether anything waits, and its parameters."""
    statements = _pending_statements(kinds(), connection.vendor)
    sql = "SELECT " + ", ".join(f"EXISTS({statement.sql})" for statement in statements)
    return sql, [param for statement in statements for param in statement.params((session_id,))]


def pending(session_id):
    """The kinds that have something pending for the session (empty when nothing waits).
    Every hook asks, and mostly hears no, so it is one statement, compiled once from the
    kinds' `waiting` querysets because building it with the ORM each time costs more than
    the database takes to answer it."""
    registered = kinds()
    if not _pending_statements(registered, connection.vendor)[0].proves((session_id,)):
        return tuple(kind for kind in registered if kind.waiting(session_id).exists())
    with connection.cursor() as cursor:
        cursor.execute(*pending_sql(session_id))
        found = cursor.fetchone()
    return tuple(kind for kind, waits in zip(registered, found) if waits)


def claim_pending(link, carrier, looking=None):
    """Claim, oldest first, every whole item that fits one answer; `looking` says which kinds
    are worth a look (all by default). Call inside a transaction."""
    now = timezone.now()
    by = f"{carrier} via {link.hook_session}"
    delivery = Delivery()
    for kind in kinds() if looking is None else looking:
        full = False
        for item in kind.waiting(link.session_id).order_by("id")[:SCAN]:
            block = kind.block(item)
            if not delivery.fits(kind, item, block):
                full = True
                break
            if kind.claim(item, now=now, by=by):
                delivery.items.append((kind, item, block))
        if full:
            break
    for kind, item, _ in delivery.items:
        name, data = kind.delivered_event(item, carrier)
        record_event(name, session_id=link.session_id, hook_session=link.hook_session, data=data)
    if delivery:
        ping("sessions", "messages", "comments", "events")
    return delivery


def context_answer(event_name, delivery):
    return {"hookSpecificOutput": {"hookEventName": event_name, "additionalContext": delivery.text()}}


def stop_answer(link, looking=None):
    """A Stop block when something is pending and this turn has blocks left. Inside a transaction."""
    took = HookLink.objects.filter(pk=link.pk, stop_blocks__lt=STOP_BLOCKS_PER_TURN).update(
        stop_blocks=F("stop_blocks") + 1, state=HookLink.State.BUSY
    )
    if not took:
        return {}
    delivery = claim_pending(link, "Stop", looking)
    if not delivery:
        HookLink.objects.filter(pk=link.pk).update(stop_blocks=F("stop_blocks") - 1, state=HookLink.State.IDLE)
        return {}
    return {"decision": "block", "reason": delivery.text()}


WAKE_REPLACED = "replaced"


def claim_for_waiter(hook_session, waiter):
    """What a wake-up waiter may deliver now: text, None (keep waiting) or WAKE_REPLACED."""
    with transaction.atomic():
        link = HookLink.objects.select_for_update().select_related("session").filter(hook_session=hook_session).first()
        if link is None or link.waiter != waiter or not link.live:
            return WAKE_REPLACED
        if not link.exact or link.state != HookLink.State.IDLE:
            return None
        # Past the wake-up cap only what the owner wrote wakes it; the rest waits for a prompt.
        capped = directory.wake_cap_reached(link)
        delivery = claim_pending(link, "wake-up", [kind for kind in kinds() if kind.from_owner] if capped else None)
        if not delivery:
            return None
        woken_by_sessions = not any(delivery.of(kind) for kind in kinds() if kind.from_owner)
        # The wake starts a new turn: it has its own Stop blocks, and this waiter is spent.
        HookLink.objects.filter(pk=link.pk).update(
            state=HookLink.State.BUSY, stop_blocks=0, waiter="", agent_wakes=F("agent_wakes") + int(woken_by_sessions)
        )
        if woken_by_sessions:
            record_event(
                "hook.agent_wake",
                session_id=link.session_id,
                hook_session=link.hook_session,
                data={"wakes": link.agent_wakes + 1, "cap": settings.RELAYBAY_WAKE_CAP},
            )
        return delivery.text()


def register_waiter(hook_session, waiter, process=""):
    """Make `waiter` the session's current waiter; False when the hook id is unknown, or when
    the waiter carries another running process's proof than the link's (it would take that
    session's mail: docs/rules.md §1.5)."""
    now = timezone.now()
    link = directory.link_of(hook_session)
    if link is None or not identity.speaks_for(link, process, now):
        return False
    return HookLink.objects.filter(pk=link.pk).update(waiter=waiter, waiter_polled_at=now) == 1


def forget_waiter(hook_session, waiter):
    """`waiter` stops waiting (it could not, or its hook's bound is reached): unregister it,
    unless a newer one took over, so nobody is told the session is being woken."""
    HookLink.objects.filter(hook_session=hook_session, waiter=waiter).update(waiter="", waiter_polled_at=None)
