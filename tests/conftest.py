import json

import pytest

TOKEN = "test-token"


@pytest.fixture(autouse=True)
def _token(settings):
    settings.RELAYBAY_TOKEN = TOKEN


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
        def post(self, path, data, token=TOKEN):
            return client.post(f"/api{path}", data=json.dumps(data), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")

        def get(self, path, token=TOKEN, **params):
            return client.get(f"/api{path}", params, HTTP_AUTHORIZATION=f"Bearer {token}")

    return Api()
