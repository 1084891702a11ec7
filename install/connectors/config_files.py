"""What the connectors of CLIs that run relaybay's hook client share: the hook client's configuration file and the
commands that name it, and the MCP server entry, all holding no token: the token is in relaybay's
own file (data/hook-config/, 0600), never in the CLI's configuration.

A CLI's files are changed through install/connectors/edits.py: all or nothing, atomically, the
file as it was (without relaybay) kept once beside it. A dry run prints what would change, with
the token masked, and writes nothing.
"""

import json
import shlex
from pathlib import Path

from django.conf import settings

from install.connectors.edits import backup_path, real_path
from install.management.commands.claude_config import hook_config_file, hook_config_path, hook_python

HOOK_CLIENT = Path(settings.BASE_DIR) / "bin" / "relaybay-hook"
MCP_FORWARDER = Path(settings.BASE_DIR) / "bin" / "relaybay-mcp"
# The CLI and its configuration folder a configuration file is written for: a new connect
# removes that CLI's older ones, and disconnect all of them.
CONNECTED = "RELAYBAY_CONNECTED"


def connected(engine, folder):
    return f"{engine} {folder}"


def hook_config(target, engine, folder):
    """The hook client's configuration file for `engine` configured in `folder` (address and
    token), written unless this is a dry run."""
    values = {"RELAYBAY_URL": target.url, "RELAYBAY_TOKEN": target.token, CONNECTED: connected(engine, folder)}
    return hook_config_path(values)[0] if target.dry_run else hook_config_file(values)


def forget_hook_configs(target, engine, folder, keep=None):
    """Remove the configuration files written for `engine` configured in `folder`, but `keep`."""
    written_for = f"{CONNECTED}={connected(engine, folder)}"
    configs = Path(settings.DATA_DIR) / "hook-config"
    for path in sorted(configs.glob("*.conf")) if configs.is_dir() else ():
        try:
            lines = path.read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        if written_for not in lines or path == keep:
            continue
        if target.dry_run:
            target.say(f"  would remove {path}: relaybay's configuration of its hooks for {engine}")
        else:
            path.unlink(missing_ok=True)
            target.say(f"  removed {path}: relaybay's configuration of its hooks for {engine}, with the token")


def mcp_server(config):
    """The MCP server entry both CLIs run: the checkout's stdlib forwarder to relaybay's /mcp
    (relaybay_hook/mcp.py), which reads the address and token from `config`."""
    return {"command": hook_python(), "args": ["-S", str(MCP_FORWARDER)], "env": {"RELAYBAY_HOOK_CONFIG": str(config)}}


def is_forwarder(server):
    args = server.get("args") if isinstance(server, dict) else None
    return isinstance(args, list) and any(isinstance(arg, str) and arg.endswith("bin/relaybay-mcp") for arg in args)


def hook_command(config, engine):
    """The command each hook of `engine`'s CLI runs: the checkout's stdlib client, by the
    machine's python3 -S, told which CLI calls it and where its configuration (address and
    token, data/hook-config/, 0600) is. Those CLIs run hook commands through a shell,
    so the configuration's name is an environment assignment ahead of it."""
    words = [hook_python(), "-S", str(HOOK_CLIENT), "--engine", engine]
    return f"RELAYBAY_HOOK_CONFIG={shlex.quote(str(config))} {shlex.join(words)}"


def is_relaybay_hook(handler, engine):
    """Whether a hook handler in a CLI's configuration is one `connect ENGINE` wrote."""
    command = handler.get("command") if isinstance(handler, dict) else None
    return isinstance(command, str) and "relaybay-hook" in command and f"--engine {engine}" in command


def without_handlers(hooks, is_ours):
    """A hooks object (event: groups of handlers) without the handlers `is_ours` picks, and
    whether there were any: a group left with no handler goes, and so does an event left with
    no group; every other handler, group and event stays as it was."""
    hooks = dict(hooks or {})
    changed = False
    for event, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list) and any(is_ours(h) for h in handlers):
                changed = True
                handlers = [h for h in handlers if not is_ours(h)]
                if not handlers:
                    continue
                group = {**group, "hooks": handlers}
            kept.append(group)
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    return hooks, changed


def json_text(path, wanted):
    """The text to write for the JSON object `wanted`: the kept copy's own text when it holds
    the same (a disconnect gives the file back as it was, spacing and all), else `wanted`
    written out."""
    try:
        kept = backup_path(real_path(path)).read_text()
    except (OSError, UnicodeDecodeError):
        kept = None
    try:
        if kept is not None and json.loads(kept) == wanted:
            return kept
    except ValueError:
        pass
    return json.dumps(wanted, indent=2) + "\n"


def new_json_text(path, text, config, wanted):
    """The text to write for `wanted` in the file whose text `text` holds `config`: `text` itself
    when nothing changes, else json_text's."""
    return text if text is not None and wanted == config else json_text(path, wanted)
