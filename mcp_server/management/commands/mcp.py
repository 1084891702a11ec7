from django.conf import settings
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Run relaybay's MCP server over stdio (message_send, message_broadcast, messages_list, message_ack, session_link, "
        "sessions_list). It talks to relaybay's JSON API at RELAYBAY_URL with RELAYBAY_TOKEN, both taken "
        "from relaybay's settings. relaybay serves the same tools over http at /mcp itself; "
        "`python manage.py claude_config --mcp --mcp-stdio` prints the Claude Code entry for this one."
    )
    # stdout carries the MCP protocol: nothing else may be written there, and the server must
    # start quickly, so no system checks.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--url", help=f"relaybay's address (default {settings.RELAYBAY_URL})")

    def handle(self, *args, url=None, **options):
        from mcp_server.stdio import serve

        serve(url=url or settings.RELAYBAY_URL, token=settings.RELAYBAY_TOKEN)
