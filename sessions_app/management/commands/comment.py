from django.core.management.base import BaseCommand, CommandError

from core import pings
from core.errors import RelaybayError
from sessions_app import directory
from sessions_app.actions import do_write_comment
from sessions_app.directory import resolve_one
from sessions_app.directory import Arrival


class Command(BaseCommand):
    help = "Write an owner comment to a session, by any name it goes by (title, alias, desktop id, S-<id>, hook id)."

    def add_arguments(self, parser):
        parser.add_argument("session", help="A name the session goes by")
        parser.add_argument("text", nargs="+", help="The comment text")

    def handle(self, *args, **options):
        failures = []

        def send(group, message):
            # This process is not the server: its pings and wakes go through relay_to_server.
            try:
                pings.relay_to_server(group, message)
            except pings.RelayFailed as error:
                failures.append(str(error))

        try:
            session = resolve_one(options["session"])
            result = do_write_comment(session=session, body=" ".join(options["text"]), send=send)
        except RelaybayError as error:
            raise CommandError(error.message)
        when = directory.comment_arrival(session)
        if failures and directory.arrival(session) in (Arrival.WAKING, Arrival.CAPPED):
            when = "its wake-up hook could not be told, so it sees this at its next prompt."
        self.stdout.write(f"Comment C-{result.comment.pk} written to {session.handle} ({session.name}): {when}")
        if failures:
            self.stderr.write(
                f"The live update and wake-up failed ({failures[0]}): open boards show the comment when "
                "they next refresh, and an idle session is not woken for it. Is relaybay running there? "
                "(make run records its address in data/address; RELAYBAY_URL overrides it.)"
            )
