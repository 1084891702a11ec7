"""Codex CLI 0.171.0 (docs/rules.md §1.6): Claude Code's dialect — the same event names, payload
fields and answers (seen) — with its own edit tool, its own way of naming the caller of an MCP
tool, and an idle session woken through `codex queue` while the waiter its Stop hook leaves runs
(relaybay_hook/codex_wake.py)."""

import os
import tomllib
from pathlib import Path

from relaybay_hook.codex_wake import NUDGE

from .base import Engine, Wake
from .installed import SERVER, Connection, has_hook_client, mcp_kind, read_json

# Where Codex names the calling session in a tool call's _meta (seen, 0.171.0).
MCP_META = "x-codex-turn-metadata"
# The lines of a patch in apply_patch's format that name a file.
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
PATCHED_MAX = 200  # files of one patch the edit check looks at


class Codex(Engine):
    name = "codex"
    label = "Codex"
    hue = 150
    connect_name = "codex"
    connector = "codex"  # $CODEX_HOME/hooks.json and config.toml
    context_reaches = "`additionalContext` (a developer message)"
    # apply_patch's PreToolUse holds the patch in `command`, which names its files (seen).
    edit_tools = {"apply_patch": ("command",)}
    patch_tools = frozenset({"apply_patch"})
    wake = Wake.WAITER
    idle_note = (
        "What is sent to you arrives at your next prompt or tool call; while you are idle, relaybay starts a turn "
        "with it (codex queue) if the owner connected Codex with its waiter."
    )
    unheard_note = (
        "Codex runs only hooks you trusted and skips the others without a word. In that session type /hooks and "
        "trust relaybay's hooks (the ones running relaybay-hook --engine codex); until then nothing reaches it and "
        "it is not on the board."
    )
    caller_note = "`bin/relaybay-mcp`; the session id Codex writes in every call's `_meta`"
    restart_note = "keeps it: a call while relaybay is down fails (`Transport send error … error sending request for url`), the next after it works"
    permission_note = (
        "PermissionRequest, held open as Claude Code's, but Codex shows its own dialog only once the hook has ended; "
        "no rule for the session (`updatedPermissions`, `updatedInput` and `interrupt` make it fail closed; seen, 0.171.0)"
    )
    notes = {"stop": " (the reason comes back as `<hook_prompt>`)", "wake": ": `codex queue … --resume`"}

    def is_wake_prompt(self, prompt):
        """The fixed prompt its waiter wakes the session with (relaybay_hook/codex_wake.py)."""
        return prompt.strip() == NUDGE

    def patched_files(self, patch):
        """The files a patch in apply_patch's format adds, updates, deletes or moves to, each
        once, in order, at most PATCHED_MAX."""
        found = []
        for line in patch.splitlines():
            header = next((h for h in PATCH_HEADERS if line.startswith(h)), None)
            path = line[len(header):].strip() if header else ""
            if path and path not in found:
                found.append(path)
                if len(found) == PATCHED_MAX:
                    break
        return found

    def mcp_session(self, meta):
        """The session id Codex puts in every tool call's `_meta` (its `x-codex-turn-metadata`).
        The CLI writes it, not the model (docs/mcp.md)."""
        turn = (meta or {}).get(MCP_META)
        return turn.get("session_id") if isinstance(turn, dict) else None


    def connection(self, home):
        """relaybay's hooks in $CODEX_HOME/hooks.json and its block in config.toml."""
        configured = os.environ.get("CODEX_HOME")
        codex_home = Path(configured).expanduser() if configured else home / ".codex"
        config_path, hooks_path = codex_home / "config.toml", codex_home / "hooks.json"
        connection = Connection(self.label)
        if has_hook_client((read_json(hooks_path) or {}).get("hooks")):
            connection.how.append("hooks")
            connection.paths.append(hooks_path)
        try:
            server = (tomllib.loads(config_path.read_text()).get("mcp_servers") or {}).get(SERVER)
        except (OSError, tomllib.TOMLDecodeError):
            server = None
        # relaybay's entry is the forwarder (or, from an earlier connect, its /mcp over http).
        if mcp_kind(server) in ("bin/relaybay-mcp", "http /mcp"):
            connection.how.append(f"MCP server: {mcp_kind(server)}")
            connection.paths.append(config_path)
        return connection if connection.how else None


ENGINE = Codex()
