import argparse
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.private_files import write_private
from install.inputs import check_url
from sessions_app.hooks.claude_native import SEND_TOOL
from relaybay_hook.approval import DEFAULT_APPROVAL_SECONDS, MARGIN as APPROVAL_MARGIN
from relaybay_hook.wait import DEFAULT_WAIT

HOOK_CLIENT = Path(settings.BASE_DIR) / "bin" / "relaybay-hook"
MCP_HEADERS_HELPER = Path(settings.BASE_DIR) / "bin" / "relaybay-mcp-headers"
MCP_FORWARDER = Path(settings.BASE_DIR) / "bin" / "relaybay-mcp"
# Notification: a recipient's terminal asking its user to approve a native message (docs/rules.md §4.9),
# and a session waiting at its prompt. PermissionRequest: held open while the owner decides (§8).
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Notification", "Stop", "SessionEnd")
# PreToolUse/PostToolUse match tool names. PreToolUse runs before every tool ("*"): deliveries
# reach the model there and edits are checked. PostToolUse runs only after the tool whose
# result relaybay reads, Claude Code's SendMessage (docs/rules.md §4.9): a hook process per
# tool call instead of two (docs/benchmarks.md). SessionStart and SessionEnd match the source or
# reason, where "" matches all; UserPromptSubmit and Stop take none.
MATCHERS = {"PreToolUse": "*", "PostToolUse": SEND_TOOL, "SessionStart": "", "SessionEnd": ""}
# A command hook posts with a 10 s bound of its own (then spools); Claude Code's limit
# only guards against a stuck interpreter.
COMMAND_TIMEOUT = 30
# The wake-up client stops on its own after --wait seconds; Claude Code's limit sits above it.
WAIT_MARGIN = 30
# The PermissionRequest hook waits for the owner up to RELAYBAY_APPROVAL_SECONDS (default 3600)
# and a margin of its own; Claude Code's limit sits above both (docs/rules.md §8).
APPROVAL_TIMEOUT = DEFAULT_APPROVAL_SECONDS + APPROVAL_MARGIN + WAIT_MARGIN


def handler_of(event, command):
    """The command hook of `event`: the PermissionRequest hook waits as long as the owner may."""
    return {**command, "timeout": APPROVAL_TIMEOUT} if event == "PermissionRequest" else command


