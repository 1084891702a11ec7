"""A `claude -p` turn with 10 tool calls under the relaybay plugin beside the same turn bare.

    .venv/bin/python bench/plugin_turn.py [--runs 8]

The real Claude Code CLI (the pinned npm package) against the scripted model server, one
relaybay (daphne, SQLite) on a throwaway data folder. Each case has a HOME of its own:
  bare              no relaybay at all
  plugin            `manage.py connect claude`: the plugin as shipped (command hooks, PostToolUse
                    for SendMessage only, bin/relaybay-mcp in front of /mcp, its tools deferred)
  tools whole       the same with alwaysLoad: every tool's schema in every request
  http tool hooks   PreToolUse as a Claude Code http hook (no process per tool call)
  http MCP          relaybay's http server at /mcp directly, no local process (what Claude Code
                    drops when relaybay stays away a few seconds)
  stdio MCP         the SDK's stdio MCP server (`manage.py mcp`) instead of bin/relaybay-mcp
  hooks only        the plugin's hooks without its MCP server
  empty hooks       the plugin's events with `true` for every hook and no MCP server: what
                    Claude Code itself costs to run them, the floor under any hook client
Each case runs two turns, interleaved with the other cases' so load from other work hits all
alike: 10 tool calls (Bash `true`, one per model step, then text), and one text answer. From
their medians: the turn ratio to bare, the milliseconds relaybay adds per tool call
((plugin₁₀ − plugin₀ − (bare₁₀ − bare₀)) / 10) and per session start (plugin₀ − bare₀). Also
what relaybay adds to the model's first request, in characters and estimated tokens
(characters / 4). Prints figures; asserts nothing.
"""

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO_ROOT, Backend, Server, ratio, summary, throwaway_dir, write_json  # noqa: E402
from tests.devserver import MANAGE  # noqa: E402
from tests.e2e.claude_cli import claude_args, claude_bin, claude_env  # noqa: E402
from tests.e2e.model_server import ModelServer, text, tool  # noqa: E402

TOOL_CALLS = 10
PLUGIN_TOOLS = "Bash mcp__plugin_relaybay_relaybay"
MARKETPLACE = REPO_ROOT / "integrations" / "claude-code"


def variant(workdir, name, change):
    """A copy of the plugin's marketplace whose paths name this checkout, changed by `change`
    (a function of the plugin folder)."""
    folder = Path(workdir) / "variants" / name
    shutil.copytree(MARKETPLACE, folder)
    plugin = folder / "plugins" / "relaybay"
    for path in (plugin / "hooks" / "hooks.json", plugin / ".mcp.json"):
        path.write_text(path.read_text().replace("${CLAUDE_PLUGIN_ROOT}/../../../..", str(REPO_ROOT)))
    change(plugin)
    return folder


def edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def always_load(plugin):
    edit_json(plugin / ".mcp.json", lambda d: d["mcpServers"]["relaybay"].update(alwaysLoad=True))


def http_tool_hooks(url, token):
    """Claude Code refuses `${user_config.url}` in an http hook's url ("Invalid URL"), so a
    plugin cannot give its http hooks the address a person configured: this variant names the
    bench server's address and token literally, to weigh what http hooks would save."""

    def change_plugin(plugin):
        def change(data):
            for event in ("PreToolUse",):
                data["hooks"][event][0]["hooks"] = [{
                    "type": "http", "url": f"{url}/api/hooks", "timeout": 10,
                    "headers": {"Authorization": f"Bearer {token}"},
                }]  # fmt: skip
        edit_json(plugin / "hooks" / "hooks.json", change)

    return change_plugin


def http_mcp(plugin):
    """relaybay's http server at /mcp connected directly (no local process per session), as the
    plugin connected it before bin/relaybay-mcp: what the forwarder costs."""
    edit_json(plugin / ".mcp.json", lambda d: d["mcpServers"].update(relaybay={
        "type": "http", "url": "${user_config.url}/mcp", "headers": {"Authorization": "Bearer ${user_config.token}"},
    }))  # fmt: skip


def stdio_mcp(plugin):
    """The SDK's stdio MCP server (`manage.py mcp`) instead of bin/relaybay-mcp."""
    edit_json(plugin / ".mcp.json", lambda d: d["mcpServers"].update(relaybay={
        "type": "stdio", "command": sys.executable, "args": ["-m", "mcp_server.stdio"],
        "env": {"RELAYBAY_URL": "${user_config.url}", "RELAYBAY_TOKEN": "${user_config.token}", "PYTHONPATH": str(REPO_ROOT)},
    }))  # fmt: skip


def hooks_only(plugin):
    (plugin / ".mcp.json").unlink()


def empty_hooks(plugin):
    """The plugin's hooks on the same events, each command `true`, and no MCP server: what Claude
    Code itself spends running a plugin's hooks, the floor under any hook client."""
    (plugin / ".mcp.json").unlink()

    def change(data):
        for groups in data["hooks"].values():
            for group in groups:
                group["hooks"] = [{"type": "command", "command": "true", "timeout": 10}]
    edit_json(plugin / "hooks" / "hooks.json", change)


