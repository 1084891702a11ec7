"""Edit collisions through the JSON API, with the hook payloads Claude Code sends (docs/rules.md
§7.1, §7.2): a session about to edit a file another live session edited in the same working tree
is warned naming it, and the other hears at its next hook; the same relative path in another
worktree of the repository is nobody's interruption; paths are normalised and only paths stored."""

import json
import os
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Event, FileEdit, FileNotice, HookLink

from .file_personas import denial_of, edit_payload, fs, trees, warning_of  # noqa: F401
from .message_personas import context_of, rb  # noqa: F401

pytestmark = pytest.mark.django_db


def test_a_session_editing_a_file_another_live_session_edited_is_warned_naming_it(fs, trees):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    app = trees.repo / "src" / "app.py"
    assert fs.edit("hook-a", trees.repo, app) == {}
    answer = fs.edit("hook-b", trees.repo, app)
    warning = warning_of(answer)
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    alpha = HookLink.objects.get(hook_session="hook-a").session
    assert f'"alpha" ({alpha.handle}) edited it just now (Edit)' in warning
    assert 'message_send(to="alpha")' in warning
    assert f"src/app.py (working tree {trees.repo})" in warning


def test_the_other_session_hears_at_its_next_hook_who_is_editing_its_file(fs, trees, rb):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    app = trees.repo / "src" / "app.py"
    fs.edit("hook-a", trees.repo, app)
    fs.edit("hook-b", trees.repo, app)
    heard = context_of(rb.hook("PostToolUse", "hook-a", cwd=str(trees.repo), tool_name="Bash", tool_input={"command": "ls"}))
    assert 'session "bravo" is now editing src/app.py' in heard
    assert 'message_send(to="bravo")' in heard
    assert "from relaybay, about files you edit" in heard
    notice = FileNotice.objects.get()
    assert notice.delivered_at is not None and notice.session.title == "alpha"
    # Heard once: the next hook carries nothing more.
    assert rb.hook("PostToolUse", "hook-a", cwd=str(trees.repo), tool_name="Bash", tool_input={"command": "ls"}) == {}


def test_the_warning_comes_again_only_once_the_other_session_edits_the_file_again(fs, trees):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    app = trees.repo / "src" / "app.py"
    fs.edit("hook-a", trees.repo, app)
    assert warning_of(fs.edit("hook-b", trees.repo, app))
    assert fs.edit("hook-b", trees.repo, app) == {}
    assert warning_of(fs.edit("hook-a", trees.repo, app))  # bravo edited it after alpha's last edit
    assert fs.edit("hook-b", trees.repo, app) != {}  # and alpha after bravo's
    assert FileNotice.objects.count() == 3


def test_an_edit_older_than_the_window_or_of_a_session_that_ended_warns_nobody(fs, trees, rb, settings):
    settings.RELAYBAY_COLLISION_MINUTES = 30
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    fs.start("charlie", "hook-c", trees.repo)
    app = trees.repo / "src" / "app.py"
    fs.edit("hook-a", trees.repo, app)
    FileEdit.objects.update(last_at=timezone.now() - timedelta(minutes=31))
    assert fs.edit("hook-b", trees.repo, app) == {}
    rb.end("hook-b")
    assert fs.edit("hook-c", trees.repo, app) == {}
    assert FileNotice.objects.count() == 0


def test_the_same_relative_path_in_another_worktree_is_not_a_collision(fs, trees):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.worktree)
    fs.edit("hook-a", trees.repo, trees.repo / "src" / "app.py")
    assert fs.edit("hook-b", trees.worktree, trees.worktree / "src" / "app.py") == {}
    assert FileNotice.objects.count() == 0
    a, b = FileEdit.objects.order_by("pk")
    assert (a.root, b.root) == (str(trees.repo), str(trees.worktree))
    # One repository: the board sees that the two may conflict when merged.
    assert a.repository == b.repository == str(trees.repo) and a.file_key == b.file_key and a.path_key != b.path_key


def test_paths_are_resolved_so_two_spellings_of_one_file_collide(fs, trees):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    os.symlink(trees.repo / "src", trees.repo / "linked")
    fs.edit("hook-a", trees.repo, "src/../src/app.py")
    assert warning_of(fs.edit("hook-b", trees.repo, trees.repo / "linked" / "app.py"))
    [path] = set(FileEdit.objects.values_list("path", flat=True))
    assert path == str(trees.repo / "src" / "app.py")


