"""At least once into the hook client, exactly once into the model (docs/rules.md §2.6): an item
handed to a hook client that confirms what it prints stays offered until a later call of the
session reports it printed; one unconfirmed past RELAYBAY_REOFFER_SECONDS is offered again by
a later hook; an answer to a hook that does not confirm (an http hook) is final. The board
shows a delivery as confirmed only once it is."""

import json

import pytest
from django.test import Client
from django.utils import timezone

from messaging.models import SessionMessage
from sessions_app.actions import do_write_comment
from sessions_app.models import Comment, Event, Session

from .board_fixtures import owner  # noqa: F401
from .conftest import TOKEN

pytestmark = pytest.mark.django_db

PROOF_A, PROOF_B = "a" * 64, "b" * 64


class Hooks:
    """Hook posts as the command-hook client makes them: it says it confirms what it prints,
    reports what it printed, and reads the answer's headers."""

    def __init__(self, client):
        self.client = client

    def __call__(self, event, hook_session="h-a", *, confirming=True, printed="", proof="", **fields):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
        if confirming:
            headers["HTTP_X_RELAYBAY_CONFIRMING"] = "1"
        if printed:
            headers["HTTP_X_RELAYBAY_PRINTED"] = printed
        if proof:
            headers["HTTP_X_RELAYBAY_PROCESS"] = proof
        payload = {"hook_event_name": event, "session_id": hook_session, "cwd": "/work/a", **fields}
        response = self.client.post("/api/hooks", data=json.dumps(payload), content_type="application/json", **headers)
        assert response.status_code == 200, response.content
        return response


@pytest.fixture
def hooks(client):
    return Hooks(client)


@pytest.fixture
def alice(hooks):
    hooks("SessionStart", relaybay_session="alice")
    hooks("UserPromptSubmit", prompt="go")
    return Session.objects.get(title="alice")


def carried(response):
    return response.headers.get("X-Relaybay-Items", "").split()


def text(response):
    answer = response.json()
    return answer.get("reason") or answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def comment(alice, body="run the tests"):
    return do_write_comment(session=alice, body=body).comment


def test_an_item_handed_to_a_confirming_client_stays_offered_until_its_report_confirms_it(hooks, alice):
    c = comment(alice)
    answer = hooks("PreToolUse", tool_name="Bash")
    assert carried(answer) == [f"C-{c.pk}"] and "run the tests" in text(answer)
    c.refresh_from_db()
    assert c.delivered_at and c.offered_at == c.delivered_at and c.confirmed_at is None
    reported = hooks("PostToolUse", tool_name="Bash", printed=f"C-{c.pk}")
    assert reported.headers["X-Relaybay-Confirmed"] == f"C-{c.pk}"
    assert reported.json() == {} and "X-Relaybay-Items" not in reported.headers
    c.refresh_from_db()
    assert c.confirmed_at and c.offered_at is None
    assert Event.objects.filter(name="comment.confirmed", data__comment=c.pk).count() == 1


def test_an_unconfirmed_item_is_offered_again_by_a_later_hook_once_its_time_is_up(hooks, alice, settings):
    c = comment(alice)
    assert carried(hooks("PreToolUse", tool_name="Bash")) == [f"C-{c.pk}"]
    # Within RELAYBAY_REOFFER_SECONDS the answer may still be on its way: nothing is offered.
    assert carried(hooks("PostToolUse", tool_name="Bash")) == []
    settings.RELAYBAY_REOFFER_SECONDS = 0
    again = hooks("Stop", stop_hook_active=False)
    assert carried(again) == [f"C-{c.pk}"] and "run the tests" in text(again)
    assert Event.objects.filter(name="comment.delivered", data__comment=c.pk, data__offered_again=True).count() == 1
    c.refresh_from_db()
    assert c.delivered_by == "Stop via h-a" and c.confirmed_at is None


def test_a_report_taken_before_the_claim_keeps_a_printed_item_from_being_offered_again(hooks, alice, settings):
    settings.RELAYBAY_REOFFER_SECONDS = 0
    m = comment(alice, "first")
    assert carried(hooks("PreToolUse", tool_name="Bash")) == [f"C-{m.pk}"]
    later = comment(alice, "second")
    answer = hooks("PostToolUse", tool_name="Bash", printed=f"C-{m.pk}")
    assert carried(answer) == [f"C-{later.pk}"] and "first" not in text(answer)


def test_an_answer_to_a_hook_that_does_not_confirm_is_final(hooks, alice, settings):
    """Claude Code's http hooks post without the client: nothing can confirm what they carry,
    so it is never offered again, and never shown as confirmed."""
    settings.RELAYBAY_REOFFER_SECONDS = 0
    c = comment(alice)
    assert "run the tests" in text(hooks("PreToolUse", tool_name="Bash", confirming=False))
    assert hooks("PostToolUse", tool_name="Bash").json() == {}
    c.refresh_from_db()
    assert c.delivered_at and c.offered_at is None and c.confirmed_at is None


