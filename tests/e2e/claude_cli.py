"""Run the real Claude Code CLI against a ModelServer, offline.

The binary comes from the npm package `@anthropic-ai/claude-code` that `make test` installs
into the repository root; RELAYBAY_CLAUDE_BIN overrides where it is looked for.
"""

import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
BUNDLED_BIN = REPO_ROOT / "node_modules/@anthropic-ai/claude-code-linux-x64/claude"

# Any key works against the model server; Claude Code remembers approval of a custom key by
# its last 20 characters (see prepare_home).
API_KEY = "sk-test-relaybay-0000000000000000000000"


class ClaudeNotInstalled(RuntimeError):
    pass


def claude_bin():
    override = os.environ.get("RELAYBAY_CLAUDE_BIN")
    path = Path(override) if override else BUNDLED_BIN
    if not path.is_file():
        raise ClaudeNotInstalled(
            f"Claude Code CLI not found at {path}. Run `make test`, which installs the pinned "
            "@anthropic-ai/claude-code package, or set RELAYBAY_CLAUDE_BIN to the binary."
        )
    return str(path)


def prepare_home(home, *trusted_dirs):
    """Write HOME/.claude.json so the CLI starts without onboarding, trust or API-key questions
    (which would otherwise block an interactive start or make it reach for the internet)."""
    home = Path(home)
    home.mkdir(parents=True, exist_ok=True)
    config_path = home / ".claude.json"
    config = json.loads(config_path.read_text()) if config_path.exists() else {}
    config["hasCompletedOnboarding"] = True
    config.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
    approved = config["customApiKeyResponses"].setdefault("approved", [])
    if API_KEY[-20:] not in approved:
        approved.append(API_KEY[-20:])
    projects = config.setdefault("projects", {})
    for directory in trusted_dirs:
        entry = projects.setdefault(str(Path(directory).resolve()), {})
        entry["hasTrustDialogAccepted"] = True
        entry["hasCompletedProjectOnboarding"] = True
    config_path.write_text(json.dumps(config, indent=2))
    return home


def claude_env(model_url, home, extra=None, cwd=None):
    """The environment for a CLI run pointed at `model_url` with an isolated HOME.

    Also prepares HOME (see prepare_home), trusting `cwd` when given, so the environment is
    ready for a hand-made subprocess call.
    """
    prepare_home(home, *([cwd] if cwd else []))
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "TERM": "xterm-256color",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "ANTHROPIC_BASE_URL": model_url,
        "ANTHROPIC_API_KEY": API_KEY,
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # Running as root, the CLI refuses to skip permission prompts outside a sandbox.
        "IS_SANDBOX": "1",
    }
    env.update(extra or {})
    return env


def claude_args(
    prompt,
    *,
    settings_file=None,
    mcp_config=None,
    allowed_tools="Bash",
    resume=None,
    output_format="json",
):
    args = [claude_bin(), "-p", prompt, "--output-format", output_format]
    if settings_file:
        args += ["--settings", str(settings_file)]
    if mcp_config:
        args += ["--mcp-config", str(mcp_config)]
    if allowed_tools:
        args += ["--allowedTools", allowed_tools]
    if resume:
        args += ["--resume", resume]
    return args


def run_claude(
    prompt,
    *,
    model_url,
    cwd,
    home,
    settings_file=None,
    mcp_config=None,
    allowed_tools="Bash",
    extra_env=None,
    timeout=120,
    resume=None,
):
    """Run one non-interactive turn (`claude -p`) and return the CompletedProcess.

    With the default JSON output, `result.stdout` holds one object with `session_id`,
    `result` (the final text) and `is_error`; parse it with `parse_result`.
    """
    return subprocess.run(
        claude_args(
            prompt,
            settings_file=settings_file,
            mcp_config=mcp_config,
            allowed_tools=allowed_tools,
            resume=resume,
        ),
        cwd=cwd,
        env=claude_env(model_url, home, extra_env, cwd=cwd),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,  # callers assert on the exit code and want stderr in the message
    )


