"""A listener of another account on relaybay's address, with the real Claude Code CLI: a session
configured as `manage.py claude_config` prints it, while relaybay is down and uid 65534 listens
on its port (setpriv), sends it no token and no prompt, and nothing it answers reaches the model
(relaybay_hook/peer.py, docs/hook-client.md "Only to relaybay")."""

import json

from tests.e2e.model_server import text
from tests.e2e.relaybay_cli import manage
from tests.impostor import INJECTED
from tests.live_server import live_relaybay  # noqa: F401  (fixture)
from tests.test_hook_client_safety import impostor, shared_tmp  # noqa: F401  (fixtures)


def test_a_session_sends_nothing_to_another_accounts_listener_and_the_model_hears_nothing_of_it(live_relaybay, impostor, model, claude, tmp_path):
    url, accepted = impostor
    settings = tmp_path / "settings.json"
    spool = tmp_path / "spool.jsonl"
    settings.write_text(manage(live_relaybay, "claude_config", "--url", url, "--spool", str(spool)).stdout)
    model.add_steps(text("nothing from relaybay"))
    result = claude("the secret plan 5150", settings_file=settings, mcp_config=settings)
    assert result["result"] == "nothing from relaybay"
    # Every hook (and the MCP forwarder) connected, checked who listens, and sent nothing.
    assert accepted() and set(accepted()) == {""}
    sent = json.dumps([model.request_texts(), [r for r in model.requests]])
    assert INJECTED not in sent
    assert "the secret plan 5150" in spool.read_text()  # kept for the real relaybay
