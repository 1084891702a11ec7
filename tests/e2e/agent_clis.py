"""Run the real Codex CLI and Gemini CLI offline, against the scripted servers of cli_models.py,
each in a throwaway HOME (and CODEX_HOME), connected to relaybay with `manage.py connect`.

The binaries come from the npm packages `make test` installs into the repository root
(`@openai/codex`, `@google/gemini-cli`, pinned in package.json); a missing one fails the test.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.live_server import MANAGE, REPO_ROOT, server_env

CODEX_BIN = REPO_ROOT / "node_modules/.bin/codex"
GEMINI_BIN = REPO_ROOT / "node_modules/.bin/gemini"
# Any key works against the scripted servers.
OPENAI_KEY = "sk-test-relaybay-codex"
GEMINI_KEY = "test-relaybay-gemini"


def binary(path):
    if not path.is_file():
        raise AssertionError(f"{path} is missing: run `make test`, which installs the CLIs pinned in package.json.")
    return str(path)


def base_env(home, extra=None):
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TERM": "xterm-256color",
    }
    env.update(extra or {})
    return env


class Codex:
    """Codex CLI with its own CODEX_HOME, its model provider the scripted Responses server."""

    def __init__(self, home, model_url):
        self.home = Path(home)
        self.codex_home = self.home / ".codex"
        self.codex_home.mkdir(parents=True, exist_ok=True)
        self.model_url = model_url
        config = self.codex_home / "config.toml"
        if not config.exists():
            config.write_text(
                '# the person\'s own settings, which connect keeps\nmodel = "gpt-5-fake"\nmodel_provider = "fake"\n\n'
                "[model_providers.fake]\n"
                f'name = "fake"\nbase_url = "{model_url}/v1"\nenv_key = "FAKE_OPENAI_KEY"\nwire_api = "responses"\n'
            )

    def env(self, extra=None):
        return base_env(self.home, {"CODEX_HOME": str(self.codex_home), "FAKE_OPENAI_KEY": OPENAI_KEY, **(extra or {})})

    def exec(self, prompt, *, cwd, resume=None, config=None, extra_env=None, timeout=120, trust_hooks=True):
        """One turn, `codex exec` (or `codex exec resume ID`), with hooks run as if trusted when
        `trust_hooks` (the flag Codex gives tests; a person trusts them once in /hooks); `config`:
        settings for this run (`-c KEY=VALUE`, the value in TOML)."""
        args = [binary(CODEX_BIN), "exec"]
        if resume:
            args += ["resume", resume]
        args += ["--skip-git-repo-check"]
        for key, value in (config or {}).items():
            args += ["-c", f"{key}={json.dumps(value)}"]
        if trust_hooks:
            args.append("--dangerously-bypass-hook-trust")
        args.append(prompt)
        done = subprocess.run(args, cwd=cwd, env=self.env(extra_env), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"codex exited {done.returncode}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}"
        return done

    @staticmethod
    def session_id(done):
        """The session id `codex exec` prints in its header."""
        for line in done.stderr.splitlines() + done.stdout.splitlines():
            if line.startswith("session id:"):
                return line.split(":", 1)[1].strip()
        raise AssertionError(f"codex printed no session id:\n{done.stderr[-2000:]}")


class Gemini:
    """Gemini CLI with its own HOME, its API the scripted Gemini server."""

    def __init__(self, home, model_url):
        self.home = Path(home)
        self.model_url = model_url
        settings = self.home / ".gemini" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        if not settings.exists():
            # The person's own settings, which connect keeps: offline with an API key.
            settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}, "ui": {"theme": "Default"}}, indent=2))

    def env(self, extra=None):
        return base_env(
            self.home,
            {"GEMINI_API_KEY": GEMINI_KEY, "GOOGLE_GEMINI_BASE_URL": self.model_url, "GEMINI_CLI_TRUST_WORKSPACE": "true", **(extra or {})},
        )

    def run(self, prompt, *, cwd, resume=None, session_id=None, approval_mode=None, extra_env=None, timeout=150):
        """One turn, `gemini -p` (with `--resume ID` or `--session-id ID`; `--approval-mode
        auto_edit` offers `-p` its edit tools)."""
        args = [binary(GEMINI_BIN), "-p", prompt, "--output-format", "json"]
        if approval_mode:
            args += ["--approval-mode", approval_mode]
        if resume:
            args += ["--resume", resume]
        if session_id:
            args += ["--session-id", session_id]
        done = subprocess.run(args, cwd=cwd, env=self.env(extra_env), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"gemini exited {done.returncode}\nstdout: {done.stdout[-3000:]}\nstderr: {done.stderr[-3000:]}"
        return done


def manage_as(live, home, *args, codex_home=None, check=True):
    """`manage.py ARGS` as the person whose HOME (and CODEX_HOME) is given, against the live
    server's data folder and token."""
    env = server_env(live.process.relaybay_data, live.token, RELAYBAY_URL=live.url, HOME=str(home))
    if codex_home is not None:
        env["CODEX_HOME"] = str(codex_home)
    else:
        env.pop("CODEX_HOME", None)
    done = subprocess.run([sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    if check:
        assert done.returncode == 0, f"manage.py {' '.join(args)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def start_codex_tui(codex, cwd, *, trust_hooks=True, ready_timeout=60.0):
    """Codex's TUI under a private tmux server (tests/e2e/claude_cli.InteractiveClaude), started
    as a person starts it; `trust_hooks` answers its "Hooks need review" with "Trust all and
    continue", as a person does once after `manage.py connect codex`."""
    import shlex
    import tempfile

    from tests.e2e.claude_cli import InteractiveClaude

    command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in codex.env().items()), binary(CODEX_BIN)])
    session = InteractiveClaude(tempfile.mkdtemp(prefix="relaybay-tmux-"), name="codex")
    session.tmux("-f", "/dev/null", "new-session", "-d", "-s", session.name, "-x", "200", "-y", "50", "-c", str(cwd), command,
                 ";", "set-option", "-t", session.name, "remain-on-exit", "on")
    try:
        if trust_hooks:
            session.wait_for_screen("Hooks need review", timeout=ready_timeout)
            choose_on_screen(session, "2. Trust all and continue")
            session.tmux("send-keys", "-t", session.name, "Enter")
        session.wait_for_screen("Ask Codex to do anything", timeout=ready_timeout)
    except BaseException:
        stop_codex_tui(codex, session)
        raise
    return session


