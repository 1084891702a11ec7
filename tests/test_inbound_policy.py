"""Inbound policy per session (docs/rules.md §4.8): accept, hold, refuse; held messages in the owner's
Inbox with Deliver and Deny, expiring; the sender's sent box shows what became of them.
Through POST /api/sessions/{handle}/inbound, POST /api/message_send and the board's forms."""

import pytest

from messaging.actions import do_decide_held_message
from messaging.models import SessionMessage
from sessions_app.actions import do_set_inbound_policy, do_save_task, do_update_session
from sessions_app.models import Session

from .board_fixtures import owner  # noqa: F401
from .conftest import OWNER_TOKEN, TOKEN
from .message_personas import clock, context_of, counts, detail, quoted, rb  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(rb):
    rb.live("alice", "hook-a")
    return rb.live("bob", "hook-b", busy=True)


def set_policy(rb, who, policy, token=OWNER_TOKEN):
    """The owner's script setting a policy (the route is the owner's, docs/rules.md §6)."""
    return rb.api.post(f"/sessions/{who}/inbound", {"policy": policy}, token=token)


def from_alice(rb, body="hello bob", **fields):
    return rb.send(**{"body": body, "to": "bob", "session": "alice", "hook_session": "hook-a", **fields})


def sent_box(rb):
    return rb.messages("alice", box="sent")


# Setting the policy


def test_a_new_session_accepts_and_the_route_sets_each_policy_by_any_name(rb, pair):
    assert pair.inbound == "accept"
    for name, policy in [("bob", "hold"), (pair.handle, "refuse"), ("hook-b", "accept")]:
        response = set_policy(rb, name, policy)
        assert response.status_code == 200, response.content
        assert response.json() == {"session": pair.handle, "policy": policy, "changed": True}
        assert Session.objects.get(pk=pair.pk).inbound == policy
    assert set_policy(rb, "bob", "accept").json()["changed"] is False


@pytest.mark.parametrize("policy, status", [("maybe", 422), ("", 422), (None, 422)])
def test_an_unknown_policy_is_refused_and_changes_nothing(rb, pair, policy, status):
    before = counts()
    assert set_policy(rb, "bob", policy).status_code == status
    assert Session.objects.get(pk=pair.pk).inbound == "accept"
    assert counts() == before


def test_the_route_needs_the_owner_token_and_a_known_session(rb, pair):
    assert set_policy(rb, "bob", "hold", token="wrong").status_code == 401
    refused = set_policy(rb, "bob", "hold", token=TOKEN)
    assert (refused.status_code, refused.json()["code"]) == (403, "owner_only")
    assert set_policy(rb, "nobody", "hold").status_code == 404
    assert Session.objects.get(pk=pair.pk).inbound == "accept"


def test_the_task_setting_sets_every_session_of_the_task(rb, pair):
    task = do_save_task(title="ledger")
    carol = rb.live("carol", "hook-c")
    for row in (pair, carol):
        do_update_session(session=row, task=task)
    changed = do_set_inbound_policy(task=task, policy="hold")
    assert sorted(changed) == sorted([pair.pk, carol.pk])
    assert set(Session.objects.filter(task=task).values_list("inbound", flat=True)) == {"hold"}
    assert Session.objects.get(title="alice").inbound == "accept"


# Refuse


def test_a_send_to_a_refusing_session_is_refused_says_so_and_writes_nothing(rb, pair):
    set_policy(rb, "bob", "refuse")
    before = counts()
    response = from_alice(rb)
    assert response.status_code == 403
    assert response.json()["code"] == "inbound_refused"
    assert detail(response).startswith(f'"bob" ({pair.handle}) refuses messages from other sessions: its owner set it so. Nothing was sent.')
    assert counts() == before


def test_owner_comments_reach_a_refusing_or_holding_session(rb, pair):
    for policy in ("refuse", "hold"):
        set_policy(rb, "bob", policy)
        comment = rb.comment(pair, f"owner note under {policy}")
        assert f"Comment C-{comment.pk} from the owner" in context_of(rb.tool("hook-b"))


# Hold


def test_a_held_message_is_stored_not_delivered_and_the_sender_is_told(rb, pair):
    set_policy(rb, "bob", "hold")
    answer = from_alice(rb).json()
    assert answer["state"] == "held"
    assert answer["status"].startswith(f'Held: "bob" ({pair.handle}) holds messages from other sessions until its owner delivers or denies them')
    message = SessionMessage.objects.get(pk=answer["id"])
    assert message.state == "held" and message.delivered_at is None
    assert context_of(rb.tool("hook-b")) is None
    assert rb.stop("hook-b") == {}
    [listed] = sent_box(rb)
    assert listed["state"] == "held"
    assert listed["status"].startswith("held: the recipient's owner holds messages for it")


