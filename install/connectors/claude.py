"""relaybay as a Claude Code plugin, installed for the person with Claude Code's own CLI.

The plugin lives in the repository as a local marketplace (integrations/claude-code/): its
hooks run the checkout's stdlib hook client and its MCP server is the checkout's stdio server.
Claude Code runs a directory marketplace's plugin from its live folder, so `git pull` changes
what every session runs; a new plugin version is taken by `connect claude` again (or
`claude plugin update`). relaybay's address and token are the plugin's userConfig: Claude Code
keeps the address in ~/.claude/settings.json and the token, marked sensitive, in
~/.claude/.credentials.json, and hands both to the hooks (CLAUDE_PLUGIN_OPTION_URL/_TOKEN) and
to the MCP server's environment.
"""

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from django.conf import settings

from install.connectors import ConnectError
from install.connectors.config_files import without_handlers
from install.connectors.edits import Edit, apply, forget_token, read_text
from install.management.commands.claude_config import COMMAND_TIMEOUT, EVENTS, WAIT_MARGIN, group, handler_of, hook_python
from relaybay_hook.wait import DEFAULT_WAIT

MARKETPLACE_DIR = Path(settings.BASE_DIR) / "integrations" / "claude-code"
PLUGIN_DIR = MARKETPLACE_DIR / "plugins" / "relaybay"
MARKET = "relaybay-local"
PLUGIN = f"relaybay@{MARKET}"
# The checkout, from the plugin's folder (Claude Code sets CLAUDE_PLUGIN_ROOT to it).
CHECKOUT = "${CLAUDE_PLUGIN_ROOT}/../../../.."
# The hook client, run by the interpreter connect found (userConfig `python`), with -S: it is
# stdlib-only. `--plugin` makes it stand aside in a session a claude_config file connects.
HOOK_COMMAND = f'"${{CLAUDE_PLUGIN_OPTION_PYTHON:-python3}}" -S "{CHECKOUT}/bin/relaybay-hook" --plugin'
CLI_TIMEOUT = 120


def plugin_hooks():
    """hooks/hooks.json: the events, matchers and timeouts of `claude_config`'s settings, each
    running the checkout's hook client, and the wake-up hook beside it on Stop."""
    command = {"type": "command", "command": HOOK_COMMAND, "timeout": COMMAND_TIMEOUT}
    wake_up = {
        "type": "command",
        "command": HOOK_COMMAND.replace(" --plugin", " wait --plugin"),
        "asyncRewake": True,
        "timeout": DEFAULT_WAIT + WAIT_MARGIN,
    }
    return {"hooks": {event: group(event, [command, wake_up] if event == "Stop" else [handler_of(event, command)]) for event in EVENTS}}


def plugin_mcp():
    """.mcp.json: bin/relaybay-mcp, the small local process that forwards the session's MCP
    messages to relaybay's /mcp (docs/mcp.md), its tools deferred (the model sees their names
    and loads one with ToolSearch when it needs it).

    Each choice is measured (bench/plugin_turn.py, bench/mcp_memory.py, docs/hook-client.md).
    Claude Code drops an http MCP server that stays away for more than a few seconds, and a
    session then has no relaybay tools until /mcp → Reconnect; a stdio server it keeps, so a
    relaybay restart goes unnoticed. The forwarder is stdlib only (no SDK, no Django): it starts
    in the time of `python3 -S` and holds a few MB, where the SDK's stdio server takes about
    2 s a session start under `claude -p` and 73 MB. Offered whole (`alwaysLoad`), the tools'
    schemas add about 4,000 tokens to every request of every session; deferred, about 500.
    The process carries its claude process's proof when Claude Code gives it the messaging
    token; the PreToolUse hook names the caller as well (its engine's caller_filled_in)."""
    return {
        "mcpServers": {
            "relaybay": {
                "type": "stdio",
                "command": "${user_config.python}",
                "args": ["-S", f"{CHECKOUT}/bin/relaybay-mcp"],
                "env": {"RELAYBAY_URL": "${user_config.url}", "RELAYBAY_TOKEN": "${user_config.token}"},
            }
        }
    }