def choose_on_screen(session, choice, timeout=30.0):
    """Move a TUI's menu selection (`› N. …`) onto `choice` with the arrow keys. The menu can be
    drawn before it takes keys, so each key is sent once the screen shows where the selection is."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        shown = session.screen()
        selected = next((line.split("›", 1)[1].strip() for line in shown.splitlines() if "›" in line), "")
        if selected.startswith(choice):
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{choice!r} not selected within {timeout} s:\n{shown}")
        wanted, at = int(choice.split(".", 1)[0]), selected.split(".", 1)[0]
        session.tmux("send-keys", "-t", session.name, "Up" if at.isdigit() and int(at) > wanted else "Down")
        time.sleep(0.3)


def type_into_codex(session, text):
    """Type a prompt and send it. Codex's TUI takes keys that come at once as a paste, where
    Enter is a new line: the Enter comes a moment later, as a person's does."""
    import time

    session.tmux("send-keys", "-t", session.name, "-l", text)
    time.sleep(0.5)
    session.tmux("send-keys", "-t", session.name, "Enter")


def stop_codex_tui(codex, session):
    """Close the TUI and the app server it started in the throwaway CODEX_HOME (by its pid files)."""
    session.tmux("kill-server", check=False)
    import shutil
    import signal

    for pid_file in (codex.codex_home / "app-server-daemon").glob("*.pid"):
        try:
            pid = json.loads(pid_file.read_text())["pid"]
            os.kill(int(pid), signal.SIGTERM)
        except (OSError, ValueError, KeyError, TypeError):
            pass
    shutil.rmtree(session.socket_dir, ignore_errors=True)
