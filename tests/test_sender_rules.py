"""Who may send (docs/rules.md §4.2): one case per row of the table, through POST /api/message_send."""

import pytest

from messaging.models import SessionMessage
from sessions_app.models import HookLink, Session

from .message_personas import context_of, counts, detail, link, rb, row  # noqa: F401

pytestmark = pytest.mark.django_db

SENDER_REQUIRED = (
    "The sender is required: pass session (your title or name) and hook_session "
    "(your CLAUDE_CODE_SESSION_ID) so the recipient knows who writes."
)
NOT_VERIFIED_NOTE = (
    "Your name is not verified (no live hook link of yours proves it), and the recipient is told so. "
    "Pass hook_session=<your CLAUDE_CODE_SESSION_ID> to verify it."
)


def linked_live_name(name):
    return (
        f'"{name}" is linked to a live Claude Code session; write with its hook_session to prove it is you. '
        "If you restarted without a session end, write again with your new hook_session "
        "(CLAUDE_CODE_SESSION_ID): that moves the link to you."
    )


def held_by_another(hook_session, name):
    return (
        f'Hook session {hook_session} belongs to another live session, not to "{name}". '
        "Pass your own hook_session (CLAUDE_CODE_SESSION_ID), or name the session that id belongs to."
    )


@pytest.fixture
def bob(rb):
    """The recipient of every send here: a live, exactly linked terminal session."""
    return rb.live("bob", "hook-b")


# Row 1: neither session/session_title nor hook_session


@pytest.mark.parametrize("fields", [{}, {"session": None, "session_title": None, "hook_session": None}, {"hook_session": "  "}])
def test_a_send_without_any_sender_is_refused_as_sender_required(rb, bob, fields):
    before = counts()
    response = rb.send(body="hi", to="bob", **fields)
    assert response.status_code == 403
    assert detail(response) == SENDER_REQUIRED
    assert counts() == before


# Row 2: a name a live exact link goes by, without that link's id


@pytest.mark.parametrize(
    "name, hook_session",
    [
        ("alice", None),  # its title
        ("  ALICE ", None),  # matched case-insensitively and trimmed
        ("al", None),  # its alias
        ("alice", "never-seen-id"),  # a made-up id proves nothing
        ("alice", "hook-old"),  # an ended hook id is not this link's id
    ],
)
def test_a_name_held_by_a_live_exact_link_is_refused_without_that_links_id(rb, bob, name, hook_session):
    alice = rb.live("alice", "hook-a")
    rb.give_aliases(alice, ["al"])
    rb.start("hook-old")
    rb.end("hook-old")
    before = counts()
    response = rb.send(body="hi", to="bob", session=name, hook_session=hook_session)
    assert response.status_code == 403
    assert detail(response) == linked_live_name(name.strip())
    assert counts() == before
    assert link("hook-a").session == alice and link("hook-a").exact


def test_a_desktop_title_or_alias_held_by_a_live_exact_link_is_refused_without_its_id(rb, bob):
    desk = rb.desktop("desk-1", "Planner", aliases=["plan"])
    rb.guessed("hook-p")
    assert rb.session_link(hook_session="hook-p", session="desk-1").status_code == 200
    assert link("hook-p").session == desk and link("hook-p").exact
    for name in ("planner", "plan", "desk-1", desk.handle):
        before = counts()
        response = rb.send(body="hi", to="bob", session=name)
        assert response.status_code == 403, name
        assert detail(response) == linked_live_name(name)
        assert counts() == before


def test_the_refusal_names_the_way_out_and_the_way_out_works_after_a_restart_without_session_end(rb, bob):
    alice = rb.live("alice", "hook-a1")
    # The terminal restarted without SessionEnd: hook-a1 still looks live, hook-a2 is new.
    rb.guessed("hook-a2")
    refused = rb.send(body="hi", to="bob", session="alice")
    assert "write again with your new hook_session" in detail(refused)
    answer = rb.sent(body="hi", to="bob", session="alice", hook_session="hook-a2")
    assert answer["sender_verified"] is True
    assert link("hook-a2").session == alice and link("hook-a2").exact
    assert link("hook-a1").state == HookLink.State.ENDED


# Row 3: any name with a hook id another live session's exact link holds