def plugin_version():
    return json.loads((PLUGIN_DIR / ".claude-plugin" / "plugin.json").read_text())["version"]


class ClaudeCLI:
    """Claude Code's `claude` command, run for the person (their HOME), or only printed."""

    def __init__(self, target):
        self.target = target
        self.path = target.cli or shutil.which("claude")
        if not self.path or not Path(self.path).is_file() or not os.access(self.path, os.X_OK):
            where = f"at {target.cli}" if target.cli else "on PATH"
            raise ConnectError(
                f"Claude Code's `claude` command is not {where}. Install Claude Code, or pass its path with --cli PATH."
            )
        self.env = {**os.environ, "HOME": str(target.home)}

    def run(self, *args, stdin=None, note="", change=True):
        """Run `claude ARGS`; a change is only printed on a dry run, with `note` after it."""
        line = shlex.join(["claude", *args]) + (f" {note}" if note else "")
        if change and self.target.dry_run:
            self.target.say(f"  would run: {line}")
            return ""
        try:
            done = subprocess.run(
                [self.path, *args], input=stdin, env=self.env, capture_output=True, text=True, timeout=CLI_TIMEOUT
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConnectError(f"`{line}` did not run: {exc}") from None
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip())[-600:]
            raise ConnectError(f"`{line}` failed (exit {done.returncode}): {said}")
        if change:
            self.target.say(f"  ran: {line}")
        return done.stdout

    def json(self, *args):
        try:
            return json.loads(self.run(*args, change=False) or "null")
        except ValueError:
            raise ConnectError(f"`claude {' '.join(args)}` printed no JSON: is {self.path} Claude Code?") from None

    def installed(self):
        """The plugin's entry in `claude plugin list --json`, or None."""
        return next((p for p in self.json("plugin", "list", "--json") or [] if p.get("id") == PLUGIN), None)

    def market_known(self):
        return any(m.get("name") == MARKET for m in self.json("plugin", "marketplace", "list", "--json") or [])


# What a hand-made connection (claude_config's hooks and env merged into ~/.claude/settings.json)
# holds: the client's commands and the env naming it. The plugin replaces it.
HAND_MADE_ENV = ("RELAYBAY_HOOK", "RELAYBAY_HOOK_CONFIG")
HAND_MADE_COMMAND = ("$RELAYBAY_HOOK", "bin/relaybay-hook")


def is_hand_made_hook(handler):
    command = handler.get("command", "") if isinstance(handler, dict) else ""
    return isinstance(command, str) and any(mark in command for mark in HAND_MADE_COMMAND)


def without_hand_made(config):
    """~/.claude/settings.json's object without relaybay's hand-merged hooks and env, and
    whether there were any; every other hook, group and setting stays as it was."""
    changed = False
    hooks = config.get("hooks")
    if isinstance(hooks, dict):
        hooks, changed = without_handlers(hooks, is_hand_made_hook)
        if hooks:
            config["hooks"] = hooks
        else:
            del config["hooks"]
    env = config.get("env")
    if isinstance(env, dict) and any(name in env for name in HAND_MADE_ENV):
        changed = True
        for name in HAND_MADE_ENV:
            env.pop(name, None)
        if not env:
            del config["env"]
    return config, changed


