import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from core.private_files import write_private

# What make run prints to connect every Claude Code session (README, "Connect Claude Code").
CONNECT_LINE = ".venv/bin/python manage.py connect claude"


def client_address(host, port):
    """The address commands and hooks use to reach a server bound to `host`:`port`."""
    if host in ("0.0.0.0", ""):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


class Command(BaseCommand):
    help = (
        "Run by `make run` before it serves: make sure an owner account exists, record the address relaybay "
        "serves at (data/address, used by every command when RELAYBAY_URL is not set), and say how to log in "
        "and connect Claude Code. "
        "The agents' token (data/token) and the owner token (data/owner-token) are made with the settings when missing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", default="owner")

    def handle(self, *args, **options):
        User = get_user_model()
        username = options["username"]
        password_file = settings.DATA_DIR / "owner-password"
        created = None
        if not User.objects.filter(is_staff=True).exists():
            created = secrets.token_urlsafe(12)
            User.objects.create_superuser(username=username, password=created, email="")
            write_private(password_file, created + "\n")
        owner = User.objects.filter(is_staff=True).order_by("id").first()
        reset = f".venv/bin/python manage.py changepassword {owner.username}"
        if created:
            login = f"user {owner.username!r}, password {created!r} (shown once; kept in {password_file})"
        elif password_file.exists():
            login = f"user {owner.username!r}; the password is kept in {password_file} (change it: {reset})"
        else:
            login = f"user {owner.username!r} with the password you set (change it: {reset})"

        address = client_address(settings.RELAYBAY_HOST, settings.RELAYBAY_PORT)
        write_private(settings.RELAYBAY_ADDRESS_FILE, address + "\n")
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"relaybay board: {address}/   (address recorded in {settings.RELAYBAY_ADDRESS_FILE} for the commands)",
                    f"Log in as {login}.",
                    f"The agents' token, for hooks and MCP: kept in {settings.DATA_DIR / 'token'} (or set RELAYBAY_TOKEN).",
                    f"The owner token, for your scripts and manage.py commands (never give it to a session): kept in "
                    f"{settings.DATA_DIR / 'owner-token'} (or set RELAYBAY_OWNER_TOKEN).",
                    "Connect every Claude Code session (once, in another terminal while relaybay runs; again after a new port):",
                    f"  {CONNECT_LINE}",
                    "One session or a headless worker with a config of its own (see README):",
                    f"  .venv/bin/python manage.py claude_config --session my-agent --output {settings.DATA_DIR / 'my-agent.json'}",
                    "",
                ]
            )
        )
