"""Parallel hooks of one session against a real daphne (docs/rules.md §2.3): claiming an item is atomic,
so each is delivered exactly once, when Claude Code runs many hooks at the same moment.

Runs on the test run's configuration: the embedded default (SQLite, WAL, immediate
transactions) on the first pass of `make test`, PostgreSQL + Redis on the scale-out pass.
"""

import collections

from tests.live_server import live_relaybay  # noqa: F401  (fixture)
from tests.scale_out import delivered_ids, parallel_hooks, post_json, query, write_comments


def assert_each_once(answers, expected):
    seen = collections.Counter(item for answer in answers for item in delivered_ids(answer))
    assert all(n == 1 for n in seen.values()), f"delivered more than once: {seen}"
    assert set(seen) == set(expected)


def test_16_parallel_hooks_deliver_each_of_5_pending_comments_exactly_once(live_relaybay):
    live_relaybay.start_session("hook-par", "par", cwd="/work/par")
    live_relaybay.hook("UserPromptSubmit", "hook-par", prompt="go", cwd="/work/par")
    write_comments(live_relaybay, "par", [f"comment {i} for the parallel hooks" for i in range(5)])
    comments = [("C", pk) for (pk,) in query(live_relaybay, "select id from sessions_app_comment where body like '% for the parallel hooks'")]
    assert len(comments) == 5
    answers = parallel_hooks([live_relaybay], "PreToolUse", "hook-par", 16, tool_name="Bash", tool_input={"command": "ls"}, cwd="/work/par")
    assert_each_once(answers, comments)
    carried = query(live_relaybay, "select count(*) from sessions_app_comment where delivered_by = 'PreToolUse via hook-par'")
    assert carried == [(5,)]
    events = query(live_relaybay, "select count(*) from sessions_app_event where name = 'comment.delivered'")
    assert events == [(5,)]


def test_parallel_hooks_share_messages_that_need_several_answers_without_a_double(live_relaybay):
    live_relaybay.start_session("hook-many-tx", "many-tx", cwd="/work/many-tx")
    live_relaybay.start_session("hook-many-rx", "many-rx", cwd="/work/many-rx")
    live_relaybay.hook("UserPromptSubmit", "hook-many-rx", prompt="go", cwd="/work/many-rx")
    sent = []
    for i in range(10):
        body = f"part {i} " + "w" * 2500  # three fit one answer: several hooks each carry a share
        status, answer = post_json(
            live_relaybay.url, live_relaybay.token, "/message_send", {"body": body, "to": "many-rx", "session": "many-tx", "hook_session": "hook-many-tx"}
        )
        assert status == 200, answer
        sent.append(("M", answer["id"]))
    answers = parallel_hooks([live_relaybay], "PostToolUse", "hook-many-rx", 16, tool_name="Read", cwd="/work/many-rx")
    assert_each_once(answers, sent)
    assert sum(1 for answer in answers if answer) >= 4


def test_parallel_stop_hooks_block_at_most_three_times_per_turn(live_relaybay):
    live_relaybay.start_session("hook-cap-tx", "cap-tx", cwd="/work/cap-tx")
    live_relaybay.start_session("hook-cap-rx", "cap-rx", cwd="/work/cap-rx")
    live_relaybay.hook("UserPromptSubmit", "hook-cap-rx", prompt="go", cwd="/work/cap-rx")
    for i in range(8):
        status, answer = post_json(
            live_relaybay.url, live_relaybay.token, "/message_send",
            {"body": f"cap {i} " + "v" * 3000, "to": "cap-rx", "session": "cap-tx", "hook_session": "hook-cap-tx"},
        )
        assert status == 200, answer
    answers = parallel_hooks([live_relaybay], "Stop", "hook-cap-rx", 16, stop_hook_active=False, cwd="/work/cap-rx")
    assert sum(1 for answer in answers if answer.get("decision") == "block") == 3
    delivered = [item for answer in answers for item in delivered_ids(answer)]
    assert len(delivered) == len(set(delivered)) == 6


def test_two_sessions_editing_one_file_at_the_same_moment_are_never_both_unwarned(live_relaybay, tmp_path):
    # Each pair of edits runs at once, on the database's own terms (SQLite's one writer,
    # PostgreSQL's concurrent transactions): the later one sees the earlier and is warned.
    from tests.file_personas import edit_payload
    from tests.scale_out import parallel

    folder = tmp_path.resolve()
    for name in ("edit-left", "edit-right"):
        live_relaybay.start_session(f"hook-{name}", name, cwd=str(folder))
    for i in range(12):
        path = folder / f"module_{i}.py"
        calls = [
            (lambda who=who: post_json(live_relaybay.url, live_relaybay.token, "/hooks", edit_payload(f"hook-{who}", folder, path)))
            for who in ("edit-left", "edit-right")
        ]
        answers = [answer for status, answer in parallel(calls)]
        warned = [answer for answer in answers if "another live session's file too" in answer.get("hookSpecificOutput", {}).get("additionalContext", "")]
        assert len(warned) == 1, (i, answers)