def install(home, cli_env, marketplace, values):
    def claude(*args, stdin=None):
        done = subprocess.run([claude_bin(), *args], env=cli_env(home), input=stdin, text=True, capture_output=True)
        if done.returncode:
            raise SystemExit(f"claude {args} failed: {done.stdout} {done.stderr}")

    claude("plugin", "marketplace", "add", str(marketplace))
    claude("plugin", "install", "relaybay@relaybay-local", "--scope", "user")
    claude("plugin", "configure", "relaybay@relaybay-local", "--values-stdin", stdin=json.dumps(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="turns per case and kind")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()

    with throwaway_dir("plugin-turn") as workdir:
        workdir = Path(workdir)
        server = Server(workdir, Backend("sqlite"))
        model = ModelServer().start()
        try:
            server.start()
            project = workdir / "project"
            project.mkdir()

            def cli_env(home):
                return {**claude_env(model.url, home, cwd=project), "PATH": f"{Path(claude_bin()).parent}:/usr/bin:/bin"}

            homes = {name: workdir / "homes" / name for name in ("bare", "plugin", "tools whole", "http tool hooks", "http MCP", "stdio MCP", "hooks only", "empty hooks")}
            for home in homes.values():
                home.mkdir(parents=True)
                cli_env(home)  # prepares HOME/.claude.json
            subprocess.run(
                [sys.executable, str(MANAGE), "connect", "claude", "--url", server.url, "--cli", claude_bin()],
                cwd=REPO_ROOT, env={**server.env, "HOME": str(homes["plugin"])}, capture_output=True, text=True, check=True,
            )  # fmt: skip
            values = json.loads(
                (homes["plugin"] / ".claude" / "settings.json").read_text()
            )["pluginConfigs"]["relaybay@relaybay-local"]["options"]
            values["token"] = server.token
            for name, change in (("tools whole", always_load), ("http tool hooks", http_tool_hooks(server.url, server.token)), ("http MCP", http_mcp), ("stdio MCP", stdio_mcp), ("hooks only", hooks_only), ("empty hooks", empty_hooks)):
                install(homes[name], cli_env, variant(workdir, name.replace(" ", "-"), change), values)

            kinds = {f"{TOOL_CALLS} tool calls": TOOL_CALLS, "text only": 0}
            samples = {(name, kind): [] for name in homes for kind in kinds}
            failures = dict.fromkeys(samples, 0)
            first_request = {}
            print(f"claude -p, {args.runs} turns per case and kind, interleaved (+1 warm-up each) …", flush=True)
            for i in range(args.runs + 1):
                for kind, calls in kinds.items():
                    for name, home in homes.items():
                        mark = f"done {name} {kind} {i}"
                        model.add_steps(*[tool("Bash", {"command": "true"}) for _ in range(calls)], text(mark))
                        before = len(model.main_requests())
                        started = time.perf_counter()
                        run = subprocess.run(
                            claude_args("one turn", allowed_tools=PLUGIN_TOOLS), cwd=project, env=cli_env(home),
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
                        )  # fmt: skip
                        elapsed = (time.perf_counter() - started) * 1000
                        failures[name, kind] += not (run.returncode == 0 and mark in run.stdout)
                        if i:
                            samples[name, kind].append(elapsed)
                        elif calls == 0:
                            first_request[name] = len(json.dumps(model.main_requests()[before]))
        finally:
            model.stop()
            server.stop()

    med = {key: summary(values)["median"] for key, values in samples.items()}
    print(f"\n{'case':16} {'kind':15} {'median':>9} {'× bare':>7}  failed")
    for (name, kind), value in med.items():
        print(f"{name:16} {kind:15} {value:7.0f}ms {ratio(value, med['bare', kind]):6.2f}×  {failures[name, kind]}")
    many, none = f"{TOOL_CALLS} tool calls", "text only"
    print()
    added = {}
    for name in homes:
        if name == "bare":
            continue
        added[name] = {
            "per_tool_call_ms": (med[name, many] - med[name, none] - (med["bare", many] - med["bare", none])) / TOOL_CALLS,
            "per_session_start_ms": med[name, none] - med["bare", none],
            "first_request_chars": first_request[name] - first_request["bare"],
        }
        a = added[name]
        print(f"{name:16} per tool call +{a['per_tool_call_ms']:5.1f} ms, per session start +{a['per_session_start_ms']:5.0f} ms, "
              f"first request +{a['first_request_chars']} characters (≈{a['first_request_chars'] / 4:.0f} tokens)")
    write_json(args.json, {
        "medians_ms": {f"{name} | {kind}": value for (name, kind), value in med.items()},
        "failures": {f"{name} | {kind}": value for (name, kind), value in failures.items()},
        "ratio": ratio(med["plugin", many], med["bare", many]),
        "added": added, "runs": args.runs, "tool_calls": TOOL_CALLS,
    })  # fmt: skip


if __name__ == "__main__":
    main()
