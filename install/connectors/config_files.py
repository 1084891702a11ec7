"""What the connectors of CLIs that run relaybay's hook client share: the hook command they write, and changing one
of the person's configuration files the careful way.

A changed file keeps everything relaybay did not add, is written readable by its owner only
(it holds the agents' token), and the file as it was is kept beside it as
`<name>.relaybay-backup`. An unchanged file is not written. A dry run prints what would change,
with the token masked, and writes nothing.
"""

import difflib
import json
import shlex
from pathlib import Path

from django.conf import settings

from core.private_files import write_private
from install.management.commands.claude_config import hook_config_file, hook_config_path, hook_python

HOOK_CLIENT = Path(settings.BASE_DIR) / "bin" / "relaybay-hook"
TOKEN_SHOWN = "<the agents' token>"


def hook_command(target, engine):
    """The command each hook of `engine`'s CLI runs: the checkout's stdlib client, by the
    machine's python3 -S, told which CLI calls it and where its configuration (address and
    token, data/hook-config/, 0600) is. Those CLIs run hook commands through a shell,
    so the configuration's name is an environment assignment ahead of it."""
    values = {"RELAYBAY_URL": target.url, "RELAYBAY_TOKEN": target.token}
    config = hook_config_path(values)[0] if target.dry_run else hook_config_file(values)
    words = [hook_python(), "-S", str(HOOK_CLIENT), "--engine", engine]
    return f"RELAYBAY_HOOK_CONFIG={shlex.quote(str(config))} {shlex.join(words)}"


def is_relaybay_hook(handler, engine):
    """Whether a hook handler in a CLI's configuration is one `connect ENGINE` wrote."""
    command = handler.get("command") if isinstance(handler, dict) else None
    return isinstance(command, str) and "relaybay-hook" in command and f"--engine {engine}" in command


def read(path):
    """The file's text, or None when there is none."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def backup_path(path):
    return path.with_name(path.name + ".relaybay-backup")


def json_text(path, wanted):
    """The text to write for the JSON object `wanted`: the kept copy's own text when it holds
    the same (a disconnect gives the file back as it was, spacing and all), else `wanted`
    written out."""
    kept = read(backup_path(path))
    try:
        if kept is not None and json.loads(kept) == wanted:
            return kept
    except ValueError:
        pass
    return json.dumps(wanted, indent=2) + "\n"


def change(target, path, before, after, what):
    """Make `path` hold `after` (None: no file), knowing it holds `before`; `what` says what
    changes, as the person reads it. Whether anything changed."""
    if after == before:
        target.say(f"  {path}: nothing to change ({what} as wanted already)")
        return False
    backup = backup_path(path)
    if target.dry_run:
        target.say(f"  would change {path}: {what}")
        diff = difflib.unified_diff((before or "").splitlines(), (after or "").splitlines(), str(path), f"{path} (new)", lineterm="")
        for line in diff:
            target.say("    " + line.replace(target.token, TOKEN_SHOWN))
        return True
    if before is not None:
        write_private(backup, before)
    path.parent.mkdir(parents=True, exist_ok=True)
    if after is None:
        path.unlink()
        target.say(f"  removed {path}: {what}" + (f" (the file as it was: {backup})" if before is not None else ""))
    else:
        write_private(path, after)
        target.say(f"  changed {path}: {what}" + (f" (the file as it was: {backup})" if before is not None else ""))
    return True
