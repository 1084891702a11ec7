"""How an agent CLI on this machine is connected to relaybay, read from the CLI's own files
(nothing is run): what `manage.py status` and the board's footer say (board/machine.py). Each
engine reads its own files (`Engine.connection`); these are the pieces they share. The marks
read are the ones `manage.py connect` and `claude_config` write (install/connectors/;
tests/test_machine_status.py checks that they agree).
"""

import json
from dataclasses import dataclass, field

SERVER = "relaybay"  # the MCP entry's name in every CLI's configuration
HOOK_CLIENT = "relaybay-hook"
FORWARDER = "relaybay-mcp"


@dataclass
class Connection:
    cli: str  # as people call it
    how: list = field(default_factory=list)  # what connects it, each a short phrase
    paths: list = field(default_factory=list)  # the files that say so

    def __str__(self):
        return f"{self.cli}: {'; '.join(self.how)} ({', '.join(str(p) for p in dict.fromkeys(self.paths))})"


def read_json(path):
    """The file's JSON object, or None."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def has_hook_client(hooks):
    return isinstance(hooks, dict) and HOOK_CLIENT in json.dumps(hooks)


def mcp_kind(server):
    """What an MCP entry starts: the forwarder, relaybay's http server, or the SDK's stdio server."""
    if not isinstance(server, dict):
        return None
    words = [str(server.get("command", "")), *map(str, server.get("args") or [])]
    if any(word.endswith(FORWARDER) for word in words):
        return "bin/relaybay-mcp"
    if "mcp_server.stdio" in words or words[-1:] == ["mcp"]:
        return "the SDK's stdio server"
    if server.get("url") or server.get("httpUrl"):
        return "http /mcp"
    return "an MCP server of its own"


def json_settings_connection(engine, home):
    """A CLI whose hooks and MCP servers are in one JSON settings file (engine.settings)."""
    declared = engine.settings
    path = home / declared.path
    settings = read_json(path) or {}
    connection = Connection(engine.label, paths=[path])
    if has_hook_client(settings.get("hooks")):
        connection.how.append("hooks")
    server = (settings.get(declared.servers_key) or {}).get(SERVER)
    if isinstance(server, dict) and f"manage.py connect {engine.connect_name}" in str(server.get("description", "")):
        connection.how.append(f"MCP server: {mcp_kind(server)}")
    return connection if connection.how else None
