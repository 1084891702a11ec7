"""Needs you with the real Codex CLI 0.171.0 (docs/rules.md §1.6, §8), connected with `manage.py
connect codex`: its PermissionRequest hook, which Codex runs before its own approval dialog,
is held open while the owner decides, and the owner's answer runs the tool.

A command that asks: the scripted model calls `exec_command` with `sandbox_permissions:
"require_escalated"` in a read-only sandbox (the TUI, `approval_policy = "on-request"`), and
under `codex exec --approve-for-me`, the headless way that routes approval requests (plain
`codex exec` never asks: its approval policy is "never")."""

import json
import subprocess
import uuid

import pytest

from tests.e2e.agent_clis import CODEX_BIN, Codex, binary, manage_as, start_codex_tui, stop_codex_tui, type_into_codex
from tests.e2e.cli_models import ResponsesServer, text
from tests.e2e.model_server import tool
from tests.e2e.test_claude_approvals import owner, pending
from tests.live_server import LiveRelaybay, start_relaybay, stop_relaybay

pytestmark = pytest.mark.embedded_only  # Codex's dialect in and out; the path it reaches runs on both under Claude Code


@pytest.fixture(scope="module")
def relaybay(tmp_path_factory):
    url, token, process = start_relaybay(tmp_path_factory.mktemp("codex-approvals"))
    live = LiveRelaybay(url, token, process)
    yield live
    stop_relaybay(live.process)


@pytest.fixture
def model():
    server = ResponsesServer().start()
    yield server
    server.stop()


@pytest.fixture
def codex(relaybay, model, tmp_path):
    cli = Codex(tmp_path / "home", model.url)
    manage_as(relaybay, cli.home, "connect", "codex", codex_home=cli.codex_home)
    return cli


@pytest.fixture
def folder(tmp_path):
    path = tmp_path / "work" / f"shop{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True)
    return path


def escalated(command):
    return tool("exec_command", {"cmd": command, "sandbox_permissions": "require_escalated", "justification": "make the file"})


def last_output(model):
    return [i for i in model.main_requests()[-1].get("input", []) if i.get("type") == "function_call_output"][-1]["output"]


def test_a_codex_request_waits_in_the_terminal_until_the_owner_allows_it(relaybay, codex, model, folder):
    config = codex.codex_home / "config.toml"
    config.write_text('approval_policy = "on-request"\nsandbox_mode = "read-only"\n' + config.read_text())
    made = folder / "codex-allowed.txt"
    model.add_steps(escalated(f"touch {made}"), text("codex made it"))
    session = start_codex_tui(codex, folder)
    try:
        type_into_codex(session, "make the file")
        request = pending(relaybay)
        assert (request["engine"], request["tool"], request["summary"]) == ("codex", "Bash", f"touch {made}")
        status, body = owner(relaybay, "POST", f"/approvals/{request['id']}", {"decision": "allow", "scope": "session"})
        assert (status, body["state"]) == (200, "allowed")
        session.wait_for_screen("Ran touch", timeout=60)
        model.wait_for(lambda server: any(i.get("type") == "function_call_output" for r in server.main_requests() for i in r.get("input", [])), timeout=60)
        assert made.exists(), [[i.get("type") for i in r.get("input", [])] for r in model.main_requests()]
        assert "Process exited with code 0" in last_output(model)
    finally:
        stop_codex_tui(codex, session)


def test_a_headless_codex_exec_waits_for_the_owner_who_denies_it(relaybay, codex, model, folder):
    made = folder / "codex-denied.txt"
    model.add_steps(escalated(f"touch {made}"), text("codex was denied"))
    args = [binary(CODEX_BIN), "exec", "--skip-git-repo-check", "--approve-for-me", "--dangerously-bypass-hook-trust", "make the file"]
    run = subprocess.Popen(args, cwd=folder, env=codex.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        request = pending(relaybay)
        assert request["engine"] == "codex"
        status, _ = owner(relaybay, "POST", f"/approvals/{request['id']}", {"decision": "deny", "message": "not on this box, codex-deny-77"})
        assert status == 200
        out, err = run.communicate(timeout=120)
    finally:
        run.kill()
    assert run.returncode == 0, err[-2000:]
    assert not made.exists()
    assert "codex-deny-77" in json.dumps(last_output(model))
