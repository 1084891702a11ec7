"""relaybay's MCP server (docs/rules.md §4.1): the six message tools, as a client of the JSON API.

Run it with `python manage.py mcp` or, without Django, `python -m relaybay.mcp.server`.
"""