def test_a_hook_without_the_clients_report_is_tied_to_the_tree_relaybay_finds(fs, trees):
    # Claude Code's http hooks post without the hook client, so without relaybay_tree.
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    fs.edit("hook-a", trees.repo / "src", trees.repo / "src" / "app.py", report=False)
    assert warning_of(fs.edit("hook-b", trees.repo, trees.repo / "src" / "app.py"))
    assert set(FileEdit.objects.values_list("root", "repository")) == {(str(trees.repo), str(trees.repo))}


def test_outside_git_a_file_is_tied_to_the_sessions_folder(fs, trees):
    fs.start("alpha", "hook-a", trees.plain)
    fs.start("bravo", "hook-b", trees.plain)
    fs.edit("hook-a", trees.plain, trees.plain / "src" / "app.py")
    assert "src/app.py (working tree" in warning_of(fs.edit("hook-b", trees.plain, "src/app.py"))
    assert set(FileEdit.objects.values_list("root", "repository")) == {(str(trees.plain), "")}


@pytest.mark.parametrize(
    "tool, fields",
    [
        ("Write", {"content": "SECRET-CONTENT-1"}),
        ("MultiEdit", {"edits": [{"old_string": "SECRET-CONTENT-1", "new_string": "SECRET-CONTENT-2"}]}),
        ("NotebookEdit", {"new_source": "SECRET-CONTENT-1", "cell_id": "c1"}),
    ],
)
def test_every_edit_tool_is_checked_and_only_its_paths_are_stored(fs, trees, rb, tool, fields):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    target = trees.repo / "src" / ("book.ipynb" if tool == "NotebookEdit" else "app.py")
    fs.edit("hook-a", trees.repo, target, tool=tool, **fields)
    assert warning_of(fs.edit("hook-b", trees.repo, target, tool=tool, **fields))
    response = {"filePath": str(target), "originalFile": "SECRET-CONTENT-1", "structuredPatch": [{"lines": ["-SECRET-CONTENT-1"]}]}
    rb.hook("PostToolUse", "hook-b", cwd=str(trees.repo), tool_name=tool, tool_input={**fields, "file_path": str(target)}, tool_response=response)
    stored = json.dumps([event.data for event in Event.objects.filter(name__startswith="hook.")])
    assert "SECRET-CONTENT" not in stored
    assert str(target) in stored and "[not stored: file content]" in stored


def test_a_tool_that_edits_nothing_is_not_checked(fs, trees, rb):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    fs.edit("hook-a", trees.repo, trees.repo / "src" / "app.py")
    read = {"hook_event_name": "PreToolUse", "session_id": "hook-b", "cwd": str(trees.repo), "tool_name": "Read", "tool_input": {"file_path": str(trees.repo / "src" / "app.py")}}
    assert fs.hook.raw(json.dumps(read)).json() == {}
    assert FileEdit.objects.count() == 1


def test_a_warning_goes_first_and_what_waits_for_the_session_follows_it_in_one_answer(fs, trees, rb):
    fs.start("alpha", "hook-a", trees.repo)
    bravo = fs.start("bravo", "hook-b", trees.repo)
    fs.edit("hook-a", trees.repo, trees.repo / "src" / "app.py")
    rb.comment(bravo, "owner says check the tests")
    text = context_of(fs.edit("hook-b", trees.repo, trees.repo / "src" / "app.py"))
    assert text.index("is another live session's file too") < text.index("owner says check the tests")


def test_the_hook_client_reports_its_working_tree_and_the_link_keeps_it(fs, trees, rb):
    fs.start("alpha", "hook-a", trees.worktree)
    fs.edit("hook-a", trees.worktree / "src", trees.worktree / "src" / "app.py")
    link = HookLink.objects.get(hook_session="hook-a")
    assert (link.tree_root, link.repository) == (str(trees.worktree), str(trees.repo))
    payload = edit_payload("hook-a", trees.worktree, trees.worktree / "src" / "app.py")
    assert payload["relaybay_tree"] == {"cwd": str(trees.worktree), "root": str(trees.worktree), "repository": str(trees.repo)}
    stored = Event.objects.filter(name="hook.PreToolUse").latest("pk").data
    assert "relaybay_tree" not in stored


