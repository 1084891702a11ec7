"""Markdown export of a session or a task: comments, events and message marks, never message
texts (docs/rules.md §5.5, §4.7)."""

import pytest

from messaging.actions import do_ack_messages
from sessions_app import actions
from sessions_app.hooks.ingest import ingest_hook
from tests.board_fixtures import board, named_session, owner, send  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def work(db):
    alpha = named_session("alpha", folder="/work/alpha")
    beta = named_session("beta")
    task = actions.do_save_task(title="Export me")
    actions.do_update_session(session=alpha, task=task)
    actions.do_write_comment(session=alpha, body="Owner note ```with fences```\nsecond line")
    ingest_hook({"hook_event_name": "UserPromptSubmit", "session_id": alpha.hook_session, "cwd": "/w", "prompt": "start"})
    question = send(alpha, beta, "SECRET-BODY-ONE")
    answer = send(beta, alpha, "SECRET-BODY-TWO", in_reply_to=question.pk)
    do_ack_messages(message_id=answer.pk, session="alpha", hook_session=alpha.hook_session)
    return {"alpha": alpha, "beta": beta, "task": task, "question": question, "answer": answer}


def test_a_session_exports_as_a_markdown_file(board, work):
    response = board.get(f"/sessions/{work['alpha'].pk}/export.md")
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="relaybay-S-{work["alpha"].pk}.md"'
    text = response.content.decode()
    assert text.startswith(f"# Session alpha (S-{work['alpha'].pk})")
    assert "- **Link:** exact busy" in text and "/work/alpha" in text and work["alpha"].hook_session.replace("-", "-") in text


def test_the_export_holds_comments_whole_in_a_fence_longer_than_theirs(board, work):
    text = board.get(f"/sessions/{work['alpha'].pk}/export.md").content.decode()
    assert "````text\nOwner note ```with fences```\nsecond line\n````" in text
    assert "delivered" in text and "UserPromptSubmit via" in text


def test_the_export_has_message_marks_and_never_message_texts(board, work):
    for url in (f"/sessions/{work['alpha'].pk}/export.md", f"/tasks/{work['task'].pk}/export.md"):
        text = board.get(url).content.decode()
        assert "SECRET-BODY" not in text
        question, answer = work["question"], work["answer"]
        assert f"| M-{question.pk} | relaybay | alpha | S-{work['beta'].pk} |" in text
        row = next(line for line in text.splitlines() if line.startswith(f"| M-{answer.pk} |"))
        assert f"| M-{question.pk} |" in row and "| read " in row


def test_the_export_lists_the_events(board, work):
    text = board.get(f"/sessions/{work['alpha'].pk}/export.md").content.decode()
    assert "| hook.UserPromptSubmit |" in text and "prompt=start" in text
    assert "| session.message |" in text and "| message.read |" in text


def test_a_task_exports_its_sessions_comments_messages_and_events(board, work):
    response = board.get(f"/tasks/{work['task'].pk}/export.md")
    assert response["Content-Disposition"] == f'attachment; filename="relaybay-task-{work["task"].pk}.md"'
    text = response.content.decode()
    assert text.startswith(f"# Task Export me (#{work['task'].pk}, open)")
    assert f"- S-{work['alpha'].pk} alpha — hook, exact busy" in text
    assert "beta — " not in text.split("## Comments")[0]
    assert "Owner note" in text and "| task.created |" in text
