"""The API's description and docs page: for the token or the owner's login, complete enough to
fuzz from (every operation's error answers, the hook body's schema); and an unknown /api/
address answers the API's JSON 404."""

import pytest
from django.contrib.staticfiles import finders

from tests.board_fixtures import board, owner  # noqa: F401
from tests.conftest import TOKEN

pytestmark = pytest.mark.django_db


def test_the_openapi_description_needs_the_token_or_the_owner(client, board):
    refused = client.get("/api/openapi.json")
    assert refused.status_code == 401
    assert "Bearer" in refused.json()["detail"]
    assert client.get("/api/openapi.json", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/api/openapi.json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()["info"]["title"] == "relaybay API"
    assert board.get("/api/openapi.json").status_code == 200


def test_the_docs_page_sends_a_browser_to_log_in_and_shows_the_owner_swagger_from_relaybay(client, board):
    response = client.get("/api/docs", HTTP_ACCEPT="text/html")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/api/docs")
    assert client.get("/api/docs").status_code == 401
    page = board.get("/api/docs")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    assert finders.find("ninja/swagger-ui-bundle.js")


def test_a_non_staff_login_does_not_open_the_docs(client, django_user_model):
    guest = django_user_model.objects.create_user(username="guest", password="guest-pass-1")
    client.force_login(guest)
    assert client.get("/api/openapi.json").status_code == 401


@pytest.mark.parametrize("path", ["/api/", "/api/nope", "/api/hooks/nope", "/api/desktop/edge/x"])
def test_an_unknown_api_address_answers_the_json_404(client, path):
    response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert "no API route" in response.json()["detail"]


def test_every_operation_documents_its_error_answers_and_the_hook_body(client):
    schema = client.get("/api/openapi.json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").json()
    operations = [(path, op) for path, ops in schema["paths"].items() for op in ops.values()]
    assert len(operations) >= 10
    for path, op in operations:
        assert {"400", "401", "422", "503"} <= set(op["responses"]), path
    body = schema["paths"]["/api/hooks"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert set(body["required"]) == {"session_id", "hook_event_name"}
    assert body["properties"]["hook_event_name"]["maxLength"] == 55
    assert body["additionalProperties"] is True
