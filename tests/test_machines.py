"""Machines (docs/rules.md §6): `manage.py machine add|revoke|list`; a machine's token is an agents'
credential for that machine's own sessions — a session its process proves through that token —
and is refused for another machine's (403 `other_machine` from hooks, the wait, mail, acks,
sends and reservations, its proof no help), whose liveness is
what it reports, never a pid looked up here; a revoked token gets 401 at once; the agents' token
stays the credential of relaybay's own machine."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from core.auth import machine_token_digest
from machines.models import Machine
from messaging.models import SessionMessage
from sessions_app.models import HookLink

from .board_fixtures import board, owner  # noqa: F401  (fixtures)
from .conftest import TOKEN

pytestmark = pytest.mark.django_db(transaction=True)

PROOF_A, PROOF_B, PROOF_HERE = "a" * 64, "b" * 64, "c" * 64
SECRET = "the plans, for alice's eyes"


def machine(*args):
    out = StringIO()
    call_command("machine", *args, stdout=out)
    return out.getvalue()


def add(name):
    return json.loads(machine("add", name, "--json"))


def headers(token, proof=""):
    sent = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if proof:
        sent["HTTP_X_RELAYBAY_PROCESS"] = proof
    return sent


def hook(token, proof, event, hook_session, **fields):
    payload = {"hook_event_name": event, "session_id": hook_session, "cwd": "/work/proj", **fields}
    return Client().post("/api/hooks", json.dumps(payload), content_type="application/json", **headers(token, proof))


def refused(response, code="other_machine"):
    assert (response.status_code, response.json()["code"]) == (403, code), response.content
    return True


def test_adding_a_machine_prints_its_name_token_and_the_command_without_the_token():
    added = add("laptop")
    assert set(added) >= {"name", "token", "command"} and added["name"] == "laptop"
    assert added["token"] not in added["command"] and "RELAYBAY_TOKEN_FILE" in added["command"]
    row = Machine.objects.get(name="laptop")
    assert row.token_digest == machine_token_digest(added["token"]) and added["token"] not in row.token_digest
    with pytest.raises(CommandError, match="named \"laptop\" already"):
        add("laptop")
    assert [m["name"] for m in json.loads(machine("list", "--json"))] == ["laptop"]


def test_a_machine_token_calls_what_agents_call_until_it_is_revoked():
    laptop, box = add("laptop"), add("box")
    client = Client()
    assert client.get("/api/sessions_list", **headers(laptop["token"])).status_code == 200
    assert Machine.objects.get(name="laptop").last_heard_at is not None and Machine.objects.get(name="box").last_heard_at is None
    machine("revoke", "laptop")
    assert client.get("/api/sessions_list", **headers(laptop["token"])).status_code == 401
    assert hook(laptop["token"], PROOF_A, "SessionStart", "hook-x", source="startup").status_code == 401
    # The others are untouched.
    assert client.get("/api/sessions_list", **headers(box["token"])).status_code == 200
    assert client.get("/api/sessions_list", **headers(TOKEN)).status_code == 200
    assert "revoked" in machine("list")


@pytest.fixture
def alice_on_the_laptop():
    """alice runs on the laptop, proven by its process through the laptop's token; bob, on
    relaybay's own machine, has written to it."""
    laptop, box = add("laptop"), add("box")
    assert hook(laptop["token"], PROOF_A, "SessionStart", "hook-a", source="startup", relaybay_session="alice").status_code == 200
    assert hook(laptop["token"], PROOF_A, "UserPromptSubmit", "hook-a", prompt="go").status_code == 200
    assert hook(TOKEN, PROOF_HERE, "SessionStart", "hook-b", source="startup", relaybay_session="bob").status_code == 200
    sent = Client().post(
        "/api/message_send", json.dumps({"body": SECRET, "to": "alice"}), content_type="application/json", **headers(TOKEN, PROOF_HERE)
    )
    assert sent.status_code == 200, sent.content
    return laptop, box


def test_another_machine_cannot_act_for_its_session_even_with_a_proof(alice_on_the_laptop):
    laptop, box = alice_on_the_laptop
    client = Client()
    for token, proof in ((box["token"], PROOF_B), (TOKEN, PROOF_B)):
        assert refused(hook(token, proof, "PostToolUse", "hook-a", tool_name="Bash", tool_input={}))
        assert refused(client.get("/api/messages_list", {"session": "alice", "hook_session": "hook-a"}, **headers(token, proof)))
        ack = json.dumps({"session": "alice", "hook_session": "hook-a"})
        assert refused(client.post("/api/message_ack", ack, content_type="application/json", **headers(token, proof)))
        assert refused(client.get("/api/hooks/wait", {"session_id": "hook-a", "timeout": 0}, **headers(token, proof)))
        reserve = json.dumps({"paths": ["src/app.py"], "hook_session": "hook-a"})
        assert refused(client.post("/api/files_reserve", reserve, content_type="application/json", **headers(token, proof)))
        send = json.dumps({"body": "as alice", "to": "bob", "hook_session": "hook-a"})
        assert refused(client.post("/api/message_send", send, content_type="application/json", **headers(token, proof)))
    message = SessionMessage.objects.get()
    assert (message.delivered_at, message.read_at) == (None, None)
    # Its own machine's token with its process's proof gets its mail.
    answer = hook(laptop["token"], PROOF_A, "PostToolUse", "hook-a", tool_name="Bash", tool_input={})
    assert SECRET in json.dumps(answer.json())


