"""relaybay in Codex CLI's configuration, for every session the person starts (docs/rules.md §1.6).

Codex reads hooks from `$CODEX_HOME/hooks.json` (CODEX_HOME defaults to ~/.codex) in Claude
Code's format, and MCP servers from `$CODEX_HOME/config.toml`. `connect` adds relaybay's hooks
(the stdlib hook client with `--engine codex`) beside any others and relaybay's MCP server (the
local forwarder to /mcp, bin/relaybay-mcp) as `[mcp_servers.relaybay]`, in a block of its own between two marker comments, so the
rest of the TOML file stays as the person wrote it, comments included; `disconnect` takes out
exactly those.

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
import tomllib
from pathlib import Path

from install.connectors import ConnectError
from install.connectors.config_files import change, hook_command, is_relaybay_hook, json_text, read
from install.management.commands.claude_config import COMMAND_TIMEOUT, handler_of, hook_python, local_mcp_server

ENGINE = "codex"
# PermissionRequest: held open while the owner decides (docs/rules.md §8).
EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop", "SessionEnd")
BLOCK_START = "# relaybay: added by `manage.py connect codex`; `manage.py disconnect codex` takes it out."
BLOCK_END = "# relaybay: end"
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
    hooks = dict(config.get("hooks") or {})
    for event, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(is_relaybay_hook(h, ENGINE) for h in handlers):
                handlers = [h for h in handlers if not is_relaybay_hook(h, ENGINE)]
                if not handlers:
                    continue
                group = {**group, "hooks": handlers}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
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


def mcp_block(target):
    """relaybay's MCP server for Codex: bin/relaybay-mcp, which forwards to relaybay's /mcp and
    keeps the tools through a relaybay restart (docs/mcp.md)."""
    server = local_mcp_server(url=target.url, token=target.token, python=hook_python())
    args = ", ".join(json.dumps(arg) for arg in server["args"])
    env = ", ".join(f"{json.dumps(name)} = {json.dumps(value)}" for name, value in server["env"].items())
    return (
        f"{BLOCK_START}\n[mcp_servers.relaybay]\ncommand = {json.dumps(server['command'])}\nargs = [{args}]\n"
        f"env = {{ {env} }}\n{BLOCK_END}\n"
    )


def without_block(text):
    """config.toml's text without relaybay's block (and the blank line connect put before it)."""
    start = text.find(BLOCK_START)
    if start < 0:
        return text
    end = text.find(BLOCK_END, start)
    end = len(text) if end < 0 else end + len(BLOCK_END) + (text[end + len(BLOCK_END) : end + len(BLOCK_END) + 1] == "\n")
    head = text[:start]
    if head.endswith("\n\n"):
        head = head[:-1]
    return head + text[end:]


def parsed_toml(path, text):
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConnectError(f"{path} is not valid TOML ({error}): fix it (Codex cannot read it either), then run this again.") from None


def with_block(path, text, target):
    """config.toml's text with relaybay's MCP server in its block, at the end."""
    rest = without_block(text)
    if "relaybay" in (parsed_toml(path, rest).get("mcp_servers") or {}):
        raise ConnectError(
            f"{path} has an [mcp_servers.relaybay] that relaybay did not write: take it out (or rename it), "
            "then run this again. Nothing was changed."
        )
    joined = (rest if not rest or rest.endswith("\n") else rest + "\n") + ("\n" if rest.strip() else "") + mcp_block(target)
    try:
        tomllib.loads(joined)
    except tomllib.TOMLDecodeError as error:
        raise ConnectError(
            f"relaybay's [mcp_servers.relaybay] table cannot go at the end of {path} as it is ({error}): is "
            "mcp_servers written inline there? Write it as [mcp_servers.NAME] tables, then run this again. "
            "Nothing was changed."
        ) from None
    return joined if rest.strip() else mcp_block(target)


def read_hooks(path):
    text = read(path)
    if text is None:
        return None, {}
    try:
        config = json.loads(text)
    except ValueError:
        raise ConnectError(f"{path} is not valid JSON: fix it (Codex cannot read it either), then run this again.") from None
    if not isinstance(config, dict) or not isinstance(config.get("hooks", {}), dict):
        raise ConnectError(f'{path} is not a hooks file Codex reads ({{"hooks": {{…}}}}): fix it, then run this again.')
    return text, config


def connect(target):
    home = codex_home(target)
    hooks_path, config_path = home / "hooks.json", home / "config.toml"
    hooks_text, hooks = read_hooks(hooks_path)
    config_text = read(config_path)
    toml = with_block(config_path, config_text or "", target)
    command = hook_command(target, ENGINE)
    codex = codex_command(target)
    wanted = relaybay_hooks(hooks, command, codex)
    updated = hooks_text if hooks_text is not None and wanted == hooks else json_text(hooks_path, wanted)
    change(target, hooks_path, hooks_text, updated, f"relaybay's hooks for {', '.join(EVENTS)}")
    change(target, config_path, config_text, toml, f"relaybay's MCP server [mcp_servers.relaybay], forwarding to {target.url}/mcp")
    verb = "Would connect" if target.dry_run else "Connected"
    target.say(
        f"{verb} Codex for every session: its hooks and MCP server reach relaybay at {target.url} "
        f"({home}; the token is in the files, readable by you only)."
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
    home = codex_home(target)
    hooks_path, config_path = home / "hooks.json", home / "config.toml"
    hooks_text, hooks = read_hooks(hooks_path)
    if hooks_text is not None:
        kept = relaybay_hooks(hooks)
        after = None if not kept else (hooks_text if kept == hooks else json_text(hooks_path, kept))
        change(target, hooks_path, hooks_text, after, "relaybay's hooks taken out")
    config_text = read(config_path)
    if config_text is not None:
        rest = without_block(config_text)
        change(target, config_path, config_text, rest if rest.strip() or rest == config_text else None, "relaybay's MCP server taken out")
    verb = "Would disconnect" if target.dry_run else "Disconnected"
    target.say(f"{verb} Codex: relaybay's hooks and MCP server are gone from {home}; everything else is as it was.")
