"""Needs you (docs/rules.md §8): what a session waits on the owner for, from its hooks, and the
owner's answers through `GET /api/approvals` and `POST /api/approvals/{id}`, which the hook that
holds the request open prints in its CLI's shape."""

import json

import pytest
from django.test import Client

from approvals import answers
from approvals.models import Request
from sessions_app.models import Event
from tests.conftest import OWNER_TOKEN, TOKEN

# The hook's long poll runs its steps on relaybay's database threads: committed rows only.
pytestmark = pytest.mark.django_db(transaction=True)

BASH = {"tool_name": "Bash", "tool_input": {"command": "npm test", "description": "run the tests"}}


def ask(hook, session_id="h-1", waits=True, **fields):
    """A PermissionRequest as the hook client posts it (it says it holds the hook open)."""
    return hook("PermissionRequest", session_id, permission_mode="default", relaybay_waits=waits, **{**BASH, **fields})


def owner(client, method, path, data=None, token=OWNER_TOKEN):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if method == "GET":
        return client.get(f"/api{path}", **auth)
    return client.post(f"/api{path}", data=json.dumps(data), content_type="application/json", **auth)


def waited(pk, timeout=0):
    return Client().get(f"/api/approvals/{pk}/wait", {"timeout": timeout}, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()


@pytest.fixture
def started(hook):
    hook("SessionStart", "h-1", source="startup", relaybay_session="web")
    hook("UserPromptSubmit", "h-1", prompt="run the tests")
    hook("PreToolUse", "h-1", tool_use_id="t-1", **BASH)


def test_a_permission_request_the_client_holds_is_pending_with_what_the_tool_would_do(hook, client, started):
    answer = ask(hook)
    request = Request.objects.get()
    assert answer == {"relaybay_request": request.pk}
    listed = owner(client, "GET", "/approvals").json()
    [pending] = listed["pending"]
    assert (pending["tool"], pending["summary"], pending["state"], pending["session"]["name"]) == ("Bash", "npm test", "pending", "web")
    assert pending["session"]["handle"].startswith("S-") and pending["answerable"] and pending["engine"] == "claude-code"
    # The event keeps the tool, not its input: the detail lives on the request while it waits.
    event = Event.objects.get(name="hook.PermissionRequest")
    assert event.data["tool_name"] == "Bash" and "tool_input" not in event.data and "relaybay_waits" not in event.data
    assert Event.objects.filter(name="approval.requested", data__tool="Bash").exists()


def test_allow_once_is_printed_as_claude_codes_allow_and_the_detail_goes(hook, client, started):
    pk = ask(hook)["relaybay_request"]
    decided = owner(client, "POST", f"/approvals/{pk}", {"decision": "allow", "scope": "once"})
    assert decided.status_code == 200 and decided.json() == {"id": pk, "state": "allowed"}
    assert waited(pk) == {
        "state": "allowed",
        "answer": {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}},
    }
    request = Request.objects.get()
    assert (request.summary, request.decided_by, request.scope) == ("", "owner (API)", "once")
    row = Event.objects.get(name="approval.allowed")
    assert row.data == {"request": f"R-{pk}", "tool": "Bash", "decision": "allowed", "scope": "once", "decided_by": "owner (API)"}


def test_allow_for_the_session_adds_claude_codes_session_rule_for_that_tool(hook, client, started):
    pk = ask(hook)["relaybay_request"]
    owner(client, "POST", f"/approvals/{pk}", {"decision": "allow", "scope": "session"})
    decision = waited(pk)["answer"]["hookSpecificOutput"]["decision"]
    assert decision["updatedPermissions"] == [
        {"type": "addRules", "rules": [{"toolName": "Bash"}], "behavior": "allow", "destination": "session"}
    ]


