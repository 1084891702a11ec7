"""A proven session is spoken for only with its proof (docs/rules.md §1.5): a request without the
process proof that names a running proven session's hook id — which sits in the name of its
transcript file, readable by every agent of that user — gets 403 `process_not_proven` from a
hook, the wake-up wait, a confirmation (X-Relaybay-Printed), message_send, messages_list,
message_ack (over the JSON API and both MCP transports), a reservation and a permission
request's wait, and changes nothing: the session's items are still offered to the session
itself. One function decides it (sessions_app.identity.access_link): it is the only code that
names the refusal, and every surface answers with it."""

import json
import re
import secrets
import subprocess

import pytest
from django.test import Client

from messaging.models import SessionMessage
from relaybay_hook.proof import PROCESS_HEADER, process_proof
from sessions_app.models import Event, FileReservation, HookLink

from .conftest import TOKEN
from .live_server import REPO_ROOT, live_relaybay  # noqa: F401  (fixture)
from .test_mcp_server import error_text, http_session, stdio_session

pytestmark = pytest.mark.django_db(transaction=True)

PROOF_A, PROOF_B = "a" * 64, "b" * 64
SECRET = "alice's plans for the release"


def hook(client, event, hook_session, *, proof="", printed="", **fields):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}", "HTTP_X_RELAYBAY_CONFIRMING": "1"}
    if proof:
        headers["HTTP_X_RELAYBAY_PROCESS"] = proof
    if printed:
        headers["HTTP_X_RELAYBAY_PRINTED"] = printed
    payload = {"hook_event_name": event, "session_id": hook_session, "cwd": "/work/proj", **fields}
    return client.post("/api/hooks", json.dumps(payload), content_type="application/json", **headers)


def refused(response):
    assert (response.status_code, response.json()["code"]) == (403, "process_not_proven"), response.content
    assert "relaybay acts for it only with that proof" in response.json()["detail"]
    return True


