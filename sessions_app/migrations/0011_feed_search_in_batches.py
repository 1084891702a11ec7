"""On SQLite, feed rows' search entries are written in batches (sessions_app/search_index.py),
no longer by a trigger with every row. The rows indexed so far stay; the search catches up on
the rest. PostgreSQL keeps its trigger (search_index explains why)."""

import importlib

from django.db import migrations

from core import capabilities

SEARCH = importlib.import_module("sessions_app.migrations.0002_board_search")
FEED_TRIGGER = next(s for s in SEARCH.SQLITE_FORWARD if s.startswith("CREATE TRIGGER board_search_event_ai "))


def in_batches(apps, schema_editor):
    if capabilities.of(schema_editor.connection).feed_indexed_in_batches:
        schema_editor.execute("DROP TRIGGER IF EXISTS board_search_event_ai", params=None)


def by_trigger(apps, schema_editor):
    """Back to the trigger: the rows not indexed yet are first."""
    if capabilities.of(schema_editor.connection).feed_indexed_in_batches:
        search_index = importlib.import_module("sessions_app.search_index")
        with schema_editor.connection.cursor() as cursor:
            search_index.index_newer(cursor)
        schema_editor.execute(FEED_TRIGGER, params=None)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0010_event_indexes_not_needed")]

    operations = [migrations.RunPython(in_batches, by_trigger)]
