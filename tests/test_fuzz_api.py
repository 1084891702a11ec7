"""Fuzzing every API route from its OpenAPI description (Schemathesis over Hypothesis, run
in-process through Django's WSGI handler), and the hostile hook corpus: no input is a 5xx, a
4xx writes no row and carries a stable code, and after the corpus every board page and export
of the session answers 200 with everything escaped. Runs on both configurations of `make test`.

Deterministic and bounded: a fixed number of examples per operation, derandomized. The counts
(cases run, 5xx seen) are written to test-artifacts/fuzz-<database>.json.
"""

import json
import re
from pathlib import Path

import pytest
import schemathesis
from django.apps import apps
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, connection
from hypothesis import HealthCheck, Phase, settings

from core.errors import ErrorCode
from sessions_app.models import Event, Session
from tests.board_fixtures import board, owner  # noqa: F401
from tests.conftest import TOKEN

pytestmark = pytest.mark.django_db

EXAMPLES_PER_OPERATION = 40
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
TALLY = {"cases": 0, "server_errors": 0, "refused": 0, "corpus_cases": 0}


# The one row a refusal is meant to write: the tally of hook calls refused for their token,
# which the board warns about (docs/rules.md §5.1).
KEEPS_REFUSALS = {"sessions_app.RefusedHooks"}


def all_rows():
    """Rows in every relaybay table: what a refused request must leave as it found it. One
    statement counts them all (a COUNT(*) per table), read before every generated case."""
    tables = {
        model._meta.label: model._meta.db_table
        for model in apps.get_models()
        if not model.__module__.startswith("django.") and model._meta.label not in KEEPS_REFUSALS
    }
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f"(SELECT COUNT(*) FROM {quote(table)})" for table in tables.values()))
        return dict(zip(tables, cursor.fetchone()))


@pytest.fixture(scope="module", autouse=True)
def tally():
    yield TALLY
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"fuzz-{connection.vendor}.json").write_text(json.dumps(TALLY, indent=1) + "\n")


@pytest.fixture
def api_schema(settings):
    """Requests go straight into Django's WSGI handler, committing as a server's do (the wake-up
    long poll's steps run on relaybay's database threads, which see only committed rows). As
    in Django's test client, a request does not close the test's connection when it ends (a
    server's pool keeps it too): a new PostgreSQL connection for every case would cost more
    than the case."""
    settings.RELAYBAY_MAX_WAIT = 0  # a wake-up long poll answers at once
    from relaybay.wsgi import application

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/openapi.json", application, headers={"Authorization": f"Bearer {TOKEN}"})
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@pytest.mark.django_db(transaction=True)
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_generated_request_is_a_server_error_and_a_refusal_writes_nothing(case):
    before = all_rows()
    response = case.call(headers={"Authorization": f"Bearer {TOKEN}"})
    TALLY["cases"] += 1
    if response.status_code >= 500:
        TALLY["server_errors"] += 1
    assert response.status_code < 500, (case.method, case.path, case.body, case.query, response.text[:500])
    if 400 <= response.status_code < 500:
        TALLY["refused"] += 1
        assert all_rows() == before, (case.method, case.path, case.body, response.status_code)
        if response.status_code != 405:  # django-ninja's own answer to a method a route lacks
            assert response.json()["detail"] and response.json()["code"] in set(ErrorCode)
    case.validate_response(
        response,
        checks=[
            schemathesis.checks.not_a_server_error,
            schemathesis.specs.openapi.checks.status_code_conformance,
            schemathesis.specs.openapi.checks.content_type_conformance,
        ],
    )


# --- The hostile hook corpus ---------------------------------------------------------------

HOSTILE_STRINGS = [
    "<script>alert('x')</script>",
    '" onmouseover="alert(1)" x="',
    "<img src=x onerror=alert(4)>",
    "a\ud800b",  # a lone surrogate, as JSON.stringify writes one
    "\udfff",
    "a\x00b",  # NUL: PostgreSQL refuses it in text
    "abc\u202edcba",  # right-to-left override
    "zero\u200bwidth\u2060joined\ufeff",
    "{{ 7|add:7 }} {% now 'Y' %}",
    "**bold** [link](javascript:alert(3))",
    "x" * 50_000,
    "\r\n\u2028\u2029\x85",
    "😀" * 100,
    "",
    " ",
]
TEXT_FIELDS = ["prompt", "tool_input", "tool_response", "message", "agent_id", "last_assistant_message", "x-custom"]
IDENTIFIER_FIELDS = ["session_id", "hook_event_name", "cwd", "transcript_path", "tool_name"]
ODD_VALUES = [12, -1, 1.5, True, None, [], {}, ["a"], {"a": "b"}]
SESSION = "fuzz-hook"
# Markup from the corpus as markup: not HTML-escaped on a page, not backslash-escaped in the
# Markdown export.
UNESCAPED = re.compile(r"(?<!\\)(<script>alert|<img src=x)")


