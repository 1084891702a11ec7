"""Driving relaybay as its user would, for end-to-end tests: its management commands against a
running server's data folder, and the Claude Code config `claude_config` prints."""

import json
import sqlite3
import subprocess
import sys

from tests.live_server import MANAGE, REPO_ROOT, server_env


def manage(live, *args, check=True):
    """Run `python manage.py ARGS` against the live server's data folder and token."""
    env = server_env(live.process.relaybay_data, live.token, RELAYBAY_URL=live.url)
    completed = subprocess.run(
        [sys.executable, str(MANAGE), *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    if check:
        assert completed.returncode == 0, completed.stderr
    return completed


def write_settings(live, path, *extra_args):
    """The config exactly as `manage.py claude_config` prints it for this server: hooks and
    the MCP server in one file, given to both --settings and --mcp-config."""
    path.write_text(manage(live, "claude_config", "--url", live.url, *extra_args).stdout)
    json.loads(path.read_text())
    return path


def query(live, sql, *params):
    """Read the live server's database (for what the board would show): its SQLite file, or
    its PostgreSQL database on the scale-out pass (`?` placeholders either way)."""
    database_url = server_env(live.process.relaybay_data, live.token).get("DATABASE_URL")
    if database_url:
        import psycopg

        with psycopg.connect(database_url) as db:
            # SQLite's julianday(), so the same read-only queries run on both.
            db.execute(
                "CREATE OR REPLACE FUNCTION julianday(t timestamptz) RETURNS double precision "
                "LANGUAGE sql IMMUTABLE AS $$ SELECT extract(epoch FROM t) / 86400.0 + 2440587.5 $$"
            )
            statement = sql.replace("%", "%%").replace("?", "%s") if params else sql
            return [tuple(row) for row in db.execute(statement, params or None).fetchall()]
    with sqlite3.connect(live.process.relaybay_data / "relaybay.sqlite3") as db:
        return db.execute(sql, params).fetchall()
