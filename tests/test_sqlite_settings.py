"""relaybay's SQLite safeguards (WAL, BEGIN IMMEDIATE, a busy timeout) and temporary storage in
memory hold however SQLite is chosen: the embedded default or DATABASE_URL=sqlite:///… ."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# SQLite in a process of its own, whatever the pass's services: make test runs the module once.
pytestmark = pytest.mark.embedded_only

# Run in a process of its own, so the settings are read from the environment as a server's are.
PROBE = """
import json, sqlite3
from django.db import connection, transaction
with connection.cursor() as cursor:
    journal = cursor.execute("PRAGMA journal_mode").fetchone()[0]
    busy = cursor.execute("PRAGMA busy_timeout").fetchone()[0]
    temp_store = cursor.execute("PRAGMA temp_store").fetchone()[0]
name = connection.settings_dict["NAME"]
with transaction.atomic():
    connection.cursor().execute("SELECT 1")
    # Another writer cannot begin while relaybay's transaction is open: it took the write
    # lock at BEGIN (IMMEDIATE), not at its first write.
    other = sqlite3.connect(name, timeout=0)
    try:
        other.execute("BEGIN IMMEDIATE")
        locked_at_begin = False
    except sqlite3.OperationalError:
        locked_at_begin = True
    other.close()
print(json.dumps({"journal": journal, "busy_ms": busy, "locked_at_begin": locked_at_begin, "temp_store": temp_store, "name": str(name)}))
"""


def probe(tmp_path, **env):
    environ = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    environ.update(RELAYBAY_DATA=str(tmp_path / "data"), DJANGO_SETTINGS_MODULE="relaybay.settings", **env)
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", PROBE], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("via_url", [False, True], ids=["default", "DATABASE_URL"])
def test_sqlite_runs_with_wal_begin_immediate_a_busy_timeout_and_temporary_storage_in_memory(tmp_path, via_url):
    env = {"DATABASE_URL": f"sqlite:///{tmp_path / 'other.sqlite3'}"} if via_url else {}
    found = probe(tmp_path, **env)
    assert found["name"].endswith("other.sqlite3" if via_url else "relaybay.sqlite3")
    assert found["journal"] == "wal"
    assert found["busy_ms"] == 30_000
    assert found["locked_at_begin"] is True
    # 2 is MEMORY: a broadcast's statement journal never becomes a file in /var/tmp.
    assert found["temp_store"] == 2
