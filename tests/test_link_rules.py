"""Hook links: a session's own row from its first hook, the folder guess, exact links, states,
resume, and the running process behind a link (docs/rules.md §1.2-§1.3, §1.5)."""

import json

import pytest

from sessions_app import directory
from sessions_app.actions import do_register_desktop
from sessions_app.models import Event, HookLink, Session

from .message_personas import process_exited

pytestmark = pytest.mark.django_db

PROOF_A, PROOF_B = "a" * 64, "b" * 64


def link(hook_id):
    return HookLink.objects.select_related("session").get(hook_session=hook_id)


def proven_hook(hook, event, session_id, proof, **fields):
    """A hook as the hook client posts it from one Claude Code process: its proof in X-Relaybay-Process."""
    payload = {"hook_event_name": event, "session_id": session_id, "cwd": fields.pop("cwd", "/work/proj"), **fields}
    response = hook.raw(json.dumps(payload), **{"X-Relaybay-Process": proof})
    assert response.status_code == 200, response.content
    return response.json()


def test_an_unknown_hook_session_gets_a_hook_row_named_after_its_folder_with_an_exact_link(hook):
    answer = hook("SessionStart", "h-1", source="startup", cwd="/src/a")
    row = link("h-1").session
    assert row.kind == "hook" and row.title == "a" and row.folder == "/src/a"
    assert link("h-1").exact
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "exact" in text and 'session="a"' in text and 'hook_session="h-1"' in text
    assert "only guessed" not in text


def test_any_first_hook_of_an_unknown_hook_session_makes_its_row(hook):
    hook("UserPromptSubmit", "h-1", prompt="hi", cwd="/src/b/")
    assert link("h-1").exact and link("h-1").session.title == "b" and link("h-1").state == "busy"


def test_a_folder_s_name_another_kind_of_row_goes_by_is_not_taken(hook):
    do_register_desktop(desktop_id="d-1", title="a", folder="/desk/a")
    hook("SessionStart", "h-1", cwd="/src/a")
    assert link("h-1").session.title == "a-2" and link("h-1").session.kind == "hook"


@pytest.mark.parametrize(
    "native_name, title",
    [("Reviewer of docs", "Reviewer of docs"), ("a-5f3e9c", "a"), ("", "a"), ("  ", "a")],
)
def test_the_name_the_person_gave_claude_code_names_a_new_row_and_a_generated_one_does_not(hook, native_name, title):
    hook("SessionStart", "h-1", cwd="/src/a", relaybay_native={"session": {"name": native_name}})
    assert link("h-1").session.title == title and link("h-1").exact


def test_a_new_hook_id_carrying_the_process_proof_of_a_link_keeps_that_link_s_row(hook):
    proven_hook(hook, "SessionStart", "h-1", PROOF_A, cwd="/src/a")
    row = link("h-1").session
    # /clear: the old id ends, the same process goes on under a new id.
    proven_hook(hook, "SessionEnd", "h-1", PROOF_A, cwd="/src/a", reason="clear")
    proven_hook(hook, "SessionStart", "h-2", PROOF_A, cwd="/src/a", source="clear")
    assert link("h-2").session == row and link("h-2").exact and link("h-2").process_proof == PROOF_A
    assert link("h-1").state == "ended"
    # A call carrying the process's proof speaks for the new id, not the ended one.
    assert directory.proven_hook_session(None, PROOF_A) == "h-2"
    assert Session.objects.count() == 1


def test_the_folder_guess_links_the_only_desktop_row_without_a_live_link(hook):
    desk = do_register_desktop(desktop_id="d-1", title="Desk", folder="/src/a").session
    hook("SessionStart", "h-1", cwd="/src/a")
    assert link("h-1").session == desk and not link("h-1").exact
    # Now the desktop row has a live link: a second session in that folder gets its own row.
    hook("SessionStart", "h-2", cwd="/src/a")
    assert link("h-2").session.kind == "hook"


def test_two_free_desktop_rows_in_one_folder_are_not_guessed(hook):
    do_register_desktop(desktop_id="d-1", folder="/src/a")
    do_register_desktop(desktop_id="d-2", folder="/src/a")
    hook("SessionStart", "h-1", cwd="/src/a")
    assert link("h-1").session.kind == "hook"


def test_relaybay_session_at_session_start_makes_an_exact_link(hook):
    answer = hook("SessionStart", "h-1", source="startup", relaybay_session="alice")
    assert link("h-1").exact and link("h-1").session.title == "alice"
    text = answer["hookSpecificOutput"]["additionalContext"]
    assert "exact" in text and "h-1" in text and link("h-1").session.handle in text


def test_relaybay_session_naming_an_existing_desktop_row_links_it_exactly(hook):
    desk = do_register_desktop(desktop_id="d-1", title="Builder").session
    hook("SessionStart", "h-1", relaybay_session="builder")
    assert link("h-1").session == desk and link("h-1").exact


