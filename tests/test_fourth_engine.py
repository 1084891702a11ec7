"""A fourth CLI is one module (docs/rules.md §1.6): tests/fake_cli.py declares "Pilot", with its
own event names and answer shapes, and nothing else of relaybay changes. Registered, its
session is on the board, an owner's comment reaches it in its answer shape and its Stop goes on
in its own, and its edit of a file another session holds is denied its way."""

import json

import pytest

import engines
from sessions_app.actions import do_write_comment
from sessions_app.models import Event, HookLink
from tests import fake_cli
from tests.board_fixtures import board, owner  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def pilot():
    engines.register(fake_cli.ENGINE)
    yield fake_cli.ENGINE
    engines.unregister(fake_cli.ENGINE)


def said(hook, event, session_id, **fields):
    # Pilot's hooks run the hook client with `--engine pilot`, which names it in the payload.
    return hook(event, session_id, relaybay_engine="pilot", **fields)


def row_of(hook_session):
    return HookLink.objects.select_related("session").get(hook_session=hook_session).session


def test_a_pilot_session_is_on_the_board_and_hears_a_comment_in_pilot_s_shape(pilot, hook, board):  # noqa: F811
    start = said(hook, "Begin", "pl-1", cwd="/work/garden")
    assert start["pilot"]["on"] == "Begin" and "this Pilot session is tracked as" in start["pilot"]["say"]
    assert "Pilot wakes for nobody" in start["pilot"]["say"]
    row = row_of("pl-1")
    assert (row.title, row.engine) == ("garden", "pilot")
    assert Event.objects.filter(name="hook.SessionStart", hook_session="pl-1").exists()
    page = board.get("/").content.decode()
    assert f'id="session-{row.pk}"' in page and "garden" in page

    do_write_comment(session=row, body="pilot, water the tomatoes")
    answer = said(hook, "Ask", "pl-1", prompt="what next?")
    assert answer["pilot"]["on"] == "Ask" and "pilot, water the tomatoes" in answer["pilot"]["say"]
    assert "hookSpecificOutput" not in answer
    # Handled as relaybay's UserPromptSubmit: a turn began.
    assert HookLink.objects.get(hook_session="pl-1").turn == 1


def test_a_pilot_stop_goes_on_in_its_own_shape_and_its_model_s_words_are_not_stored(pilot, hook):
    said(hook, "Begin", "pl-2", cwd="/work/garden")
    said(hook, "Ask", "pl-2", prompt="start")
    do_write_comment(session=row_of("pl-2"), body="one more thing: the roses")
    answer = said(hook, "Settle", "pl-2", final_words="pilot-final-words-71")
    assert "one more thing: the roses" in answer["pilot"]["keep_going"]
    assert "pilot-final-words-71" not in json.dumps([e.data for e in Event.objects.all()])


def test_a_pilot_edit_of_a_file_another_session_holds_is_denied_its_way(pilot, hook, api, tmp_path):
    (tmp_path / ".git").mkdir()
    hook("SessionStart", "cc-holder", cwd=str(tmp_path), source="startup")
    reserved = api.post("/files_reserve", {"paths": ["beds/*.txt"], "hook_session": "cc-holder", "reason": "replanting"})
    assert reserved.status_code == 200, reserved.content
    said(hook, "Begin", "pl-3", cwd=str(tmp_path))
    target = str(tmp_path / "beds" / "north.txt")
    answer = said(hook, "ToolAhead", "pl-3", cwd=str(tmp_path), tool_name="save_file", tool_input={"target": target, "text": "pilot-file-text-72"})
    assert answer["pilot"]["refuse"] is True and "reserved exclusively by another live session" in answer["pilot"]["because"]
    assert Event.objects.filter(name="file.denied", hook_session="pl-3").exists()
    # Its edit tool's content is stored no more than another CLI's.
    assert "pilot-file-text-72" not in json.dumps([e.data for e in Event.objects.all()])


def test_without_its_module_registered_relaybay_refuses_a_pilot_hook(hook):
    response = hook.raw(json.dumps({"hook_event_name": "Begin", "session_id": "pl-4", "cwd": "/w", "relaybay_engine": "pilot"}))
    assert response.status_code == 400 and "relaybay_engine must be one of" in response.json()["detail"]
