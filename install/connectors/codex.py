"""relaybay in Codex CLI's configuration, for every session the person starts (docs/rules.md §1.6).

Codex reads hooks from `$CODEX_HOME/hooks.json` (CODEX_HOME defaults to ~/.codex) in Claude
Code's format, and MCP servers from `$CODEX_HOME/config.toml`. `connect` adds relaybay's hooks
(the stdlib hook client with `--engine codex`) beside any others, and relaybay's MCP server as
`[mcp_servers.relaybay]`: the checkout's stdlib forwarder to relaybay's /mcp, which reads the
address and token from relaybay's own configuration file, so neither file holds the token.
config.toml is edited as TOML (tomlkit keeps the person's comments and layout): relaybay's
server is found by what it is, however Codex rewrote the file (`codex mcp add` turns inline
tables into tables of their own and drops comments), and nothing else is touched; `disconnect`
takes out exactly relaybay's hooks and server. Both files change together or not at all
(install/connectors/edits.py).

Codex runs no hook the person has not trusted, and says nothing about the ones it skips: after
`connect`, each person trusts relaybay's hooks once in the TUI's /hooks. Until then the board
shows a Codex session that calls relaybay's tools while none of its hooks arrived.

With the `codex` command found (on PATH, or --cli PATH), Stop also runs the waiter that wakes an
idle session with `codex queue … --resume` (relaybay_hook/codex_wake.py).
"""

import json
import os
import shlex
import shutil
from pathlib import Path

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable

from install.connectors import ConnectError
from install.connectors.config_files import (
    forget_hook_configs,
    hook_command,
    hook_config,
    is_forwarder,
    is_relaybay_hook,
    mcp_server,
    new_json_text,
    without_handlers,
)
from install.connectors.edits import Edit, apply, forget_token, read_text
from install.management.commands.claude_config import COMMAND_TIMEOUT, handler_of

ENGINE = "codex"
# PermissionRequest: held open while the owner decides (docs/rules.md §8).
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "SessionEnd")
SERVER = "relaybay"
# The comment lines an earlier relaybay wrote around its table: taken out with it.
MARKERS = ("# relaybay: added by `manage.py connect codex`; `manage.py disconnect codex` takes it out.", "# relaybay: end")
TRUST_STEP = (
    "One step is yours, once: Codex runs only hooks you trusted, and skips the others without a word. "
    "Start `codex`, type /hooks, and trust relaybay's {count} hooks (each runs relaybay-hook --engine codex). "
    "Until you do, Codex sessions are not on the board; one that calls relaybay's tools before is flagged "
    "on the board's Sessions page as connected with its hooks never arrived."
)


def codex_home(target):
    configured = os.environ.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else target.home / ".codex"


def codex_command(target):
    """The `codex` command the waiter wakes sessions with: --cli, else the one on PATH, else None."""
    found = target.cli or shutil.which("codex")
    return str(Path(found).resolve()) if found and Path(found).is_file() and os.access(found, os.X_OK) else None


def wake_command(command, codex):
    """The Stop hook's waiter: the client's command in wait mode, naming the codex to run."""
    client, _, engine = command.partition(" --engine ")
    return f"{client} wait --engine {engine} --codex {shlex.quote(codex)}"


def relaybay_hooks(config, command=None, codex=None):
    """hooks.json's object with relaybay's hooks taken out and, given `command`, added again
    (one group per event, after the person's own; on Stop the waiter too, given `codex`);
    everything else as it was."""
    config = dict(config)
    hooks, _ = without_handlers(config.get("hooks"), lambda h: is_relaybay_hook(h, ENGINE))
    if command:
        for event in EVENTS:
            groups = hooks.get(event) if isinstance(hooks.get(event), list) else []
            handlers = [handler_of(event, {"type": "command", "command": command, "timeout": COMMAND_TIMEOUT})]
            if event == "Stop" and codex:
                handlers.append({"type": "command", "command": wake_command(command, codex), "timeout": COMMAND_TIMEOUT})
            hooks[event] = [*groups, {"hooks": handlers}]
    if hooks:
        config["hooks"] = hooks
    else:
        config.pop("hooks", None)
    return config


def is_ours(server, text=""):
    """Whether config.toml's [mcp_servers.relaybay] is relaybay's: the forwarder, or an earlier
    relaybay's http entry (relaybay's /mcp with a bearer token, or within its marker comments)."""
    if is_forwarder(server):
        return True
    if not isinstance(server, dict):
        return False
    headers = server.get("http_headers")
    bearer = isinstance(headers, dict) and str(headers.get("Authorization", "")).startswith("Bearer ")
    return str(server.get("url", "")).endswith("/mcp") and (bearer or MARKERS[0] in text)


def parsed_toml(path, text):
    try:
        return tomlkit.parse(text)
    except (TOMLKitError, ValueError) as error:
        raise ConnectError(f"{path} is not valid TOML ({error}): fix it (Codex cannot read it either), then run this again. Nothing was changed.") from None


def without_server(path, text):
    """config.toml's text without relaybay's server (and an earlier relaybay's marker lines);
    the text itself when it holds none."""
    doc = parsed_toml(path, text)
    servers = doc.get("mcp_servers")
    marked = any(line.strip() in MARKERS for line in text.splitlines())
    if not (isinstance(servers, dict) and SERVER in servers and is_ours(servers[SERVER], text)) and not marked:
        return text
    if isinstance(servers, dict) and SERVER in servers and is_ours(servers[SERVER], text):
        del servers[SERVER]
        if not servers:
            del doc["mcp_servers"]
    kept = "".join(line for line in tomlkit.dumps(doc).splitlines(True) if line.strip() not in MARKERS)
    return kept.rstrip("\n") + "\n" if kept.strip() else ""


