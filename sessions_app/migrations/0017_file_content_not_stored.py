"""File content that was stored with hook events (docs/rules.md §7.2, sessions_app.files.without_file_content):
an edit tool's input (the old and new text, a written file's content), its result (the original
file, the patch) and an error that may quote them. Those events keep the paths only, and their
board search entries are written again from what is left."""

import importlib

from django.db import migrations

from core import capabilities

# As sessions_app.files has them when this is written: a migration keeps its own copy.
EDIT_TOOLS = {"Edit": ("file_path",), "Write": ("file_path",), "MultiEdit": ("file_path",), "NotebookEdit": ("notebook_path",)}
RESPONSE_KEPT = ("filePath", "file_path", "notebook_path", "type", "success")
NOT_STORED = "[not stored: file content]"
STRIPPED = importlib.import_module("sessions_app.migrations.0012_broadcast_text_not_stored")


def without_content(data):
    kept_input = EDIT_TOOLS[data["tool_name"]]
    changed = dict(data)
    for key, kept in (("tool_input", kept_input), ("tool_response", RESPONSE_KEPT)):
        value = changed.get(key)
        if isinstance(value, dict):
            changed[key] = {k: (v if k in kept else NOT_STORED) for k, v in value.items()}
        elif key in changed:
            changed[key] = NOT_STORED
    if "error" in changed:
        changed["error"] = NOT_STORED
    return changed


def content_not_stored(apps, schema_editor):
    Event = apps.get_model("sessions_app", "Event")
    calls = Event.objects.filter(name__startswith="hook.", data__tool_name__in=list(EDIT_TOOLS))
    with schema_editor.connection.cursor() as cursor:
        for event in calls.iterator():
            data = without_content(event.data)
            if data != event.data:
                Event.objects.filter(pk=event.pk).update(data=data)
                STRIPPED._entry_again(cursor, capabilities.of(schema_editor.connection).search, event.pk)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0016_files")]

    operations = [migrations.RunPython(content_not_stored, migrations.RunPython.noop)]
