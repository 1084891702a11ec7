import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Make sure an owner account exists and say how to log in and connect Claude Code."

    def add_arguments(self, parser):
        parser.add_argument("--username", default="owner")

    def handle(self, *args, **options):
        User = get_user_model()
        username = options["username"]
        password_file = settings.DATA_DIR / "owner-password"
        if not User.objects.filter(is_staff=True).exists():
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser(username=username, password=password, email="")
            password_file.write_text(password + "\n")
            password_file.chmod(0o600)
        board = f"http://{settings.RELAYBAY_HOST}:{settings.RELAYBAY_PORT}/"
        owner = User.objects.filter(is_staff=True).order_by("id").first()
        if password_file.exists():
            login = f"user {owner.username!r}, password {password_file.read_text().strip()!r} (kept in {password_file})"
        else:
            login = f"user {owner.username!r} with the password you set (change it: python manage.py changepassword {owner.username})"
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"relaybay board: {board}",
                    f"Log in as {login}.",
                    f"API token: kept in {settings.DATA_DIR / 'token'} (or set RELAYBAY_TOKEN).",
                    "Connect Claude Code (one session named my-agent; see README):",
                    f"  .venv/bin/python manage.py claude_config --url {settings.RELAYBAY_URL} --session my-agent > relaybay.json",
                    "  claude --settings relaybay.json --mcp-config relaybay.json",
                    "",
                ]
            )
        )
