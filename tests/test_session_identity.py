"""Identity is the Claude Code process; names are labels (docs/rules.md §1.5).

A running process is faked the way relaybay sees one: its hooks report a messaging socket
`…/<pid>.sock` whose pid runs (this test process) and whose file is there. An exited one
reports a socket that is gone."""

import json
import os
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import directory
from sessions_app.directory import Arrival
from sessions_app.models import HookLink, Session

pytestmark = pytest.mark.django_db

PROOF_A = "a" * 64
PROOF_B = "b" * 64
PROOF_M = "d" * 64


@pytest.fixture
def running_socket(tmp_path):
    socket = tmp_path / "cc-socks" / f"{os.getpid()}.sock"
    socket.parent.mkdir()
    socket.write_text("")
    return str(socket)


@pytest.fixture
def exited_socket(tmp_path):
    return str(tmp_path / "gone" / f"{os.getpid()}.sock")


def post(hook, event, session_id, *, proof="", socket="", **fields):
    payload = {"hook_event_name": event, "session_id": session_id, "cwd": fields.pop("cwd", "/work/proj"), **fields}
    if socket:
        payload["relaybay_native"] = {"socket": socket, "session": {"name": fields.get("native_name", "")}}
    headers = {"X-Relaybay-Process": proof} if proof else {}
    response = hook.raw(json.dumps(payload), **headers)
    assert response.status_code == 200, response.content
    return response.json()


def send(client, body, proof="", **fields):
    headers = {"HTTP_X_RELAYBAY_PROCESS": proof} if proof else {}
    from tests.conftest import TOKEN

    response = client.post(
        "/api/message_send", data=json.dumps({"body": body, **fields}), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **headers
    )
    return response.status_code, response.json()