def parse_result(completed):
    """The JSON object a `--output-format json` run printed, with a readable error if none."""
    try:
        return json.loads(completed.stdout)
    except ValueError:
        raise AssertionError(
            f"claude exited {completed.returncode} without JSON output\n"
            f"stdout: {completed.stdout[-2000:]}\nstderr: {completed.stderr[-2000:]}"
        ) from None


class InteractiveClaude:
    """An interactive Claude Code session in a private tmux server.

    Each session gets its own tmux socket, so tests never touch a developer's tmux and can
    run side by side. The pane stays after the CLI exits (remain-on-exit) so its last screen
    can still be read.
    """

    def __init__(self, socket_dir, name="claude"):
        self.socket_dir = Path(socket_dir)
        self.socket = str(self.socket_dir / "tmux.sock")
        self.name = name

    def tmux(self, *args, check=True):
        return subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, check=check
        )

    def screen(self):
        """The visible screen, as plain text."""
        return self.tmux("capture-pane", "-p", "-t", self.name).stdout

    def wait_for_screen(self, substring, timeout=30.0):
        deadline = time.monotonic() + timeout
        while True:
            shown = self.screen()
            if substring in shown:
                return shown
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{substring!r} not on screen within {timeout} s:\n{shown}")
            time.sleep(0.2)

    def send(self, text, enter=True):
        """Type `text` (literally, no key names) and press Enter."""
        self.tmux("send-keys", "-t", self.name, "-l", text)
        if enter:
            self.tmux("send-keys", "-t", self.name, "Enter")

    def is_running(self):
        dead = self.tmux("display-message", "-p", "-t", self.name, "#{pane_dead}", check=False)
        return dead.returncode == 0 and dead.stdout.strip() == "0"

    def exit(self, timeout=15.0):
        """Leave with /exit, as a user would, so SessionEnd hooks run; True if it exited."""
        if self.is_running():
            self.send("/exit")
        deadline = time.monotonic() + timeout
        while self.is_running():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)
        return True

    def close(self):
        """Exit if still running and tear down the tmux server and its socket directory."""
        try:
            self.exit(timeout=5.0)
        finally:
            self.tmux("kill-server", check=False)
            shutil.rmtree(self.socket_dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def start_interactive(
    *,
    model_url,
    cwd,
    home,
    settings_file=None,
    mcp_config=None,
    allowed_tools="Bash",
    extra_env=None,
    resume=None,
    permission_mode="default",
    width=200,
    height=50,
    ready_timeout=30.0,
):
    """Start `claude` interactively under tmux and wait for its input prompt.

    Interactive sessions otherwise start in auto mode, whose safety check runs on Anthropic's
    servers: against the model server, any command it deems risky stops at a dialog. The
    default permission mode keeps the behaviour of `-p` runs: `allowed_tools` run, others ask.
    """
    args = [claude_bin(), "--permission-mode", permission_mode]
    if settings_file:
        args += ["--settings", str(settings_file)]
    if mcp_config:
        args += ["--mcp-config", str(mcp_config)]
    if allowed_tools:
        args += ["--allowedTools", allowed_tools]
    if resume:
        args += ["--resume", resume]
    env = claude_env(model_url, home, extra_env, cwd=cwd)
    # `env -i` gives the CLI exactly this environment, whatever the tmux server inherited.
    command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), *args])

    # tmux sockets live under a short /tmp path: a Unix socket path is limited to ~107 bytes,
    # which a pytest tmp_path can exceed.
    session = InteractiveClaude(tempfile.mkdtemp(prefix="relaybay-tmux-"))
    new_session = ["new-session", "-d", "-s", session.name, "-x", str(width), "-y", str(height)]
    new_session += ["-c", str(cwd), command]
    keep_pane = ["set-option", "-t", session.name, "remain-on-exit", "on"]
    # -f /dev/null: a developer's ~/.tmux.conf must not change key handling or the screen.
    session.tmux("-f", "/dev/null", *new_session, ";", *keep_pane)
    try:
        session.wait_for_screen("❯", timeout=ready_timeout)
    except BaseException:
        session.close()
        raise
    return session
