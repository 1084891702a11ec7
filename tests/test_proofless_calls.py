"""A proven session is spoken for only with its proof (docs/rules.md §1.5): a request without the
process proof that names a running proven session's hook id — which sits in the name of its
transcript file, readable by every agent of that user — gets 403 `process_not_proven` from a
hook, the wake-up wait, a confirmation (X-Relaybay-Printed), messages_list and message_ack, and
changes nothing: the session's items are still offered to the session itself."""

import json

import pytest
from django.test import Client

from messaging.models import SessionMessage
from sessions_app.models import Event, HookLink

from .conftest import TOKEN

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
