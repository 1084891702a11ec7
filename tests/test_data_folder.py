"""relaybay's data folder is its owner's alone: the folder 0700, and the SQLite database, its -wal
and -shm files, the token, the owner's password, the address and every other file in it 0600,
whatever the umask; an install whose files others could read is private again at its next start
(core/private_files.py)."""

import json
import os
import signal
import sqlite3
import stat
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from core.private_files import NotPrivate, secure_data_folder
from tests.devserver import Server
from tests.test_run_address import answers, command_env, manage
from tests.live_server import REPO_ROOT, free_port

# Every install here is the embedded default of its own (`make run`, a server or a command on a
# data folder, SQLite files), whatever the pass's services: make test runs the module once.
pytestmark = pytest.mark.embedded_only

LOOSE_UMASK = 0o022


def modes(folder):
    """Every folder and file under `folder` (itself included) with its permission bits."""
    found = {".": stat.S_IMODE(folder.stat().st_mode)}
    for path in folder.rglob("*"):
        found[str(path.relative_to(folder))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def not_private(folder):
    """What under `folder` others may read: folders not 0700, files not 0600."""
    wrong = {}
    for name, mode in modes(folder).items():
        wanted = 0o700 if (folder / name).is_dir() else 0o600
        if mode != wanted:
            wrong[name] = oct(mode)
    return wrong


def post_hook(url, token, session_id):
    request = urllib.request.Request(
        f"{url}/api/hooks",
        data=json.dumps({"hook_event_name": "SessionStart", "session_id": session_id, "cwd": "/p", "source": "startup"}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


def loosen(folder):
    """The modes an install made under umask 022 by a relaybay that did not secure its folder has."""
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def test_make_run_on_a_fresh_data_folder_under_umask_022_leaves_it_readable_by_its_owner_only(tmp_path):
    data_dir, port = tmp_path / "data", free_port()
    log = tmp_path / "make-run.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["make", "-o", ".venv/.installed", "run", f"PORT={port}"], cwd=REPO_ROOT, env=command_env(data_dir),
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True, umask=LOOSE_UMASK,
        )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while not answers(url):
            assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        post_hook(url, (data_dir / "token").read_text().strip(), "h-private")
        manage(data_dir, "claude_config", "--session", "private-agent", "--output", str(data_dir / "private-agent.json"))
        found = modes(data_dir)
        # The database's WAL files exist while the server has it open: SQLite made them.
        for name in ("relaybay.sqlite3", "relaybay.sqlite3-wal", "relaybay.sqlite3-shm", "token", "secret-key",
                     "owner-password", "address", "private-agent.json", "hook-config"):  # fmt: skip
            assert name in found, name
        assert not_private(data_dir) == {}
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=15)


def test_an_install_others_can_read_is_private_again_when_its_server_starts(tmp_path):
    server = Server(tmp_path / "data").start()
    try:
        post_hook(server.url, server.token, "h-before")
        server.stop()
        loosen(server.data_dir)
        assert not_private(server.data_dir)
        # The server's start alone (no migrate, no setup_owner), under a loose umask.
        old_umask = os.umask(LOOSE_UMASK)
        try:
            server.restart()
        finally:
            os.umask(old_umask)
        post_hook(server.url, server.token, "h-after")
        assert (server.data_dir / "relaybay.sqlite3-wal").exists()
        assert not_private(server.data_dir) == {}
    finally:
        server.stop()


def test_an_install_others_can_read_is_private_again_after_setup_owner(tmp_path):
    data_dir = tmp_path / "data"
    manage(data_dir, "migrate", "--noinput")
    manage(data_dir, "setup_owner")
    loosen(data_dir)
    manage(data_dir, "setup_owner")
    assert not_private(data_dir) == {}


def test_a_symbolic_link_in_the_data_folder_and_what_it_points_to_keep_their_modes(tmp_path):
    outside = tmp_path / "settings.json"
    outside.write_text("{}")
    outside.chmod(0o644)
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "linked.json").symlink_to(outside)
    (data_dir / "token").write_text("t")
    (data_dir / "token").chmod(0o644)
    secure_data_folder(data_dir)
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644
    assert stat.S_IMODE((data_dir / "token").stat().st_mode) == 0o600
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700


def test_the_database_is_created_private_so_sqlite_makes_its_wal_files_private_too(tmp_path):
    data_dir = tmp_path / "data"
    database = data_dir / "relaybay.sqlite3"
    old_umask = os.umask(LOOSE_UMASK)
    try:
        secure_data_folder(data_dir, database=database)
        connection = sqlite3.connect(database)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE t (x)")
        connection.commit()
    finally:
        os.umask(old_umask)
    assert {name: oct(mode) for name, mode in modes(data_dir).items()} == {
        ".": "0o700", "relaybay.sqlite3": "0o600", "relaybay.sqlite3-wal": "0o600", "relaybay.sqlite3-shm": "0o600",
    }  # fmt: skip
    connection.close()


def test_a_data_folder_file_owned_by_another_user_stops_the_start_with_the_reason(tmp_path, monkeypatch):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "token").write_text("t")

    def refused(self, mode):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(Path, "chmod", refused)
    with pytest.raises(NotPrivate, match="must belong to the user it runs as"):
        secure_data_folder(data_dir)
