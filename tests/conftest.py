import json
import os

import pytest
from django.conf import settings as django_settings

from tests import devserver

TOKEN = "test-token"
OWNER_TOKEN = "test-owner-token"
SERVICES_NEEDED = "PostgreSQL and Redis on 127.0.0.1 are needed for the scale-out configuration"


def _on_postgresql():
    return django_settings.DATABASES["default"]["ENGINE"].endswith("postgresql")


def pytest_configure(config):
    """On the scale-out pass (DATABASE_URL / REDIS_URL set): the services must answer, or the
    run stops here with the reason, never skipping; each test process gets a channel prefix of
    its own so two xdist workers (or two runs) on one Redis never hear each other's groups.
    Passwords are hashed with a cheap hasher, as in healthchecks' tests: PBKDF2's deliberate
    cost would be paid for every owner a board test makes."""
    django_settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # Live servers start on copies of one migrated database (tests/devserver.py).
    devserver.use_migrated_templates()
    if _on_postgresql():
        import psycopg

        # Django's test client never closes the connections its requests open (it unhooks
        # close_old_connections), so in-process tests would drain the server's bounded pool;
        # they use plain connections. Live servers (tests/live_server.py) keep the pool.
        django_settings.DATABASES["default"]["OPTIONS"].pop("pool", None)

        db = django_settings.DATABASES["default"]
        try:
            psycopg.connect(
                host=db["HOST"] or None, port=db["PORT"] or None, user=db["USER"] or None, dbname=db["NAME"], connect_timeout=5
            ).close()
        except psycopg.OperationalError as error:
            pytest.exit(f"{SERVICES_NEEDED}: DATABASE_URL={os.environ.get('DATABASE_URL')} does not answer: {error}", returncode=3)
    if django_settings.REDIS_URL:
        import redis

        try:
            redis.Redis.from_url(django_settings.REDIS_URL, socket_timeout=3, socket_connect_timeout=3).ping()
        except redis.RedisError as error:
            pytest.exit(f"{SERVICES_NEEDED}: REDIS_URL={django_settings.REDIS_URL} does not answer: {error}", returncode=3)
        django_settings.CHANNEL_LAYERS["default"]["CONFIG"]["prefix"] = f"relaybay-test-{os.getpid()}"


def pytest_sessionfinish(session, exitstatus):
    """pytest-django cannot drop a PostgreSQL test database that a test's thread still holds a
    connection to; drop it by force so runs leave nothing behind on the shared server."""
    if not _on_postgresql():
        return
    import psycopg
    from django.db import connections

    db = connections.databases["default"]
    name = db.get("TEST", {}).get("NAME")
    if not name or not str(name).startswith("test_relaybay_"):
        return
    try:
        with psycopg.connect(
            host=db["HOST"] or None, port=db["PORT"] or None, user=db["USER"] or None, dbname="postgres", autocommit=True, connect_timeout=5
        ) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    except psycopg.OperationalError:
        pass


@pytest.fixture(autouse=True)
def _token(settings):
    settings.RELAYBAY_TOKEN = TOKEN
    settings.RELAYBAY_OWNER_TOKEN = OWNER_TOKEN


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """Each async test runs on an event loop of its own, and channels_redis's layer keeps
    asyncio locks bound to the loop that first used them (a server process has one loop for
    its life): every test gets a layer of its own."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


class HookPoster:
    """Posts hook payloads like Claude Code would, with the token."""

    def __init__(self, client):
        self.client = client

    def raw(self, body, token=TOKEN, **headers):
        auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
        extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
        return self.client.post("/api/hooks", data=body, content_type="application/json", **auth, **extra)

    def __call__(self, event, session_id, replay=False, **fields):
        payload = {"hook_event_name": event, "session_id": session_id, "cwd": fields.pop("cwd", "/work/proj"), **fields}
        headers = {"X-Relaybay-Replay": "1"} if replay else {}
        response = self.raw(json.dumps(payload), **headers)
        assert response.status_code == 200, response.content
        return response.json()


@pytest.fixture
def hook(client):
    return HookPoster(client)


@pytest.fixture
def api(client):
    """JSON API calls with the token: api.post(path, data), api.get(path, **params)."""

    class Api:
        def post(self, path, data, token=TOKEN, proof=None):
            headers = {"HTTP_X_RELAYBAY_PROCESS": proof} if proof else {}
            return client.post(f"/api{path}", data=json.dumps(data), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}", **headers)

        def get(self, path, token=TOKEN, **params):
            return client.get(f"/api{path}", params, HTTP_AUTHORIZATION=f"Bearer {token}")

    return Api()