def corpus():
    """(label, raw JSON body) pairs: hostile strings and odd values through every field, and
    bodies that are not what a hook payload may be."""
    base = {"session_id": SESSION, "hook_event_name": "UserPromptSubmit", "cwd": "/work/fuzz"}
    cases = []
    for i, text in enumerate(HOSTILE_STRINGS):
        for field in TEXT_FIELDS:
            cases.append((f"{field}={i}", json.dumps({**base, field: text})))
        cases.append((f"nested={i}", json.dumps({**base, "hook_event_name": "PostToolUse", "tool_name": "Bash",
                                                "tool_input": {text: [text, {"k": text}]}, "tool_response": {"stdout": text}})))
        for field in IDENTIFIER_FIELDS:
            cases.append((f"{field}={i}", json.dumps({**base, field: text})))
    for value in ODD_VALUES:
        for field in [*IDENTIFIER_FIELDS, "prompt", "relaybay_session"]:
            cases.append((f"{field}={value!r}", json.dumps({**base, field: value})))
    head = '{"session_id": "%s", "hook_event_name": "PostToolUse", ' % SESSION
    cases += [
        ("NaN", head + '"tool_response": NaN}'),
        ("Infinity", head + '"tool_response": [Infinity, -Infinity]}'),
        ("1e400", head + '"tool_response": 1e400}'),
        ("huge int", head + '"tool_response": ' + "9" * 5000 + "}"),
        ("deep", head + '"tool_input": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("deep objects", head + '"tool_input": ' + '{"a":' * 5000 + "1" + "}" * 5000 + "}"),
        ("many keys", json.dumps({"session_id": SESSION, "hook_event_name": "PostToolUse", **{f"k{i}": i for i in range(30_000)}})),
        ("not an object", "[1, 2, 3]"),
        ("a string", '"hello"'),
        ("not JSON", "{nope"),
        ("empty", ""),
        ("latin-1 bytes", b'{"session_id": "\xe9"}'),
        ("duplicate keys", head.replace("PostToolUse", "Stop") + '"session_id": "other"}'),
        ("SessionStart named hostile", json.dumps({**base, "hook_event_name": "SessionStart", "relaybay_session": "<b>x</b>\u202e"})),
        ("SessionStart named NUL", json.dumps({**base, "hook_event_name": "SessionStart", "relaybay_session": "a\x00"})),
    ]
    return cases


def test_the_hostile_hook_corpus_is_never_a_server_error_and_every_page_shows_it_escaped(client, board):
    for label, body in corpus():
        before = all_rows()
        response = client.post("/api/hooks", data=body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        TALLY["corpus_cases"] += 1
        if response.status_code >= 500:
            TALLY["server_errors"] += 1
        assert response.status_code < 500, (label, response.content[:300])
        assert response["Content-Type"].startswith("application/json"), label
        if response.status_code >= 400:
            assert all_rows() == before, label
            assert response.json()["detail"] and response.json()["code"] in set(ErrorCode), label
    assert Event.objects.filter(hook_session=SESSION).count() > 100
    for session in Session.objects.all():
        urls = [f"/sessions/{session.pk}/", f"/sessions/{session.pk}/export.md", f"/messages/?session={session.handle}"]
        for url in urls:
            page = board.get(url)
            assert page.status_code == 200, url
            assert not UNESCAPED.search(page.content.decode("utf-8")), url
    for url in ["/", "/events/", "/map/", "/messages/", "/inbox/", "/tasks/", "/search/?q=alert", "/search/?q=zero"]:
        page = board.get(url)
        assert page.status_code == 200, url
        assert not UNESCAPED.search(page.content.decode("utf-8")), url
    for target in ["events-rows", "sessions-rows"]:
        url = "/events/" if target == "events-rows" else "/"
        assert board.get(url, HTTP_HX_REQUEST="true", HTTP_HX_TARGET=target).status_code == 200

