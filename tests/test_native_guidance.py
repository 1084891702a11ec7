"""The models are told which channel does what (docs/rules.md §4.9): the SessionStart answer and the MCP
server's instructions say it, in the same words."""

import sys

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.live_server import MANAGE, REPO_ROOT, live_relaybay  # noqa: F401  (fixture)

NATIVE = "Claude Code's own SendMessage reaches only live sessions on this machine and keeps nothing"
RELAYBAY = "relaybay's message_send also waits for idle and ended sessions, and the owner sees it on the board"


@pytest.mark.django_db
def test_the_session_start_answer_says_which_channel_does_what(hook):
    text = hook("SessionStart", "h-1", source="startup")["hookSpecificOutput"]["additionalContext"]
    assert NATIVE in text and RELAYBAY in text


async def test_the_mcp_server_s_instructions_say_it_too(live_relaybay, tmp_path):
    env = {"RELAYBAY_URL": live_relaybay.url, "RELAYBAY_TOKEN": live_relaybay.token, "RELAYBAY_DATA": str(tmp_path / "data")}
    params = StdioServerParameters(command=sys.executable, args=[str(MANAGE), "mcp"], env=env, cwd=str(REPO_ROOT))
    with open(tmp_path / "mcp.log", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                initialized = await session.initialize()
    assert NATIVE in initialized.instructions and RELAYBAY in initialized.instructions