def remove_hand_made(target, cli):
    """Take out a connection made by hand before the plugin: relaybay's hooks and env in
    ~/.claude/settings.json (a copy of the file is kept beside it) and the `relaybay` MCP server
    registered for every project (`claude mcp add-json … --scope user`). With them left, the
    plugin stands aside in every session (docs/hook-client.md) and they go on using their own
    address and token."""
    path = target.home / ".claude" / "settings.json"
    text = read_text(path)
    try:
        config = None if text is None else json.loads(text)
    except ValueError:
        raise ConnectError(f"{path} is not valid JSON: fix it (Claude Code cannot read it either), then run this again.") from None
    if isinstance(config, dict):
        config, changed = without_hand_made(config)
        if changed:
            # The copy kept is the file without relaybay's part: it holds no token.
            after = json.dumps(config, indent=2) + "\n"
            apply(target, [Edit(path, text, after, "relaybay's hand-merged hooks and env taken out", clean=after)])
    forget_token(target, [path])
    try:
        registered = json.loads((target.home / ".claude.json").read_text()).get("mcpServers", {})
    except (OSError, ValueError, AttributeError):
        registered = {}
    if isinstance(registered, dict) and "relaybay" in registered:
        cli.run("mcp", "remove", "relaybay", "--scope", "user")


def options(target):
    """The plugin's userConfig values for this relaybay."""
    return {"url": target.url, "token": target.token, "python": hook_python()}


def connect(target):
    cli = ClaudeCLI(target)
    values = options(target)
    installed = cli.installed()
    market_known = cli.market_known()
    added_market = False
    try:
        if not market_known:
            cli.run("plugin", "marketplace", "add", str(MARKETPLACE_DIR))
            added_market = True
        else:
            # Reads the folder's catalog again, so a version `git pull` brought is seen.
            cli.run("plugin", "marketplace", "update", MARKET)
        if installed is None:
            cli.run("plugin", "install", PLUGIN, "--scope", "user")
        elif installed.get("version") != plugin_version():
            cli.run("plugin", "update", PLUGIN, "--scope", "user")
        if installed is not None and not installed.get("enabled", True):
            cli.run("plugin", "enable", PLUGIN, "--scope", "user")
        # The values go on stdin: a token on a command line is readable by every local user.
        cli.run("plugin", "configure", PLUGIN, "--values-stdin", stdin=json.dumps(values), note="(url, token and python on stdin)")
        remove_hand_made(target, cli)
    except ConnectError:
        if added_market and not target.dry_run:
            # Nothing half-written: the marketplace this run added goes again.
            subprocess.run([cli.path, "plugin", "marketplace", "remove", MARKET], env=cli.env, capture_output=True, timeout=CLI_TIMEOUT)
        raise
    verb = "Would connect" if target.dry_run else ("Updated" if installed else "Connected")
    target.say(
        f"{verb} Claude Code for every session: the relaybay plugin {plugin_version()} ({PLUGIN}, from {PLUGIN_DIR}) "
        f"reaches relaybay at {target.url}. The token is kept in {target.home}/.claude/.credentials.json, readable by you only."
    )
    if not target.dry_run:
        target.say(
            "Start `claude` in any folder: the session is on the board from its first hook. Running sessions "
            "take the plugin when they start again.\n"
            "Undo: .venv/bin/python manage.py disconnect claude"
        )


def disconnect(target):
    cli = ClaudeCLI(target)
    installed = cli.installed()
    if installed is not None:
        cli.run("plugin", "uninstall", PLUGIN, "--scope", "user")
    if cli.market_known():
        cli.run("plugin", "marketplace", "remove", MARKET)
    # Claude Code keeps the uninstalled plugin's copy, hooks and MCP entry, marked orphaned.
    copy = target.home / ".claude" / "plugins" / "cache" / MARKET
    if copy.exists():
        if target.dry_run:
            target.say(f"  would remove {copy}")
        else:
            shutil.rmtree(copy)
            target.say(f"  removed {copy}")
    remove_hand_made(target, cli)
    if installed is None:
        target.say("The relaybay plugin was not installed; its marketplace is gone from Claude Code's list.")
        return
    verb = "Would disconnect" if target.dry_run else "Disconnected"
    target.say(
        f"{verb} Claude Code: the relaybay plugin, its hooks, MCP server and token are gone from {target.home}/.claude. "
        "Sessions started from now on are not on the board; running ones keep it until they exit.\n"
        "Connect again: .venv/bin/python manage.py connect claude"
    )
