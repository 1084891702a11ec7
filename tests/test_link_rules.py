"""Hook links: automatic rows, the folder guess, exact links, states, resume (docs/rules.md §1.2-§1.3)."""

import pytest

from sessions_app.actions import do_register_desktop
from sessions_app.models import HookLink, Session

pytestmark = pytest.mark.django_db


def link(hook_id):
    return HookLink.objects.select_related("session").get(hook_session=hook_id)


def test_an_unknown_hook_session_gets_a_hook_row_with_a_guessed_link(hook):
    answer = hook("SessionStart", "h-1", source="startup", cwd="/src/a")
    row = link("h-1").session
    assert row.kind == "hook" and row.name == "h-1" and row.folder == "/src/a"
    assert not link("h-1").exact
    assert "only guessed" in answer["hookSpecificOutput"]["additionalContext"]
    assert "session_link" in answer["hookSpecificOutput"]["additionalContext"]


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


def test_naming_a_guessed_hook_row_merges_it_and_hands_its_comments_over(hook):
    from sessions_app.actions import do_write_comment

    alice = do_register_desktop(desktop_id="d-alice", title="alice").session
    hook("SessionStart", "h-1", cwd="/elsewhere")
    guessed_row = link("h-1").session
    do_write_comment(session=guessed_row, body="for the guessed row")
    hook("SessionStart", "h-1", source="resume", relaybay_session="alice")
    assert link("h-1").session == alice and link("h-1").exact
    assert not Session.objects.filter(pk=guessed_row.pk).exists()
    assert alice.comments.get().body == "for the guessed row"


def test_a_restart_without_session_end_moves_the_link_and_ends_the_old_one(hook):
    hook("SessionStart", "old", relaybay_session="alice")
    hook("SessionStart", "new", relaybay_session="alice")
    alice = Session.objects.get(title="alice")
    assert link("new").session == alice and link("new").exact and link("new").state == "idle"
    assert link("old").state == "ended"


def test_a_live_exact_link_of_another_row_is_not_taken_by_a_name(hook):
    hook("SessionStart", "h-1", relaybay_session="alice")
    answer = hook("SessionStart", "h-1", source="resume", relaybay_session="bob")
    assert "RELAYBAY_SESSION was not used" in answer["hookSpecificOutput"]["additionalContext"]
    assert link("h-1").session.title == "alice"
    assert not Session.objects.filter(title="bob").exists()


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
    made, events = _rows_made_and_events(lambda: hook("SessionStart", "new", source="startup", relaybay_session="alice"))
    assert made == [], "no temporary row made and merged a moment later"
    assert link("new").session == alice and link("new").exact and link("old").state == "ended"
    assert "session.merged" not in events and "link.guessed" not in events
    hook("SessionStart", "h-bob", relaybay_session="bob")
    assert Session.objects.get(title="bob").pk == alice.pk + 1, "handles do not jump"


def test_a_new_hook_id_whose_name_cannot_be_used_still_gets_a_guessed_row(hook):
    do_register_desktop(desktop_id="d-1", title="twin")
    do_register_desktop(desktop_id="d-2", title="twin")
    answer = hook("SessionStart", "h-1", cwd="/elsewhere", relaybay_session="twin")
    assert "RELAYBAY_SESSION was not used" in answer["hookSpecificOutput"]["additionalContext"]
    assert link("h-1").session.kind == "hook" and not link("h-1").exact
