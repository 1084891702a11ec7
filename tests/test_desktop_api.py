"""Desktop sessions through the API (docs/rules.md §1.1): rows, names and folders, and message edges."""

import json

import pytest

from sessions_app.models import Event, Session
from tests.conftest import TOKEN

pytestmark = pytest.mark.django_db


def test_it_registers_a_desktop_session(api):
    response = api.post("/desktop", {"desktop_id": "d-1", "title": "Planner", "aliases": ["plan", "p1"], "folder": "/src/x", "status": "running"})
    assert response.status_code == 200
    body = response.json()
    assert body["created"] is True
    assert body["session"]["kind"] == "desktop" and body["session"]["name"] == "Planner"
    row = Session.objects.get(desktop_id="d-1")
    assert row.aliases == ["plan", "p1"] and row.folder == "/src/x" and row.status == "running"


def test_registering_again_updates_the_same_row(api):
    api.post("/desktop", {"desktop_id": "d-1", "title": "Planner"})
    response = api.post("/desktop", {"desktop_id": "d-1", "status": "idle"})
    assert response.json()["created"] is False
    row = Session.objects.get()
    assert row.title == "Planner" and row.status == "idle"


def test_the_names_it_goes_by_find_it(api):
    from sessions_app.directory import find_sessions

    api.post("/desktop", {"desktop_id": "d-1", "title": "Planner", "aliases": ["Plan B"]})
    row = Session.objects.get()
    for name in ["planner", "  PLAN b ", "d-1", row.handle]:
        assert find_sessions(name) == [row], name
    assert find_sessions("D-1") == []  # ids match exactly


@pytest.mark.parametrize(
    "data, sentence",
    [
        ({"desktop_id": "d-1", "title": "two\nlines"}, "single line"),
        ({"desktop_id": "d-1", "aliases": ["ok", "bad\u2028alias"]}, "single line"),
        ({"desktop_id": "x" * 201}, "longer than 200"),
        ({"desktop_id": "   "}, "empty"),
    ],
)
def test_it_refuses_bad_names_and_writes_nothing(api, data, sentence):
    response = api.post("/desktop", data)
    assert response.status_code == 400
    assert sentence in response.json()["detail"]
    assert not Session.objects.exists()


def test_it_records_a_desktop_message_edge_without_text(api):
    api.post("/desktop", {"desktop_id": "d-1", "title": "Planner"})
    api.post("/desktop", {"desktop_id": "d-2", "title": "Builder"})
    response = api.post("/desktop/edge", {"sender": "planner", "recipient": "d-2"})
    assert response.status_code == 200
    event = Event.objects.get(name="session.message")
    assert event.data["channel"] == "desktop"
    assert event.data["from_name"] == "Planner" and event.data["to_name"] == "Builder"
    assert set(event.data) == {"from", "from_name", "to", "to_name", "channel"}


def test_an_edge_to_an_unknown_session_is_a_clear_error(api):
    api.post("/desktop", {"desktop_id": "d-1"})
    response = api.post("/desktop/edge", {"sender": "d-1", "recipient": "nobody"})
    assert response.status_code == 404
    assert 'No session goes by "nobody"' in response.json()["detail"]
    assert not Event.objects.filter(name="session.message").exists()


@pytest.mark.django_db(transaction=True)
def test_every_route_needs_the_token(client):
    # Committed as a server commits: the wake-up poll's refusal is tallied on a database thread,
    # which would wait out SQLite's lock behind an open test transaction holding the tally row.
    for method, path in [("post", "/api/desktop"), ("post", "/api/desktop/edge"), ("post", "/api/message_send"), ("get", "/api/messages_list"), ("post", "/api/message_ack"), ("post", "/api/session_link"), ("get", "/api/sessions_list"), ("get", "/api/hooks/wait"), ("post", "/api/hooks"), ("post", "/api/relay")]:
        response = getattr(client, method)(path, data=json.dumps({}) if method == "post" else None, content_type="application/json")
        assert response.status_code == 401, path


def test_the_openapi_schema_documents_the_message_tools(client):
    schema = client.get("/api/openapi.json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    for path in ["/api/message_send", "/api/messages_list", "/api/message_ack", "/api/session_link", "/api/sessions_list", "/api/hooks", "/api/desktop"]:
        assert path in schema["paths"], path
