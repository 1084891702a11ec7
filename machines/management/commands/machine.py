"""`python manage.py machine add NAME [--json] | revoke NAME | list [--json]`."""

import json

from django.core.management.base import BaseCommand, CommandError

from core.errors import RelaybayError
from machines.actions import do_add_machine, do_revoke_machine
from machines.models import Machine


def _when(moment):
    return moment.isoformat() if moment else None


class Command(BaseCommand):
    help = (
        "Add a machine (another host or a container) whose sessions meet on this board: its own token, "
        "an agents' credential for that machine's sessions only, printed once with what to run there. "
        "Revoke it: its token is refused from the next request on. List them."
    )
    requires_system_checks = []

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True)
        add = verbs.add_parser("add", help="Add a machine and print its token once.")
        add.add_argument("name")
        add.add_argument("--json", action="store_true")
        revoke = verbs.add_parser("revoke", help="Refuse the machine's token from now on.")
        revoke.add_argument("name")
        listing = verbs.add_parser("list", help="Every machine, revoked ones too.")
        listing.add_argument("--json", action="store_true")

    def handle(self, *args, verb, **options):
        try:
            if verb == "add":
                added = do_add_machine(name=options["name"])
                out = {"name": added.machine.name, "token": added.token, "command": added.command}
                if options["json"]:
                    self.stdout.write(json.dumps(out))
                else:
                    self.stdout.write(f"machine {out['name']}\ntoken (shown once): {out['token']}\non that machine: {out['command']}")
            elif verb == "revoke":
                machine = do_revoke_machine(name=options["name"])
                self.stdout.write(f"machine {machine.name}: revoked; its token is refused from now on.")
            else:
                rows = [
                    {"name": m.name, "created_at": _when(m.created_at), "last_heard_at": _when(m.last_heard_at), "revoked_at": _when(m.revoked_at)}
                    for m in Machine.objects.all()
                ]
                if options["json"]:
                    self.stdout.write(json.dumps(rows))
                else:
                    for row in rows:
                        state = f"revoked {row['revoked_at']}" if row["revoked_at"] else f"last heard {row['last_heard_at'] or 'never'}"
                        self.stdout.write(f"{row['name']}\t{state}")
        except RelaybayError as error:
            raise CommandError(str(error)) from None