def test_states_follow_the_events(hook):
    hook("SessionStart", "h-1")
    assert link("h-1").state == "idle"
    hook("UserPromptSubmit", "h-1")
    assert link("h-1").state == "busy" and link("h-1").turn == 1
    hook("PreToolUse", "h-1")
    assert link("h-1").state == "busy"
    hook("Stop", "h-1")
    assert link("h-1").state == "idle"
    hook("SessionEnd", "h-1", reason="other")
    assert link("h-1").state == "ended"
    hook("UserPromptSubmit", "h-1")
    assert link("h-1").state == "ended", "only a SessionStart revives an ended link"


def test_a_resume_makes_an_ended_link_live_again(hook):
    hook("SessionStart", "h-1", relaybay_session="alice")
    hook("SessionEnd", "h-1")
    hook("SessionStart", "h-1", source="resume")
    assert link("h-1").state == "idle" and link("h-1").exact


def test_a_resume_naming_another_row_moves_a_guessed_link_and_the_desktop_row_keeps_its_comments(hook):
    from sessions_app.actions import do_write_comment

    alice = do_register_desktop(desktop_id="d-alice", title="alice").session
    desk = do_register_desktop(desktop_id="d-1", title="Desk", folder="/src/a").session
    hook("SessionStart", "h-1", cwd="/src/a")
    assert link("h-1").session == desk and not link("h-1").exact
    do_write_comment(session=desk, body="for the desktop row")
    hook("SessionStart", "h-1", source="resume", relaybay_session="alice", cwd="/src/a")
    assert link("h-1").session == alice and link("h-1").exact
    assert desk.comments.get().body == "for the desktop row"
    assert not alice.comments.exists()


def test_a_restart_without_session_end_whose_old_process_exited_moves_the_link_and_ends_the_old_one(hook):
    hook("SessionStart", "old", relaybay_session="alice")
    process_exited("old")
    answer = hook("SessionStart", "new", relaybay_session="alice")
    alice = Session.objects.get(title="alice")
    assert link("new").session == alice and link("new").exact and link("new").state == "idle"
    assert link("old").state == "ended"
    assert "systemMessage" not in answer and Session.objects.count() == 1


def test_a_named_start_whose_name_a_running_session_holds_gets_the_next_name_and_is_told(hook):
    hook("SessionStart", "old", relaybay_session="alice")
    alice = link("old").session
    answer = hook("SessionStart", "new", relaybay_session="alice")
    assert link("old").session == alice and link("old").state == "idle" and link("old").exact
    assert link("new").session.title == "alice-2" and link("new").exact
    handle = link("new").session.handle
    assert answer["systemMessage"] == (
        f'relaybay: "alice" is not free: another running Claude Code session holds it ({alice.handle}). '
        f'So this session goes by "alice-2" ({handle}). Rename it on the board, or end the other session and start again.'
    )
    assert answer["systemMessage"] in answer["hookSpecificOutput"]["additionalContext"]
    event = Event.objects.get(name="session.name_in_use")
    assert event.data == {"asked": "alice", "why": f"another running Claude Code session holds it ({alice.handle})", "given": "alice-2"}


def test_session_link_to_a_name_a_running_session_holds_is_refused_as_name_in_use(hook, api):
    hook("SessionStart", "h-alice", relaybay_session="alice")
    desk = do_register_desktop(desktop_id="d-1", title="Desk", folder="/src/a").session
    hook("SessionStart", "h-1", cwd="/src/a")
    response = api.post("/session_link", {"hook_session": "h-1", "session": "alice"})
    assert response.status_code == 409 and response.json()["code"] == "name_in_use"
    assert link("h-1").session == desk and not link("h-1").exact
    assert link("h-alice").state == "idle"
    process_exited("h-alice")
    response = api.post("/session_link", {"hook_session": "h-1", "session": "alice"})
    assert response.status_code == 200, response.content
    assert link("h-1").session.title == "alice" and link("h-1").exact and link("h-alice").state == "ended"


def test_a_link_without_a_socket_counts_as_running_while_heard_from_within_ten_minutes(hook):
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.identity import process_running

    hook("SessionStart", "h-1")
    running, now = link("h-1"), timezone.now()
    running.last_event_at = now - timedelta(minutes=9)
    assert process_running(running, now)
    running.last_event_at = now - timedelta(minutes=11)
    assert not process_running(running, now)
    running.waiter_polled_at = now - timedelta(minutes=1)  # its wake-up hook polls
    assert process_running(running, now)
    running.state = HookLink.State.ENDED
    assert not process_running(running, now)