def with_server(path, text, config):
    """config.toml's text with relaybay's server, as a table of its own (inline where the
    person wrote mcp_servers inline)."""
    rest = without_server(path, text)
    doc = parsed_toml(path, rest)
    servers = doc.get("mcp_servers")
    if isinstance(servers, dict) and SERVER in servers:
        raise ConnectError(
            f"{path} has an [mcp_servers.relaybay] that relaybay did not write: take it out (or rename it), "
            "then run this again. Nothing was changed."
        )
    if servers is not None and not isinstance(servers, dict):
        raise ConnectError(f"{path} has an mcp_servers that is not a table: fix it (Codex cannot read it either), then run this again. Nothing was changed.")
    entry = mcp_server(config)
    if isinstance(servers, InlineTable):
        table = tomlkit.inline_table()
        table.update(entry)
        servers[SERVER] = table
    else:
        table = tomlkit.table()
        table["command"], table["args"] = entry["command"], entry["args"]
        env = tomlkit.inline_table()
        env.update(entry["env"])
        table["env"] = env
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            servers[SERVER] = table
            if rest.strip():
                doc.add(tomlkit.nl())
            doc["mcp_servers"] = servers
        else:
            table.add(tomlkit.nl())  # a blank line before whatever follows it
            servers[SERVER] = table
    return tomlkit.dumps(doc)


def read_hooks(path):
    text = read_text(path)
    if text is None:
        return None, {}
    try:
        config = json.loads(text)
    except ValueError:
        raise ConnectError(f"{path} is not valid JSON: fix it (Codex cannot read it either), then run this again. Nothing was changed.") from None
    if not isinstance(config, dict) or not isinstance(config.get("hooks", {}), dict):
        raise ConnectError(f'{path} is not a hooks file Codex reads ({{"hooks": {{…}}}}): fix it, then run this again. Nothing was changed.')
    return text, config


def files(target):
    home = codex_home(target)
    return home, home / "hooks.json", home / "config.toml"


def connect(target):
    home, hooks_path, config_path = files(target)
    hooks_text, hooks = read_hooks(hooks_path)
    config_text = read_text(config_path)
    without = without_server(config_path, config_text or "")
    config = hook_config(target, ENGINE, home)
    toml = with_server(config_path, config_text or "", config)
    codex = codex_command(target)
    wanted = relaybay_hooks(hooks, hook_command(config, ENGINE), codex)
    updated = new_json_text(hooks_path, hooks_text, hooks, wanted)
    clean_hooks = relaybay_hooks(hooks)
    changed = apply(
        target,
        [
            Edit(hooks_path, hooks_text, updated, f"relaybay's hooks for {', '.join(EVENTS)}",
                 clean=None if hooks_text is None else new_json_text(hooks_path, hooks_text, hooks, clean_hooks)),
            Edit(config_path, config_text, toml, "relaybay's MCP server [mcp_servers.relaybay], the forwarder to "
                 f"{target.url}/mcp", clean=None if config_text is None else without),
        ],
    )
    if not changed:
        target.say(f"  {hooks_path} and {config_path}: nothing to change (relaybay's hooks and MCP server as wanted already)")
    forget_hook_configs(target, ENGINE, home, keep=config)
    forget_token(target, (hooks_path, config_path))
    verb = "Would connect" if target.dry_run else "Connected"
    target.say(
        f"{verb} Codex for every session: its hooks and MCP server reach relaybay at {target.url} "
        f"({home}; the token is in {config}, readable by you only, not in Codex's files)."
    )
    target.say(TRUST_STEP.format(count=len(EVENTS) + bool(codex)))
    if codex:
        target.say(f"An idle Codex session is woken when mail arrives, with `{codex} queue … --resume`.")
    else:
        target.say(
            "No `codex` command on PATH: idle Codex sessions get their mail at their next prompt. Pass its path "
            "with --cli PATH (and run this again) to have them woken."
        )
    if not target.dry_run:
        target.say("Undo: .venv/bin/python manage.py disconnect codex")


def disconnect(target):
    home, hooks_path, config_path = files(target)
    hooks_text, hooks = read_hooks(hooks_path)
    config_text = read_text(config_path)
    edits = []
    if hooks_text is not None:
        kept = relaybay_hooks(hooks)
        after = None if not kept else new_json_text(hooks_path, hooks_text, hooks, kept)
        edits.append(Edit(hooks_path, hooks_text, after, "relaybay's hooks taken out"))
    if config_text is not None:
        rest = without_server(config_path, config_text)
        after = rest if rest.strip() or rest == config_text else None
        edits.append(Edit(config_path, config_text, after, "relaybay's MCP server taken out"))
    if not apply(target, edits):
        target.say(f"  {home}: nothing to change (none of relaybay's hooks or MCP server there)")
    forget_hook_configs(target, ENGINE, home)
    forget_token(target, (hooks_path, config_path))
    verb = "Would disconnect" if target.dry_run else "Disconnected"
    target.say(f"{verb} Codex: relaybay's hooks and MCP server are gone from {home}; everything else is as it was.")
