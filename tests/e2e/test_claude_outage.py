"""relaybay being down never slows or breaks a Claude Code session; what it missed is replayed."""

import json
import urllib.request

import pytest

from tests.e2e.claude_cli import parse_result, run_claude
from tests.e2e.model_server import text, tool
from tests.e2e.relaybay_cli import manage, query, write_settings
from tests.live_server import restart_relaybay, start_relaybay, stop_relaybay

# What this module tests is the client's or the page's own behaviour, which neither database
# nor channel layer changes: make test runs it once, on the embedded pass.
pytestmark = pytest.mark.embedded_only


class Server:
    """A relaybay that can be stopped and started again on the same port and data."""

    def __init__(self, tmp_path):
        self.url, self.token, process = start_relaybay(tmp_path)
        self.data = process.relaybay_data
        self.process = process

    def stop(self):
        stop_relaybay(self.process)

    def start(self):
        self.process = restart_relaybay(self.process)

    def post(self, path, data):
        request = urllib.request.Request(
            f"{self.url}/api{path}", data=json.dumps(data).encode(), headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())


def test_a_turn_completes_while_relaybay_is_down_and_its_events_are_replayed_without_delivery(model, project, home, tmp_path):
    server = Server(tmp_path)
    try:
        server.post("/desktop", {"desktop_id": "desk-outage", "title": "outage-agent"})
        settings_file = write_settings(server, tmp_path / "settings.json", "--session", "outage-agent", "--wait", "2", "--spool", str(tmp_path / "spool.jsonl"))
        server.stop()
        # Written while relaybay is down, straight into its database.
        manage(server, "comment", "outage-agent", "owner says outage-8801")

        model.add_steps(tool("Bash", {"command": "echo working"}), text("finished offline"))
        offline = run_claude("work offline", model_url=model.url, cwd=project, home=home, settings_file=settings_file)
        assert offline.returncode == 0, offline.stderr
        first_hook = parse_result(offline)["session_id"]
        assert parse_result(offline)["result"] == "finished offline"
        assert (tmp_path / "spool.jsonl").stat().st_size > 0
        assert "outage-8801" not in model.all_text()

        server.start()
        model.add_steps(text("back online"))
        online = run_claude("work online", model_url=model.url, cwd=project, home=home, settings_file=settings_file)
        assert online.returncode == 0, online.stderr
        second_hook = parse_result(online)["session_id"]

        replayed = query(server, "select name, replay from sessions_app_event where hook_session=? and name like 'hook.%' order by id", first_hook)
        assert [name for name, _ in replayed] == [
            "hook.SessionStart", "hook.UserPromptSubmit", "hook.PreToolUse", "hook.Stop", "hook.SessionEnd"
        ]
        assert all(replay == 1 for _, replay in replayed)
        assert not (tmp_path / "spool.jsonl").exists() or (tmp_path / "spool.jsonl").stat().st_size == 0
        # The comment went to the live session, not through a replayed event.
        [(delivered_by,)] = query(server, "select delivered_by from sessions_app_comment")
        assert delivered_by == f"UserPromptSubmit via {second_hook}"
        # Proof of delivery: the live run's prompt request showed the comment to the model.
        online_prompt = next(t for t in model.request_texts() if "work online" in t)
        assert "owner says outage-8801" in online_prompt
    finally:
        server.stop()