def context(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def test_a_plain_session_is_linked_exactly_from_its_first_hook_under_its_folder_name(hook):
    post(hook, "SessionStart", "h-web", proof=PROOF_A, cwd="/src/web", source="startup")
    link = HookLink.objects.select_related("session").get(hook_session="h-web")
    assert link.exact and link.session.title == "web" and link.session.kind == "hook"


def test_a_second_session_in_one_folder_goes_by_the_folder_name_and_2_while_the_first_runs(hook, running_socket, exited_socket):
    post(hook, "SessionStart", "h-1", proof=PROOF_A, socket=running_socket, cwd="/src/web", source="startup")
    post(hook, "SessionStart", "h-2", proof=PROOF_B, cwd="/src/web", source="startup")
    assert HookLink.objects.get(hook_session="h-2").session.title == "web-2"
    # The same name in another folder is another session's: it is not taken back.
    post(hook, "SessionStart", "h-3", proof=PROOF_M, cwd="/elsewhere/web", source="startup")
    assert HookLink.objects.get(hook_session="h-3").session.title == "web-3"


def test_a_session_started_again_in_a_folder_gets_its_row_and_waiting_mail_back(hook, client, exited_socket):
    post(hook, "SessionStart", "h-old", proof=PROOF_A, socket=exited_socket, cwd="/src/web", source="startup")
    row = HookLink.objects.get(hook_session="h-old").session
    status, answer = send(client, "mail-while-away-31", to="web", session="someone")
    assert status == 200, answer
    post(hook, "SessionStart", "h-new", proof=PROOF_B, cwd="/src/web", source="startup")
    new = HookLink.objects.get(hook_session="h-new")
    assert new.session_id == row.pk and new.exact
    assert HookLink.objects.get(hook_session="h-old").state == "ended"
    assert "mail-while-away-31" in context(post(hook, "UserPromptSubmit", "h-new", proof=PROOF_B, cwd="/src/web", prompt="hi"))


def test_clear_keeps_the_row_of_the_same_process(hook):
    post(hook, "SessionStart", "h-before", proof=PROOF_A, cwd="/src/web", source="startup")
    post(hook, "SessionStart", "h-after", proof=PROOF_A, cwd="/src/web", source="clear")
    before, after = (HookLink.objects.get(hook_session=h) for h in ("h-before", "h-after"))
    assert after.session_id == before.session_id and after.exact
    assert directory.hook_session_of_process(PROOF_A) == "h-after"


def test_a_start_naming_a_running_session_gets_its_own_row_and_the_real_one_keeps_its_mail(hook, client, running_socket):
    post(hook, "SessionStart", "h-alice", proof=PROOF_A, socket=running_socket, relaybay_session="alice", source="startup")
    alice = HookLink.objects.get(hook_session="h-alice").session
    # The impostor has only the shared token.
    answer = post(hook, "SessionStart", "h-impostor", relaybay_session="alice", source="startup")
    assert "another running Claude Code session holds it" in answer["systemMessage"]
    impostor = HookLink.objects.get(hook_session="h-impostor")
    assert impostor.session_id != alice.pk and impostor.session.title == "alice-2"
    real = HookLink.objects.get(hook_session="h-alice")
    assert real.exact and real.live and real.session_id == alice.pk
    assert Session.objects.get(pk=alice.pk).title == "alice"
    # Mail to alice reaches alice, never the newcomer.
    status, _ = send(client, "for-the-real-alice-77", to="alice", session="bob")
    assert status == 200
    assert "for-the-real-alice-77" not in context(post(hook, "UserPromptSubmit", "h-impostor", prompt="x"))
    assert "for-the-real-alice-77" in context(post(hook, "UserPromptSubmit", "h-alice", proof=PROOF_A, prompt="x"))


def test_session_link_cannot_take_a_name_a_running_session_holds(hook, client, running_socket):
    from tests.conftest import TOKEN

    post(hook, "SessionStart", "h-alice", proof=PROOF_A, socket=running_socket, relaybay_session="alice", source="startup")
    post(hook, "SessionStart", "h-other", proof=PROOF_B, cwd="/src/other", source="startup")
    response = client.post(
        "/api/session_link", data=json.dumps({"session": "alice", "hook_session": "h-other"}), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )
    assert response.status_code == 409 and response.json()["code"] == "name_in_use"
    assert HookLink.objects.get(hook_session="h-alice").live


def test_a_restart_of_a_named_session_whose_process_exited_takes_its_row_back(hook, exited_socket):
    post(hook, "SessionStart", "h-alice", proof=PROOF_A, socket=exited_socket, relaybay_session="alice", source="startup")
    alice = HookLink.objects.get(hook_session="h-alice").session_id
    answer = post(hook, "SessionStart", "h-alice-again", proof=PROOF_B, relaybay_session="alice", source="startup")
    assert "systemMessage" not in answer
    assert HookLink.objects.get(hook_session="h-alice-again").session_id == alice
    assert HookLink.objects.get(hook_session="h-alice").state == "ended"


def test_a_hook_naming_another_running_process_s_session_does_not_make_its_calls_pass_as_it(hook, client, running_socket):
    post(hook, "SessionStart", "h-bob", proof=PROOF_B, socket=running_socket, relaybay_session="bob", source="startup")
    post(hook, "SessionStart", "h-carol", proof=PROOF_A, relaybay_session="carol", cwd="/src/carol", source="startup")
    # Another process reports bob's hook id with its own proof ...
    post(hook, "PreToolUse", "h-bob", proof=PROOF_M, tool_name="Bash")
    assert HookLink.objects.get(hook_session="h-bob").process_proof == PROOF_B
    # ... so its calls are not bob's.
    status, answer = send(client, "pretending", proof=PROOF_M, to="carol")
    assert status != 200 or answer.get("sender") != "bob"


def test_a_sender_its_process_proof_identifies_is_verified_and_not_told_to_prove_itself(hook, client):
    post(hook, "SessionStart", "h-api", proof=PROOF_A, cwd="/src/api", source="startup")
    post(hook, "SessionStart", "h-web", proof=PROOF_B, cwd="/src/web", source="startup")
    status, answer = send(client, "hello web", proof=PROOF_A, to="web")
    assert status == 200, answer
    assert answer["sender_verified"] is True and answer["sender"] == "api"
    assert "hook_session" not in (answer["note"] or "")


def test_a_rename_in_claude_code_renames_the_row_and_messages_show_the_current_names(hook, client):
    post(hook, "SessionStart", "h-web", proof=PROOF_B, cwd="/src/web", source="startup")
    post(hook, "SessionStart", "h-api", proof=PROOF_A, cwd="/src/api", source="startup")
    status, sent = send(client, "before the rename", proof=PROOF_A, to="web")
    assert status == 200
    post(hook, "PreToolUse", "h-web", proof=PROOF_B, cwd="/src/web", tool_name="Bash", relaybay_native={"session": {"name": "frontend"}})
    assert HookLink.objects.get(hook_session="h-web").session.title == "frontend"
    from tests.conftest import TOKEN

    # The renamed session lists its own mail: its process proof names it.
    listed = client.get("/api/messages_list", {"session": "frontend"}, HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_X_RELAYBAY_PROCESS=PROOF_B).json()
    [message] = listed["messages"]
    assert message["to"] == "frontend" and message["names_when_sent"]["to"] == "web"


def test_a_generated_native_name_does_not_rename(hook):
    post(hook, "SessionStart", "h-web", proof=PROOF_B, cwd="/src/web", source="startup")
    post(hook, "PreToolUse", "h-web", proof=PROOF_B, cwd="/src/web", tool_name="Bash", relaybay_native={"session": {"name": "web-2c"}})
    assert HookLink.objects.get(hook_session="h-web").session.title == "web"


def test_waking_is_said_only_while_a_waiter_polls(hook):
    post(hook, "SessionStart", "h-web", proof=PROOF_B, cwd="/src/web", source="startup")
    post(hook, "Stop", "h-web", proof=PROOF_B, cwd="/src/web")
    link = HookLink.objects.get(hook_session="h-web")
    HookLink.objects.filter(pk=link.pk).update(waiter="w1", waiter_polled_at=timezone.now())
    assert directory.arrival(Session.objects.get(pk=link.session_id)) == Arrival.WAKING
    # Its hook exited or relaybay restarted: no poll for longer than one can last.
    HookLink.objects.filter(pk=link.pk).update(waiter_polled_at=timezone.now() - timedelta(minutes=5))
    assert directory.arrival(Session.objects.get(pk=link.session_id)) == Arrival.IDLE


def test_a_restarted_plain_session_takes_its_name_back_with_session_link_once_the_old_process_exited(hook, client, exited_socket, running_socket):
    from tests.conftest import TOKEN

    def link_to(name, proof, hook_session):
        return client.post(
            "/api/session_link",
            data=json.dumps({"session": name}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
            HTTP_X_RELAYBAY_PROCESS=proof,
        )

    post(hook, "SessionStart", "h-alice", proof=PROOF_A, socket=exited_socket, relaybay_session="alice", source="startup")
    alice = HookLink.objects.get(hook_session="h-alice").session_id
    # Started again elsewhere, without a name: its own plain row, then it asks for its name.
    post(hook, "SessionStart", "h-new", proof=PROOF_B, cwd="/src/elsewhere", source="startup")
    plain = HookLink.objects.get(hook_session="h-new").session_id
    response = link_to("alice", PROOF_B, "h-new")
    assert response.status_code == 200, response.content
    assert HookLink.objects.get(hook_session="h-new").session_id == alice
    assert not Session.objects.filter(pk=plain).exists()
    # Another process cannot move a running session's link by naming its id without its proof.
    post(hook, "SessionStart", "h-bob", proof=PROOF_M, socket=running_socket, cwd="/src/bob", source="startup")
    response = client.post(
        "/api/session_link",
        data=json.dumps({"session": "carol-new", "hook_session": "h-bob"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert HookLink.objects.get(hook_session="h-bob").session.title in ("bob", "carol-new")