def test_a_hook_carrying_another_running_process_s_proof_changes_nothing_and_gets_nothing(hook):
    from sessions_app.actions import do_write_comment

    proven_hook(hook, "SessionStart", "h-1", PROOF_A, cwd="/src/a")
    do_write_comment(session=link("h-1").session, body="for process a")
    before = link("h-1")
    assert proven_hook(hook, "UserPromptSubmit", "h-1", PROOF_B, prompt="hi", cwd="/src/a") == {}
    answer = proven_hook(hook, "SessionStart", "h-1", PROOF_B, source="resume", cwd="/src/a")
    assert list(answer) == ["systemMessage"] and "another running process" in answer["systemMessage"]
    after = link("h-1")
    assert (after.state, after.turn, after.process_proof) == (before.state, before.turn, PROOF_A)
    refused = Event.objects.filter(hook_session="h-1", data__relaybay_refused__isnull=False)
    assert sorted(refused.values_list("name", flat=True)) == ["hook.SessionStart", "hook.UserPromptSubmit"]
    # Its own process is still served.
    assert "for process a" in str(proven_hook(hook, "UserPromptSubmit", "h-1", PROOF_A, prompt="go", cwd="/src/a"))


def test_a_hook_with_another_proof_speaks_for_a_link_whose_process_exited(hook):
    proven_hook(hook, "SessionStart", "h-1", PROOF_A, cwd="/src/a")
    process_exited("h-1")
    answer = proven_hook(hook, "SessionStart", "h-1", PROOF_B, source="resume", cwd="/src/a")
    assert "hookSpecificOutput" in answer
    assert link("h-1").process_proof == PROOF_B


def test_a_hook_without_a_proof_speaks_for_a_link_no_process_proved(hook):
    hook("SessionStart", "h-1", cwd="/src/a")
    assert proven_hook(hook, "UserPromptSubmit", "h-1", PROOF_A, prompt="hi", cwd="/src/a") == {}
    assert link("h-1").process_proof == PROOF_A and link("h-1").state == "busy"


def test_a_live_exact_link_of_another_row_is_not_taken_by_a_name(hook):
    hook("SessionStart", "h-1", relaybay_session="alice")
    answer = hook("SessionStart", "h-1", source="resume", relaybay_session="bob")
    assert "RELAYBAY_SESSION was not used" in answer["hookSpecificOutput"]["additionalContext"]
    assert link("h-1").session.title == "alice" and link("h-1").exact
    assert not Session.objects.filter(title="bob").exists()
    assert list(Session.objects.values_list("title", flat=True)) == ["alice"]


def test_an_ended_exact_hook_row_taken_over_is_removed(hook):
    hook("SessionStart", "h-1", relaybay_session="alice")
    alice = link("h-1").session
    hook("SessionEnd", "h-1")
    hook("SessionStart", "h-1", source="resume", relaybay_session="bob")
    assert link("h-1").session.title == "bob"
    assert not Session.objects.filter(pk=alice.pk).exists()


def _rows_made_and_events(start):
    """The session rows created and the events recorded while `start()` runs."""
    from django.db.models.signals import post_save

    from sessions_app.models import Event

    made = []

    def count(sender, instance, created, **kwargs):
        if created:
            made.append(instance.pk)

    first_event = (Event.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
    post_save.connect(count, sender=Session)
    try:
        start()
    finally:
        post_save.disconnect(count, sender=Session)
    return made, list(Event.objects.filter(id__gte=first_event).order_by("id").values_list("name", flat=True))


def test_a_named_start_of_a_new_hook_id_makes_only_its_named_row(hook):
    made, events = _rows_made_and_events(lambda: hook("SessionStart", "h-1", source="startup", relaybay_session="alice"))
    alice = Session.objects.get(title="alice")
    assert made == [alice.pk]
    assert link("h-1").session == alice and link("h-1").exact
    assert events == ["link.exact", "hook.SessionStart"], "no guessed link first"


def test_a_named_start_links_straight_to_the_existing_row_without_a_temporary_one(hook):
    hook("SessionStart", "old", relaybay_session="alice")
    alice = link("old").session
    process_exited("old")
    made, events = _rows_made_and_events(lambda: hook("SessionStart", "new", source="startup", relaybay_session="alice"))
    assert made == [], "no temporary row made and merged a moment later"
    assert link("new").session == alice and link("new").exact and link("old").state == "ended"
    assert "session.merged" not in events and "link.guessed" not in events
    hook("SessionStart", "h-bob", relaybay_session="bob")
    assert Session.objects.get(title="bob").pk == alice.pk + 1, "handles do not jump"


def test_a_named_start_under_a_name_several_rows_go_by_gets_a_row_of_its_own_under_the_next_name(hook):
    do_register_desktop(desktop_id="d-1", title="twin")
    do_register_desktop(desktop_id="d-2", title="twin")
    answer = hook("SessionStart", "h-1", cwd="/elsewhere", relaybay_session="twin")
    row = link("h-1").session
    assert (row.kind, row.title, link("h-1").exact) == ("hook", "twin-2", True)
    assert f'"twin-2" ({row.handle})' in answer["systemMessage"]


def test_a_named_start_under_a_name_that_is_not_one_line_goes_by_its_folder(hook):
    answer = hook("SessionStart", "h-1", cwd="/src/a", relaybay_session="two\nlines")
    assert link("h-1").session.title == "a" and link("h-1").exact
    assert "RELAYBAY_SESSION was not used" in answer["systemMessage"]
