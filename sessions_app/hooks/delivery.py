"""Claiming what is pending for a session and turning it into one hook answer (docs/rules.md §2.2-§2.5).

What a hook can carry comes in kinds: the owner's comments (registered here, by
sessions_app) and messages between sessions (registered by messaging). Each kind is a
`Deliverable` registered in its app's `AppConfig.ready`, so this module composes answers
without importing the apps whose things it carries, and messaging depends on sessions_app,
never the other way round.

Claims are compare-and-set updates (`filter(pk=…, delivered_at=None).update(…)`, or on the
offered time for an item offered again), so when several hooks of one session run at once
each item goes to exactly one of them, on SQLite and PostgreSQL alike, whichever process
serves the hook.

Delivery is at least once into the hook client and exactly once into the model (§2.6): an
item handed to a client that confirms what it prints (the command-hook client says so with
each call) is *offered* until that client reports, with a later call, that it printed it
(`do_confirm_printed`); one still unconfirmed RELAYBAY_REOFFER_SECONDS later is offered again
by the session's next hook (`Deliverable.due_again`), and the client prints no item twice.
"""

import re
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from core.pings import ping

from .. import directory, identity
from ..feed import feed_row, record_event, record_events
from ..models import Comment, HookLink

BUDGET = 8000
STOP_BLOCKS_PER_TURN = 3
SCAN = 50


class Deliverable:
    """One kind of thing a hook carries to a session. A subclass names its model (with the
    columns `delivered_at`, `delivered_by`, `offered_at` and `confirmed_at`), the field
    naming the session it goes to, what of it may still be carried, and the letter of its
    handles; and says how one item is written in an answer and who it comes from."""

    name = ""
    order = 0
    model = None
    session_field = ""
    # What of this kind may still be carried, handed over or not (read, denied... may not); and
    # the same condition in SQL, of the kind's own columns, for the one statement every hook
    # asks (pending): tests/test_delivery_kinds.py checks that the two agree.
    carriable = Q()
    carriable_sql = ""
    # An item's handle is `<prefix>-<id>` (C-12, M-40): in answers, confirmations, the board.
    prefix = ""
    # Columns a claim sets besides the delivery's own.
    claimed_fields = {}
    # Whether the owner wrote it: only other items count toward the wake-up cap (docs/rules.md §4.8).
    from_owner = False

    def _of(self, session_id):
        return self.model.objects.filter(self.carriable, **{self.session_field + "_id": session_id})

    def fresh(self, session_id):
        """The items no hook answer has carried yet."""
        return self._of(session_id).filter(delivered_at=None)

    def due_again(self, session_id, now):
        """The items handed to a hook client that has not confirmed them within
        RELAYBAY_REOFFER_SECONDS: offered again."""
        return self._of(session_id).filter(offered_at__lt=now - timedelta(seconds=settings.RELAYBAY_REOFFER_SECONDS))

    def waiting(self, session_id, now=None):
        """The items pending for the session: the one definition of "pending" for this kind."""
        return self.fresh(session_id) | self.due_again(session_id, now or timezone.now())

    def handle(self, item):
        return f"{self.prefix}-{item.pk}"

    def block(self, item):
        raise NotImplementedError

    def claim(self, item, *, now, by, confirming):
        """Hand `item` to this answer unless another hook took it first; whether this one did.
        An answer to a client that confirms leaves it offered (`offered_at`) until the client
        does; any other answer is final."""
        offered = {"delivered_by": by, "offered_at": now if confirming else None, **self.claimed_fields}
        if item.delivered_at is None:
            claimed = self.model.objects.filter(pk=item.pk, delivered_at=None).update(delivered_at=now, **offered)
        else:
            claimed = self.model.objects.filter(pk=item.pk, offered_at=item.offered_at, confirmed_at=None).update(**offered)
        return bool(claimed)

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
    prefix = "C"
    from_owner = True

    def block(self, item):
        return comment_block(item)

    def source(self, items):
        return "the owner"

    def delivered_event(self, item, carrier):
        return "comment.delivered", {"comment": item.pk, "by": carrier}


@dataclass
class Delivery:
    """The items of one hook answer, each (kind, item, block), in the order they are carried;
    `budget`: the characters they may take (less than BUDGET when the answer says more)."""

    items: list = field(default_factory=list)
    budget: int = BUDGET

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
        """Whether one more whole item keeps the answer, header included, within its budget."""
        return len(Delivery([*self.items, (kind, item, block)]).text()) <= self.budget

    def handles(self):
        return [kind.handle(item) for kind, item, _ in self.items]


class HookAnswer(dict):
    """A hook answer (the JSON Claude Code reads) carrying a delivery: `carried` names its
    items, for the route to tell the hook client in a header, never in the JSON."""

    def __init__(self, answer, delivery):
        super().__init__(answer)
        self.carried = delivery.handles()


def answer_size(kind, item, block):
    """The length of a hook answer carrying `item`, written as `block`, alone."""
    return len(Delivery([(kind, item, block)]).text())


