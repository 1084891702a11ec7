import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from install.connectors import ConnectError, Target, engine, names
from install.inputs import check_url
from relaybay_hook.conn import NotRelaybay, Unreachable, http_request

# Long enough for a relaybay busy migrating or under load; a person waits on it.
REACH_TIMEOUT = 10


def reach_relaybay(url, token):
    """Make sure relaybay answers at `url` and takes the agents' token, before anything is
    written: a CLI connected to an address where nothing answers spools every event. The hook
    client's own exchange: nothing is sent to a listener of another account (relaybay_hook/peer.py)."""
    try:
        status, body = http_request("GET", "/api/message_limits", None, (), REACH_TIMEOUT, url=url, token=token)
    except NotRelaybay as refusal:
        raise CommandError(
            f"relaybay is not what answers at {url}: {refusal}. Nothing was sent to it, and nothing was changed. "
            "Start relaybay (`make run`), or pass the address it serves at with --url."
        ) from None
    except Unreachable as error:
        raise CommandError(
            f"relaybay is not answering at {url} ({error}). Start it with `make run` (it records its address in "
            f"{settings.RELAYBAY_ADDRESS_FILE}), or pass the address it serves at with --url. Nothing was changed."
        ) from None
    if status in (401, 403):
        raise CommandError(
            f"relaybay at {url} refuses the agents' token of this checkout ({settings.DATA_DIR / 'token'} or "
            "RELAYBAY_TOKEN): is it another relaybay? Pass its address with --url, or run this in its checkout."
        )
    if status != 200:
        raise CommandError(f"relaybay at {url} answered {status}: is relaybay running there? Start it with `make run`.")
    try:
        json.loads(body or b"")
    except ValueError:
        raise CommandError(f"what answers at {url} is not relaybay (its answer is not JSON). Pass relaybay's address with --url.") from None


class ConnectCommand(BaseCommand):
    """`connect` and `disconnect` take the same arguments and differ in the step they run."""

    step = "connect"

    def add_arguments(self, parser):
        parser.add_argument("engine", choices=names(), help="The coding-agent CLI.")
        parser.add_argument("--cli", metavar="PATH", help="The CLI's executable (default: the one on PATH).")
        parser.add_argument("--dry-run", action="store_true", help="Print the commands and changes; change nothing.")
        parser.add_argument("--url", help=f"relaybay's address as sessions reach it (default {settings.RELAYBAY_URL}).")

    def target(self, options):
        return Target(
            url=check_url((options["url"] or settings.RELAYBAY_URL).rstrip("/")),
            token=settings.RELAYBAY_TOKEN,
            home=Path.home(),
            cli=options["cli"],
            dry_run=options["dry_run"],
            say=self.stdout.write,
        )

    def handle(self, *args, **options):
        target = self.target(options)
        if self.step == "connect":
            reach_relaybay(target.url, target.token)
        try:
            getattr(engine(options["engine"]), self.step)(target)
        except ConnectError as error:
            raise CommandError(str(error)) from None


class Command(ConnectCommand):
    help = (
        "Connect every session of a coding-agent CLI to this relaybay, for the person running it. "
        "`connect claude` installs the relaybay plugin (integrations/claude-code/) with Claude Code's own "
        "`claude plugin` commands, configured with relaybay's address and the agents' token; run it again after "
        "a new port, a rotated token or a `git pull` that brings a new plugin version. Undo with `disconnect`."
    )
