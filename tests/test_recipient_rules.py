"""Who receives (docs/rules.md §4.3): resolution without creating rows, the candidates of an ambiguous
name, the four reachability answers, and no self-sends."""

import pytest

from messaging.models import SessionMessage
from sessions_app.actions import do_update_session
from sessions_app.hooks.delivery import do_register_waiter
from sessions_app.models import Session

from .message_personas import counts, detail, rb  # noqa: F401

pytestmark = pytest.mark.django_db

BUSY = "Not delivered yet: it reaches it at its next tool call or prompt."
IDLE = "Not delivered yet: it is idle and no wake-up hook of it is waiting: it sees this at its next prompt."
WAKING = "Not delivered yet: it is idle, and its wake-up hook is waiting: it is being woken with this now."
NEVER_LINKED = (
    "Not delivered: it never linked its own hook session, so no hook can carry this to it. "
    "It gets it once it links (session_link with its hook_session, or RELAYBAY_SESSION when it starts); "
    "the owner sees it on the board."
)
ENDED = "Not delivered: it has ended; this waits in case it comes back."
SELF_SEND = "A session cannot write to itself; pass another session in to (sessions_list shows them)."


@pytest.fixture
def alice(rb):
    """The sender of every send here: a live, exactly linked terminal session."""
    return rb.live("alice", "hook-a")


def send_as_alice(rb, to, body="hi"):
    return rb.send(body=body, to=to, session="alice", hook_session="hook-a")


@pytest.fixture
def bob(rb):
    """A desktop session that linked its own terminal exactly: it goes by every kind of name."""
    bob = rb.desktop("desk-b", "Bob", aliases=["bobby"])
    rb.guessed("hook-b", cwd="/desk/desk-b")
    assert rb.session_link(hook_session="hook-b", session="desk-b").status_code == 200
    return bob


@pytest.mark.parametrize("to", ["Bob", "bob", "  BOB  ", "bobby", " BobBy", "desk-b", "{handle}", "hook-b"])
def test_the_recipient_is_found_by_title_alias_desktop_id_handle_or_claude_code_id(rb, alice, bob, to):
    to = to.format(handle=bob.handle)
    answer = send_as_alice(rb, to).json()
    assert answer["to_handle"] == bob.handle
    assert SessionMessage.objects.get(pk=answer["id"]).recipient == bob


@pytest.mark.parametrize("to", ["nobody", "bo", "DESK-B", "HOOK-B", "hook", "S-99999", "s-1"])
def test_a_name_nobody_goes_by_is_an_error_and_creates_no_row(rb, alice, bob, to):
    before = counts()
    response = send_as_alice(rb, to)
    assert response.status_code == 404
    assert detail(response) == f'No session goes by "{to.strip()}". Use sessions_list to see the names you can use.'
    assert counts() == before


def test_an_id_with_surrounding_spaces_is_trimmed_like_any_name(rb, alice, bob):
    # A name is trimmed before matching (docs/rules.md §1.1); ids then match exactly, case included.
    assert send_as_alice(rb, " desk-b ").json()["to_handle"] == bob.handle
    assert send_as_alice(rb, "hook-b ").json()["to_handle"] == bob.handle


def test_several_rows_going_by_a_name_is_an_error_listing_handles_titles_desktop_ids_and_states_never_a_hook_id(
    rb, alice
):
    terminal = rb.live("worker", "hook-w1", busy=True)
    # A registration cannot take the name of a running session; the owner's edits on the board can.
    desk = rb.desktop("desk-w")
    do_update_session(session=desk, title="Worker")
    guessed = rb.desktop("desk-g", "Guessed one", folder="/work/g")
    rb.give_aliases(guessed, ["worker"])
    rb.guessed("hook-w2", cwd="/work/g")
    unnamed = rb.unnamed("hook-w3")
    rb.give_aliases(unnamed, ["WORKER"])
    before = counts()
    response = send_as_alice(rb, "worker")
    assert response.status_code == 409
    start, candidates, end = 'Several sessions go by "worker": ', detail(response), ". Name one by its S-<id> handle."
    assert candidates.startswith(start) and candidates.endswith(end)
    assert set(candidates[len(start) : -len(end)].split("; ")) == {
        f'{desk.handle} "Worker" desktop id desk-w none',
        f'{terminal.handle} "worker" exact busy',
        f'{guessed.handle} "Guessed one" desktop id desk-g guessed idle',
        f'{unnamed.handle} "proj" exact idle',
    }
    assert "hook-w" not in response.content.decode()
    assert counts() == before