def pending(session_id):
    """What is pending for the session, by kind (empty when nothing waits): for each kind with
    something, whether it has fresh items and whether it has items due again, as its `fresh` and
    `due_again` querysets say (each an index of its own). A claim asks only the questions that
    found something.

    Hand-written, relaybay's one such read on the hook path: every hook asks it and mostly
    hears no, and the ORM's building of its six subqueries on each hook cost more than the rest
    of the hook's work (docs/benchmarks.md, "The ORM everywhere"). Each kind's part is written
    from its model's table and columns and its `carriable_sql`."""
    registered = kinds()
    cutoff = timezone.now() - timedelta(seconds=settings.RELAYBAY_REOFFER_SECONDS)
    questions, params = [], []
    for kind in registered:
        fresh, due = _pending_questions(kind)
        questions += [fresh, due]
        params += [session_id, session_id, connection.ops.adapt_datetimefield_value(cutoff)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(questions), params)
        found = cursor.fetchone()
    return {kind: Waiting(bool(found[2 * i]), bool(found[2 * i + 1])) for i, kind in enumerate(registered) if found[2 * i] or found[2 * i + 1]}


@dataclass(frozen=True)
class Waiting:
    """Which of a kind's two questions found something: fresh items, items due again."""

    fresh: bool = True
    due_again: bool = True


def _pending_questions(kind):
    """`kind.fresh` and `kind.due_again` as EXISTS clauses: the session's id their parameter,
    and the cutoff the second's."""
    quote = connection.ops.quote_name
    meta = kind.model._meta
    of_session = f"{quote(meta.get_field(kind.session_field).column)} = %s" + (f" AND {kind.carriable_sql}" if kind.carriable_sql else "")
    table = quote(meta.db_table)
    return (
        f"EXISTS(SELECT 1 FROM {table} WHERE {of_session} AND {quote('delivered_at')} IS NULL)",
        f"EXISTS(SELECT 1 FROM {table} WHERE {of_session} AND {quote('offered_at')} < %s)",
    )


def _worth_a_look(looking):
    """(kind, Waiting) for each kind a claim looks at: as pending() found them, or both questions
    of each kind listed (every kind by default)."""
    if isinstance(looking, dict):
        return looking.items()
    return [(kind, Waiting()) for kind in (kinds() if looking is None else looking)]


def do_claim_pending(link, carrier, looking=None, *, confirming=False, budget=BUDGET, feed=None):
    """Claim, oldest first, every whole item that fits one answer (within `budget` characters);
    `looking` says which kinds are worth a look: what pending() found (only its questions that
    found something are asked again), or a list of kinds (all by default). `confirming`: the
    hook client confirms what it prints. `feed`: the caller's feed rows, not written yet: the
    deliveries' rows are added for the caller to write with its own, in one INSERT; without it
    they are written here. Call inside a transaction."""
    now = timezone.now()
    by = f"{carrier} via {link.hook_session}"
    delivery = Delivery(budget=budget)
    again = set()
    for kind, waiting in _worth_a_look(looking):
        full = False
        candidates = [
            *(kind.fresh(link.session_id).order_by("id")[:SCAN] if waiting.fresh else []),
            *(kind.due_again(link.session_id, now).order_by("id")[:SCAN] if waiting.due_again else []),
        ]
        for item in sorted(candidates, key=lambda item: item.pk)[:SCAN]:
            block = kind.block(item)
            if not delivery.fits(kind, item, block):
                full = True
                break
            offered_before = item.delivered_at is not None
            if kind.claim(item, now=now, by=by, confirming=confirming):
                delivery.items.append((kind, item, block))
                if offered_before:
                    again.add(kind.handle(item))
        if full:
            break
    rows = []
    for kind, item, _ in delivery.items:
        name, data = kind.delivered_event(item, carrier)
        if kind.handle(item) in again:
            data = {**data, "offered_again": True}
        rows.append(feed_row(name, session_id=link.session_id, hook_session=link.hook_session, data=data))
    if rows:
        if feed is None:
            record_events(rows)
        else:
            feed += rows
        ping("sessions", "messages", "comments", "events")
    return delivery


def context_answer(dialect, delivery, before=""):
    """The CLI's context answer (its engine's `context`) carrying `delivery`, after `before`
    (the edit check's warning) if any."""
    text = "\n\n".join(part for part in (before, delivery.text() if delivery else "") if part)
    return HookAnswer(dialect.engine.context(dialect.name, text), delivery)


def do_block_stop(link, dialect, looking=None, *, confirming=False, feed=None):
    """A Stop block when something is pending and this turn has blocks left, as the CLI goes on
    with it (its engine's `continued`); `feed` as do_claim_pending's. Inside a transaction."""
    took = HookLink.objects.filter(pk=link.pk, stop_blocks__lt=STOP_BLOCKS_PER_TURN).update(
        stop_blocks=F("stop_blocks") + 1, state=HookLink.State.BUSY
    )
    if not took:
        return {}
    delivery = do_claim_pending(link, "Stop", looking, confirming=confirming, feed=feed)
    if not delivery:
        HookLink.objects.filter(pk=link.pk).update(stop_blocks=F("stop_blocks") - 1, state=HookLink.State.IDLE)
        return {}
    return HookAnswer(dialect.engine.continued(dialect.name, delivery.text()), delivery)


