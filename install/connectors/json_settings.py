"""relaybay in the configuration of a CLI that keeps hooks (in Claude Code's format) and MCP
servers in one JSON settings file under the person's home folder, for every session the person
starts (docs/rules.md §1.6). What differs per CLI is its engine's `settings` (engines/base.py
JsonSettings): the file, the events, which take a matcher, the timeout's unit and the MCP entry's
own fields.

`connect` adds relaybay's hooks (the stdlib hook client with `--engine NAME`, each named
"relaybay") beside any others, and relaybay's MCP server as `<servers>.relaybay`: the checkout's
stdlib forwarder to relaybay's /mcp, which reads the address and token from relaybay's own
configuration file (so the settings file holds no token), marked by its description;
`disconnect` takes out exactly those. Everything else in the file stays; the file changes
atomically (install/connectors/edits.py).
"""

import json

from engines.base import Wake
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
from install.management.commands.claude_config import COMMAND_TIMEOUT

SERVER = "relaybay"
NEVER_WOKEN = "{cli} has no hook that waits while a session is idle: what is sent to an idle session arrives at its next prompt."


def mark(engine):
    return f"relaybay's MCP server, added by `manage.py connect {engine.connect_name}` (`manage.py disconnect {engine.connect_name}` takes it out)"


def settings_path(target, engine):
    return target.home / engine.settings.path


def is_ours(server, engine):
    return isinstance(server, dict) and (server.get("description") == mark(engine) or is_forwarder(server))


def relaybay_settings(engine, config, hook_config=None, command=None):
    """settings.json's object with relaybay's hooks and MCP server taken out and, given the
    hook client's configuration file and `command`, added again; everything else as it was."""
    declared = engine.settings
    config = dict(config)
    hooks, _ = without_handlers(config.get("hooks"), lambda h: is_relaybay_hook(h, engine.name))
    servers = dict(config.get(declared.servers_key) or {})
    if is_ours(servers.get(SERVER), engine):
        del servers[SERVER]
    if command:
        handler = {"name": "relaybay", "type": "command", "command": command, "timeout": COMMAND_TIMEOUT * declared.timeout_unit}
        for event in declared.events:
            group = {"matcher": "*", "hooks": [handler]} if event in declared.matched else {"hooks": [handler]}
            hooks[event] = [*(hooks.get(event) if isinstance(hooks.get(event), list) else []), group]
        servers[SERVER] = {**mcp_server(hook_config), **declared.server_entry, "description": mark(engine)}
    for key, value in (("hooks", hooks), (declared.servers_key, servers)):
        if value:
            config[key] = value
        else:
            config.pop(key, None)
    return config


def read_settings(path, engine):
    text = read_text(path)
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
        raise ConnectError(f"{path} does not hold a JSON object, as {engine.label}'s settings do: fix it, then run this again.")
    for key in ("hooks", engine.settings.servers_key):
        if not isinstance(config.get(key, {}), dict):
            raise ConnectError(f'{path} has a "{key}" that is not an object: fix it, then run this again.')
    return text, config


def connect(target, engine):
    path = settings_path(target, engine)
    text, config = read_settings(path, engine)
    existing = (config.get(engine.settings.servers_key) or {}).get(SERVER)
    if existing is not None and not is_ours(existing, engine):
        raise ConnectError(
            f'{path} has an MCP server named "{SERVER}" that relaybay did not write: take it out (or rename it), '
            "then run this again. Nothing was changed."
        )
    conf = hook_config(target, engine.name, path.parent)
    wanted = relaybay_settings(engine, config, conf, hook_command(conf, engine.name))
    after = new_json_text(path, text, config, wanted)
    clean = relaybay_settings(engine, config)
    edit = Edit(
        path, text, after,
        f"relaybay's hooks for {', '.join(engine.settings.events)} and its MCP server, the forwarder to {target.url}/mcp",
        clean=None if text is None else new_json_text(path, text, config, clean),
    )
    if not apply(target, [edit]):
        target.say(f"  {path}: nothing to change (relaybay's hooks and MCP server as wanted already)")
    forget_hook_configs(target, engine.name, path.parent, keep=conf)
    forget_token(target, [path])
    verb = "Would connect" if target.dry_run else "Connected"
    target.say(
        f"{verb} {engine.label} for every session: its hooks and MCP server reach relaybay at {target.url} "
        f"({path}; the token is in {conf}, readable by you only, not in {engine.label}'s settings). Start it in any "
        "folder: the session is on the board from its first hook."
        + (f" {NEVER_WOKEN.format(cli=engine.label)}" if engine.wake == Wake.NEVER else "")
    )
    if not target.dry_run:
        target.say(f"Undo: .venv/bin/python manage.py disconnect {engine.connect_name}")


def disconnect(target, engine):
    path = settings_path(target, engine)
    text, config = read_settings(path, engine)
    if text is not None:
        kept = relaybay_settings(engine, config)
        edit = Edit(path, text, new_json_text(path, text, config, kept), "relaybay's hooks and MCP server taken out")
        if not apply(target, [edit]):
            target.say(f"  {path}: nothing to change (none of relaybay's hooks or MCP server there)")
    forget_hook_configs(target, engine.name, path.parent)
    forget_token(target, [path])
    verb = "Would disconnect" if target.dry_run else "Disconnected"
    target.say(f"{verb} {engine.label}: relaybay's hooks and MCP server are gone from {path}; everything else is as it was.")
