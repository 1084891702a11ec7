"""Mail is read by its session or the owner (docs/rules.md §4.4, §6): messages_list of a row with an
exact link needs that session's proof — its process proof header, or its own live hook id when no
running process proves the link, as message_ack does — through the JSON route and the MCP tool alike; the owner token lists any
row, and the board shows the owner every message."""

import json
import secrets

import pytest

from relaybay_hook.proof import PROCESS_HEADER, process_proof
from tests.board_fixtures import board, owner  # noqa: F401
from tests.conftest import OWNER_TOKEN, TOKEN
from tests.live_server import live_relaybay  # noqa: F401  (fixture)
from tests.message_personas import process_exited
from tests.test_mcp_server import answer, error_text, http_session, names, stdio_session  # noqa: F401

PROOF_A, PROOF_B = "a" * 64, "b" * 64
SECRET = "alice's plans for the release"


def start(client, hook_session, name, proof):
    """A SessionStart as the hook client posts it, with the process proof."""
    payload = {"hook_event_name": "SessionStart", "session_id": hook_session, "cwd": "/work/proj", "source": "startup", "relaybay_session": name}
    response = client.post(
        "/api/hooks", json.dumps(payload), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_X_RELAYBAY_PROCESS=proof
    )
    assert response.status_code == 200, response.content


def listing(client, session, token=TOKEN, proof=None, **params):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if proof:
        headers["HTTP_X_RELAYBAY_PROCESS"] = proof
    return client.get("/api/messages_list", {"session": session, **params}, **headers)


@pytest.fixture
def mail(client, db):
    """alice and bob, each a running Claude Code process; bob writes to alice."""
    start(client, "hook-a", "alice", PROOF_A)
    start(client, "hook-b", "bob", PROOF_B)
    body = {"body": SECRET, "to": "alice", "session": "bob", "hook_session": "hook-b"}
    sent = client.post(
        "/api/message_send", json.dumps(body), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_X_RELAYBAY_PROCESS=PROOF_B
    )
    assert sent.status_code == 200, sent.content


def refused(response):
    assert (response.status_code, response.json()["code"]) == (403, "read_not_proven"), response.content
    assert '"alice" has an exact hook link: its mail is listed for that session alone' in response.json()["detail"]
    return True


def bodies(response):
    assert response.status_code == 200, response.content
    return [json.loads(m["body"]) for m in response.json()["messages"]]


def test_a_linked_session_s_mail_is_listed_for_its_own_proof_alone(client, mail):
    assert refused(listing(client, "alice"))
    assert refused(listing(client, "alice", proof=PROOF_B))
    assert refused(listing(client, "alice", hook_session="hook-b"))
    assert refused(listing(client, "alice", box="sent"))
    assert bodies(listing(client, "alice", proof=PROOF_A)) == [SECRET]
    # Its hook id alone does not do while its process runs and proves it (docs/rules.md §1.5).
    assert listing(client, "alice", hook_session="hook-a").json()["code"] == "process_not_proven"
    assert bodies(listing(client, "alice", hook_session="hook-a", proof=PROOF_A)) == [SECRET]
    # bob lists what it sent, proven the same way.
    assert bodies(listing(client, "bob", proof=PROOF_B, box="sent")) == [SECRET]


def test_after_a_restart_only_the_new_process_lists_the_mail(client, mail):
    process_exited("hook-a")
    start(client, "hook-a2", "alice", "c" * 64)
    assert refused(listing(client, "alice", hook_session="hook-a"))
    assert refused(listing(client, "alice", proof=PROOF_A))
    assert bodies(listing(client, "alice", proof="c" * 64)) == [SECRET]


def test_the_owner_token_lists_any_session_s_mail(client, mail):
    assert bodies(listing(client, "alice", token=OWNER_TOKEN)) == [SECRET]
    assert bodies(listing(client, "bob", token=OWNER_TOKEN, box="sent")) == [SECRET]


