"""relaybay in Gemini CLI's configuration, for every session the person starts (docs/rules.md §1.6).

Gemini CLI reads hooks and MCP servers from ~/.gemini/settings.json. `connect` adds relaybay's
hooks (the stdlib hook client with `--engine gemini`, each named "relaybay") beside any others,
and relaybay's http MCP server at /mcp as `mcpServers.relaybay`, trusted (Gemini offers an
untrusted server's tools to the model only after asking, which `gemini -p` cannot) and marked
by its description; `disconnect` takes out exactly those. Everything else in the file stays.
"""

import json

from install.connectors import ConnectError
from install.connectors.config_files import change, hook_command, is_relaybay_hook, json_text, read
from install.management.commands.claude_config import COMMAND_TIMEOUT

ENGINE = "gemini"
EVENTS = ("SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "Notification", "SessionEnd")
# Gemini matches the tool events' matcher against tool names; "*" is every tool.
MATCHED = {"BeforeTool", "AfterTool"}
# Gemini CLI counts hook timeouts in milliseconds.
TIMEOUT_MS = COMMAND_TIMEOUT * 1000
SERVER = "relaybay"
MARK = "relaybay's MCP server, added by `manage.py connect gemini` (`manage.py disconnect gemini` takes it out)"


def settings_path(target):
    return target.home / ".gemini" / "settings.json"


def is_ours(server):
    return isinstance(server, dict) and server.get("description") == MARK


def relaybay_settings(config, target=None, command=None):
    """settings.json's object with relaybay's hooks and MCP server taken out and, given
    `target` and `command`, added again; everything else as it was."""
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
    servers = dict(config.get("mcpServers") or {})
    if is_ours(servers.get(SERVER)):
        del servers[SERVER]
    if command:
        handler = {"name": "relaybay", "type": "command", "command": command, "timeout": TIMEOUT_MS}
        for event in EVENTS:
            group = {"matcher": "*", "hooks": [handler]} if event in MATCHED else {"hooks": [handler]}
            hooks[event] = [*(hooks.get(event) if isinstance(hooks.get(event), list) else []), group]
        servers[SERVER] = {
            "httpUrl": f"{target.url}/mcp",
            "headers": {"Authorization": f"Bearer {target.token}"},
            "trust": True,
            "description": MARK,
        }
    for key, value in (("hooks", hooks), ("mcpServers", servers)):
        if value:
            config[key] = value
        else:
            config.pop(key, None)
    return config


def read_settings(path):
    text = read(path)
    if text is None:
        return None, {}
    try:
        config = json.loads(text)
    except ValueError:
        raise ConnectError(
            f"{path} is not plain JSON (comments, or a mistake): relaybay edits only JSON it can read back. "
            "Take the comments out or fix it, then run this again. Nothing was changed."
        ) from None
    if not isinstance(config, dict):
        raise ConnectError(f"{path} does not hold a JSON object, as Gemini CLI's settings do: fix it, then run this again.")
    for key in ("hooks", "mcpServers"):
        if not isinstance(config.get(key, {}), dict):
            raise ConnectError(f'{path} has a "{key}" that is not an object: fix it, then run this again.')
    return text, config


def connect(target):
    path = settings_path(target)
    text, config = read_settings(path)
    existing = (config.get("mcpServers") or {}).get(SERVER)
    if existing is not None and not is_ours(existing):
        raise ConnectError(
            f'{path} has an MCP server named "{SERVER}" that relaybay did not write: take it out (or rename it), '
            "then run this again. Nothing was changed."
        )
    wanted = relaybay_settings(config, target, hook_command(target, ENGINE))
    after = text if text is not None and wanted == config else json_text(path, wanted)
    change(target, path, text, after, f"relaybay's hooks for {', '.join(EVENTS)} and its MCP server at {target.url}/mcp")
    verb = "Would connect" if target.dry_run else "Connected"
    target.say(
        f"{verb} Gemini CLI for every session: its hooks and MCP server reach relaybay at {target.url} "
        f"({path}; the token is in it, readable by you only). Start `gemini` in any folder: the session is on "
        "the board from its first hook. Gemini CLI has no hook that waits while a session is idle: what is sent "
        "to an idle Gemini session arrives at its next prompt."
    )
    if not target.dry_run:
        target.say("Undo: .venv/bin/python manage.py disconnect gemini")


def disconnect(target):
    path = settings_path(target)
    text, config = read_settings(path)
    if text is not None:
        kept = relaybay_settings(config)
        change(target, path, text, text if kept == config else json_text(path, kept), "relaybay's hooks and MCP server taken out")
    verb = "Would disconnect" if target.dry_run else "Disconnected"
    target.say(f"{verb} Gemini CLI: relaybay's hooks and MCP server are gone from {path}; everything else is as it was.")
