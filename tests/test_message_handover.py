"""Moving and merging links, for messages (docs/rules.md §1.3): what a row's mail does when its link is
taken by a write naming another row."""

import pytest

from messaging.models import SessionMessage
from sessions_app.models import Comment, Event, HookLink, Session

from .message_personas import context_of, counts, detail, link, quoted, rb  # noqa: F401

pytestmark = pytest.mark.django_db



@pytest.fixture
def alice(rb):
    return rb.live("alice", "hook-a")


def from_alice(rb, to, body):
    return rb.sent(body=body, to=to, session="alice", hook_session="hook-a")["id"]


def recipient_of(message_id):
    return SessionMessage.objects.select_related("recipient").get(pk=message_id).recipient


# A session's own row keeps its mail when the session names itself


def _by_session_link(rb, name, hook_session):
    assert rb.session_link(hook_session=hook_session, session=name).status_code == 200


def _by_message_send(rb, name, hook_session):
    assert rb.send(body="I am here", to="alice", session=name, hook_session=hook_session).json()["sender_verified"]


@pytest.mark.parametrize("write", [_by_session_link, _by_message_send])
def test_an_unnamed_session_naming_itself_by_a_new_name_keeps_its_row_its_messages_and_its_comments(rb, alice, write):
    own = rb.unnamed("hook-g")
    to_own = from_alice(rb, own.handle, "to the unnamed row")
    from_own = rb.sent(body="from the unnamed row", to="alice", hook_session="hook-g")["id"]
    comment = rb.comment(own, "owner to the unnamed row")
    write(rb, "xavier", "hook-g")
    own.refresh_from_db()
    assert own.title == "xavier" and link("hook-g").session == own and link("hook-g").exact
    assert Session.objects.filter(kind=Session.Kind.HOOK).count() == 2
    assert recipient_of(to_own) == own
    assert SessionMessage.objects.get(pk=from_own).sender == own
    assert Comment.objects.get(pk=comment.pk).session == own
    renamed = Event.objects.get(name="session.renamed")
    assert renamed.data == {"session": own.handle, "name": "xavier", "was": "proj"}
    text = context_of(rb.tool("hook-g"))
    assert text.index("owner to the unnamed row") < text.index(quoted("to the unnamed row"))
    assert [m["id"] for m in rb.messages("xavier")] == [to_own]
    assert from_own in [m["id"] for m in rb.messages("xavier", box="sent")]


def _refused_by_session_link(rb, name, hook_session):
    response = rb.session_link(hook_session=hook_session, session=name)
    assert response.status_code == 403 and response.json()["code"] == "link_held"


def _refused_by_message_send(rb, name, hook_session):
    response = rb.send(body="I am here", to="alice", session=name, hook_session=hook_session)
    assert response.status_code == 403 and response.json()["code"] == "sender_refused"


def _refused_by_relaybay_session(rb, name, hook_session):
    answer = rb.start(hook_session, name, source="resume")
    assert "RELAYBAY_SESSION was not used" in context_of(answer)


@pytest.mark.parametrize("write", [_refused_by_session_link, _refused_by_message_send, _refused_by_relaybay_session])
@pytest.mark.parametrize("named_row", ["desktop", "hook"])
def test_a_live_session_naming_a_row_another_row_goes_by_keeps_its_own_row_and_mail(rb, alice, write, named_row):
    if named_row == "desktop":
        xavier = rb.desktop("desk-x", "xavier")
    else:
        xavier = rb.live("xavier", "hook-x-old")
        rb.end("hook-x-old")
    own = rb.unnamed("hook-g")
    to_own = from_alice(rb, own.handle, "to the unnamed row")
    write(rb, "xavier", "hook-g")
    assert link("hook-g").session == own and link("hook-g").exact
    assert Session.objects.filter(pk=xavier.pk).exists() and not xavier.links.live().exists()
    assert recipient_of(to_own) == own
    assert quoted("to the unnamed row") in context_of(rb.tool("hook-g"))


def test_a_guessed_desktop_row_keeps_its_mail_when_its_link_moves(rb, alice):
    dave = rb.desktop("desk-d", "dave", folder="/work/dave")
    rb.guessed("hook-d", cwd="/work/dave")
    message_id = from_alice(rb, "dave", "for dave")
    xavier = rb.desktop("desk-x", "xavier")
    rb.session_link(hook_session="hook-d", session="xavier")
    assert link("hook-d").session == xavier
    assert recipient_of(message_id) == dave
    assert rb.tool("hook-d") == {}


# A taken-over ended exact hook row does not hand its mail over


@pytest.mark.parametrize("taker", ["new name", "desktop row"])
def test_a_session_resumed_under_another_name_brings_its_own_row_s_mail_and_comments_along(rb, alice, taker):
    if taker == "desktop row":
        rb.desktop("desk-x", "xavier")
    zed = rb.live("zed", "hook-z")
    to_zed = from_alice(rb, "zed", "for zed only")
    from_zed = rb.sent(body="from zed", to="alice", session="zed", hook_session="hook-z")["id"]
    comment = rb.comment(zed, "owner to zed")
    rb.end("hook-z")
    # The same Claude Code session resumed under another name: its own row goes with it.
    rb.start("hook-z", "xavier", source="resume")
    xavier = link("hook-z").session
    assert xavier.title == "xavier" and link("hook-z").exact
    assert not Session.objects.filter(pk=zed.pk).exists()
    message = SessionMessage.objects.get(pk=to_zed)
    assert (message.recipient_id, message.recipient_name) == (xavier.pk, "zed")
    assert Comment.objects.get(pk=comment.pk).session == xavier
    answer = rb.prompt("hook-z")
    assert "for zed only" in str(answer) and "owner to zed" in str(answer)
    [received] = rb.messages("alice")
    assert (received["id"], received["from"], received["from_handle"]) == (from_zed, "xavier", f"S-{xavier.pk}")