def test_the_migration_takes_file_content_out_of_events_stored_before():
    """Events of edit tools stored before only paths were kept lose the files' content, and
    their search entries follow (written again from what is left)."""
    import importlib

    from django.apps import apps as django_apps

    from board.search import search
    from tests.test_search import Editor

    def stored(name, tool, tool_input, **data):
        return Event.objects.create(name=f"hook.{name}", hook_session="hook-a", data={"tool_name": tool, "tool_input": tool_input, **data})

    write = stored("PreToolUse", "Write", {"file_path": "/w/src/app.py", "content": "zq-content-secret"})
    assert [row.pk for row in search("zq content secret").hits["event"]] == [write.pk]
    edit = stored(
        "PostToolUse", "Edit", {"file_path": "/w/src/app.py", "old_string": "zq-content-secret", "new_string": "x"},
        tool_response={"filePath": "/w/src/app.py", "originalFile": "zq-content-secret", "structuredPatch": []},
    )  # fmt: skip
    failed = stored("PostToolUseFailure", "MultiEdit", {"file_path": "/w/src/app.py", "edits": []}, error="zq-content-secret not found")
    bash = stored("PreToolUse", "Bash", {"command": "echo zq-content-kept"})
    migration = importlib.import_module("sessions_app.migrations.0017_file_content_not_stored")
    migration.content_not_stored(django_apps, Editor())
    for event in (write, edit, failed, bash):
        event.refresh_from_db()
    assert write.data["tool_input"] == {"file_path": "/w/src/app.py", "content": "[not stored: file content]"}
    assert edit.data["tool_response"] == {"filePath": "/w/src/app.py", "originalFile": "[not stored: file content]", "structuredPatch": "[not stored: file content]"}
    assert failed.data["error"] == "[not stored: file content]"
    assert bash.data["tool_input"] == {"command": "echo zq-content-kept"}
    assert search("zq content secret").hits["event"] == []
    assert write.pk in {row.pk for row in search("PreToolUse Write").hits["event"]}


def test_the_migration_takes_codex_and_gemini_file_content_out_of_events_stored_before():
    """Events of Gemini CLI's write_file and replace and Codex CLI's apply_patch, stored before
    those were edit tools, keep the paths only, and their search entries follow."""
    import importlib

    from django.apps import apps as django_apps

    from board.search import search
    from tests.test_search import Editor

    def stored(name, tool, tool_input, **data):
        return Event.objects.create(name=f"hook.{name}", hook_session="hook-g", data={"tool_name": tool, "tool_input": tool_input, **data})

    write = stored("PreToolUse", "write_file", {"file_path": "/w/notes.md", "content": "zq-gemini-secret"})
    replace = stored(
        "PostToolUse", "replace", {"file_path": "/w/notes.md", "old_string": "zq-gemini-secret", "new_string": "x"},
        tool_response={"llmContent": "Successfully modified: zq-gemini-secret"},
    )  # fmt: skip
    patch = stored("PreToolUse", "apply_patch", {"command": "*** Begin Patch\n*** Update File: src/app.py\n-zq-codex-secret\n+x\n*** End Patch\n"})
    shell = stored("PreToolUse", "run_shell_command", {"command": "echo zq-shell-kept"})
    assert search("zq gemini secret").hits["event"]
    migration = importlib.import_module("sessions_app.migrations.0021_cli_edit_content_not_stored")
    migration.content_not_stored(django_apps, Editor())
    for event in (write, replace, patch, shell):
        event.refresh_from_db()
    assert write.data["tool_input"] == {"file_path": "/w/notes.md", "content": "[not stored: file content]"}
    assert replace.data["tool_response"] == {"llmContent": "[not stored: file content]"}
    assert patch.data["tool_input"] == {"command": "[not stored: file content]", "files": ["src/app.py"]}
    assert shell.data["tool_input"] == {"command": "echo zq-shell-kept"}
    assert search("zq gemini secret").hits["event"] == [] and search("zq codex secret").hits["event"] == []
