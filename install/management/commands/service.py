import socket
import subprocess

from django.core.management.base import BaseCommand, CommandError

from core.private_files import write_private
from install import service as login_service
from sessions_app.management.commands.setup_owner import client_address

MANAGER_TIMEOUT = 60


class Command(BaseCommand):
    help = (
        "relaybay as a login service. `install` writes a systemd user unit (Linux: "
        "~/.config/systemd/user/relaybay.service) or a LaunchAgent (macOS: ~/Library/LaunchAgents/local.relaybay.plist) "
        "that starts relaybay as `make run` serves it (migrations first), restarts it if it stops, and writes its "
        "output to one log file; then has the service manager start it. `uninstall` stops it and removes the file, "
        "`restart` restarts it (after a `git pull`), `status` says what is installed and whether it runs."
    )

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["install", "uninstall", "restart", "status"])
        parser.add_argument("--host", help="The address to serve at (default RELAYBAY_HOST, else the one `make run` recorded in data/address, else 127.0.0.1).")
        parser.add_argument("--port", type=int, help="The port (default RELAYBAY_PORT, else the one `make run` recorded in data/address, else 8000).")
        parser.add_argument(
            "--platform", choices=sorted(login_service.PLATFORMS), help="Write the other system's file (default: this system's)."
        )
        parser.add_argument("--print", "--dry-run", dest="print", action="store_true", help="Print the file `install` would write, and nothing else.")

    def handle(self, *args, action, host=None, port=None, platform=None, print=False, **options):
        from pathlib import Path

        relaybay = login_service.this_relaybay(host, port)
        target = login_service.PLATFORMS[platform or login_service.this_platform()](relaybay, Path.home())
        if print:
            self.stdout.write(target.text, ending="")
            return
        getattr(self, action.replace("-", "_"))(relaybay, target)

    def install(self, relaybay, target):
        url = client_address(relaybay.host, relaybay.port)
        target.path.parent.mkdir(parents=True, exist_ok=True)
        target.log.parent.mkdir(parents=True, exist_ok=True)
        # 0600: DATABASE_URL, when set, may hold a password.
        write_private(target.path, target.text)
        self.stdout.write(f"Wrote {target.path}: relaybay from {relaybay.checkout}, at {url}, its output in {target.log}.")
        if answers(relaybay.host, relaybay.port):
            self.stdout.write(f"relaybay answers at {url} already (`make run`?): stop it, so that the service can take the port.")
        self.run_manager(target, "install")
        self.stdout.write(
            f"relaybay starts at your login and again whenever it stops. After a `git pull`: "
            f".venv/bin/python manage.py service restart. Undo: .venv/bin/python manage.py service uninstall"
        )
        if target.name == "linux":
            self.stdout.write(f"To start it at boot, before you log in: loginctl enable-linger {user()}")

    def uninstall(self, relaybay, target):
        if not target.path.exists():
            self.stdout.write(f"relaybay is not installed as a service ({target.path} does not exist).")
            return
        for command in login_service.manager_commands(target, "uninstall"):
            said = manager(command)
            if said:
                self.stdout.write(f"`{' '.join(command)}` did not run ({said}); removing the file anyway.")
        target.path.unlink()
        for command in login_service.manager_commands(target, "after-uninstall"):
            manager(command)
        self.stdout.write(f"Removed {target.path}: relaybay no longer starts at login. Its data and log ({target.log}) stay.")

    def restart(self, relaybay, target):
        if not target.path.exists():
            raise CommandError(f"relaybay is not installed as a service ({target.path} does not exist): run `manage.py service install`.")
        self.run_manager(target, "restart")
        self.stdout.write("relaybay restarted: migrations ran first; running sessions keep their hooks, wake-ups and tools.")

    def status(self, relaybay, target):
        if not target.path.exists():
            self.stdout.write(f"Not installed as a service ({target.path} does not exist): `manage.py service install` adds it.")
            return
        self.stdout.write(f"Installed: {target.path}")
        for command in login_service.manager_commands(target, "status"):
            said = manager(command, capture=True)
            self.stdout.write(f"  {' '.join(command)}: {said}")
        self.stdout.write(f"Log: {target.log}")

    def run_manager(self, target, action):
        for command in login_service.manager_commands(target, action):
            said = manager(command)
            if said:
                raise CommandError(
                    f"`{' '.join(command)}` failed: {said}\n{no_manager_hint(target)}"
                )


def manager(command, capture=False):
    """Run one service-manager command: '' when it succeeded (or its output, with `capture`), else what went wrong."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=MANAGER_TIMEOUT)
    except FileNotFoundError:
        return f"{command[0]} is not installed"
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    said = (done.stdout.strip() or done.stderr.strip()).splitlines()
    if capture:
        return said[0] if said else f"exit {done.returncode}"
    if done.returncode == 0:
        return ""
    return (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}")[-400:]


def no_manager_hint(target):
    if target.name == "linux":
        return (
            f"The unit is written ({target.path}), but no systemd user manager answered: systemd does not run for your "
            "user here (a container, or a system without systemd). Start relaybay with `make run`; where systemd runs, "
            "`systemctl --user enable --now relaybay.service` starts the service."
        )
    return f"The LaunchAgent is written ({target.path}); `launchctl bootstrap gui/$(id -u) {target.path}` starts it."


def answers(host, port):
    try:
        with socket.create_connection(("127.0.0.1" if host in ("0.0.0.0", "") else host, port), timeout=0.5):
            return True
    except OSError:
        return False


def user():
    import getpass

    return getpass.getuser()
