from django.apps import AppConfig


class McpServerConfig(AppConfig):
    """relaybay's MCP server, an adapter above messaging: its tools run the JSON routes' bodies."""

    name = "mcp_server"
    verbose_name = "MCP server"
