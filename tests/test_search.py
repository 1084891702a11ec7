"""Full-text search over sessions, tasks, comments and events, never message texts (docs/rules.md §5.5, §4.7)."""

import importlib

import pytest
from django.apps import apps as django_apps
from django.db import connection

from messaging.models import SessionMessage
from sessions_app import actions, search_index
from sessions_app.hooks.ingest import ingest_hook
from sessions_app.models import Comment, Event, Session, Task
from board.search import search
from tests.board_fixtures import board, named_session, owner, send  # noqa: F401

pytestmark = pytest.mark.django_db


def found(text, kind):
    return [row.pk for row in search(text).hits.get(kind, [])]


@pytest.fixture
def rows(db):
    alpha = named_session("Alpha Reviewer", folder="/work/payments-service")
    beta = named_session("beta")
    actions.do_update_session(session=beta, aliases=["Café Bot"])
    task = actions.do_save_task(title="Migrate the ledger")
    comment = actions.do_write_comment(session=alpha, body="Please check the flaky integration suite").comment
    ingest_hook({"hook_event_name": "UserPromptSubmit", "session_id": alpha.hook_session, "cwd": "/w", "prompt": "refactor the parser"})
    ingest_hook({"hook_event_name": "PreToolUse", "session_id": alpha.hook_session, "cwd": "/w",
                 "tool_name": "Bash", "tool_input": {"command": "pytest tests/test_quokka.py"}})
    message = send(alpha, beta, "the secret word is zebracorn")
    return {"alpha": alpha, "beta": beta, "task": task, "comment": comment, "message": message}


def test_it_finds_sessions_by_title_alias_folder_and_handle(rows):
    alpha, beta = rows["alpha"], rows["beta"]
    assert found("reviewer", "session") == [alpha.pk]
    assert found("cafe", "session") == [beta.pk]  # diacritics folded
    assert found("payments", "session") == [alpha.pk]
    assert found(beta.handle, "session") == [beta.pk]


def test_words_match_as_prefixes_and_all_must_match(rows):
    assert found("Alp Rev", "session") == [rows["alpha"].pk]
    assert found("alpha beta", "session") == []


def test_it_finds_tasks_and_comments(rows):
    assert found("ledger", "task") == [rows["task"].pk]
    assert found("flaky suite", "comment") == [rows["comment"].pk]


def test_it_finds_events_by_name_hook_id_and_payload(rows):
    prompt = Event.objects.get(name="hook.UserPromptSubmit")
    assert prompt.pk in found("refactor parser", "event")
    tool = Event.objects.get(name="hook.PreToolUse")
    assert found("quokka", "event") == [tool.pk]
    assert tool.pk in found(rows["alpha"].hook_session, "event")


def test_message_texts_are_never_searched_nor_indexed(rows):
    result = search("zebracorn")
    assert result.total == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM board_search WHERE body LIKE %s OR title LIKE %s", ["%zebracorn%"] * 2)
        assert cursor.fetchone()[0] == 0
    # The send's events are indexed by their names and marks.
    assert found("session message", "event")


def test_the_index_follows_updates_and_deletes(rows):
    alpha = rows["alpha"]
    actions.do_update_session(session=alpha, title="Gamma Lead")
    assert found("reviewer", "session") == [] and found("gamma", "session") == [alpha.pk]
    actions.do_save_task(task=rows["task"], title="Rewrite the ledger")
    assert found("rewrite", "task") == [rows["task"].pk]
    Comment.objects.filter(pk=rows["comment"].pk).delete()
    assert found("flaky", "comment") == []
    Session.objects.filter(pk=rows["beta"].pk).delete()
    assert found("cafe", "session") == []


def test_rows_written_in_bulk_are_indexed_too(db):
    Task.objects.bulk_create([Task(title=f"bulk task {i}") for i in range(3)])
    assert len(found("bulk", "task")) == 3


@pytest.mark.parametrize("query", ['"', "'", "alpha OR", "NEAR(a b)", "*", "a:b", "col:alpha", "(", "-x", "^", "\x00", "AND", "' OR 1=1 --"])
def test_query_syntax_never_breaks_the_search(rows, query):
    search(query)