def test_sessions_list_never_shows_a_hook_id(rb, alice, bob):
    rb.unnamed("hook-nameless")
    response = rb.api.get("/sessions_list")
    assert response.status_code == 200
    assert "hook-" not in response.content.decode()
    assert {s["handle"] for s in response.json()["sessions"]} == {r.handle for r in Session.objects.all()}


# The four reachability answers


def _busy(rb):
    rb.live("bob", "hook-b", busy=True)


def _busy_in_a_tool_call(rb):
    rb.live("bob", "hook-b")
    rb.prompt("hook-b")
    rb.tool("hook-b")


def _idle(rb):
    rb.live("bob", "hook-b", busy=True)
    rb.stop("hook-b")


def _just_started(rb):
    rb.live("bob", "hook-b")


def _no_hooks(rb):
    rb.desktop("desk-b", "bob")


def _guessed_desktop(rb):
    rb.desktop("desk-b", "bob", folder="/work/bob")
    rb.guessed("hook-b", cwd="/work/bob")
    rb.prompt("hook-b")


def _unnamed_going_by_an_alias(rb):
    row = rb.unnamed("hook-b")
    rb.give_aliases(row, ["bob"])


def _ended(rb):
    rb.live("bob", "hook-b", busy=True)
    rb.end("hook-b")


def _ended_desktop(rb):
    rb.desktop("desk-b", "bob")
    rb.guessed("hook-b", cwd="/desk/desk-b")
    assert rb.session_link(hook_session="hook-b", session="bob").status_code == 200
    rb.end("hook-b")


@pytest.mark.parametrize(
    "setup, status",
    [
        (_busy, BUSY),
        (_busy_in_a_tool_call, BUSY),
        (_idle, IDLE),
        (_just_started, IDLE),
        (_no_hooks, NEVER_LINKED),
        (_guessed_desktop, NEVER_LINKED),
        (_unnamed_going_by_an_alias, IDLE),
        (_ended, ENDED),
        (_ended_desktop, ENDED),
    ],
)
def test_the_send_answer_tells_the_truth_about_reachability(rb, alice, setup, status):
    setup(rb)
    answer = send_as_alice(rb, "bob").json()
    assert answer["status"] == status
    message = SessionMessage.objects.get(pk=answer["id"])
    assert message.not_delivered_reason == status
    assert message.delivered_at is None


def test_an_idle_recipient_whose_wake_up_hook_waits_is_told_it_is_being_woken(rb, alice):
    rb.live("bob", "hook-b", busy=True)
    rb.stop("hook-b")
    # What GET /api/hooks/wait does first: register itself as the session's waiter.
    assert do_register_waiter("hook-b", "waiter-1")
    assert send_as_alice(rb, "bob").json()["status"] == WAKING


# No self-send


@pytest.mark.parametrize("to", ["alice", " ALICE", "ali", "{handle}", "hook-a"])
def test_a_session_cannot_write_to_itself_by_any_of_its_names(rb, alice, to):
    rb.live("bob", "hook-b")
    rb.give_aliases(alice, ["ali"])
    before = counts()
    response = send_as_alice(rb, to.format(handle=alice.handle))
    assert response.status_code == 403
    assert detail(response) == SELF_SEND
    assert counts() == before


def test_an_unverified_sender_cannot_write_to_itself_either(rb):
    rb.desktop("desk-c", "carol")
    before = counts()
    response = rb.send(body="hi", to="desk-c", session="carol")
    assert response.status_code == 403
    assert detail(response) == SELF_SEND
    assert counts() == before


def test_the_answer_names_the_recipient_as_addressed_and_by_handle(rb, alice, bob):
    answer = send_as_alice(rb, "bobby").json()
    assert {k: answer[k] for k in ("to", "to_handle", "sender", "sender_verified", "status", "note")} == {
        "to": "bobby",
        "to_handle": bob.handle,
        "sender": "alice",
        "sender_verified": True,
        "status": IDLE,
        "note": "",
    }
    assert answer["handle"] == f"M-{answer['id']}"
