"""Claude Code (docs/rules.md §1.6): the dialect relaybay's own names come from."""

from .base import MCP_SERVER, Caller, Engine, Wake, mcp_tool_call
from .installed import SERVER, Connection, has_hook_client, mcp_kind, read_json

# install/connectors/claude.py's plugin, from its local marketplace.
PLUGIN = "relaybay@relaybay-local"


# An interactive session woken by an asyncRewake hook starts its turn with a UserPromptSubmit
# whose prompt is Claude Code's notice of the hook, not anything the owner typed (seen, 2.1.328).
REWAKE_PROMPT = "<task-notification>"


class ClaudeCode(Engine):
    name = "claude-code"
    label = "Claude Code"
    connect_name = "claude"
    connector = "claude"  # the plugin, from a local marketplace
    edit_tools = {
        "Edit": ("file_path",),
        "Write": ("file_path",),
        "MultiEdit": ("file_path",),
        "NotebookEdit": ("notebook_path",),
    }
    wake = Wake.HOOK
    caller = Caller.PROVEN
    caller_note = "`bin/relaybay-mcp` (the plugin, `claude_config`) or http; the process proof"
    restart_note = "drops it after about 16 s away (`No such tool` until `/mcp` → Reconnect)"
    process_note = "its messaging socket's pid"
    native_messages = True
    desktop_rows = True
    session_rules = True
    permission_note = (
        "PermissionRequest, held open by the hook client: `hookSpecificOutput.decision`, `behavior` allow "
        "(`updatedPermissions`: for the session) or deny with a `message` (seen, 2.1.328)"
    )
    notes = {
        "tool": " (PostToolUse runs only after SendMessage: one hook process a tool call)",
        "flag": " (its own hooks pass none: a payload that names no engine and no other CLI's own event is its)",
    }

    def is_wake_prompt(self, prompt):
        return prompt.lstrip().startswith(REWAKE_PROMPT)

    def caller_filled_in(self, name, payload):
        """PreToolUse of `mcp__<server>__<tool>` where the server's name ends in "relaybay"
        (`relaybay`, or the plugin's `plugin_relaybay_relaybay`): Claude Code runs the tool with
        the answer's `updatedInput` (seen, 2.1.328). The plugin's http MCP server gets no
        process proof (Claude Code gives a plugin's headersHelper no
        CLAUDE_CODE_MESSAGING_TOKEN), so this is how it learns the caller; for the other
        entries it agrees with the proof."""
        tool_name = payload.get("tool_name")
        if name != "PreToolUse" or not isinstance(tool_name, str) or not tool_name.startswith("mcp__"):
            return None
        server, _, tool = tool_name[len("mcp__"):].rpartition("__")
        found = mcp_tool_call(MCP_SERVER if server.endswith(MCP_SERVER) else server, tool, payload, "updatedInput")
        return {"hookSpecificOutput": {"hookEventName": name, **found}} if found else None


    def connection(self, home):
        """The plugin (its version, enabled or not), claude_config's hooks merged into
        settings.json, and an MCP entry registered for every project (~/.claude.json)."""
        settings_path = home / ".claude" / "settings.json"
        plugins_path = home / ".claude" / "plugins" / "installed_plugins.json"
        registry = home / ".claude.json"
        settings = read_json(settings_path) or {}
        connection = Connection(self.label)
        installs = ((read_json(plugins_path) or {}).get("plugins") or {}).get(PLUGIN) or []
        if installs and isinstance(installs[0], dict):
            enabled = (settings.get("enabledPlugins") or {}).get(PLUGIN, True)
            connection.how.append(f"the relaybay plugin {installs[0].get('version', '?')}" + ("" if enabled else ", disabled"))
            connection.paths += [plugins_path, settings_path]
        env = settings.get("env") if isinstance(settings.get("env"), dict) else {}
        if env.get("RELAYBAY_HOOK_CONFIG") or has_hook_client(settings.get("hooks")):
            connection.how.append("claude_config's hooks in settings.json")
            connection.paths.append(settings_path)
        server = ((read_json(registry) or {}).get("mcpServers") or {}).get(SERVER)
        if server is not None:
            connection.how.append(f"MCP server for every project: {mcp_kind(server)}")
            connection.paths.append(registry)
        return connection if connection.how else None


ENGINE = ClaudeCode()