def hook_python():
    """The machine's python3 (not this virtualenv's): the hook client is stdlib-only and
    starts with -S. A version-manager shim (pyenv, asdf) costs tens of milliseconds per hook
    and picks its version by folder, so it is resolved to the interpreter it runs now."""
    venv_bin = Path(sys.prefix) / "bin"
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d and Path(d) != venv_bin]
    found = shutil.which("python3", path=os.pathsep.join(path)) or "/usr/bin/python3"
    try:
        real = subprocess.run(
            [found, "-S", "-c", "import sys; print(sys.executable)"], capture_output=True, text=True, timeout=10, cwd="/"
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        real = ""
    return real if real and Path(real).is_file() else str(Path(found).resolve())


def hook_config_path(values):
    """Where hook_config_file keeps `values`, and the file's text: nothing is written."""
    text = "".join(f"{name}={value}\n" for name, value in values.items() if value not in (None, ""))
    return Path(settings.DATA_DIR) / "hook-config" / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.conf", text


def hook_config_file(values):
    """The hook client's configuration (NAME=value lines, the token among them) as a file in
    relaybay's data folder, readable by its owner only; one file per distinct configuration."""
    path, text = hook_config_path(values)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        # Renamed into place whole: a hook reading it meanwhile sees all of it or none.
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        write_private(tmp, text)
        os.replace(tmp, path)
    return path


def client_launcher(python):
    """`python3 -S .../bin/relaybay-hook`, and whether it can stand unquoted in $RELAYBAY_HOOK
    (the shell splits an unquoted variable at spaces and expands * ? [)."""
    words = [python, "-S", str(HOOK_CLIENT)]
    return shlex.join(words), all(shlex.quote(word) == word for word in words)


def group(event, handlers):
    if event in MATCHERS:
        return [{"matcher": MATCHERS[event], "hooks": handlers}]
    return [{"hooks": handlers}]


def hook_settings(*, url, token, session=None, wait=DEFAULT_WAIT, wait_unattended=False, spool=None, python=None):
    """The Claude Code settings object that connects every session started with it.

    Claude Code shows the model the command line of a wake-up hook that woke it, so the
    commands hold no configuration: the settings' `env` names the client ($RELAYBAY_HOOK) and
    its configuration file (RELAYBAY_HOOK_CONFIG), which holds the address, token and options.
    """
    launcher, splittable = client_launcher(python or hook_python())
    config = hook_config_file(
        {
            "RELAYBAY_URL": url,
            "RELAYBAY_TOKEN": token,
            "RELAYBAY_SESSION": session,
            "RELAYBAY_SPOOL": spool,
            "RELAYBAY_WAIT": wait,
            "RELAYBAY_WAIT_UNATTENDED": "1" if wait_unattended else None,
        }
    )
    # A path with spaces cannot be split back out of the variable: then the commands name it.
    client = "$RELAYBAY_HOOK" if splittable else launcher
    command = {"type": "command", "command": client, "timeout": COMMAND_TIMEOUT}
    wake_up = {"type": "command", "command": f"{client} wait", "asyncRewake": True, "timeout": wait + WAIT_MARGIN}
    hooks = {}
    for event in EVENTS:
        # Command hooks only: a hook speaks for a running session with its process's proof
        # (docs/rules.md §1.5), and Claude Code interpolates no CLAUDE_CODE_MESSAGING_TOKEN into
        # an http hook's headers (it is on its list of credentials), so an http hook cannot.
        handler = handler_of(event, command)
        hooks[event] = group(event, [handler, wake_up] if event == "Stop" else [handler])
    return {"env": {"RELAYBAY_HOOK": launcher, "RELAYBAY_HOOK_CONFIG": str(config)}, "hooks": hooks}


def mcp_config(*, url, token, stdio=True, python=None):
    """The `--mcp-config` object for relaybay's MCP server (docs/mcp.md).

    By default a small local process per session (bin/relaybay-mcp, stdlib only, run by the
    machine's python3 -S) that forwards the session's MCP messages to relaybay's /mcp with the
    proof of its claude process. It outlives a relaybay restart: Claude Code drops an http MCP
    server that went away and offers its tools again only after /mcp → Reconnect. Without
    `stdio`, relaybay's own http server at /mcp (no process per session), whose headersHelper
    sends the proof once per connection.
    """
    python = python or hook_python()
    if stdio:
        return {"mcpServers": {"relaybay": local_mcp_server(url=url, token=token, python=python)}}
    return {
        "mcpServers": {
            "relaybay": {
                "type": "http",
                "url": f"{url.rstrip('/')}/mcp",
                "headers": {"Authorization": f"Bearer {token}"},
                "headersHelper": shlex.join([python, "-S", str(MCP_HEADERS_HELPER)]),
            }
        }
    }


def local_mcp_server(*, url, token, python):
    """The stdio entry that starts bin/relaybay-mcp for a session: a few MB, no Django, no SDK."""
    return {
        "type": "stdio",
        "command": python,
        "args": ["-S", str(MCP_FORWARDER)],
        "env": {"RELAYBAY_URL": url.rstrip("/"), "RELAYBAY_TOKEN": token},
    }


def mcp_add_line(server):
    """The `claude mcp add-json` line that registers `server` (one mcpServers entry) for every project."""
    return shlex.join(["claude", "mcp", "add-json", "relaybay", json.dumps(server), "--scope", "user"])


def write_private_config(path, config):
    """Write the config (it holds the token) readable by its owner only."""
    path = Path(path).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_private(path, json.dumps(config, indent=2) + "\n")


def connect_line(path):
    return shlex.join(["claude", "--settings", str(path), "--mcp-config", str(path)])


def positive_seconds(value):
    try:
        seconds = int(value)
    except ValueError:
        seconds = 0
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive whole number of seconds")
    return seconds


class Command(BaseCommand):
    help = (
        "Print Claude Code configuration for relaybay. By default: a settings file for "
        "`claude --settings FILE` with command hooks for SessionStart, UserPromptSubmit, PreToolUse, "
        "PostToolUse, Notification, Stop and SessionEnd (the stdlib-only hook client, run by the machine's python3 -S), "
        "plus the wake-up hook on Stop (asyncRewake), which wakes an idle interactive session when mail arrives. "
        "The settings' `env` names the client ($RELAYBAY_HOOK) and its configuration file in relaybay's data "
        "folder (RELAYBAY_HOOK_CONFIG: address, token, options; 0600), so the command lines hold no configuration. "
        "The same file also holds the `mcpServers` entry for relaybay's MCP server: Claude Code "
        "reads hooks from `--settings FILE` and MCP servers from `--mcp-config FILE`, so pass the one file "
        "to both. The MCP server is bin/relaybay-mcp, a small local process per session (stdlib only) that forwards "
        "its MCP messages to relaybay's /mcp with the proof of the claude process and keeps the tools through a "
        "relaybay restart; --mcp-http connects relaybay's own http "
        "server at /mcp instead (no process per session). With --mcp: only the MCP "
        "server's entry (and the `claude mcp add-json` line on stderr). "
        "The output holds the relaybay token: keep the file private."
    )

    # stdout is the configuration; nothing else belongs there.
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument("--mcp", action="store_true", help="Print the --mcp-config JSON for the MCP server alone.")
        parser.add_argument(
            "--mcp-http",
            action="store_true",
            help="Connect relaybay's http MCP server at /mcp (no process per session; after a relaybay restart each "
            "running session needs /mcp → Reconnect) instead of bin/relaybay-mcp (a small process per session, "
            "which keeps the tools through a restart).",
        )
        parser.add_argument(
            "--session",
            metavar="NAME",
            help="Name the sessions started with this file (RELAYBAY_SESSION): their link is exact from the start.",
        )
        parser.add_argument(
            "--wait",
            metavar="SECONDS",
            type=positive_seconds,
            default=DEFAULT_WAIT,
            help=f"How long the wake-up hook waits for mail after each turn (default {DEFAULT_WAIT}), "
            "in interactive sessions (and with --wait-unattended).",
        )
        parser.add_argument(
            "--wait-unattended",
            action="store_true",
            help="Let the wake-up hook wait in unattended sessions (`claude -p`) too: for headless workers "
            "that should wait for mail. `claude -p` does not exit before the wait ends. Without it the "
            "wake-up hook of an unattended session returns at once (RELAYBAY_WAIT_UNATTENDED=1 in the "
            "session's environment asks the same).",
        )
        parser.add_argument("--url", help=f"relaybay's address as the hooks reach it (default {settings.RELAYBAY_URL}).")
        parser.add_argument(
            "--spool",
            metavar="PATH",
            help="Where the hook client keeps events while relaybay is down (default ~/.relaybay/spool.jsonl).",
        )
        parser.add_argument(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the configuration to FILE, readable by you only (e.g. data/my-agent.json: git ignores data/), "
            "instead of printing it, and print the `claude` command that uses it.",
        )

    def handle(self, *args, **options):
        url = check_url((options["url"] or settings.RELAYBAY_URL).rstrip("/"))
        token = settings.RELAYBAY_TOKEN
        python = hook_python()
        mcp = mcp_config(url=url, token=token, stdio=not options["mcp_http"], python=python)
        if options["mcp"]:
            config = mcp
            self.stderr.write(
                "Pass this file to `claude --mcp-config FILE`, or register the server once for all your projects with:\n  "
                + mcp_add_line(mcp["mcpServers"]["relaybay"])
            )
        else:
            if options["session"] is not None and ("\n" in options["session"] or not options["session"].strip()):
                raise CommandError("--session takes one line: the session's title.")
            if options["spool"] is not None and any(ord(ch) < 32 for ch in options["spool"]):
                raise CommandError("--spool takes one line: a path without line breaks or control characters.")
            spool = str(Path(options["spool"]).expanduser().resolve()) if options["spool"] else None
            config = hook_settings(
                url=url,
                token=token,
                session=options["session"],
                wait=options["wait"],
                wait_unattended=options["wait_unattended"],
                spool=spool,
                python=python,
            )
            config.update(mcp)
        if options["output"]:
            path = write_private_config(options["output"], config)
            self.stdout.write(f"Wrote {path} (it holds the token; readable by you only). Start Claude Code with it:\n  {connect_line(path)}")
            return
        if not options["mcp"]:
            self.stderr.write(
                "Save this as a private file and start Claude Code with it for both hooks and MCP:\n"
                "  claude --settings FILE --mcp-config FILE   (or write it with --output FILE)"
            )
        self.stdout.write(json.dumps(config, indent=2))
