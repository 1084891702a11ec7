"""What apps above sessions_app do inside one hook's pass (docs/rules.md §2.1), registered at
start-up: the edit check of collisions/ (collisions/apps.py), and what approvals/ follows of
what a session waits on the owner for (approvals/apps.py, docs/rules.md §8). ingest.py calls each registered
step at its place in the one transaction, so those apps take part in the pass without
sessions_app importing them."""

from dataclasses import dataclass, field


@dataclass
class Check:
    """What a step decided of one hook event before its answer: a denial's reason, or a warning
    for the model (either may be empty), and the feed rows of what happened, for the hook to
    write."""

    deny: str = ""
    warning: str = ""
    feed: list = field(default_factory=list)

    def deny_answer(self, dialect):
        return dialect.engine.denied(dialect.name, self.deny)


NOTHING = Check()


@dataclass
class Followed:
    """What a step learned from one hook event: the feed rows of what changed, for the hook to
    write, and the hook's whole answer when the step answers it (None: the hook's own)."""

    feed: list = field(default_factory=list)
    answer: dict | None = None


NOTHING_FOLLOWED = Followed()


class Step:
    """One app's part of the hook pass; each method's default does nothing."""

    def link_updates(self, link, payload):
        """What the payload changes of the link's own fields (written with the link's update)."""
        return {}

    def session_ended(self, link, reason, now):
        """A SessionEnd: the feed rows of what ended with the session."""
        return []

    def check(self, link, dialect, payload, now, *, replay, happened_at):
        """The check of one event before it is answered (a Check), NOTHING to let it pass."""
        return NOTHING

    def follow(self, link, dialect, payload, now):
        """What the step learns from a live (not replayed) event: a Followed."""
        return NOTHING_FOLLOWED


STEPS = []


def register(step):
    """Add an app's step (from its AppConfig.ready), once."""
    if all(type(known) is not type(step) for known in STEPS):
        STEPS.append(step)


def link_updates(link, payload):
    updates = {}
    for step in STEPS:
        updates.update(step.link_updates(link, payload))
    return updates


def session_ended(link, reason, now):
    return [row for step in STEPS for row in step.session_ended(link, reason, now)]


def check(link, dialect, payload, now, **options):
    """The first step's check that does not let the event pass, else NOTHING."""
    for step in STEPS:
        found = step.check(link, dialect, payload, now, **options)
        if found is not NOTHING:
            return found
    return NOTHING


def follow(link, dialect, payload, now):
    """Every step's Followed of one event, merged: all feed rows, the first answer."""
    merged = Followed()
    for step in STEPS:
        found = step.follow(link, dialect, payload, now)
        merged.feed += found.feed
        if merged.answer is None:
            merged.answer = found.answer
    return merged
