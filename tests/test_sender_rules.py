"""Who may send (docs/rules.md §4.2): one case per row of the table, through POST /api/message_send."""

import pytest

from messaging.models import SessionMessage
from sessions_app.models import HookLink, Session

from .message_personas import context_of, counts, link, rb, row  # noqa: F401

pytestmark = pytest.mark.django_db

# Exact: every send from a name nothing proves answers with this note, and the model acts on
# its words. It must say that the recipient is told, and name the argument that verifies.
NOT_VERIFIED_NOTE = (
    "Your name is not verified (no live hook link of yours proves it), and the recipient is told so. "
    "Pass hook_session=<your CLAUDE_CODE_SESSION_ID> to verify it."
)


def refusal(response):
    """A refused send's code, which programs and tests rely on, and its sentence, which may be
    reworded (core/errors.py): tests check the code and a key phrase of the sentence."""
    body = response.json()
    return body["code"], body["detail"]


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
    code, sentence = refusal(response)
    assert code == "sender_refused" and "The sender is required" in sentence
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
    code, sentence = refusal(response)
    assert code == "sender_refused" and f'"{name.strip()}" is linked to a live Claude Code session' in sentence
    assert counts() == before
    assert link("hook-a").session == alice and link("hook-a").exact


def test_a_desktop_title_or_alias_held_by_a_live_exact_link_is_refused_without_its_id(rb, bob):
    desk = rb.desktop("desk-1", "Planner", aliases=["plan"])
    rb.guessed("hook-p", cwd="/desk/desk-1")
    assert rb.session_link(hook_session="hook-p", session="desk-1").status_code == 200
    assert link("hook-p").session == desk and link("hook-p").exact
    for name in ("planner", "plan", "desk-1", desk.handle):
        before = counts()
        response = rb.send(body="hi", to="bob", session=name)
        assert response.status_code == 403, name
        code, sentence = refusal(response)
        assert code == "sender_refused" and f'"{name}" is linked to a live Claude Code session' in sentence
        assert counts() == before


def test_the_refusal_names_the_way_out_and_the_way_out_works_after_a_restart_without_session_end(rb, bob):
    alice = rb.live("alice", "hook-a1")
    # The terminal restarted without SessionEnd: hook-a1 still looks live, though its process
    # is gone; hook-a2 is new and only guessed (it started where the one free desktop row is).
    rb.desktop("desk-n", "new terminal", folder="/work/new")
    rb.guessed("hook-a2", cwd="/work/new")
    rb.exited("hook-a1")
    code, sentence = refusal(rb.send(body="hi", to="bob", session="alice"))
    assert code == "sender_refused" and "call session_link with this name" in sentence
    answer = rb.sent(body="hi", to="bob", session="alice", hook_session="hook-a2")
    assert answer["sender_verified"] is True
    assert link("hook-a2").session == alice and link("hook-a2").exact
    assert link("hook-a1").state == HookLink.State.ENDED


def test_the_way_out_is_refused_while_the_old_process_still_runs(rb, bob):
    alice = rb.live("alice", "hook-a1")
    rb.desktop("desk-n", "new terminal", folder="/work/new")
    rb.guessed("hook-a2", cwd="/work/new")
    before = counts()
    response = rb.send(body="hi", to="bob", session="alice", hook_session="hook-a2")
    assert response.status_code == 409
    code, sentence = refusal(response)
    assert code == "name_in_use" and "in use by another running Claude Code session" in sentence
    assert counts() == before
    assert link("hook-a1").session == alice and link("hook-a1").state == HookLink.State.IDLE


# Row 3: another row's name with a hook id a live session's exact link holds (a name no row goes by
# renames the session's own row instead, docs/rules.md §1.5)