@pytest.fixture
def alice_has_mail():
    """alice and bob run, each proven by its process; bob's message waits for alice."""
    client = Client()
    for hook_session, name, proof in (("hook-a", "alice", PROOF_A), ("hook-b", "bob", PROOF_B)):
        assert hook(client, "SessionStart", hook_session, proof=proof, source="startup", relaybay_session=name).status_code == 200
        assert hook(client, "UserPromptSubmit", hook_session, proof=proof, prompt="go").status_code == 200
    sent = client.post(
        "/api/message_send",
        json.dumps({"body": SECRET, "to": "alice", "hook_session": "hook-b"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
        HTTP_X_RELAYBAY_PROCESS=PROOF_B,
    )
    assert sent.status_code == 200, sent.content
    return client


def untouched():
    message = SessionMessage.objects.get()
    assert (message.delivered_at, message.read_at, message.confirmed_at) == (None, None, None)
    return message


def test_a_hook_without_the_proof_is_refused_and_the_mail_stays_for_the_session(alice_has_mail):
    link = HookLink.objects.get(hook_session="hook-a")
    assert refused(hook(alice_has_mail, "PostToolUse", "hook-a", tool_name="Bash", tool_input={"command": "ls"}))
    untouched()
    # Nothing of the refused hook was written: no event, no new state.
    assert not Event.objects.filter(name="hook.PostToolUse").exists()
    assert HookLink.objects.get(pk=link.pk).last_event_at == link.last_event_at
    answer = hook(alice_has_mail, "PostToolUse", "hook-a", proof=PROOF_A, tool_name="Bash", tool_input={"command": "ls"})
    assert SECRET in json.dumps(answer.json())


def test_a_confirmation_without_the_proof_is_refused_and_the_items_stay_offered(alice_has_mail):
    offered = hook(alice_has_mail, "PostToolUse", "hook-a", proof=PROOF_A, tool_name="Bash", tool_input={"command": "ls"})
    handles = offered.headers["X-Relaybay-Items"]
    assert refused(hook(alice_has_mail, "PostToolUse", "hook-a", printed=handles, tool_name="Bash", tool_input={}))
    assert SessionMessage.objects.get().confirmed_at is None
    waited = alice_has_mail.get("/api/hooks/wait", {"session_id": "hook-a", "timeout": 0}, HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_X_RELAYBAY_PRINTED=handles)
    assert refused(waited)
    assert SessionMessage.objects.get().confirmed_at is None
    confirmed = hook(alice_has_mail, "PostToolUse", "hook-a", proof=PROOF_A, printed=handles, tool_name="Bash", tool_input={})
    assert confirmed.headers["X-Relaybay-Confirmed"] == handles
    assert SessionMessage.objects.get().confirmed_at is not None


def test_a_wake_up_wait_without_the_proof_is_refused(alice_has_mail):
    hook(alice_has_mail, "Stop", "hook-a", proof=PROOF_A)
    assert refused(alice_has_mail.get("/api/hooks/wait", {"session_id": "hook-a", "timeout": 0}, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"))
    assert HookLink.objects.get(hook_session="hook-a").waiter == ""


def test_listing_or_acknowledging_its_mail_by_its_hook_id_alone_is_refused(alice_has_mail):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert refused(alice_has_mail.get("/api/messages_list", {"session": "alice", "hook_session": "hook-a"}, **auth))
    ack = {"session": "alice", "hook_session": "hook-a"}
    assert refused(alice_has_mail.post("/api/message_ack", json.dumps(ack), content_type="application/json", **auth))
    untouched()
    listed = alice_has_mail.get("/api/messages_list", {"session": "alice"}, HTTP_X_RELAYBAY_PROCESS=PROOF_A, **auth)
    assert [json.loads(m["body"]) for m in listed.json()["messages"]] == [SECRET]


def test_a_session_whose_process_has_exited_is_taken_back_without_a_proof(alice_has_mail):
    # Not running: heard from long ago and no messaging socket. A restart without the proof
    # (native messaging off) takes its session back as before.
    HookLink.objects.filter(hook_session="hook-a").update(last_event_at="2020-01-01T00:00:00Z", waiter_polled_at=None)
    answer = hook(alice_has_mail, "PostToolUse", "hook-a", tool_name="Bash", tool_input={"command": "ls"})
    assert answer.status_code == 200 and SECRET in json.dumps(answer.json())


def test_another_agent_can_neither_take_nor_settle_a_proven_sessions_permission_request(alice_has_mail):
    from approvals.models import Request

    from .conftest import OWNER_TOKEN

    asked = hook(alice_has_mail, "PermissionRequest", "hook-a", proof=PROOF_A, permission_mode="default", relaybay_waits=True, tool_name="Bash", tool_input={"command": "ls"})
    pk = asked.json()["relaybay_request"]
    agent = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    assert refused(alice_has_mail.get(f"/api/approvals/{pk}/wait", {"timeout": 0}, **agent))
    assert refused(alice_has_mail.get(f"/api/approvals/{pk}/wait", {"timeout": 0}, HTTP_X_RELAYBAY_PROCESS=PROOF_B, **agent))
    assert refused(alice_has_mail.post(f"/api/approvals/{pk}/withdrawn", "{}", content_type="application/json", HTTP_X_RELAYBAY_PROCESS=PROOF_B, **agent))
    assert Request.objects.get(pk=pk).state == "pending"
    decided = alice_has_mail.post(f"/api/approvals/{pk}", json.dumps({"decision": "allow"}), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {OWNER_TOKEN}")
    assert decided.status_code == 200, decided.content
    # The hook that holds it, with its session's proof, is handed the owner's answer.
    taken = alice_has_mail.get(f"/api/approvals/{pk}/wait", {"timeout": 0}, HTTP_X_RELAYBAY_PROCESS=PROOF_A, **agent)
    assert taken.status_code == 200 and taken.json()["state"] == "allowed", taken.content


def agent(client, path, data, proof=""):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    if proof:
        headers["HTTP_X_RELAYBAY_PROCESS"] = proof
    return client.post(f"/api/{path}", json.dumps(data), content_type="application/json", **headers)


def test_sending_as_it_by_its_hook_id_is_refused_without_its_proof_and_with_another(alice_has_mail):
    for claim in ({"hook_session": "hook-a"}, {"session": "alice", "hook_session": "hook-a"}):
        assert refused(agent(alice_has_mail, "message_send", {"body": "as alice", "to": "bob", **claim}))
        # Another running process's proof is bob's own: it writes as bob, never as alice.
        other = agent(alice_has_mail, "message_send", {"body": "as alice", "to": "bob", **claim}, proof=PROOF_B)
        assert (other.status_code, other.json()["code"]) == (403, "sender_refused"), other.content
        assert "belongs to another running Claude Code process" in other.json()["detail"]
    untouched()
    own = agent(alice_has_mail, "message_send", {"body": "from alice", "to": "bob", "hook_session": "hook-a"}, proof=PROOF_A)
    assert own.status_code == 200 and own.json()["sender_verified"] is True, own.content


def test_reserving_files_by_its_hook_id_alone_is_refused(alice_has_mail):
    assert refused(agent(alice_has_mail, "files_reserve", {"paths": ["src/app.py"], "hook_session": "hook-a"}))
    assert not FileReservation.objects.exists()
    held = agent(alice_has_mail, "files_reserve", {"paths": ["src/app.py"], "hook_session": "hook-a"}, proof=PROOF_A)
    assert held.status_code == 200, held.content
    assert refused(agent(alice_has_mail, "files_release", {"paths": ["src/app.py"], "hook_session": "hook-a"}))
    assert FileReservation.objects.count() == 1


def test_the_refusal_is_written_in_one_function():
    # Every surface above answers process_not_proven; only sessions_app.identity names it
    # (core/errors.py declares the codes and their status).
    tracked = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout.split()
    naming = {
        path
        for path in tracked
        if not path.startswith("tests/") and re.search(r"ErrorCode\.(PROCESS_NOT_PROVEN|OTHER_MACHINE)\b", (REPO_ROOT / path).read_text())
    }
    assert naming == {"core/errors.py", "sessions_app/identity.py"}


# Both MCP transports, against a running relaybay


@pytest.fixture
def alice_running(live_relaybay):
    """alice, a running Claude Code process proven by its messaging token, on the live relaybay
    (shared by the module: a fresh name)."""
    alice = f"alice-{secrets.token_hex(3)}"
    token = secrets.token_hex(16)
    live_relaybay.start_session(f"hook-{alice}", alice, headers={PROCESS_HEADER: process_proof(token)})
    return alice, token


def refused_tool(result):
    text = error_text(result)
    assert text.endswith("(error code: process_not_proven)") and "relaybay acts for it only with that proof" in text, text
    return True


async def test_its_tools_over_http_refuse_a_caller_without_its_proof(live_relaybay, alice_running, tmp_path):
    alice, token = alice_running
    hook_session = f"hook-{alice}"
    async with http_session(live_relaybay, tmp_path) as mcp:
        assert refused_tool(await mcp.call_tool("message_send", {"body": "as alice", "to": alice, "hook_session": hook_session}))
        assert refused_tool(await mcp.call_tool("messages_list", {"session": alice, "hook_session": hook_session}))
        assert refused_tool(await mcp.call_tool("message_ack", {"session": alice, "hook_session": hook_session}))
        assert refused_tool(await mcp.call_tool("files_reserve", {"paths": ["src/app.py"], "hook_session": hook_session}))
    async with http_session(live_relaybay, tmp_path, headers={PROCESS_HEADER: process_proof(token)}) as mcp:
        own = await mcp.call_tool("messages_list", {"session": alice})
    assert not own.is_error, own.content[0].text


async def test_the_stdio_server_of_a_process_without_its_proof_is_refused(live_relaybay, alice_running, tmp_path):
    alice, token = alice_running
    # Started with alice's session id but not its process's messaging token.
    async with stdio_session(live_relaybay, tmp_path, claude_session=f"hook-{alice}") as mcp:
        assert refused_tool(await mcp.call_tool("message_send", {"body": "as alice", "to": alice}))
        assert refused_tool(await mcp.call_tool("messages_list", {"session": alice}))
        assert refused_tool(await mcp.call_tool("message_ack", {"session": alice}))
    async with stdio_session(live_relaybay, tmp_path, claude_session=f"hook-{alice}", messaging_token=token) as mcp:
        own = await mcp.call_tool("messages_list", {"session": alice})
    assert not own.is_error, own.content[0].text