def test_an_ended_exact_row_that_is_not_a_lone_hook_row_keeps_what_was_written_to_it(rb, alice):
    zed = rb.desktop("desk-z", "zed")
    rb.guessed("hook-z", cwd="/desk/desk-z")
    rb.session_link(hook_session="hook-z", session="zed")
    message_id = from_alice(rb, "zed", "for zed")
    rb.end("hook-z")
    rb.start("hook-z", "xavier", source="resume")
    assert link("hook-z").session.title == "xavier"
    assert recipient_of(message_id) == zed
    assert quoted("for zed") not in str(rb.prompt("hook-z"))
    [listed] = rb.messages("zed")
    assert listed["status"].startswith("not delivered yet: ")


def test_an_ended_exact_hook_row_with_another_link_keeps_what_was_written_to_it(rb, alice):
    zed = rb.live("zed", "hook-z1")
    rb.live("zed", "hook-z2")
    message_id = from_alice(rb, "zed", "for zed")
    rb.end("hook-z2")
    rb.start("hook-z2", "xavier", source="resume")
    assert Session.objects.filter(pk=zed.pk).exists()
    assert recipient_of(message_id) == zed


def test_an_ended_hook_id_is_not_moved_by_a_tool_write(rb, alice):
    rb.live("zed", "hook-z")
    rb.end("hook-z")
    before = counts()
    response = rb.session_link(hook_session="hook-z", session="xavier")
    assert response.status_code == 403
    assert detail(response) == "Hook session hook-z has ended; link the hook session you are running in now."
    assert counts() == before


def test_a_hook_id_never_seen_links_nothing(rb, alice):
    rb.desktop("desk-x", "xavier")
    before = counts()
    response = rb.session_link(hook_session="made-up", session="xavier")
    assert response.status_code == 404
    assert counts() == before


# A restart without SessionEnd


@pytest.mark.parametrize("write", [_by_session_link, _by_message_send])
def test_after_a_restart_without_session_end_a_write_with_the_new_hook_id_moves_the_link_once_the_old_process_exited(rb, alice, write):
    bob = rb.live("bob", "hook-b1")
    waiting = from_alice(rb, "bob", "before the restart")
    # The new terminal starts where the only free desktop row is: its link is only guessed.
    desk = rb.desktop("desk-n", "new terminal", folder="/work/new")
    rb.guessed("hook-b2", cwd="/work/new")
    comment = rb.comment(desk, "owner to the desktop row")
    rb.exited("hook-b1")
    write(rb, "bob", "hook-b2")
    assert link("hook-b2").session == bob and link("hook-b2").exact
    assert link("hook-b1").state == HookLink.State.ENDED and link("hook-b1").session == bob
    assert Comment.objects.get(pk=comment.pk).session == desk
    assert rb.tool("hook-b1") == {}
    text = context_of(rb.tool("hook-b2"))
    assert quoted("before the restart") in text and "owner to the desktop row" not in text
    assert SessionMessage.objects.get(pk=waiting).delivered_by == "PreToolUse via hook-b2"


def test_a_write_naming_a_session_whose_process_still_runs_is_refused_as_name_in_use(rb, alice):
    bob = rb.live("bob", "hook-b1")
    waiting = from_alice(rb, "bob", "for the running bob")
    rb.desktop("desk-n", "new terminal", folder="/work/new")
    rb.guessed("hook-b2", cwd="/work/new")
    before = counts()
    response = rb.session_link(hook_session="hook-b2", session="bob")
    assert response.status_code == 409 and response.json()["code"] == "name_in_use"
    assert counts() == before
    assert link("hook-b1").session == bob and link("hook-b1").state == HookLink.State.IDLE
    assert not link("hook-b2").exact
    assert quoted("for the running bob") in context_of(rb.prompt("hook-b1"))
    assert SessionMessage.objects.get(pk=waiting).delivered_by == "UserPromptSubmit via hook-b1"


def test_session_links_answer_shows_the_link_it_just_made(rb, alice):
    # A row that no hook has linked yet: made by an unverified send under its name.
    rb.sent(body="hello", to="alice", session="newcomer")
    rb.desktop("desk-n", "nameless desk", folder="/work/new")
    rb.guessed("hook-n", cwd="/work/new")
    rb.prompt("hook-n")
    answer = rb.session_link(hook_session="hook-n", session="newcomer").json()
    assert answer["moved"] and answer["exact"]
    # The row's own summary says the same, not what its links were before the move.
    assert (answer["session"]["link"], answer["session"]["state"]) == ("exact", "busy")
    again = rb.session_link(hook_session="hook-n", session="newcomer").json()
    assert not again["moved"] and (again["session"]["link"], again["session"]["state"]) == ("exact", "busy")