def test_messages_are_offered_and_confirmed_as_comments_are(hooks, alice, settings):
    settings.RELAYBAY_REOFFER_SECONDS = 0
    bob = Session.objects.create(kind=Session.Kind.HOOK, title="bob")
    m = SessionMessage.objects.create(sender=bob, sender_name="bob", recipient=alice, recipient_name="alice", body="hello")
    assert carried(hooks("PreToolUse", tool_name="Bash")) == [f"M-{m.pk}"]
    assert carried(hooks("PostToolUse", tool_name="Bash")) == [f"M-{m.pk}"]
    assert hooks("PreToolUse", tool_name="Bash", printed=f"M-{m.pk}").headers["X-Relaybay-Confirmed"] == f"M-{m.pk}"
    m.refresh_from_db()
    assert m.confirmed_at and m.offered_at is None
    assert hooks("PostToolUse", tool_name="Bash").json() == {}


def test_a_message_read_before_its_confirmation_is_not_offered_again(hooks, alice, settings):
    settings.RELAYBAY_REOFFER_SECONDS = 0
    bob = Session.objects.create(kind=Session.Kind.HOOK, title="bob")
    m = SessionMessage.objects.create(sender=bob, sender_name="bob", recipient=alice, recipient_name="alice", body="hello")
    assert carried(hooks("PreToolUse", tool_name="Bash")) == [f"M-{m.pk}"]
    SessionMessage.objects.filter(pk=m.pk).update(read_at=timezone.now(), read_verified=True)
    assert hooks("PostToolUse", tool_name="Bash").json() == {}


def test_a_report_confirms_only_the_reporting_sessions_own_items(hooks, alice):
    c = comment(alice)
    assert carried(hooks("PreToolUse", tool_name="Bash")) == [f"C-{c.pk}"]
    hooks("SessionStart", "h-b", relaybay_session="bob", cwd="/work/b")
    taken = hooks("PreToolUse", "h-b", tool_name="Bash", cwd="/work/b", printed=f"C-{c.pk}")
    # Taken (the client stops reporting it), but it is not bob's to confirm.
    assert taken.headers["X-Relaybay-Confirmed"] == f"C-{c.pk}"
    c.refresh_from_db()
    assert c.confirmed_at is None and c.offered_at


def test_a_report_from_another_running_process_than_the_sessions_is_not_taken(hooks, client):
    hooks("SessionStart", relaybay_session="alice", proof=PROOF_A)
    hooks("UserPromptSubmit", prompt="go", proof=PROOF_A)
    c = comment(Session.objects.get(title="alice"))
    assert carried(hooks("PreToolUse", tool_name="Bash", proof=PROOF_A)) == [f"C-{c.pk}"]
    foreign = hooks("PostToolUse", tool_name="Bash", proof=PROOF_B, printed=f"C-{c.pk}")
    assert "X-Relaybay-Confirmed" not in foreign.headers
    c.refresh_from_db()
    assert c.confirmed_at is None


def test_a_report_names_only_handles_relaybay_knows(hooks, alice):
    c = comment(alice)
    hooks("PreToolUse", tool_name="Bash")
    answer = hooks("PostToolUse", tool_name="Bash", printed=f"X-1 C-abc C-{c.pk},M-99999 nonsense")
    assert answer.headers["X-Relaybay-Confirmed"] == f"C-{c.pk} M-99999"
    c.refresh_from_db()
    assert c.confirmed_at


@pytest.mark.django_db(transaction=True)
def test_the_wake_up_poll_names_what_it_carries_and_takes_reports(hooks, alice):
    hooks("Stop", stop_hook_active=False)
    c = comment(alice)
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}", "HTTP_X_RELAYBAY_CONFIRMING": "1"}
    woken = Client().get("/api/hooks/wait", {"session_id": "h-a", "timeout": 1}, **headers)
    assert woken.json()["status"] == "delivered" and woken.headers["X-Relaybay-Items"] == f"C-{c.pk}"
    c.refresh_from_db()
    assert c.offered_at and c.delivered_by == "wake-up via h-a"
    hooks("Stop", stop_hook_active=False)
    polled = Client().get("/api/hooks/wait", {"session_id": "h-a", "timeout": 0}, HTTP_X_RELAYBAY_PRINTED=f"C-{c.pk}", **headers)
    assert polled.json()["status"] == "timeout" and polled.headers["X-Relaybay-Confirmed"] == f"C-{c.pk}"
    c.refresh_from_db()
    assert c.confirmed_at


def test_the_board_shows_a_delivery_as_confirmed_only_once_it_is(hooks, alice, owner):  # noqa: F811
    bob = Session.objects.create(kind=Session.Kind.HOOK, title="bob")
    m = SessionMessage.objects.create(sender=bob, sender_name="bob", recipient=alice, recipient_name="alice", body="hello")
    c = comment(alice)
    hooks("PreToolUse", tool_name="Bash")
    board = Client()
    board.force_login(owner)
    pages = [f"/sessions/{alice.pk}/", "/messages/"]
    for page in pages:
        shown = board.get(page).content.decode()
        assert "not confirmed yet" in shown and ">confirmed<" not in shown, page
    hooks("PostToolUse", tool_name="Bash", printed=f"C-{c.pk} M-{m.pk}")
    for page in pages:
        shown = board.get(page).content.decode()
        assert ">confirmed<" in shown and "not confirmed yet" not in shown, page
