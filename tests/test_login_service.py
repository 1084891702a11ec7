"""`manage.py service install|uninstall|restart|status` (README, "relaybay at login"): relaybay as a
systemd user unit or a LaunchAgent.

This machine has systemctl and systemd-analyze but no systemd as PID 1 and no user manager, and
no launchd: the unit is checked with `systemd-analyze verify FILE` (without --user, which fails
here), the plist with plistlib (and `plutil -lint` where it exists), and the commands each file
starts are run as the file says, until they serve relaybay. Enabling and starting the unit
cannot be run here; install says so and leaves the unit written.
"""

import os
import plistlib
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from tests.devserver import free_port
from tests.live_server import MANAGE, REPO_ROOT

# The service files and commands are the same whatever database the tests run on.
pytestmark = pytest.mark.embedded_only


def service(home, data, *args, port=None):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "RELAYBAY_HOST", "RELAYBAY_PORT", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), RELAYBAY_DATA=str(data), DJANGO_SETTINGS_MODULE="relaybay.settings")
    extra = ["--port", str(port)] if port else []
    return subprocess.run([sys.executable, str(MANAGE), "service", *args, *extra], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)


def unit_settings(text):
    """Each `Name=value` of a unit, values in order (Environment and ExecStartPre repeat)."""
    found = {}
    for line in text.splitlines():
        name, sep, value = line.partition("=")
        if sep and not line.startswith(("[", "#")):
            found.setdefault(name, []).append(value)
    return found


def serves(url, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/login/", timeout=2) as answer:
                return answer.status == 200
        except OSError:
            time.sleep(0.3)
    return False


def run_until_it_serves(command, cwd, env, url, shell=False):
    process = subprocess.Popen(command, cwd=cwd, env=env, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert serves(url), process.stdout.read1().decode() if process.poll() is not None else "not serving"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def test_the_unit_passes_systemd_analyze_verify_and_its_commands_serve_relaybay(tmp_path):
    data, port = tmp_path / "data", free_port()
    printed = service(tmp_path, data, "install", "--platform", "linux", "--print", port=port)
    assert printed.returncode == 0, printed.stderr
    unit = tmp_path / "relaybay.service"
    unit.write_text(printed.stdout)
    verified = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stderr
    assert str(unit) not in verified.stderr, verified.stderr

    found = unit_settings(printed.stdout)
    assert found["Restart"] == ["always"] and found["WantedBy"] == ["default.target"]
    assert found["StandardOutput"] == [f"append:{data.resolve()}/logs/relaybay.log"]
    # As `make run`: migrations, then setup_owner, then daphne; in the unit's folder and environment.
    pre = [shlex.split(line) for line in found["ExecStartPre"]]
    assert [words[1:3] for words in pre] == [["manage.py", "migrate"], ["manage.py", "setup_owner"]]
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    env.update(shlex.split(line)[0].split("=", 1) for line in found["Environment"])
    assert env["RELAYBAY_DATA"] == str(data.resolve()) and env["RELAYBAY_PORT"] == str(port)
    [cwd] = found["WorkingDirectory"]
    for words in pre:
        done = subprocess.run(words, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr
    [start] = found["ExecStart"]
    run_until_it_serves(shlex.split(start), cwd, env, f"http://127.0.0.1:{port}")


def test_the_launch_agent_parses_and_its_command_serves_relaybay(tmp_path):
    data, port = tmp_path / "data", free_port()
    printed = service(tmp_path, data, "install", "--platform", "macos", "--print", port=port)
    assert printed.returncode == 0, printed.stderr
    plist = plistlib.loads(printed.stdout.encode())
    if shutil.which("plutil"):
        (tmp_path / "relaybay.plist").write_text(printed.stdout)
        linted = subprocess.run(["plutil", "-lint", str(tmp_path / "relaybay.plist")], capture_output=True, text=True)
        assert linted.returncode == 0, linted.stdout
    assert plist["Label"] == "local.relaybay" and plist["RunAtLoad"] is True and plist["KeepAlive"] is True
    assert plist["StandardOutPath"] == str(tmp_path / "Library" / "Logs" / "relaybay" / "relaybay.log")
    shell, flag, chain = plist["ProgramArguments"]
    assert (shell, flag) == ("/bin/sh", "-c") and chain.index("migrate") < chain.index("setup_owner") < chain.index("exec ")
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), **plist["EnvironmentVariables"]}
    run_until_it_serves(plist["ProgramArguments"], plist["WorkingDirectory"], env, f"http://127.0.0.1:{port}")


def test_install_writes_the_unit_says_no_user_manager_answers_and_uninstall_removes_it(tmp_path):
    data = tmp_path / "data"
    unit = tmp_path / ".config" / "systemd" / "user" / "relaybay.service"
    installed = service(tmp_path, data, "install", "--platform", "linux")
    # No systemd user manager runs here: the unit is written and the person is told how to go on.
    assert installed.returncode == 1
    assert f"Wrote {unit}" in installed.stdout
    assert "no systemd user manager answered" in installed.stderr and "make run" in installed.stderr
    assert unit.exists() and unit.stat().st_mode & 0o077 == 0
    status = service(tmp_path, data, "status", "--platform", "linux")
    assert f"Installed: {unit}" in status.stdout and f"Log: {data.resolve()}/logs/relaybay.log" in status.stdout

    removed = service(tmp_path, data, "uninstall", "--platform", "linux")
    assert removed.returncode == 0, removed.stderr
    assert not unit.exists() and f"Removed {unit}" in removed.stdout
    assert "Not installed" in service(tmp_path, data, "status", "--platform", "linux").stdout
    again = service(tmp_path, data, "uninstall", "--platform", "linux")
    assert again.returncode == 0 and "not installed" in again.stdout


def test_a_path_with_spaces_and_percent_signs_is_written_as_systemd_reads_it(tmp_path):
    data = tmp_path / "my data 100%"
    printed = service(tmp_path, data, "install", "--platform", "linux", "--print")
    unit = tmp_path / "relaybay.service"
    unit.write_text(printed.stdout)
    verified = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stderr
    assert f'Environment="RELAYBAY_DATA={data.resolve()}"' in printed.stdout.replace("%%", "%")


def test_the_service_serves_where_make_run_recorded_relaybay(tmp_path):
    """After `make run PORT=8231` (data/address) the unit serves at that port, where every CLI
    was connected; --port still chooses another."""
    data = tmp_path / "data"
    data.mkdir(mode=0o700)
    (data / "address").write_text("http://127.0.0.1:8231\n")
    found = unit_settings(service(tmp_path, data, "install", "--platform", "linux", "--print").stdout)
    assert "RELAYBAY_PORT=8231" in found["Environment"] and "RELAYBAY_HOST=127.0.0.1" in found["Environment"]
    assert shlex.split(found["ExecStart"][0])[-3:-1] == ["-p", "8231"]
    # --dry-run, as connect's, prints the same and writes nothing.
    assert service(tmp_path, data, "install", "--platform", "linux", "--dry-run").stdout == service(tmp_path, data, "install", "--platform", "linux", "--print").stdout
    assert not (tmp_path / ".config").exists()
    chosen = unit_settings(service(tmp_path, data, "install", "--platform", "linux", "--print", port=8232).stdout)
    assert "RELAYBAY_PORT=8232" in chosen["Environment"]
    (data / "address").write_text("not an address\n")
    fallback = unit_settings(service(tmp_path, data, "install", "--platform", "linux", "--print").stdout)
    assert "RELAYBAY_PORT=8000" in fallback["Environment"]