def test_deliver_releases_a_held_message_to_the_next_hook_and_the_sender_sees_delivered(rb, pair):
    set_policy(rb, "bob", "hold")
    message = SessionMessage.objects.get(pk=from_alice(rb, body="held then delivered").json()["id"])
    result = do_decide_held_message(message=message, deliver=True)
    assert result.decided
    assert sent_box(rb)[0]["state"] == "waiting"
    assert quoted("held then delivered") in context_of(rb.tool("hook-b"))
    assert sent_box(rb)[0]["state"] == "delivered"


def test_deny_keeps_a_held_message_from_ever_being_delivered(rb, pair):
    set_policy(rb, "bob", "hold")
    message = SessionMessage.objects.get(pk=from_alice(rb).json()["id"])
    assert do_decide_held_message(message=message, deliver=False).decided
    set_policy(rb, "bob", "accept")
    assert context_of(rb.tool("hook-b")) is None
    [listed] = sent_box(rb)
    assert listed["state"] == "denied"
    assert listed["status"] == "denied: the recipient's owner denied it; it will not be delivered."
    # A second decision changes nothing.
    assert not do_decide_held_message(message=message, deliver=True).decided
    assert SessionMessage.objects.get(pk=message.pk).state == "denied"


def test_a_held_message_expires_after_the_hold_time_and_can_no_longer_be_delivered(rb, pair, clock, settings):
    settings.RELAYBAY_HOLD_HOURS = 2
    set_policy(rb, "bob", "hold")
    message = SessionMessage.objects.get(pk=from_alice(rb).json()["id"])
    clock.at(2 * 3600 - 1)
    assert sent_box(rb)[0]["state"] == "held"
    clock.at(2 * 3600)
    [listed] = sent_box(rb)
    assert listed["state"] == "expired"
    assert listed["status"].startswith("expired:")
    result = do_decide_held_message(message=message, deliver=True)
    assert not result.decided
    assert result.sentence == f"M-{message.pk} is expired, not held: nothing changed."
    assert SessionMessage.objects.get(pk=message.pk).state == "expired"
    assert context_of(rb.tool("hook-b")) is None


def test_a_held_message_sits_in_the_owner_inbox_until_decided_or_expired(rb, pair, client, owner, clock, settings):
    settings.RELAYBAY_HOLD_HOURS = 1
    set_policy(rb, "bob", "hold")
    first = from_alice(rb, body="one").json()["id"]
    second = from_alice(rb, body="two").json()["id"]
    client.force_login(owner)
    page = client.get("/inbox/").content.decode()
    assert f'id="inbox-{first}"' in page and f'id="inbox-{second}"' in page
    assert page.count(">Deliver</button>") == 2 and page.count(">Deny</button>") == 2
    response = client.post(f"/inbox/{first}/decide/", {"decision": "deliver"}, follow=True)
    assert f"M-{first} delivered" in response.content.decode()
    page = client.get("/inbox/").content.decode()
    assert f'id="inbox-{first}"' not in page and f'id="inbox-{second}"' in page
    clock.at(3600)
    assert f'id="inbox-{second}"' not in client.get("/inbox/").content.decode()
    assert SessionMessage.objects.get(pk=first).state == "sent"


def test_the_board_shows_the_sender_held_denied_and_expired(rb, pair, client, owner, clock, settings):
    settings.RELAYBAY_HOLD_HOURS = 1
    set_policy(rb, "bob", "hold")
    held, denied, expired = (from_alice(rb, body=b).json()["id"] for b in ("h", "d", "e"))
    do_decide_held_message(message=SessionMessage.objects.get(pk=denied), deliver=False)
    SessionMessage.objects.filter(pk=expired).update(held_until=clock.START)
    clock.at(1)
    client.force_login(owner)
    page = client.get(f"/sessions/{Session.objects.get(title='alice').pk}/").content.decode()
    for pk, mark in ((held, "held"), (denied, "denied"), (expired, "expired")):
        row = page[page.index(f'id="message-{pk}"') :]
        row = row[: row.index('<div class="body">')]
        assert f'mark-{mark}">{mark}</span>' in row, mark


def test_the_board_sets_the_policy_from_the_session_and_task_pages(rb, pair, client, owner):
    client.force_login(owner)
    page = client.get(f"/sessions/{pair.pk}/").content.decode()
    assert 'id="inbound-form"' in page
    client.post(f"/sessions/{pair.pk}/inbound/", {"policy": "refuse"})
    assert Session.objects.get(pk=pair.pk).inbound == "refuse"
    task = do_save_task(title="ledger")
    do_update_session(session=pair, task=task)
    assert 'id="task-inbound-form"' in client.get(f"/tasks/{task.pk}/").content.decode()
    client.post(f"/tasks/{task.pk}/inbound/", {"policy": "hold"})
    assert Session.objects.get(pk=pair.pk).inbound == "hold"
    before = counts()
    client.post(f"/sessions/{pair.pk}/inbound/", {"policy": "bogus"})
    assert Session.objects.get(pk=pair.pk).inbound == "hold"
    assert counts() == before
