"""Working trees and edits for the tests of edit collisions and reservations (docs/rules.md §7).

The trees are real: a git repository, a second worktree of it (`git worktree add`) and a folder
outside git, under the test's tmp_path. Edits are PreToolUse payloads as Claude Code sends them,
with the `relaybay_tree` the hook client adds (relaybay_hook/tree.py's own report).
"""

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from relaybay_hook import tree as working_tree
from sessions_app.models import FileEdit, FileNotice, FileReservation, HookLink

from .message_personas import context_of


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True)


@dataclass
class Trees:
    repo: Path  # a checkout
    worktree: Path  # a second worktree of the same repository
    plain: Path  # a folder outside git


@pytest.fixture
def trees(tmp_path):
    repo, worktree, plain = tmp_path / "repo", tmp_path / "wt", tmp_path / "plain"
    repo.mkdir()
    plain.mkdir()
    git("init", "-q", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start", cwd=repo)
    git("worktree", "add", "-q", str(worktree), cwd=repo)
    for root in (repo, worktree, plain):
        (root / "src").mkdir()
        (root / "src" / "app.py").write_text("print('app')\n")
    return Trees(repo.resolve(), worktree.resolve(), plain.resolve())


def edit_payload(hook_session, folder, file_path, *, tool="Edit", report=True, **tool_input):
    """A PreToolUse of an edit tool as the hook client posts it from `folder`."""
    field = "notebook_path" if tool == "NotebookEdit" else "file_path"
    payload = {
        "hook_event_name": "PreToolUse",
        "session_id": hook_session,
        "cwd": str(folder),
        "tool_name": tool,
        "tool_use_id": "toolu_1",
        "tool_input": {field: str(file_path), **(tool_input or {"old_string": "print('app')", "new_string": "print('changed')"})},
    }
    reported = working_tree.report(str(folder)) if report else None
    if reported:
        payload["relaybay_tree"] = json.loads(reported)
    return payload


class Files:
    """One test's sessions editing files, through the JSON API as the hook client and the MCP
    server reach it."""

    def __init__(self, rb):
        self.rb = rb
        self.hook = rb.hook
        self.api = rb.api

    def start(self, name, hook_session, folder):
        """A Claude Code session named `name` starting in `folder`; its row."""
        self.rb.hook("SessionStart", hook_session, source="startup", cwd=str(folder), relaybay_session=name)
        return HookLink.objects.get(hook_session=hook_session).session

    def edit(self, hook_session, folder, file_path, **fields):
        payload = edit_payload(hook_session, folder, file_path, **fields)
        response = self.hook.raw(json.dumps(payload))
        assert response.status_code == 200, response.content
        return response.json()

    def reserve(self, hook_session, paths, proof=None, **fields):
        return self.api.post("/files_reserve", {"paths": paths, "hook_session": hook_session, **fields}, proof=proof)

    def reserved(self, hook_session, paths, proof=None, **fields):
        response = self.reserve(hook_session, paths, proof, **fields)
        assert response.status_code == 200, response.content
        return response.json()

    def release(self, hook_session, paths=None):
        data = {"hook_session": hook_session} if paths is None else {"hook_session": hook_session, "paths": paths}
        response = self.api.post("/files_release", data)
        assert response.status_code == 200, response.content
        return response.json()


@pytest.fixture
def fs(rb):
    return Files(rb)


def warning_of(answer):
    """The edit check's warning in a PreToolUse answer (additionalContext), or None."""
    text = context_of(answer)
    return text if text and text.startswith("relaybay: ") and "another live session's file too" in text else None


def denial_of(answer):
    """The reason of a PreToolUse answer's deny, or None when it allows the tool."""
    output = answer.get("hookSpecificOutput", {})
    return output.get("permissionDecisionReason") if output.get("permissionDecision") == "deny" else None


def file_counts():
    return {model.__name__: model.objects.count() for model in (FileEdit, FileReservation, FileNotice)}
