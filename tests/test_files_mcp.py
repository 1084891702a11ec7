"""The files' MCP tools (docs/rules.md §7.3), driven by the official MCP SDK client over both
transports, against a real relaybay: files_reserve, files_list and files_release give the JSON
routes' answers and errors, and a reservation made through them holds at another session's hook."""

import pytest

from relaybay_hook.proof import PROCESS_HEADER, process_proof

from .file_personas import edit_payload, git
from .test_mcp_server import answer, error_text, mcp_session, names  # noqa: F401
from tests.live_server import live_relaybay  # noqa: F401  (fixture)


@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    git("init", "-q", cwd=repo)
    return repo.resolve()


@pytest.fixture
def editors(live_relaybay, names, checkout):
    """Two Claude Code sessions working in one checkout, each proven by its process's messaging
    token (messaging_token), which its MCP server carries too."""
    alpha, bravo = names("alpha"), names("bravo")
    for name in (alpha, bravo):
        live_relaybay.start_session(f"hook-{name}", name, cwd=str(checkout), headers=proof_of(name))
    return alpha, bravo


def messaging_token(name):
    return f"messaging-token-of-{name}"


def proof_of(name):
    return {PROCESS_HEADER: process_proof(messaging_token(name))}


def edit(live, name, checkout, relative):
    status, answer_ = live.post("/hooks", edit_payload(f"hook-{name}", checkout, checkout / relative, tool="Write", content="x"), headers=proof_of(name))
    assert status == 200
    return answer_.get("hookSpecificOutput", {})


async def test_a_reservation_made_with_the_tool_denies_another_sessions_edit_until_released(mcp_session, live_relaybay, editors, checkout, tmp_path):
    alpha, bravo = editors
    async with mcp_session(live_relaybay, tmp_path, claude_session=f"hook-{alpha}", messaging_token=messaging_token(alpha)) as mcp:
        reserved = answer(await mcp.call_tool("files_reserve", {"paths": ["src/*.py"], "reason": "splitting the app"}))
        [held] = reserved["reservations"]
        assert (reserved["root"], held["path"], held["exclusive"], held["holder"]) == (str(checkout), "src/*.py", True, alpha)
        denied = edit(live_relaybay, bravo, checkout, "src/app.py")
        assert denied["permissionDecision"] == "deny"
        assert f'"{alpha}"' in denied["permissionDecisionReason"] and '"splitting the app"' in denied["permissionDecisionReason"]
        async with mcp_session(live_relaybay, tmp_path, claude_session=f"hook-{bravo}", messaging_token=messaging_token(bravo)) as theirs:
            listed = answer(await theirs.call_tool("files_list", {}))
        assert [(r["path"], r["holder"], r["mine"]) for r in listed["reservations"]] == [("src/*.py", alpha, False)]
        released = answer(await mcp.call_tool("files_release", {}))
        assert released["released"] == [{"path": "src/*.py", "root": str(checkout)}]
    assert "permissionDecision" not in edit(live_relaybay, bravo, checkout, "src/app.py")


@pytest.mark.parametrize(
    "arguments, code, phrase",
    [
        ({"paths": ["/"]}, "invalid_path", "names your whole working tree"),
        ({"paths": ["**"]}, "invalid_path", "matches every file of your working tree"),
        ({"paths": ["src/app.py"], "ttl_seconds": 0}, "invalid_input", "ttl_seconds must be a whole number of seconds from 60"),
    ],
)
async def test_a_refused_reservation_is_the_apis_sentence_and_code(mcp_session, live_relaybay, editors, tmp_path, arguments, code, phrase):
    alpha, _ = editors
    async with mcp_session(live_relaybay, tmp_path, claude_session=f"hook-{alpha}", messaging_token=messaging_token(alpha)) as mcp:
        refused = error_text(await mcp.call_tool("files_reserve", arguments))
    status, api = live_relaybay.post("/files_reserve", {**arguments, "hook_session": f"hook-{alpha}"}, headers=proof_of(alpha))
    assert (status // 100, api["code"]) == (4, code) and phrase in api["detail"]
    assert refused.endswith(f": {api['detail']} (error code: {code})")
    status, listed = live_relaybay.call("GET", "/files_list", headers=proof_of(alpha), hook_session=f"hook-{alpha}")
    assert listed["reservations"] == []


async def test_files_reserve_outside_claude_code_says_which_session_to_name(mcp_session, live_relaybay, tmp_path):
    async with mcp_session(live_relaybay, tmp_path) as mcp:
        refused = error_text(await mcp.call_tool("files_reserve", {"paths": ["src/app.py"]}))
    assert "pass hook_session" in refused and refused.endswith("(error code: invalid_input)")