@pytest.mark.parametrize("name", ["carol", "bob", "hook-x", "proj"])
def test_a_row_s_name_with_a_hook_id_another_live_exact_link_holds_is_refused_and_changes_no_row(rb, bob, name):
    alice = rb.live("alice", "hook-a")
    rb.desktop("carol-desk", "carol")
    rb.unnamed("hook-x")
    before = counts()
    titles = sorted(Session.objects.values_list("title", flat=True))
    alice_link = link("hook-a")
    response = rb.send(body="hi", to="bob", session=name, hook_session="hook-a")
    assert response.status_code == 403
    code, sentence = refusal(response)
    assert code == "sender_refused" and f'Hook session hook-a goes by "alice", not by "{name}"' in sentence
    assert counts() == before
    assert sorted(Session.objects.values_list("title", flat=True)) == titles
    after = link("hook-a")
    assert (after.session, after.exact, after.state, after.last_event_at) == (
        alice,
        True,
        alice_link.state,
        alice_link.last_event_at,
    )


def test_a_busy_session_s_hook_id_cannot_be_used_under_another_row_s_name_either(rb, bob):
    rb.live("alice", "hook-a", busy=True)
    rb.desktop("carol-desk", "carol")
    before = counts()
    response = rb.send(body="hi", to="bob", session="carol", hook_session="hook-a")
    assert response.status_code == 403
    assert refusal(response)[0] == "sender_refused"
    assert counts() == before


@pytest.mark.parametrize("busy", [False, True])
def test_a_running_session_naming_itself_by_a_name_no_row_goes_by_renames_its_row(rb, bob, busy):
    alice = rb.live("alice", "hook-a", busy=busy)
    answer = rb.sent(body="hi", to="bob", session="mallory", hook_session="hook-a")
    alice.refresh_from_db()
    assert alice.title == "mallory" and link("hook-a").session == alice and link("hook-a").exact
    assert (answer["sender"], answer["sender_verified"]) == ("mallory", True)
    assert not Session.objects.filter(title="alice").exists()
    assert SessionMessage.objects.get(pk=answer["id"]).sender == alice


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
    "fields, status, code, phrase",
    [
        ({"to": "nobody"}, 404, "not_found", 'No session goes by "nobody"'),
        ({"to": "newbie"}, 403, "self_message", "cannot write to itself"),
        ({}, 400, "invalid_input", "Say who receives it"),
        ({"to": "bob", "task": "no such task"}, 404, "not_found", 'No task "no such task"'),
        ({"in_reply_to": 999}, 404, "not_found", "There is no message M-999"),
        ({"to": "bob", "body": ""}, 400, "invalid_input", "The body is empty"),
        ({"to": "bob", "body": "x" * 4001}, 400, "body_too_long", "the limit is 4000"),
        ({"to": "bob\nthe owner"}, 400, "invalid_input", "The recipient must be a single line"),
        ({"to": "twin"}, 409, "ambiguous_name", 'Several sessions go by "twin"'),
    ],
)
def test_a_refused_send_from_an_unknown_name_creates_no_row(rb, bob, fields, status, code, phrase):
    rb.desktop("twin-1", "twin")
    rb.desktop("twin-2", "Twin")
    before = counts()
    response = rb.send(**{"body": "hi", "session": "newbie", **fields})
    assert response.status_code == status, response.content
    answered, sentence = refusal(response)
    assert answered == code and phrase in sentence, sentence
    assert counts() == before
    assert not Session.objects.filter(title="newbie").exists()


@pytest.mark.parametrize("restart", ["moved by a write", "moved by RELAYBAY_SESSION"])
def test_an_old_ended_hook_id_alone_cannot_pass_for_a_session_that_is_live_elsewhere(rb, bob, restart):
    alice = rb.live("alice", "hook-a1")
    rb.exited("hook-a1")
    if restart == "moved by a write":
        rb.desktop("desk-n", "new terminal", folder="/work/new")
        rb.guessed("hook-a2", cwd="/work/new")
        rb.sent(body="back", to="bob", session="alice", hook_session="hook-a2")
    else:
        rb.live("alice", "hook-a2")
    assert link("hook-a1").state == HookLink.State.ENDED and link("hook-a1").session == alice
    before = counts()
    # Without a name the hook id says who writes; hook-a1 was alice's, but alice now has a live
    # exact link, and a write passing for her must carry that link's id (row 2).
    response = rb.send(body="hi", to="bob", hook_session="hook-a1")
    assert response.status_code == 403
    code, sentence = refusal(response)
    assert code == "sender_refused" and '"alice" is linked to a live Claude Code session' in sentence
    assert counts() == before
