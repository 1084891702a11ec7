"""Every write is a do_* (docs/rules.md §0): what only reads — the JSON API's GET routes, the
board's pages, the MCP tools that read, the read functions the hooks and tools call and every
access_* (which decides who is calling and whether it may have a row) — issues no INSERT,
UPDATE or DELETE. Each is run under a database wrapper that fails on one.
Runs on both databases."""

import re
from contextlib import contextmanager

import pytest
from django.db import connection
from django.utils import timezone

from approvals import lib as approvals
from approvals.models import Request
from collisions import files, paths
from core.api import api as ninja_api
from core.errors import ErrorCode, Refused
from messaging import actions, formatting, reads
from messaging.models import SessionMessage
from sessions_app import directory, identity
from sessions_app.hooks import delivery
from sessions_app.models import HookLink, Session
from tests.board_fixtures import board, owner  # noqa: F401
from tests.conftest import OWNER_TOKEN
from tests.message_personas import rb, row  # noqa: F401

pytestmark = pytest.mark.django_db

WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE)\b", re.I)
# The board search's index on SQLite is written in batches by the search itself, before it
# matches (sessions_app/search_index.py): a derived index, not a record of anything.
DERIVED = re.compile(r"^\s*INSERT INTO board_search\b", re.I)
# The long polls are GETs that write: the wake-up waiter registers itself (do_register_waiter),
# the permission request's hook takes its answer (approvals' do_take_answer).
GET_WRITES = {"/api/hooks/wait", "/api/approvals/{pk}/wait"}


@contextmanager
def writes_refused():
    written = []

    def refuse(execute, sql, params, many, context):
        if WRITE.match(sql) and not DERIVED.match(sql):
            written.append(sql)
            raise AssertionError(f"a read wrote: {sql}")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse):
        yield written
    assert written == []


@pytest.fixture
def fleet(rb):
    """Two live sessions with mail both ways, one unread, and a reservation."""
    alpha = rb.live("alpha", "hook-alpha")
    bravo = rb.live("bravo", "hook-bravo", busy=True)
    rb.send(body="first", to="bravo", session="alpha", hook_session="hook-alpha")
    rb.send(body="reply", to="alpha", session="bravo", hook_session="hook-bravo")
    rb.tool("hook-bravo")  # bravo takes its message in
    rb.comment(alpha, "a comment from the owner")
    return alpha, bravo


def test_every_get_route_of_the_json_api_writes_nothing(fleet, api):
    alpha, _ = fleet
    agent_or_owner = (None, OWNER_TOKEN)
    asked = {
        "/api/messages_list": ({"session": "alpha", "hook_session": "hook-alpha", "box": "all"}, agent_or_owner),
        "/api/sessions_list": ({}, agent_or_owner),
        "/api/message_limits": ({}, agent_or_owner),
        "/api/files_list": ({"session": "alpha", "hook_session": "hook-alpha"}, agent_or_owner),
        "/api/approvals": ({}, (OWNER_TOKEN,)),
    }
    routes = {path for path, ops in ninja_api.get_openapi_schema()["paths"].items() if "get" in ops}
    assert routes - GET_WRITES == set(asked), "a GET route is missing here"
    for path, (params, tokens) in asked.items():
        with writes_refused():
            for token in tokens:
                answer = api.get(path.removeprefix("/api"), **({"token": token} if token else {}), **params)
                assert answer.status_code == 200, (path, answer.content)


def test_the_boards_pages_write_nothing(fleet, board):  # noqa: F811
    alpha, _ = fleet
    message = SessionMessage.objects.order_by("id").first()
    pages = ["/", f"/sessions/{alpha.pk}/", f"/sessions/{alpha.pk}/export.md", "/tasks/", "/events/", "/map/", "/search/?q=alpha",
             "/messages/", f"/messages/{message.pk}/", "/inbox/", "/inbox/count/", "/files/", "/needs-you/", "/needs-you/state.json"]
    for page in pages:
        with writes_refused():
            assert board.get(page).status_code == 200, page


def test_the_reads_the_hooks_and_tools_call_write_nothing(fleet):
    alpha, bravo = fleet
    now = timezone.now()
    place = paths.place_of("/work/proj/app.py", "/work/proj", None)
    with writes_refused():
        assert [kind.name for kind in delivery.pending(alpha.pk)] == ["comment", "message"]
        assert directory.resolve_one("alpha") == alpha
        assert directory.link_of("hook-alpha").session_id == alpha.pk
        assert directory.live_exact_link(bravo).hook_session == "hook-bravo"
        assert {r.pk for r in directory.listed_sessions(shown_only=True)} >= {alpha.pk, bravo.pk}
        assert directory.arrival(bravo) == directory.Arrival.BUSY
        assert [m.body for m in formatting.list_messages(bravo, box="all")] == ["reply", "first"]
        assert reads.inbox_count() >= 0
        assert files.others_there(place, alpha.pk, now) == (False, False)
        assert files.collisions(place, alpha.pk, now).same_file == []
        assert files.holding(place, alpha.pk, now) == []
        assert files.recent_edits(now) == []


def test_a_write_under_the_check_fails_it(fleet):
    alpha, _ = fleet
    link = directory.link_of("hook-alpha")
    with pytest.raises(AssertionError, match="a read wrote: UPDATE"):
        with writes_refused():
            delivery.do_claim_pending(link, "PreToolUse")


def test_every_access_function_writes_nothing_whatever_it_decides(fleet, rb):
    alpha, bravo = fleet
    asked = rb.hook("PermissionRequest", "hook-alpha", permission_mode="default", relaybay_waits=True, tool_name="Bash", tool_input={"command": "ls"})
    request = Request.objects.get(pk=asked["relaybay_request"])
    # alpha runs, proven by its process; bravo's hooks carry no proof.
    proof = "a" * 64
    HookLink.objects.filter(hook_session="hook-alpha").update(process_proof=proof)
    link = directory.link_of("hook-alpha")
    rows = Session.objects.count()
    with writes_refused():
        assert identity.access_link(link, proof) == link
        with pytest.raises(identity.AnotherProcess):
            identity.access_link(link, "b" * 64)
        with pytest.raises(Refused) as refused:
            identity.access_link(link, "")
        assert refused.value.code == ErrorCode.PROCESS_NOT_PROVEN
        # The send rule judges each kind of claim without writing what it decides.
        own = actions.access_sender(actions.claim_of(hook_session="hook-alpha"), proof)
        assert (own.row, own.verified, own.settled) == (alpha, True, True)
        new_name = actions.access_sender(actions.claim_of(session="charlie"), "")
        assert (new_name.row, new_name.name, new_name.verified) == (None, "charlie", False)
        renamed = actions.access_sender(actions.claim_of(session="bravo-renamed", hook_session="hook-bravo"), "")
        assert (renamed.row, renamed.relinks) == (None, True)
        with pytest.raises(Refused) as refused:
            actions.access_sender(actions.claim_of(session="alpha", hook_session="hook-alpha"), "")
        assert refused.value.code == ErrorCode.PROCESS_NOT_PROVEN
        reader = actions.access_reader(actions.claim_of(session="alpha", hook_session="hook-alpha"), proof)
        assert (reader.row, reader.verified) == (alpha, True)
        actions.check_mail_reader(bravo, "hook-bravo", "")
        assert files.access_caller_link(hook_session="hook-alpha", process=proof) == link
        assert approvals.access_request(pk=request.pk, process=proof) == request
        with pytest.raises(Refused):
            approvals.access_request(pk=request.pk, process="")
    assert Session.objects.count() == rows and not Session.objects.filter(title__in=["charlie", "bravo-renamed"]).exists()