def test_the_search_page_highlights_escaped_snippets(board, rows):
    actions.do_write_comment(session=rows["beta"], body="<b>bold</b> needle here")
    html = board.get("/search/", {"q": "needle"}).content.decode()
    assert "&lt;b&gt;bold&lt;/b&gt; <mark>needle</mark> here" in html
    assert "<b>bold</b>" not in html


def test_the_search_page_groups_results_and_links_them(board, rows):
    html = board.get("/search/", {"q": "alpha"}).content.decode()
    assert "<h2>Sessions</h2>" in html and f'href="/sessions/{rows["alpha"].pk}/"' in html
    assert "<h2>Events</h2>" in html
    assert "zebracorn" not in html


def test_an_empty_search_shows_only_the_form(board, db):
    html = board.get("/search/").content.decode()
    assert 'name="q"' in html and "result" not in html


def test_message_rows_are_not_in_the_index_at_all(rows):
    with connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT kind FROM board_search")
        kinds = {row[0] for row in cursor.fetchall()}
    assert kinds <= {"session", "task", "comment", "event"}
    assert SessionMessage.objects.exists()


def indexed_feed_rows():
    with connection.cursor() as cursor:
        cursor.execute("SELECT ref FROM board_search WHERE kind = 'event'")
        return {int(ref) for (ref,) in cursor.fetchall()}


def test_feed_rows_enter_the_index_in_batches_on_sqlite_and_by_trigger_on_postgresql(rows):
    """A hook's feed row is not indexed by its own write on SQLite: the search writes the
    entries of every row since the newest indexed one before it matches."""
    alpha = rows["alpha"]
    search("warm up")  # everything written so far is indexed
    ingest_hook({"hook_event_name": "PostToolUse", "session_id": alpha.hook_session, "cwd": "/w",
                 "tool_name": "Bash", "tool_input": {"command": "make wombat"}, "tool_response": {}})
    event = Event.objects.latest("id")
    assert (event.pk in indexed_feed_rows()) is (connection.vendor == "postgresql")
    assert found("wombat", "event") == [event.pk]
    assert event.pk in indexed_feed_rows()
    assert search_index.catch_up() == 0  # nothing new: nothing written twice
    assert found("wombat", "event") == [event.pk]


def test_the_write_at_every_nth_feed_row_catches_the_index_up(rows, monkeypatch):
    """The index is never more than CATCH_UP_EVERY feed rows behind, searched or not."""
    monkeypatch.setattr(search_index, "CATCH_UP_EVERY", 4)
    alpha = rows["alpha"]
    for i in range(8):
        ingest_hook({"hook_event_name": "PostToolUse", "session_id": alpha.hook_session, "cwd": "/w",
                     "tool_name": "Bash", "tool_input": {"command": f"step {i}"}, "tool_response": {}})
    ids = set(Event.objects.values_list("id", flat=True))
    reached = max(pk for pk in ids if pk % 4 == 0)
    assert {pk for pk in ids if pk <= reached} <= indexed_feed_rows()
    if connection.vendor == "sqlite":
        assert not {pk for pk in ids if pk > reached} & indexed_feed_rows()


class Editor:
    """What the migration's functions use of a schema editor (the test runs inside a transaction,
    where Django's SQLite schema editor refuses to start)."""

    connection = connection

    def execute(self, sql, params=None):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)


def test_the_migration_and_its_way_back(rows):
    """Back: the rows waiting are indexed and the trigger returns. Forward again: it goes."""
    migration = importlib.import_module("sessions_app.migrations.0011_feed_search_in_batches")
    alpha = rows["alpha"]

    def hook(command):
        ingest_hook({"hook_event_name": "PostToolUse", "session_id": alpha.hook_session, "cwd": "/w",
                     "tool_name": "Bash", "tool_input": {"command": command}, "tool_response": {}})
        return Event.objects.latest("id").pk

    waiting = hook("before")
    migration.by_trigger(django_apps, Editor())
    assert set(Event.objects.values_list("id", flat=True)) <= indexed_feed_rows()
    assert hook("with the trigger") in indexed_feed_rows()
    migration.in_batches(django_apps, Editor())
    assert (hook("in batches") in indexed_feed_rows()) is (connection.vendor == "postgresql")
    assert waiting in indexed_feed_rows()