def test_the_mail_of_a_row_that_never_linked_itself_is_listed_for_anyone_naming_it(client, mail):
    desk = {"desktop_id": "desk-1", "title": "planner"}
    assert client.post("/api/desktop", json.dumps(desk), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    note = {"body": "for the planner", "to": "planner", "session": "bob", "hook_session": "hook-b"}
    client.post("/api/message_send", json.dumps(note), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_X_RELAYBAY_PROCESS=PROOF_B)
    assert bodies(listing(client, "planner")) == ["for the planner"]
    assert refused(listing(client, "alice"))


def test_the_board_shows_the_owner_the_mail_an_agent_cannot_list(client, board, mail):
    assert refused(listing(client, "alice"))
    page = board.get("/messages/", {"session": "alice"}).content.decode()
    assert SECRET.replace("'", "&#x27;") in page


# The MCP tool, over both transports, against a running relaybay


@pytest.fixture
def linked(live_relaybay, names):
    """Two running Claude Code processes on the live relaybay (shared by the module: fresh names
    and proofs); the second writes to the first. Their names, {PROCESS_HEADER: proof}s and messaging tokens."""
    alice, bob = names("alice"), names("bob")
    tokens = secrets.token_hex(16), secrets.token_hex(16)
    proofs = tuple({PROCESS_HEADER: process_proof(token)} for token in tokens)
    live_relaybay.start_session(f"hook-{alice}", alice, headers=proofs[0])
    live_relaybay.start_session(f"hook-{bob}", bob, headers=proofs[1])
    status, sent = live_relaybay.post("/message_send", {"body": SECRET, "to": alice, "session": bob, "hook_session": f"hook-{bob}"}, headers=proofs[1])
    assert status == 200, sent
    return alice, bob, proofs, tokens


async def test_the_mcp_tool_over_http_lists_the_caller_s_own_mail_and_no_one_else_s(live_relaybay, linked, tmp_path):
    alice, bob, (proof_a, proof_b), _ = linked
    async with http_session(live_relaybay, tmp_path, headers=proof_b) as mcp:
        other = error_text(await mcp.call_tool("messages_list", {"session": alice}))
        own = answer(await mcp.call_tool("messages_list", {"session": bob, "box": "sent"}))
    assert other.endswith("(error code: read_not_proven)") and f'"{alice}" has an exact hook link' in other
    assert [json.loads(m["body"]) for m in own["messages"]] == [SECRET]
    async with http_session(live_relaybay, tmp_path, headers=proof_a) as mcp:
        mine = answer(await mcp.call_tool("messages_list", {"session": alice}))
    assert [json.loads(m["body"]) for m in mine["messages"]] == [SECRET]


async def test_the_stdio_mcp_server_lists_the_caller_s_own_mail_and_no_one_else_s(live_relaybay, linked, tmp_path):
    alice, bob, _, (_, bob_token) = linked
    # Started by bob's claude process: its messaging token proves it.
    async with stdio_session(live_relaybay, tmp_path, claude_session=f"hook-{bob}", messaging_token=bob_token) as mcp:
        other = error_text(await mcp.call_tool("messages_list", {"session": alice}))
        own = answer(await mcp.call_tool("messages_list", {"session": bob, "box": "sent"}))
    assert other.endswith("(error code: read_not_proven)")
    assert [json.loads(m["body"]) for m in own["messages"]] == [SECRET]


async def test_the_owner_token_lists_any_session_s_mail_through_mcp(live_relaybay, linked, tmp_path):
    alice, _, _, _ = linked
    owner = {"Authorization": f"Bearer {live_relaybay.owner_token}"}
    async with http_session(live_relaybay, tmp_path, headers=owner) as mcp:
        listed = answer(await mcp.call_tool("messages_list", {"session": alice}))
    assert [json.loads(m["body"]) for m in listed["messages"]] == [SECRET]
