"""Claude Code's PreToolUse of relaybay's own MCP tools names the calling session in the call
(`updatedInput` with the hook's session id), under the plugin's server name and a settings
entry's alike: the plugin's http MCP server gets no process proof (docs/mcp.md)."""

import json

import pytest

from sessions_app.models import Event

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("server", ["plugin_relaybay_relaybay", "relaybay"])
def test_a_relaybay_tool_call_is_filled_in_with_the_sessions_id_replacing_the_models(hook, server):
    hook("SessionStart", "cc-1", cwd="/work/api", source="startup")
    answer = hook("PreToolUse", "cc-1", tool_name=f"mcp__{server}__message_send", tool_input={"to": "web", "body": "hi", "hook_session": "someone-else"})
    filled_in = {"to": "web", "body": "hi", "hook_session": "cc-1"}
    assert answer == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": filled_in}}
    stored = json.dumps(list(Event.objects.filter(hook_session="cc-1", name="hook.PreToolUse").values_list("data", flat=True)))
    assert '"hi"' not in stored


def test_other_tools_and_other_servers_tools_are_left_alone(hook):
    hook("SessionStart", "cc-2", cwd="/work/api", source="startup")
    for name in ("mcp__plugin_relaybay_relaybay__sessions_list", "mcp__github__message_send", "Bash", "mcp__relaybay"):
        answer = hook("PreToolUse", "cc-2", tool_name=name, tool_input={"to": "x"})
        assert "updatedInput" not in json.dumps(answer), name


def test_what_waits_for_the_session_goes_with_the_filled_in_call(hook):
    from sessions_app.actions import do_write_comment
    from sessions_app.models import HookLink

    hook("SessionStart", "cc-3", cwd="/work/api", source="startup")
    do_write_comment(session=HookLink.objects.get(hook_session="cc-3").session, body="owner-note-6161")
    answer = hook("PreToolUse", "cc-3", tool_name="mcp__plugin_relaybay_relaybay__message_send", tool_input={"to": "web", "body": "hi"})
    output = answer["hookSpecificOutput"]
    assert output["updatedInput"] == {"to": "web", "body": "hi", "hook_session": "cc-3"}
    assert "owner-note-6161" in output["additionalContext"]
