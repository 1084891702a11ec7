"""The board's forms: CSRF on every one, and each write done by its action (comments reach the
session at its next hook, names and tasks change, Inbox items are marked seen)."""

import re

import pytest
from django.test import Client

from messaging.models import SessionMessage
from sessions_app import actions
from sessions_app.models import Comment, Session, Task
from tests.board_fixtures import board, named_session, owner, send  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def strict(owner):
    """The owner's browser: CSRF checks enforced, as in production."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(owner)
    return client


@pytest.fixture
def rows(db):
    alpha = named_session("alpha")
    beta = named_session("beta")
    task = actions.do_save_task(title="Board")
    actions.do_update_session(session=alpha, task=task)
    parent = send(alpha, beta, "deep parent")
    SessionMessage.objects.filter(pk=parent.pk).update(needs_owner=True)
    return {"alpha": alpha, "beta": beta, "task": task, "parent": parent}


def forms(rows):
    """Each form: the page it is on, its action, and what it posts."""
    alpha, task, parent = rows["alpha"], rows["task"], rows["parent"]
    return [
        (f"/sessions/{alpha.pk}/", f"/sessions/{alpha.pk}/comment/", {"body": "hello"}),
        (f"/sessions/{alpha.pk}/", f"/sessions/{alpha.pk}/edit/", {"title": "alpha", "aliases": "a1", "task": task.pk}),
        ("/tasks/", "/tasks/new/", {"title": "New"}),
        (f"/tasks/{task.pk}/", f"/tasks/{task.pk}/edit/", {"title": "Board 2", "status": "open"}),
        (f"/tasks/{task.pk}/", f"/tasks/{task.pk}/attach/", {"session": "beta"}),
        (f"/tasks/{task.pk}/", f"/tasks/{task.pk}/detach/{alpha.pk}/", {}),
        ("/inbox/", f"/inbox/{parent.pk}/seen/", {}),
        ("/", "/logout/", {}),
    ]


def form_token(html, action):
    form = re.search(rf'<form[^>]*action="{re.escape(action)}"[^>]*>(.*?)</form>', html, re.S)
    assert form, f"no form posts to {action}"
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.group(1)).group(1)


def test_every_form_is_refused_without_its_csrf_token(strict, rows):
    before = (Comment.objects.count(), Task.objects.count(), Session.objects.filter(task__isnull=False).count())
    for page, action, data in forms(rows):
        strict.get(page)
        response = strict.post(action, data)
        assert response.status_code == 403, action
    assert (Comment.objects.count(), Task.objects.count(), Session.objects.filter(task__isnull=False).count()) == before
    assert SessionMessage.objects.get(pk=rows["parent"].pk).owner_seen_at is None


def test_every_form_carries_its_token_and_works_with_it(strict, rows):
    for page, action, data in forms(rows):
        token = form_token(strict.get(page).content.decode(), action)
        response = strict.post(action, {**data, "csrfmiddlewaretoken": token})
        assert response.status_code == 302, action
        if action == "/logout/":
            assert strict.get("/").status_code == 302
    assert Comment.objects.get().body == "hello"
    assert Task.objects.filter(title="New").exists()
    assert SessionMessage.objects.get(pk=rows["parent"].pk).owner_seen_at is not None


def test_a_comment_from_the_composer_is_delivered_at_the_next_hook(board, rows, hook):
    alpha = rows["alpha"]
    response = board.post(f"/sessions/{alpha.pk}/comment/", {"body": "Please run the tests again"}, follow=True)
    assert "it reaches the session at its next hook" in response.content.decode()
    comment = Comment.objects.get()
    assert comment.author.username == "owner" and comment.delivered_at is None
    answer = hook("UserPromptSubmit", alpha.hook_session, prompt="continue")
    assert "Please run the tests again" in answer["hookSpecificOutput"]["additionalContext"]
    page = board.get(f"/sessions/{alpha.pk}/").content.decode()
    row = re.search(rf'<tr id="comment-{comment.pk}">(.*?)</tr>', page, re.S).group(1)
    assert "delivered" in row and f"UserPromptSubmit via {alpha.hook_session}" in row


def test_an_empty_or_oversized_comment_is_refused_with_a_sentence(board, rows):
    alpha = rows["alpha"]
    text = board.post(f"/sessions/{alpha.pk}/comment/", {"body": "   "}, follow=True).content.decode()
    assert "The comment is empty" in text
    text = board.post(f"/sessions/{alpha.pk}/comment/", {"body": "x" * 4001}, follow=True).content.decode()
    assert "longer than 4000 characters" in text
    assert not Comment.objects.exists()


def test_the_owner_renames_a_session_and_sets_aliases_and_task(board, rows):
    beta = rows["beta"]
    board.post(f"/sessions/{beta.pk}/edit/", {"title": "Beta Two", "aliases": "b2, reviewer", "task": rows["task"].pk})
    beta.refresh_from_db()
    assert (beta.title, beta.aliases, beta.task_id) == ("Beta Two", ["b2", "reviewer"], rows["task"].pk)
    board.post(f"/sessions/{beta.pk}/edit/", {"title": "Beta Two", "aliases": "", "task": ""})
    beta.refresh_from_db()
    assert beta.aliases == [] and beta.task_id is None


def test_a_title_with_a_line_break_is_refused_and_nothing_changes(board, rows):
    beta = rows["beta"]
    text = board.post(f"/sessions/{beta.pk}/edit/", {"title": "two\nlines", "aliases": ""}, follow=True).content.decode()
    assert "single line" in text
    beta.refresh_from_db()
    assert beta.title == "beta"


def test_forms_only_accept_post(board, rows):
    alpha = rows["alpha"]
    assert board.get(f"/sessions/{alpha.pk}/comment/").status_code == 405
    assert board.get(f"/inbox/{rows['parent'].pk}/seen/").status_code == 405
