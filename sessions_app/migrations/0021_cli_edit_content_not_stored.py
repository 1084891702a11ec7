"""File content stored with Codex CLI's and Gemini CLI's edit calls (docs/rules.md §7.2,
sessions_app.files.without_file_content): Gemini's write_file and replace keep their file_path,
Codex's apply_patch the files its patch names; the rest of their input, their result and an error
that may quote them are cut. Their board search entries are written again from what is left.
No Claude Code tool has these names (its MCP tools' are `mcp__…`)."""

import importlib

from django.db import migrations

from core import capabilities

# As sessions_app.files has them when this is written: a migration keeps its own copy.
EDIT_TOOLS = {"write_file": ("file_path",), "replace": ("file_path",), "apply_patch": ("files",)}
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
PATCHED_MAX = 200
RESPONSE_KEPT = ("filePath", "file_path", "notebook_path", "type", "success")
NOT_STORED = "[not stored: file content]"
STRIPPED = importlib.import_module("sessions_app.migrations.0012_broadcast_text_not_stored")


def patched_files(patch):
    found = []
    for line in patch.splitlines():
        header = next((h for h in PATCH_HEADERS if line.startswith(h)), None)
        path = line[len(header):].strip() if header else ""
        if path and path not in found:
            found.append(path)
            if len(found) == PATCHED_MAX:
                break
    return found


def without_content(data):
    changed = dict(data)
    tool_input = changed.get("tool_input")
    if data["tool_name"] == "apply_patch" and isinstance(tool_input, dict) and "files" not in tool_input:
        command = tool_input.get("command")
        changed["tool_input"] = {**tool_input, "files": patched_files(command) if isinstance(command, str) else []}
    for key, kept in (("tool_input", EDIT_TOOLS[data["tool_name"]]), ("tool_response", RESPONSE_KEPT)):
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
    dependencies = [("sessions_app", "0020_session_search_triggers_again")]

    operations = [migrations.RunPython(content_not_stored, migrations.RunPython.noop)]
