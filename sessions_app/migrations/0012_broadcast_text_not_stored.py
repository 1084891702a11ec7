"""Message text that was stored with hook events (docs/rules.md §4.7, sessions_app/hooks/claude_native.py):
a broadcast's, with every hook event of its tool call (`message_broadcast` was missing from the
message tools whose inputs and results are never stored), and any message tool's in a failure's
`error`, which the MCP SDK's validation error quotes. Those events lose it here, and their board
search entries are written again from what is left (a feed row's entry is never updated)."""

import importlib

from django.db import migrations
from django.db.models import Q

from core import capabilities

NOT_STORED = "[not stored: message text]"
SEARCH = importlib.import_module("sessions_app.migrations.0002_board_search")


def _entry_again(cursor, search, event_id):
    """Its search entry, if it has one, written again from the row as it is now (`search`: the
    database's kind of index, core/capabilities.py)."""
    if search == "fts5":
        kind, code, _, title, body = SEARCH.SQLITE_SOURCES["sessions_app_event"]
        cursor.execute("SELECT 1 FROM board_search WHERE rowid = %s", [event_id * 4 + code])
        if cursor.fetchone() is None:
            return  # not indexed yet: the search's catch-up writes it (sessions_app/search_index.py)
        cursor.execute("DELETE FROM board_search WHERE rowid = %s", [event_id * 4 + code])
        columns = "rowid, kind, ref, title, body"
    else:
        kind, code, _, title, body = SEARCH.PG_SOURCES["sessions_app_event"]
        cursor.execute("DELETE FROM board_search WHERE id = %s", [event_id * 4 + code])
        columns = "id, kind, ref, title, body"
    cursor.execute(
        f"INSERT INTO board_search ({columns}) SELECT R.id * 4 + {code}, '{kind}', R.id, {title}, {body}"
        " FROM sessions_app_event AS R WHERE R.id = %s",
        [event_id],
    )


def text_not_stored(apps, schema_editor):
    Event = apps.get_model("sessions_app", "Event")
    tools = Q()
    for tool in ("__message_send", "__message_broadcast", "__messages_list"):
        tools |= Q(data__tool_name__endswith=tool)
    calls = Event.objects.filter(tools, name__startswith="hook.")
    with schema_editor.connection.cursor() as cursor:
        for event in calls.iterator():
            data = dict(event.data)
            kept = {key: NOT_STORED for key in ("tool_input", "tool_response", "error") if key in data and data[key] != NOT_STORED}
            if kept:
                Event.objects.filter(pk=event.pk).update(data={**data, **kept})
                _entry_again(cursor, capabilities.of(schema_editor.connection).search, event.pk)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0011_feed_search_in_batches")]

    operations = [migrations.RunPython(text_not_stored, migrations.RunPython.noop)]
