"""Owner comments reach the model through exact live links (docs/rules.md §2.2-§2.5, §3)."""

import pytest

from sessions_app.actions import do_register_desktop, do_write_comment
from sessions_app.hooks.delivery import BUDGET
from sessions_app.models import Comment, HookLink, Session

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice(hook):
    hook("SessionStart", "h-a", source="startup", relaybay_session="alice")
    return Session.objects.get(title="alice")


def context(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


@pytest.mark.parametrize("event", ["UserPromptSubmit", "PreToolUse", "PostToolUse"])
def test_a_comment_is_delivered_as_additional_context(hook, alice, event):
    do_write_comment(session=alice, body="please run the tests")
    answer = hook(event, "h-a")
    assert answer["hookSpecificOutput"]["hookEventName"] == event
    assert "from the owner" in context(answer)
    assert "please run the tests" in context(answer)
    comment = Comment.objects.get()
    assert comment.delivered_at and comment.delivered_by == f"{event} via h-a"


def test_each_comment_is_delivered_once(hook, alice):
    do_write_comment(session=alice, body="once only")
    assert "once only" in context(hook("PreToolUse", "h-a"))
    assert hook("PostToolUse", "h-a") == {}


def test_comments_come_oldest_first(hook, alice):
    for text in ["first", "second", "third"]:
        do_write_comment(session=alice, body=text)
    text = context(hook("UserPromptSubmit", "h-a"))
    assert text.index("first") < text.index("second") < text.index("third")


def test_one_answer_carries_at_most_the_budget_in_whole_items(hook, alice):
    bodies = [f"comment {i} " + "x" * 3000 for i in range(4)]
    for body in bodies:
        do_write_comment(session=alice, body=body)
    first = context(hook("PreToolUse", "h-a"))
    assert len(first) <= BUDGET
    assert bodies[0] in first and bodies[1] in first and "comment 2 " not in first
    second = context(hook("PreToolUse", "h-a"))
    assert bodies[2] in second and bodies[3] in second
    assert Comment.objects.filter(delivered_at=None).count() == 0


def test_a_guessed_link_carries_nothing(hook):
    do_register_desktop(desktop_id="d-g", folder="/work/g")
    hook("SessionStart", "h-g", cwd="/work/g")
    row = HookLink.objects.get(hook_session="h-g", exact=False).session
    do_write_comment(session=row, body="waits")
    assert hook("UserPromptSubmit", "h-g") == {}
    assert Comment.objects.get().delivered_at is None


def test_an_ended_link_carries_nothing(hook, alice):
    hook("SessionEnd", "h-a")
    do_write_comment(session=alice, body="waits")
    assert hook("PreToolUse", "h-a") == {}


def test_a_replayed_event_delivers_nothing(hook, alice):
    do_write_comment(session=alice, body="not through a replay")
    assert hook("UserPromptSubmit", "h-a", replay=True) == {}
    assert Comment.objects.get().delivered_at is None
    assert "not through a replay" in context(hook("PreToolUse", "h-a"))


def test_a_comment_pending_at_stop_is_a_stop_block(hook, alice):
    hook("UserPromptSubmit", "h-a")
    do_write_comment(session=alice, body="one more thing")
    answer = hook("Stop", "h-a", stop_hook_active=False)
    assert answer["decision"] == "block"
    assert "from the owner" in answer["reason"].splitlines()[0]
    assert "one more thing" in answer["reason"]
    assert HookLink.objects.get(hook_session="h-a").state == "busy"


def test_stop_blocks_are_capped_at_three_per_turn_and_reset_at_the_next_prompt(hook, alice):
    hook("UserPromptSubmit", "h-a")
    blocks = []
    for i in range(5):
        do_write_comment(session=alice, body=f"c{i}")
        blocks.append(hook("Stop", "h-a", stop_hook_active=i > 0))
    assert [b.get("decision") for b in blocks] == ["block", "block", "block", None, None]
    assert HookLink.objects.get(hook_session="h-a").state == "idle"
    # What the cap held back arrives with the next prompt, oldest first.
    text = context(hook("UserPromptSubmit", "h-a"))
    assert text.index("c3") < text.index("c4")
    do_write_comment(session=alice, body="after reset")
    assert hook("Stop", "h-a", stop_hook_active=False)["decision"] == "block"


def test_a_stop_with_nothing_pending_is_not_blocked_and_uses_none_of_the_turns_blocks(hook, alice):
    assert hook("Stop", "h-a", stop_hook_active=False) == {}
    # The turn still has its three blocks for what arrives later.
    for i in range(3):
        do_write_comment(session=alice, body=f"later {i}")
        assert hook("Stop", "h-a", stop_hook_active=True)["decision"] == "block"


def test_session_start_says_who_the_session_is(hook):
    text = context(hook("SessionStart", "h-x", relaybay_session="builder"))
    row = Session.objects.get(title="builder")
    assert row.handle in text and "h-x" in text and "exact" in text