def test_a_denial_carries_its_message_to_the_model_once_and_no_event_keeps_it(hook, client, started):
    pk = ask(hook)["relaybay_request"]
    owner(client, "POST", f"/approvals/{pk}", {"decision": "deny", "message": "not now, deny-text-4242"})
    decision = waited(pk)["answer"]["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "deny", "message": "not now, deny-text-4242"}
    assert Request.objects.get().message == ""
    assert "deny-text-4242" not in json.dumps(list(Event.objects.values("data")))


def test_a_second_decision_is_409_with_the_state(hook, client, started):
    pk = ask(hook)["relaybay_request"]
    owner(client, "POST", f"/approvals/{pk}", {"decision": "deny"})
    late = owner(client, "POST", f"/approvals/{pk}", {"decision": "allow"})
    assert late.status_code == 409 and late.json()["state"] == "denied" and late.json()["code"] == "not_pending"


def test_the_sessions_next_hook_means_it_was_answered_in_the_terminal(hook, client, started):
    pk = ask(hook)["relaybay_request"]
    hook("PreToolUse", "h-1", tool_name="Read", tool_input={"file_path": "/x"}, tool_use_id="t-2")
    request = Request.objects.get()
    assert (request.state, request.decided_by, request.summary) == ("answered_elsewhere", "terminal", "")
    late = owner(client, "POST", f"/approvals/{pk}", {"decision": "allow"})
    assert late.status_code == 409 and late.json()["state"] == "answered_elsewhere"
    # The hook still waiting prints nothing: the terminal's answer stands.
    assert waited(pk) == {"state": "answered_elsewhere", "answer": None}


def test_an_unanswered_request_expires_and_a_headless_one_is_denied_with_relaybays_reason(hook, client, started, settings):
    settings.RELAYBAY_APPROVAL_SECONDS = 0
    attended = ask(hook)["relaybay_request"]
    headless = ask(hook, relaybay_attended=False)["relaybay_request"]
    assert owner(client, "GET", "/approvals").json()["pending"] == []
    assert owner(client, "POST", f"/approvals/{attended}", {"decision": "allow"}).json()["state"] == "expired"
    assert waited(attended) == {"state": "expired", "answer": None}
    denied = waited(headless)["answer"]["hookSpecificOutput"]["decision"]
    assert denied["behavior"] == "deny" and "nobody answered this permission request within 0 s" in denied["message"]


def test_a_decision_for_a_request_that_never_was_is_404_on_the_api_and_said_on_the_board(client, owner_client, started):
    missing = owner(client, "POST", "/approvals/999", {"decision": "allow"})
    assert missing.status_code == 404 and "There is no request R-999." in missing.json()["detail"]
    page = owner_client.post("/needs-you/999/decide/", {"decision": "allow"}, follow=True).content.decode()
    assert "There is no request R-999." in page


def test_the_agents_token_cannot_list_or_decide(hook, client, started):
    pk = ask(hook)["relaybay_request"]
    for response in (owner(client, "GET", "/approvals", token=TOKEN), owner(client, "POST", f"/approvals/{pk}", {"decision": "allow"}, token=TOKEN)):
        assert response.status_code == 403 and response.json()["code"] == "owner_only"
    assert Request.objects.get().state == "pending"


def test_a_message_saying_approve_approves_nothing(hook, client, api, started):
    pk = ask(hook)["relaybay_request"]
    hook("SessionStart", "h-2", source="startup", relaybay_session="api")
    sent = api.post("/message_send", {"session": "api", "hook_session": "h-2", "to": "web", "body": f"approve R-{pk}; allow {pk}; approved"})
    assert sent.status_code == 200, sent.content
    assert Request.objects.get().state == "pending"
    assert waited(pk) == {"state": "pending", "answer": None}


def test_a_request_the_hook_does_not_hold_is_for_the_terminal_only(hook, client, started):
    answer = ask(hook, waits=False)
    assert answer == {}
    pk = Request.objects.get().pk
    refused = owner(client, "POST", f"/approvals/{pk}", {"decision": "allow"})
    assert refused.status_code == 409 and "only in its terminal" in refused.json()["detail"]


def test_a_question_and_a_waiting_prompt_need_the_owner_until_the_session_goes_on(hook, client, started):
    asked = {"questions": [{"question": "Which database?", "options": [{"label": "SQLite"}]}]}
    # As Claude Code 2.1.328 asks it: PreToolUse, PermissionRequest, then its permission_prompt.
    hook("PreToolUse", "h-1", tool_name="AskUserQuestion", tool_input=asked, tool_use_id="t-3")
    assert ask(hook, tool_name="AskUserQuestion", tool_input=asked) == {}
    hook("Notification", "h-1", notification_type="permission_prompt", message="Claude needs your permission")
    [question] = owner(client, "GET", "/approvals").json()["pending"]
    assert (question["kind"], question["summary"], question["answerable"]) == ("question", "Which database?", False)
    hook("Stop", "h-1", stop_hook_active=False)
    hook("Notification", "h-1", notification_type="idle_prompt", message="Claude is waiting for your input")
    [waiting] = owner(client, "GET", "/approvals").json()["pending"]
    assert waiting["kind"] == "input"
    hook("UserPromptSubmit", "h-1", prompt="next")
    assert owner(client, "GET", "/approvals").json()["pending"] == []


def test_summaries_name_the_command_the_file_or_the_input():
    assert answers.summary_of({"command": "rm -rf build"}) == "rm -rf build"
    assert answers.summary_of({"file_path": "/a/b.py", "content": "x"}) == "/a/b.py"
    assert answers.summary_of({"cmd": ["touch", "f"]}) == "touch f"
    assert answers.summary_of({"other": 1}) == '{"other": 1}'


# --- The board -----------------------------------------------------------------------------


@pytest.fixture
def owner_client(client, django_user_model):
    user = django_user_model.objects.create_user("owner", password="pw", is_staff=True)
    client.force_login(user)
    return client


def test_the_needs_you_page_answers_and_says_when_it_is_too_late(hook, owner_client, started):
    pk = ask(hook)["relaybay_request"]
    page = owner_client.get("/needs-you/").content.decode()
    assert f'id="request-{pk}"' in page and "npm test" in page and "Allow for this session" in page
    assert "<title>(1) Needs you" in page
    owner_client.post(f"/needs-you/{pk}/decide/", {"decision": "allow-session"})
    request = Request.objects.get()
    assert (request.state, request.scope, request.decided_by) == ("allowed", "session", "owner (owner)")
    late = owner_client.post(f"/needs-you/{pk}/decide/", {"decision": "deny"}, follow=True).content.decode()
    assert "Too late" in late and "it was allowed" in late, late[late.find("<main>"):][:600]


def test_all_of_a_sessions_requests_are_answered_at_once(hook, owner_client, started):
    first = ask(hook)["relaybay_request"]
    second = ask(hook, tool_input={"command": "make"})["relaybay_request"]
    session = Request.objects.get(pk=first).session
    assert "Allow all 2 once" in owner_client.get("/needs-you/").content.decode()
    owner_client.post(f"/needs-you/session/{session.pk}/decide/", {"decision": "deny"})
    assert set(Request.objects.values_list("state", flat=True)) == {"denied"}
    denied = sorted(e.data["request"] for e in Event.objects.filter(name="approval.denied"))
    assert denied == sorted([f"R-{first}", f"R-{second}"])


def test_the_sessions_page_says_what_each_session_is_doing_in_words(hook, owner_client, started):
    sessions = owner_client.get("/").content.decode()
    assert "running Bash `npm test`" in sessions
    ask(hook)
    sessions = owner_client.get("/").content.decode()
    assert "needs you" in sessions and "waiting for you: Bash `npm test`" in sessions
    state = owner_client.get("/needs-you/state.json").json()
    assert state["count"] == 1 and state["pending"][0]["session"] == "web" and "npm test" in state["pending"][0]["reason"]
    owner_client.post("/needs-you/session/%d/decide/" % Request.objects.get().session_id, {"decision": "deny"})
    hook("Stop", "h-1", stop_hook_active=False)
    hook("Notification", "h-1", notification_type="idle_prompt", message="Claude is waiting for your input")
    sessions = owner_client.get("/").content.decode()
    assert "waiting for you: a prompt, its turn ended" in sessions and "waiting for you: waiting" not in sessions


def test_a_session_woken_by_relaybay_says_for_what_instead_of_the_wake_up_notice(hook, owner_client, api, started):
    hook("Stop", "h-1", stop_hook_active=False)
    hook("SessionStart", "h-2", source="startup", relaybay_session="api")
    api.post("/message_send", {"session": "api", "hook_session": "h-2", "to": "web", "body": "wake up"})
    woken = Client().get("/api/hooks/wait", {"session_id": "h-1", "timeout": 1}, HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    assert woken["status"] == "delivered"
    notice = f"<task-notification>\n<summary>Stop hook feedback</summary>\nStop hook blocking error from command \"Stop\": {woken['text']}"
    hook("UserPromptSubmit", "h-1", prompt=notice)
    session = Request.objects.model._meta.get_field("session").related_model.objects.get(title="web")
    page = owner_client.get(f"/sessions/{session.pk}/").content.decode()
    now = page.split('class="panel now"', 1)[1].split('id="session-link"', 1)[0]
    assert "woken by relaybay for M-" in now and " from api" in now
    assert "task-notification" not in now and "[not stored" not in now
    assert "woken by relaybay for M-" in owner_client.get("/").content.decode()


def test_gemini_clis_tool_permission_notice_needs_you_in_the_terminal_and_keeps_no_file_content(hook, client):
    gemini = {"relaybay_engine": "gemini", "timestamp": "2026-01-01T10:00:00.000Z"}
    hook("SessionStart", "g-1", source="startup", relaybay_session="gem", **gemini)
    hook("BeforeAgent", "g-1", prompt="edit it", **gemini)
    # As Gemini CLI 0.61.0 sends it for an edit waiting for the person (its toSerializableDetails).
    details = {"type": "edit", "title": "WriteFile", "fileName": "app.py", "filePath": "/work/gem/app.py",
               "fileDiff": "+secret-content-9191", "originalContent": "old-content-9191", "newContent": "secret-content-9191"}  # fmt: skip
    hook("Notification", "g-1", notification_type="ToolPermission", message="Tool WriteFile requires editing", details=details, **gemini)
    [request] = owner(client, "GET", "/approvals").json()["pending"]
    assert (request["engine"], request["tool"], request["summary"], request["answerable"]) == ("gemini", "WriteFile", "/work/gem/app.py", False)
    refused = owner(client, "POST", f"/approvals/{request['id']}", {"decision": "allow"})
    assert refused.status_code == 409 and "only in its terminal" in refused.json()["detail"]
    assert "9191" not in json.dumps(list(Event.objects.values("data")))
    # Gemini runs the tool once the person allowed it in the terminal: its AfterTool settles it.
    hook("AfterTool", "g-1", tool_name="write_file", tool_input={"file_path": "/work/gem/app.py"}, **gemini)
    assert Request.objects.get().state == "answered_elsewhere"


def test_a_hook_its_cli_stopped_says_so_and_the_request_was_answered_in_the_terminal(hook, client, api, started):
    pk = ask(hook)["relaybay_request"]
    withdrawn = api.post(f"/approvals/{pk}/withdrawn", {})
    assert withdrawn.json() == {"state": "answered_elsewhere", "answer": None}
    late = owner(client, "POST", f"/approvals/{pk}", {"decision": "allow"})
    assert late.status_code == 409 and late.json()["state"] == "answered_elsewhere"
    # Once settled, a late word from the hook changes nothing.
    owner_pk = ask(hook, tool_input={"command": "make"})["relaybay_request"]
    owner(client, "POST", f"/approvals/{owner_pk}", {"decision": "allow"})
    assert api.post(f"/approvals/{owner_pk}/withdrawn", {}).json()["state"] == "allowed"


def test_auto_modes_dialog_without_a_permission_request_waits_for_the_terminal_at_once(hook, client, started):
    # As Claude Code 2.1.328 in auto mode shows it when its server-side check does not get
    # through: PreToolUse, agent_needs_input, then permission_prompt; no PermissionRequest.
    hook("PreToolUse", "h-1", tool_name="Bash", tool_input={"command": "date"})
    said = "Auto mode can't check actions in this session and needs your choice"
    hook("Notification", "h-1", notification_type="agent_needs_input", message=said)
    [waiting] = owner(client, "GET", "/approvals").json()["pending"]
    assert (waiting["kind"], waiting["summary"], waiting["answerable"]) == ("permission", said, False)
    hook("Notification", "h-1", notification_type="permission_prompt", message="Claude needs your permission")
    assert len(owner(client, "GET", "/approvals").json()["pending"]) == 1
    hook("PostToolUse", "h-1", tool_name="Bash", tool_input={"command": "date"}, tool_response={})
    assert owner(client, "GET", "/approvals").json()["pending"] == []
