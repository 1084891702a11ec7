"""relaybay on this machine, at a glance: which CLIs are connected and how, how many sessions
are live, and what the hook clients keep spooled here while relaybay cannot be reached. Read by
`manage.py status` and the board's footer; nothing is run and nothing is written.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError
from django.db.models import Count

import engines
from sessions_app.models import Session

DEFAULT_SPOOL = Path("~/.relaybay/spool.jsonl")


@dataclass
class Spooled:
    path: Path
    events: int  # waiting to be replayed
    oldest: str | None  # when the first waiting one was spooled (UTC, ISO)
    set_aside: int  # refused or failing, in <spool>.rejected


@dataclass
class Machine:
    connections: list = field(default_factory=list)
    live: dict | None = None  # engine → live sessions; None when the database cannot be read
    spooled: list = field(default_factory=list)

    @property
    def live_total(self):
        return sum(self.live.values()) if self.live is not None else None

    @property
    def spooled_events(self):
        return sum(s.events for s in self.spooled)


def spool_paths(home):
    """The default spool and every spool a hook configuration in the data folder names."""
    paths = [Path(str(DEFAULT_SPOOL).replace("~", str(home), 1))]
    for config in sorted((Path(settings.DATA_DIR) / "hook-config").glob("*.conf")):
        try:
            lines = config.read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            name, _, value = line.partition("=")
            if name.strip() == "RELAYBAY_SPOOL" and value.strip():
                paths.append(Path(value.strip().replace("~", str(home), 1)))
    return list(dict.fromkeys(paths))


def _lines(path):
    try:
        with open(path, "rb") as f:
            return [line for line in f.read().splitlines() if line.strip()]
    except OSError:
        return []


def spooled(path):
    """What one spool file keeps, or None when it keeps nothing."""
    waiting, set_aside = _lines(path), _lines(f"{path}.rejected")
    if not waiting and not set_aside:
        return None
    oldest = None
    if waiting:
        try:
            oldest = json.loads(waiting[0]).get("spooled_at")
        except (ValueError, AttributeError):
            oldest = None
    return Spooled(path, len(waiting), oldest, len(set_aside))


def live_sessions():
    """Live sessions by engine, or None when the database cannot be read."""
    try:
        rows = Session.objects.live().values("engine").annotate(n=Count("id")).order_by("engine")
        return {row["engine"]: row["n"] for row in rows}
    except DatabaseError:
        return None


def machine(home=None):
    home = Path(home or Path.home())
    kept = [s for s in (spooled(path) for path in spool_paths(home)) if s is not None]
    connected = [c for c in (engine.connection(home) for engine in engines.ENGINES) if c is not None]
    return Machine(connected, live_sessions(), kept)
