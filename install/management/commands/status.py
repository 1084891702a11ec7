import json
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from board.machine import machine
from install import service as login_service
from install.connectors import names as connect_names

PROBE_TIMEOUT = 3


def probe(url, token):
    """(up, what relaybay said): one call of the agents' API with the data folder's token."""
    request = urllib.request.Request(f"{url}/api/message_limits", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT) as answer:
            return True, f"up at {url}"
    except urllib.error.HTTPError as error:
        if error.code in (401, 403):
            return True, f"up at {url}, but it refuses this data folder's token ({settings.DATA_DIR}): another relaybay answers there"
        return False, f"answering at {url} with {error.code}"
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        return False, f"down: nothing answers at {url} ({reason}). Start it with `make run`, or `manage.py service install`"


class Command(BaseCommand):
    help = (
        "relaybay at a glance: whether it is up and where, whether it runs as a login service, which agent "
        "CLIs on this machine are connected and how (plugin version, files), how many sessions are live, and "
        "what the hook clients keep spooled here while relaybay cannot be reached. Exit 0 when it is up, 1 when not."
    )

    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--url", help=f"relaybay's address (default {settings.RELAYBAY_URL}).")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the same as one JSON object.")

    def handle(self, *args, url=None, as_json=False, **options):
        url = (url or settings.RELAYBAY_URL).rstrip("/")
        up, said = probe(url, settings.RELAYBAY_TOKEN)
        home = Path.home()
        unit = login_service.PLATFORMS[login_service.this_platform()](login_service.this_relaybay(), home)
        here = machine(home)
        if as_json:
            self.stdout.write(json_text(url, up, said, unit, here))
        else:
            self.stdout.write(as_text(up, said, unit, here))
        if not up:
            raise SystemExit(1)


def as_text(up, said, unit, here):
    lines = [f"relaybay: {said}"]
    lines.append(f"Login service: {unit.path}" if unit.path.exists() else "Login service: not installed (`manage.py service install`)")
    if here.live is None:
        lines.append("Live sessions: unknown (the database cannot be read)")
    else:
        by_engine = ", ".join(f"{n} {engine}" for engine, n in here.live.items())
        lines.append(f"Live sessions: {here.live_total}" + (f" ({by_engine})" if by_engine else ""))
    lines.append("Connected on this machine:" if here.connections else f"Connected on this machine: no CLI (`manage.py connect {'|'.join(connect_names())}`)")
    lines += [f"  {connection}" for connection in here.connections]
    if here.spooled:
        lines.append(f"Spooled here, waiting for relaybay: {here.spooled_events} events")
        for kept in here.spooled:
            since = f", the oldest from {kept.oldest}" if kept.oldest else ""
            aside = f"; {kept.set_aside} set aside in {kept.path}.rejected" if kept.set_aside else ""
            lines.append(f"  {kept.path}: {kept.events} events{since}{aside}")
    else:
        lines.append("Spooled here, waiting for relaybay: nothing")
    return "\n".join(lines)


def json_text(url, up, said, unit, here):
    return json.dumps(
        {
            "url": url,
            "up": up,
            "said": said,
            "service": str(unit.path) if unit.path.exists() else None,
            "live_sessions": here.live,
            "connected": [{"cli": c.cli, "how": c.how, "paths": [str(p) for p in c.paths]} for c in here.connections],
            "spooled": [{"path": str(s.path), "events": s.events, "oldest": s.oldest, "set_aside": s.set_aside} for s in here.spooled],
        },
        indent=2,
    )