# Delivery.header's words: an answer's text starts with them.
HEADER = re.compile(r"\s*relaybay: [0-9]+ new items? for you, from ")


def handed_back(prompt):
    """Whether a prompt is a delivery's own text handed back as the model's next input: a Stop
    reason a CLI sends as a new user turn."""
    return isinstance(prompt, str) and HEADER.match(prompt) is not None


HANDLE = re.compile(r"^([A-Z])-([0-9]{1,18})$")
# At most this many handles of one report are read; the client reports fewer.
REPORT_MAX = 200


def _own_link(hook_session, process, now):
    """The hook id's link when the caller speaks for it (identity.access_link), None when the id
    is unknown or another running process's; a call without the proof is refused."""
    link = directory.link_of(hook_session)
    if link is None:
        return None
    try:
        return identity.access_link(link, process, now)
    except identity.AnotherProcess:
        return None


def do_confirm_printed(hook_session, report, process):
    """The hook client of `hook_session` reports, as `report` ("C-12 M-40"), the items it
    printed into the model: mark those of the session's row confirmed (they are offered no
    more). Returns the handles taken, which the client need not report again; none when the
    caller does not speak for the session (docs/rules.md §1.5)."""
    by_prefix = {kind.prefix: kind for kind in kinds()}
    wanted = {}
    taken = []
    for handle in report.replace(",", " ").split()[:REPORT_MAX]:
        match = HANDLE.match(handle)
        if match and match[1] in by_prefix:
            wanted.setdefault(by_prefix[match[1]], []).append(int(match[2]))
            taken.append(handle)
    if not taken:
        return []
    now = timezone.now()
    with transaction.atomic():
        link = _own_link(hook_session, process, now)
        if link is None:
            return []
        rows = []
        for kind, ids in wanted.items():
            unconfirmed = kind.model.objects.filter(pk__in=ids, confirmed_at=None, **{kind.session_field + "_id": link.session_id}).exclude(delivered_at=None)
            confirmed = list(unconfirmed.values_list("pk", flat=True))
            if confirmed:
                kind.model.objects.filter(pk__in=confirmed).update(confirmed_at=now, offered_at=None)
                rows += [
                    feed_row(f"{kind.name}.confirmed", session_id=link.session_id, hook_session=hook_session, data={kind.name: pk})
                    for pk in confirmed
                ]
        if rows:
            record_events(rows)
            ping("messages", "comments", "events")
    return taken


WAKE_REPLACED = "replaced"
# A waiter that wakes its session with a fixed prompt (Codex CLI's, relaybay_hook/codex_wake.py)
# is told only that mail waits: the woken turn's UserPromptSubmit delivers it.
WAKE_PENDING = "pending"


def do_claim_for_waiter(hook_session, waiter, *, confirming=False, nudge=False):
    """What a wake-up waiter may deliver now: a Delivery, None (keep waiting) or WAKE_REPLACED;
    with `nudge`, WAKE_PENDING instead of a Delivery, the mail left pending for the turn the
    waiter starts."""
    with transaction.atomic():
        link = HookLink.objects.select_for_update().select_related("session").filter(hook_session=hook_session).first()
        if link is None or link.waiter != waiter or not link.live:
            return WAKE_REPLACED
        if not link.exact or link.state != HookLink.State.IDLE:
            return None
        # Past the wake-up cap only what the owner wrote wakes it; the rest waits for a prompt.
        capped = directory.wake_cap_reached(link)
        looking = [kind for kind in kinds() if kind.from_owner] if capped else None
        if nudge:
            waiting = [kind for kind in (looking or kinds()) if kind.waiting(link.session_id).exists()]
            if not waiting:
                return None
            delivery = WAKE_PENDING
            woken_by_sessions = not any(kind.from_owner for kind in waiting)
        else:
            delivery = do_claim_pending(link, "wake-up", looking, confirming=confirming)
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
        return delivery


def do_register_waiter(hook_session, waiter, process=""):
    """Make `waiter` the session's current waiter; False when the hook id is unknown, or when
    the waiter carries another running process's proof than the link's (it would take that
    session's mail: docs/rules.md §1.5)."""
    now = timezone.now()
    link = _own_link(hook_session, process, now)
    if link is None:
        return False
    return HookLink.objects.filter(pk=link.pk).update(waiter=waiter, waiter_polled_at=now) == 1


def do_forget_waiter(hook_session, waiter):
    """`waiter` stops waiting (it could not, or its hook's bound is reached): unregister it,
    unless a newer one took over, so nobody is told the session is being woken."""
    HookLink.objects.filter(hook_session=hook_session, waiter=waiter).update(waiter="", waiter_polled_at=None)
