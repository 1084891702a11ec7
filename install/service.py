"""relaybay as a login service: a systemd user unit on Linux, a LaunchAgent on macOS.

The service starts relaybay as `make run` serves it — migrations first, then `setup_owner`,
then daphne (relaybay.serve) on the same address — from this checkout and its virtualenv,
restarts it whenever it stops without being told to, and writes its output to one log file the
person can open (`service status` names it). The data folder, and the database and Redis
addresses when they are set, are written into the unit as they are when it is installed, so
the service serves the relaybay `make run` would. The files hold no token.
"""

import os
import plistlib
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

UNIT_NAME = "relaybay.service"
LAUNCH_LABEL = "local.relaybay"
# What the service takes from the environment it is installed from, when set.
CARRIED = ("DATABASE_URL", "REDIS_URL")
# Seconds before a stopped relaybay is started again.
RESTART_SECONDS = 2


@dataclass
class Service:
    """How relaybay is started: the commands `make run` runs, in order, and their environment."""

    checkout: Path
    python: str
    host: str
    port: int
    data: Path
    env: dict = field(default_factory=dict)

    @property
    def migrate(self):
        return [self.python, "manage.py", "migrate", "--noinput", "-v", "0"]

    @property
    def setup_owner(self):
        return [self.python, "manage.py", "setup_owner"]

    @property
    def serve(self):
        return [self.python, "-m", "relaybay.serve", "-b", self.host, "-p", str(self.port), "relaybay.asgi:application"]

    def environment(self):
        return {"RELAYBAY_HOST": self.host, "RELAYBAY_PORT": str(self.port), "RELAYBAY_DATA": str(self.data),
                "PYTHONUNBUFFERED": "1", **self.env}  # fmt: skip


def this_relaybay(host=None, port=None):
    """The relaybay `make run` serves from this checkout, with this virtualenv's python: at the
    address given, else RELAYBAY_HOST/RELAYBAY_PORT, else the one `make run` recorded in
    data/address (where every connected CLI reaches it), else 127.0.0.1:8000."""
    recorded = recorded_address()
    host = host or os.environ.get("RELAYBAY_HOST") or recorded[0] or "127.0.0.1"
    port = int(port or os.environ.get("RELAYBAY_PORT") or recorded[1] or 8000)
    carried = {name: os.environ[name] for name in CARRIED if os.environ.get(name)}
    # The virtualenv's own python (not the interpreter it links to): it finds the venv's packages.
    python = str(Path(sys.prefix) / "bin" / "python")
    return Service(Path(settings.BASE_DIR), python, host, port, Path(settings.DATA_DIR).resolve(), carried)


def recorded_address():
    """(host, port) of data/address, as the server was asked to bind them; (None, None) when
    there is none or it is not an http address."""
    try:
        parts = urlsplit(Path(settings.RELAYBAY_ADDRESS_FILE).read_text().strip())
        port = parts.port
    except (OSError, ValueError):
        return None, None
    if parts.scheme != "http" or not parts.hostname or not port:
        return None, None
    return parts.hostname, port


@dataclass
class Platform:
    name: str  # linux or macos
    path: Path  # where the unit or plist goes
    log: Path  # where relaybay's output goes
    text: str  # the file


def linux(service, home):
    folder = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "systemd" / "user"
    log = service.data / "logs" / "relaybay.log"
    return Platform("linux", folder / UNIT_NAME, log, systemd_unit(service, log))


def macos(service, home):
    log = home / "Library" / "Logs" / "relaybay" / "relaybay.log"
    return Platform("macos", home / "Library" / "LaunchAgents" / f"{LAUNCH_LABEL}.plist", log, launch_agent(service, log))


PLATFORMS = {"linux": linux, "macos": macos}


def this_platform():
    return "macos" if sys.platform == "darwin" else "linux"


def systemd_unit(service, log):
    def line(args):
        return " ".join(systemd_word(arg) for arg in args)

    environment = "\n".join(f"Environment={systemd_word(f'{name}={value}')}" for name, value in service.environment().items())
    return f"""[Unit]
Description=relaybay: the board, API and MCP server of your coding-agent sessions
Documentation=file://{systemd_escape(str(service.checkout / "README.md"))}
After=network.target

[Service]
Type=simple
WorkingDirectory={systemd_word(str(service.checkout))}
{environment}
ExecStartPre={line(service.migrate)}
ExecStartPre={line(service.setup_owner)}
ExecStart={line(service.serve)}
Restart=always
RestartSec={RESTART_SECONDS}
StandardOutput=append:{systemd_escape(str(log))}
StandardError=append:{systemd_escape(str(log))}

[Install]
WantedBy=default.target
"""


def systemd_escape(text):
    """systemd expands % specifiers and $ variables in these settings: write them literally."""
    return text.replace("%", "%%").replace("$", "$$")


def systemd_word(arg):
    """One word of a systemd command line or Environment= setting, quoted when it needs it."""
    text = systemd_escape(arg)
    if text and not any(c in text for c in ' \t"\'\\;'):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def launch_agent(service, log):
    # launchd runs one program: the three steps of `make run` chained by a shell, relaybay exec'd last.
    chain = " && ".join(shlex.join(step) for step in (service.migrate, service.setup_owner)) + " && exec " + shlex.join(service.serve)
    plist = {
        "Label": LAUNCH_LABEL,
        "ProgramArguments": ["/bin/sh", "-c", chain],
        "WorkingDirectory": str(service.checkout),
        "EnvironmentVariables": service.environment(),
        "RunAtLoad": True,
        "KeepAlive": True,
        "ThrottleInterval": RESTART_SECONDS * 5,
        "StandardOutPath": str(log),
        "StandardErrorPath": str(log),
    }
    return plistlib.dumps(plist).decode()


def manager_commands(platform, action):
    """The service manager's commands for `action` (install, uninstall, restart, status)."""
    if platform.name == "linux":
        return {
            "install": [["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT_NAME]],
            "uninstall": [["systemctl", "--user", "disable", "--now", UNIT_NAME]],
            "after-uninstall": [["systemctl", "--user", "daemon-reload"]],
            "restart": [["systemctl", "--user", "restart", UNIT_NAME]],
            "status": [["systemctl", "--user", "is-active", UNIT_NAME]],
        }[action]
    domain = f"gui/{os.getuid()}"
    return {
        "install": [["launchctl", "bootstrap", domain, str(platform.path)]],
        "uninstall": [["launchctl", "bootout", f"{domain}/{LAUNCH_LABEL}"]],
        "after-uninstall": [],
        "restart": [["launchctl", "kickstart", "-k", f"{domain}/{LAUNCH_LABEL}"]],
        "status": [["launchctl", "print", f"{domain}/{LAUNCH_LABEL}"]],
    }[action]
