"""The e2e scaffolding works: the scripted model server drives the real Claude Code CLI.

Nothing here touches Django or the database.
"""

import json
import urllib.request

import pytest

from tests.e2e.claude_cli import parse_result, run_claude, start_interactive
from tests.e2e.model_server import ModelServer, text, tool, tools

# What this module tests is the client's or the page's own behaviour, which neither database
# nor channel layer changes: make test runs it once, on the embedded pass.
pytestmark = pytest.mark.embedded_only


def write_settings(tmp_path, hooks):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"hooks": hooks}))
    return path


def write_script(tmp_path, name, body):
    """A hook command as a script file, so the text a test looks for appears only in the
    script's output and never in the command line that Claude Code may echo to the model."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def post(url, body):
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def test_a_plain_prompt_gets_the_scripted_answer(model, claude):
    model.add_steps(text("scripted hello"))

    result = claude("please greet prompt-marker-7")

    assert result["result"] == "scripted hello"
    assert "please greet prompt-marker-7" in model.request_texts()[0]
    assert model.remaining_steps == 0


def test_a_scripted_tool_call_runs_and_its_result_reaches_the_model(model, claude):
    model.add_steps(tool("Bash", {"command": "echo marker-$((100 + 23))"}), text("ran it"))

    result = claude("run something")

    assert result["result"] == "ran it"
    first, second = model.request_texts()
    # The command line says marker-$((100 + 23)); only the shell's output says marker-123.
    assert "marker-123" not in first
    assert "marker-123" in second


def test_parallel_tool_calls_all_run(model, claude):
    model.add_steps(
        tools(
            [
                ("Bash", {"command": "echo one-$((1+1))"}),
                ("Bash", {"command": "echo three-$((1+2))"}),
            ]
        ),
        text("both ran"),
    )

    claude("run two things")

    assert "one-2" in model.request_texts()[1]
    assert "three-3" in model.request_texts()[1]


def test_user_prompt_submit_context_reaches_the_model(model, claude, tmp_path):
    hook = write_script(
        tmp_path,
        "context.sh",
        "cat >/dev/null\n"
        'printf \'{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", '
        '"additionalContext": "ctx-%s"}}\' xyz\n',
    )
    settings = write_settings(
        tmp_path, {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": hook}]}]}
    )
    model.add_steps(text("noted"))

    claude("hello", settings_file=settings)

    # Claude Code puts it in a system-role message after the prompt, as its own paragraph.
    assert "\n\nUserPromptSubmit hook additional context: ctx-xyz\n\n" in model.request_texts()[0]


def test_an_async_rewake_stop_hook_wakes_the_model_with_its_stderr(model, claude, tmp_path):
    # The hook fires on every Stop; a marker file makes it wake the model only once, as a
    # waiter that keeps exiting 2 would loop the model.
    marker = tmp_path / "woken"
    hook = write_script(
        tmp_path,
        "waiter.sh",
        f"cat >/dev/null\n[ -e {marker} ] && exit 0\ntouch {marker}\n"
        "sleep 1\necho wake-$((100+23)) >&2\nexit 2\n",
    )
    settings = write_settings(
        tmp_path,
        {"Stop": [{"hooks": [{"type": "command", "command": hook, "asyncRewake": True}]}]},
    )
    model.add_steps(text("first answer"), text("answer after waking"))

    result = claude("hello", settings_file=settings)

    # In -p mode the CLI waits for the waiter, and the wake starts another model turn.
    assert result["result"] == "answer after waking"
    woken = model.request_texts()[1]
    assert f"Stop hook feedback:\n[{hook}]: wake-123\n" in woken


def test_a_session_can_be_resumed_under_its_id(model, claude):
    model.add_steps(text("first"), text("second"))
    session_id = claude("remember resume-marker-5")["session_id"]

    result = claude("continue", resume=session_id)

    assert result["session_id"] == session_id
    assert "remember resume-marker-5" in model.request_texts()[1]


def test_an_interactive_session_answers_and_is_woken_when_idle(model, project, home, tmp_path):
    marker = tmp_path / "woken"
    hook = write_script(
        tmp_path,
        "waiter.sh",
        f"cat >/dev/null\n[ -e {marker} ] && exit 0\ntouch {marker}\n"
        "sleep 2\necho idle-wake-$((4+5)) >&2\nexit 2\n",
    )
    settings = write_settings(
        tmp_path,
        {"Stop": [{"hooks": [{"type": "command", "command": hook, "asyncRewake": True}]}]},
    )
    model.add_steps(text("interactive answer"), text("woken while idle"))

    with start_interactive(
        model_url=model.url, cwd=project, home=home, settings_file=settings
    ) as session:
        session.send("hello from tmux")
        session.wait_for_screen("interactive answer")
        # No keystroke after the first answer: the waiter alone starts the next turn.
        session.wait_for_screen("woken while idle", timeout=20)

        assert "hello from tmux" in model.request_texts()[0]
        assert 'Stop hook blocking error from command "Stop": idle-wake-9' in model.all_text()
        assert session.exit()


class TestServerWithoutTheCli:
    def test_a_request_without_tools_is_a_side_query_and_keeps_the_script(self, model):
        model.add_steps(text("for the agent loop"))

        _, side = post(f"{model.url}/v1/messages", {"messages": [], "max_tokens": 50})
        _, main = post(f"{model.url}/v1/messages", {"messages": [], "tools": [{"name": "Bash"}]})

        assert json.loads(side)["content"][0]["text"] == "ok"
        assert json.loads(main)["content"][0]["text"] == "for the agent loop"
        assert len(model.requests) == 2

    def test_it_streams_tool_input_as_json_deltas(self, model):
        model.add_steps(tool("Bash", {"command": "echo hi"}))

        content_type, stream = post(
            f"{model.url}/v1/messages?beta=true",
            {"messages": [], "tools": [{"name": "Bash"}], "stream": True},
        )

        assert content_type == "text/event-stream"
        events = [
            line.removeprefix("event: ")
            for line in stream.splitlines()
            if line.startswith("event: ")
        ]
        assert events == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        assert '"partial_json": ' + json.dumps(json.dumps({"command": "echo hi"})) in stream
        assert '"stop_reason": "tool_use"' in stream

    def test_an_exhausted_script_answers_done(self, model):
        _, body = post(f"{model.url}/v1/messages", {"messages": [], "tools": [{"name": "Bash"}]})

        assert json.loads(body)["content"][0]["text"] == "done"

    def test_it_counts_tokens(self, model):
        _, body = post(f"{model.url}/v1/messages/count_tokens", {"messages": []})

        assert json.loads(body) == {"input_tokens": 10}

    def test_request_texts_flatten_text_and_tool_results(self, model):
        listed = [{"type": "text", "text": "listed result"}]
        blocks = [
            {"type": "text", "text": "a block"},
            {"type": "tool_result", "tool_use_id": "t1", "content": "string result"},
            {"type": "tool_result", "tool_use_id": "t2", "content": listed},
        ]
        messages = [
            {"role": "user", "content": "plain string"},
            {"role": "user", "content": blocks},
        ]
        post(f"{model.url}/v1/messages", {"system": "hidden", "messages": messages})

        assert model.request_texts() == ["plain string\na block\nstring result\nlisted result"]
        assert model.wait_for_text("listed result", timeout=1)