def test_sessions_list_names_each_session_s_machine(alice_on_the_laptop):
    listed = Client().get("/api/sessions_list", **headers(TOKEN)).json()
    machines = {s["name"]: s["machine"] for s in listed["sessions"]}
    assert machines == {"alice": "laptop", "bob": "here"}


def test_a_session_elsewhere_runs_while_it_reports_not_while_a_pid_here_lives(alice_on_the_laptop):
    _, box = alice_on_the_laptop
    # The laptop's messaging socket names a pid that is no process on relaybay's machine.
    HookLink.objects.filter(hook_session="hook-a").update(native_socket="/tmp/claude/cc-socks/999999999.sock")
    assert refused(hook(box["token"], PROOF_B, "PostToolUse", "hook-a", tool_name="Bash", tool_input={}))
    # Silent past the heard-from window, it has exited: the id is believed again, as on one machine.
    HookLink.objects.filter(hook_session="hook-a").update(last_event_at="2020-01-01T00:00:00Z", waiter_polled_at=None)
    assert hook(box["token"], PROOF_B, "PostToolUse", "hook-a", tool_name="Bash", tool_input={}).status_code == 200


def names_of(*hook_sessions):
    return [HookLink.objects.select_related("session").get(hook_session=h).session.title for h in hook_sessions]


@pytest.mark.parametrize("first", ["laptop", "box"])
def test_two_machines_sessions_of_one_folder_go_by_distinct_names_each_keeps_across_a_restart(first):
    # Three sessions in /work/proj: on the laptop, on the box and on relaybay's own machine,
    # whichever machine starts first; each named by its folder and, elsewhere, its machine.
    tokens = {"laptop": add("laptop")["token"], "box": add("box")["token"]}
    proofs = {"laptop": PROOF_A, "box": PROOF_B}
    for where in sorted(tokens, key=lambda name: name != first):
        assert hook(tokens[where], proofs[where], "SessionStart", f"hook-{where}", source="startup").status_code == 200
    assert hook(TOKEN, PROOF_HERE, "SessionStart", "hook-here", source="startup").status_code == 200
    assert names_of("hook-laptop", "hook-box", "hook-here") == ["proj@laptop", "proj@box", "proj"]
    # The laptop's session ends and starts again (a new process, a new hook id): its name, and
    # the row with its mail, come back to it; the box's is untouched.
    hook(tokens["laptop"], PROOF_A, "SessionEnd", "hook-laptop")
    assert hook(tokens["laptop"], "d" * 64, "SessionStart", "hook-laptop-2", source="startup").status_code == 200
    assert names_of("hook-laptop-2", "hook-box") == ["proj@laptop", "proj@box"]
    assert names_of("hook-laptop-2") == names_of("hook-laptop")
    # A name the person gives (/rename) is followed by its machine too.
    native = {"session": {"name": "api-work"}}
    hook(tokens["box"], PROOF_B, "UserPromptSubmit", "hook-box", prompt="go", relaybay_native=native)
    assert names_of("hook-box") == ["api-work@box"]


def test_revoking_its_machine_refuses_the_session_s_own_calls_at_once(alice_on_the_laptop):
    laptop, _ = alice_on_the_laptop
    machine("revoke", "laptop")
    assert hook(laptop["token"], PROOF_A, "PostToolUse", "hook-a", tool_name="Bash", tool_input={}).status_code == 401
    assert SessionMessage.objects.get().delivered_at is None


def test_the_machines_page_lists_each_machine_with_its_sessions_and_revokes_it(alice_on_the_laptop, board):
    laptop, _ = alice_on_the_laptop
    page = board.get("/machines/").content.decode()
    assert "laptop" in page and "box" in page and "alice</bdi></a>" in page and "Revoke" in page
    assert board.post("/machines/laptop/revoke/").status_code == 302
    assert Machine.objects.get(name="laptop").revoked_at is not None
    assert Client().get("/api/sessions_list", **headers(laptop["token"])).status_code == 401
    assert "revoked" in board.get("/machines/").content.decode()
    # Not for an agent: the page is the owner's login.
    assert Client().get("/machines/", **headers(TOKEN)).status_code == 302


def test_the_sessions_page_shows_each_session_s_machine_and_filters_by_it(alice_on_the_laptop, board):
    page = board.get("/").content.decode()
    assert all(f">{name}</option>" in page for name in ("laptop", "box", "here"))
    assert '<td class="machine" title="the machine it runs on">laptop</td>' in page
    assert '<td class="machine" title="the machine it runs on">here</td>' in page

    def names(machine):
        shown = board.get("/", {"machine": machine}).content.decode()
        return {name for name in ("alice", "bob") if f"{name}</bdi></a>" in shown}

    assert names("laptop") == {"alice"}
    assert names("here") == {"bob"}
    assert names("box") == set()
    # A machine nobody added filters nothing out.
    assert names("nowhere") == {"alice", "bob"}
