"""relaybay's MCP server (docs/rules.md §4.1): its tools (tools.py), served by relaybay
itself over streamable HTTP at /mcp (http.py) or over stdio as a client of the JSON API (stdio.py).

Run the stdio server with `python manage.py mcp` or, without Django, `python -m mcp_server.stdio`.
"""