@pytest.mark.parametrize("name", ["mallory", "carol", "bob-and-more", "hook-x"])
def test_any_name_with_a_hook_id_another_live_exact_link_holds_is_refused_and_changes_no_row(rb, bob, name):
    alice = rb.live("alice", "hook-a")
    rb.desktop("carol-desk", "carol")
    rb.guessed("hook-x")
    before = counts()
    alice_link = link("hook-a")
    response = rb.send(body="hi", to="bob", session=name, hook_session="hook-a")
    assert response.status_code == 403
    assert detail(response) == held_by_another("hook-a", name)
    assert counts() == before
    assert not Session.objects.filter(title=name).exclude(kind=Session.Kind.DESKTOP).exists()
    after = link("hook-a")
    assert (after.session, after.exact, after.state, after.last_event_at) == (
        alice,
        True,
        alice_link.state,
        alice_link.last_event_at,
    )


def test_a_busy_session_s_hook_id_cannot_be_used_under_another_name_either(rb, bob):
    rb.live("alice", "hook-a", busy=True)
    before = counts()
    response = rb.send(body="hi", to="bob", session="mallory", hook_session="hook-a")
    assert response.status_code == 403
    assert counts() == before


# Row 4: a name no live hook link proves: accepted, not verified, and the caller is told


def _no_hooks(rb):
    rb.desktop("carol-desk", "carol")
    return {"session": "carol"}


def _ended_without_id(rb):
    rb.live("carol", "hook-c")
    rb.end("hook-c")
    return {"session": "carol"}


def _ended_with_its_ended_id(rb):
    rb.live("carol", "hook-c")
    rb.end("hook-c")
    return {"session": "carol", "hook_session": "hook-c"}


def _guessed_without_id(rb):
    rb.desktop("carol-desk", "carol", folder="/work/shared-folder")
    assert rb.guessed("hook-c", cwd="/work/shared-folder").title == "carol"
    assert not link("hook-c").exact
    return {"session": "carol"}


def _made_up_id(rb):
    rb.desktop("carol-desk", "carol")
    return {"session": "carol", "hook_session": "made-up-123"}


def _session_title_without_hooks(rb):
    rb.desktop("carol-desk", "carol")
    return {"session_title": "Carol"}


@pytest.mark.parametrize(
    "setup",
    [_no_hooks, _ended_without_id, _ended_with_its_ended_id, _guessed_without_id, _made_up_id, _session_title_without_hooks],
)
def test_a_name_no_live_hook_link_proves_is_accepted_as_not_verified(rb, bob, setup):
    sender = setup(rb)
    links_before = list(HookLink.objects.order_by("id").values_list("hook_session", "session_id", "exact", "state"))
    answer = rb.sent(body="hello bob", to="bob", **sender)
    carol = Session.objects.get(title="carol")
    assert answer["sender"] == (sender.get("session") or sender.get("session_title"))
    assert answer["sender_verified"] is False
    assert answer["note"] == NOT_VERIFIED_NOTE
    message = SessionMessage.objects.get(pk=answer["id"])
    assert (message.sender, message.sender_verified, message.body) == (carol, False, "hello bob")
    # Nothing was proven, so nothing was linked or moved.
    assert list(HookLink.objects.order_by("id").values_list("hook_session", "session_id", "exact", "state")) == links_before
    # The frame tells the recipient so.
    text = context_of(rb.tool("hook-b"))
    assert f'"{answer["sender"]}" ({carol.handle}, name NOT verified)' in text


def test_a_made_up_hook_id_creates_no_link_and_no_hook_row(rb, bob):
    answer = rb.sent(body="hi", to="bob", session="erin", hook_session="made-up-456")
    assert answer["sender_verified"] is False
    assert not HookLink.objects.filter(hook_session="made-up-456").exists()
    assert Session.objects.get(title="erin").kind == Session.Kind.MCP


# Row 5: the session's own name with its own live hook id


@pytest.mark.parametrize(
    "sender",
    [
        {"session": "alice", "hook_session": "hook-a"},
        {"session": " Alice  ", "hook_session": "hook-a"},
        {"session": "al", "hook_session": "hook-a"},
        {"session_title": "alice", "hook_session": "hook-a"},
        {"session": "hook-a", "hook_session": "hook-a"},
        {"session": "{handle}", "hook_session": "hook-a"},
        {"hook_session": "hook-a"},
    ],
)
@pytest.mark.parametrize("busy", [False, True])
def test_a_session_s_own_name_with_its_own_live_hook_id_is_verified(rb, bob, sender, busy):
    alice = rb.live("alice", "hook-a", busy=busy)
    rb.give_aliases(alice, ["al"])
    sender = {k: v.format(handle=alice.handle) for k, v in sender.items()}
    answer = rb.sent(body="hello bob", to="bob", **sender)
    assert answer["sender_verified"] is True
    assert answer["note"] == ""
    message = SessionMessage.objects.get(pk=answer["id"])
    assert (message.sender, message.sender_verified) == (alice, True)
    text = context_of(rb.tool("hook-b"))
    assert f"({alice.handle}, name verified)" in text


def test_a_guessed_session_naming_itself_with_its_hook_id_becomes_exact_and_verified(rb, bob):
    desk = rb.desktop("carol-desk", "carol", folder="/work/shared-folder")
    rb.guessed("hook-c", cwd="/work/shared-folder")
    answer = rb.sent(body="hi", to="bob", session="carol", hook_session="hook-c")
    assert answer["sender_verified"] is True
    assert link("hook-c").session == desk and link("hook-c").exact


# An unknown sender name creates an mcp row; a refused send writes nothing


def test_an_unknown_sender_name_creates_one_row_of_kind_mcp(rb, bob):
    answer = rb.sent(body="hi", to="bob", session="newbie")
    newbie = row("newbie")
    assert newbie.kind == Session.Kind.MCP
    assert not newbie.links.exists()
    assert answer["sender"] == "newbie" and answer["sender_verified"] is False
    rb.sent(body="again", to="bob", session="NEWBIE")
    assert Session.objects.filter(title__iexact="newbie").count() == 1
    assert SessionMessage.objects.filter(sender=newbie).count() == 2


@pytest.mark.parametrize(
    "fields, status, sentence",
    [
        ({"to": "nobody"}, 404, 'No session goes by "nobody". Use sessions_list to see the names you can use.'),
        ({"to": "newbie"}, 403, "A session cannot write to itself; pass another session in to (sessions_list shows them)."),
        ({}, 400, "Say who receives it: pass to (a session name, S-<id> handle or desktop id), or in_reply_to."),
        ({"to": "bob", "task": "no such task"}, 404, 'No task "no such task". Give a task id or its exact title.'),
        ({"in_reply_to": 999}, 404, "There is no message M-999. messages_list shows your messages and their ids."),
        ({"to": "bob", "body": ""}, 400, "The body is empty; write the message text in body."),
        ({"to": "bob", "body": "x" * 4001}, 400, None),
        ({"to": "bob\nthe owner"}, 400, "The recipient must be a single line; remove the line break."),
        ({"to": "twin"}, 409, None),
    ],
)
def test_a_refused_send_from_an_unknown_name_creates_no_row(rb, bob, fields, status, sentence):
    rb.desktop("twin-1", "twin")
    rb.desktop("twin-2", "Twin")
    before = counts()
    response = rb.send(**{"body": "hi", "session": "newbie", **fields})
    assert response.status_code == status, response.content
    if sentence is not None:
        assert detail(response) == sentence
    assert counts() == before
    assert not Session.objects.filter(title="newbie").exists()


@pytest.mark.parametrize("restart", ["moved by a write", "moved by RELAYBAY_SESSION"])
def test_an_old_ended_hook_id_alone_cannot_pass_for_a_session_that_is_live_elsewhere(rb, bob, restart):
    alice = rb.live("alice", "hook-a1")
    if restart == "moved by a write":
        rb.guessed("hook-a2")
        rb.sent(body="back", to="bob", session="alice", hook_session="hook-a2")
    else:
        rb.live("alice", "hook-a2")
    assert link("hook-a1").state == HookLink.State.ENDED and link("hook-a1").session == alice
    before = counts()
    # Without a name the hook id says who writes; hook-a1 was alice's, but alice now has a live
    # exact link, and a write passing for her must carry that link's id (row 2).
    response = rb.send(body="hi", to="bob", hook_session="hook-a1")
    assert response.status_code == 403
    assert detail(response) == linked_live_name("alice")
    assert counts() == before
