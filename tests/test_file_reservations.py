"""Reservations of files through the JSON API (docs/rules.md §7.3): an exclusive one of another live
session denies an edit before it happens, naming the holder, its reason and its expiry; a shared
one warns; they end when released, when their session ends, when they expire, or when the owner
breaks one; bad input is a clear 4xx that stores nothing."""

import json
from datetime import timedelta

import pytest

from core.errors import HTTP_STATUS, ErrorCode
from relaybay_hook.proof import PROCESS_HEADER, process_proof
from collisions import paths
from collisions.files import do_break_reservation
from sessions_app.models import Event, FileEdit, FileReservation, HookLink

from .file_personas import denial_of, file_counts, fs, trees, warning_of  # noqa: F401
from .message_personas import clock, context_of, rb  # noqa: F401

pytestmark = pytest.mark.django_db


def code_of(response, code, phrase):
    body = response.json()
    assert (response.status_code, body["code"]) == (HTTP_STATUS[code], code), body
    assert phrase in body["detail"], body["detail"]


@pytest.fixture
def two(fs, trees):
    """alpha and bravo, live in one working tree."""
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.repo)
    return fs


def test_an_exclusive_reservation_denies_another_sessions_write_naming_the_holder_and_reason(two, trees):
    reserved = two.reserved("hook-a", ["src/*.py"], reason="moving the app to a package", ttl_seconds=1800)
    [reservation] = reserved["reservations"]
    assert (reservation["path"], reservation["root"], reservation["exclusive"], reservation["mine"]) == ("src/*.py", str(trees.repo), True, True)
    denied = denial_of(two.edit("hook-b", trees.repo, trees.repo / "src" / "app.py", tool="Write", content="x"))
    alpha = HookLink.objects.get(hook_session="hook-a").session
    assert f'reserved exclusively by another live session, "alpha" ({alpha.handle}), as src/*.py until ' in denied
    assert '(in 30 minutes), reason: "moving the app to a package"' in denied
    assert "The file is untouched" in denied and 'message_send(to="alpha")' in denied
    # Denied before it happened: no edit of bravo's is noted, and the owner sees the denial.
    assert not FileEdit.objects.filter(hook_session="hook-b").exists()
    event = Event.objects.get(name="file.denied")
    assert (event.data["path"], event.data["holder"], event.data["reservation"]) == ("src/app.py", alpha.handle, "src/*.py")


def test_the_holder_itself_edits_freely(two, trees):
    two.reserved("hook-a", ["src/app.py"])
    assert two.edit("hook-a", trees.repo, trees.repo / "src" / "app.py") == {}


def ended_by_release(fs, clock):
    fs.release("hook-a", ["src/*.py"])


def ended_by_releasing_all(fs, clock):
    assert fs.release("hook-a")["released"] == [{"path": "src/*.py", "root": str(fs.root)}]


def ended_with_its_session(fs, clock):
    fs.rb.end("hook-a")


def ended_by_its_ttl(fs, clock):
    clock.at(61)


def broken_by_the_owner(fs, clock):
    assert do_break_reservation(reservation=FileReservation.objects.get())


@pytest.mark.parametrize("end", [ended_by_release, ended_by_releasing_all, ended_with_its_session, ended_by_its_ttl, broken_by_the_owner])
def test_once_the_reservation_ends_the_edit_is_allowed_again(two, trees, clock, end):
    two.root = trees.repo
    two.reserved("hook-a", ["src/*.py"], ttl_seconds=60)
    assert denial_of(two.edit("hook-b", trees.repo, trees.repo / "src" / "app.py"))
    end(two, clock)
    assert denial_of(two.edit("hook-b", trees.repo, trees.repo / "src" / "app.py")) is None
    assert FileEdit.objects.filter(hook_session="hook-b").exists()


def test_a_reservation_outlives_clear_in_the_same_process(two, trees, rb):
    proof = {PROCESS_HEADER: process_proof("alpha-process")}
    two.hook.raw(json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "hook-a", "cwd": str(trees.repo), "prompt": "go"}), **proof)
    two.reserved("hook-a", ["src/app.py"], proof=proof[PROCESS_HEADER])
    two.hook.raw(json.dumps({"hook_event_name": "SessionEnd", "session_id": "hook-a", "cwd": str(trees.repo), "reason": "clear"}), **proof)
    two.hook.raw(json.dumps({"hook_event_name": "SessionStart", "session_id": "hook-a2", "cwd": str(trees.repo), "source": "clear"}), **proof)
    assert HookLink.objects.get(hook_session="hook-a2").session.title == "alpha"
    assert denial_of(two.edit("hook-b", trees.repo, trees.repo / "src" / "app.py"))


def test_the_owner_breaking_a_reservation_tells_its_holder_at_its_next_hook(two, trees, rb):
    two.reserved("hook-a", ["src/**"])
    do_break_reservation(reservation=FileReservation.objects.get())
    heard = context_of(rb.prompt("hook-a"))
    assert "the owner broke your reservation of src/** (working tree" in heard
    assert FileReservation.objects.get().ended == FileReservation.Ended.BROKEN


def test_a_shared_reservation_warns_and_lets_the_edit_happen(two, trees):
    two.reserved("hook-a", ["src/app.py"], exclusive=False, reason="reading it closely")
    answer = two.edit("hook-b", trees.repo, trees.repo / "src" / "app.py")
    assert denial_of(answer) is None
    warning = warning_of(answer)
    assert 'holds it reserved (shared) as src/app.py until' in warning and 'reason: "reading it closely"' in warning
    assert FileEdit.objects.filter(hook_session="hook-b").exists()


def test_a_reservation_holds_only_in_its_own_working_tree(fs, trees):
    fs.start("alpha", "hook-a", trees.repo)
    fs.start("bravo", "hook-b", trees.worktree)
    fs.reserved("hook-a", ["src/app.py"])
    assert fs.edit("hook-b", trees.worktree, trees.worktree / "src" / "app.py") == {}


def test_a_reservation_another_session_holds_is_refused_naming_it_and_nothing_is_stored(two, trees):
    two.reserved("hook-a", ["src/*.py"], reason="refactor")
    before = file_counts()
    for paths_asked, exclusive in ((["docs/x.md", "src/app.py"], True), (["src/app.py"], False), (["src/**"], True)):
        refused = two.reserve("hook-b", paths_asked, exclusive=exclusive)
        code_of(refused, ErrorCode.RESERVATION_HELD, 'overlaps src/*.py, which another live session, "alpha"')
        assert 'reason: "refactor"' in refused.json()["detail"] and "Nothing was reserved" in refused.json()["detail"]
    assert file_counts() == before
    # Files the holder's glob cannot match are free to reserve, and shared beside shared is fine.
    assert two.reserved("hook-b", ["src/app.js", "src/lib/util.py"])["reservations"]


def test_two_shared_reservations_of_one_file_stand_side_by_side(two, trees):
    two.reserved("hook-a", ["src/app.py"], exclusive=False)
    assert two.reserved("hook-b", ["src/*.py"], exclusive=False)["reservations"]


def test_reserving_again_renews_and_the_answer_names_recent_edits_of_others(two, trees, clock):
    two.edit("hook-b", trees.repo, trees.repo / "src" / "app.py")
    first = two.reserved("hook-a", ["src/app.py"], exclusive=False, ttl_seconds=60)
    assert first["edited_by_others"][0]["path"] == "src/app.py" and first["edited_by_others"][0]["session"] == "bravo"
    assert "edited some of these files lately" in first["note"]
    clock.at(30)
    again = two.reserved("hook-a", ["./src/../src/app.py"], ttl_seconds=600)
    assert FileReservation.objects.count() == 1
    assert again["reservations"][0]["id"] == first["reservations"][0]["id"] and again["reservations"][0]["exclusive"] is True


def test_files_list_shows_the_reservations_in_force_and_other_sessions_recent_edits(two, trees, fs):
    fs.start("charlie", "hook-c", trees.worktree)
    two.reserved("hook-a", ["src/*.py"], reason="why not")
    two.edit("hook-b", trees.repo, trees.repo / "lib" / "other.py")
    fs.edit("hook-c", trees.worktree, trees.worktree / "src" / "app.py")
    listed = two.api.get("/files_list", hook_session="hook-b").json()
    assert listed["root"] == str(trees.repo)
    assert [(r["path"], r["holder"], r["mine"], r["reason"]) for r in listed["reservations"]] == [("src/*.py", "alpha", False, "why not")]
    assert listed["recent_edits"] == []  # bravo's own edit, and charlie's is in another tree
    everywhere = two.api.get("/files_list", hook_session="hook-a", all_trees="true").json()
    assert {(e["session"], e["path"]) for e in everywhere["recent_edits"]} == {("bravo", "lib/other.py"), ("charlie", "src/app.py")}


def test_the_caller_is_proven_as_for_message_send(two, trees, rb, client):
    code_of(two.api.post("/files_reserve", {"paths": ["src/app.py"]}), ErrorCode.INVALID_INPUT, "pass hook_session")
    code_of(two.reserve("hook-nobody", ["src/app.py"]), ErrorCode.CALLER_NOT_PROVEN, "no live Claude Code session of yours")
    code_of(two.reserve("hook-a", ["src/app.py"], session="bravo"), ErrorCode.CALLER_NOT_PROVEN, 'goes by "alpha", not by "bravo"')
    rb.end("hook-b")
    code_of(two.reserve("hook-b", ["src/app.py"]), ErrorCode.CALLER_NOT_PROVEN, "no live Claude Code session of yours")
    # The process proof names the caller's hook session, as the MCP servers send it.
    proof = process_proof("alpha-token")
    two.hook.raw(json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "hook-a", "cwd": str(trees.repo), "prompt": "go"}), **{PROCESS_HEADER: proof})
    proven = client.post(
        "/api/files_reserve", json.dumps({"paths": ["src/app.py"]}), content_type="application/json", HTTP_AUTHORIZATION="Bearer test-token", HTTP_X_RELAYBAY_PROCESS=proof
    )
    assert proven.status_code == 200 and proven.json()["session"] == HookLink.objects.get(hook_session="hook-a").session.handle


# --- Bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, code, phrase",
    [
        ({"paths": ["/"]}, ErrorCode.INVALID_PATH, "names your whole working tree"),
        ({"paths": ["."]}, ErrorCode.INVALID_PATH, "names your whole working tree"),
        ({"paths": ["**"]}, ErrorCode.INVALID_PATH, "matches every file of your working tree"),
        ({"paths": ["**/*"]}, ErrorCode.INVALID_PATH, "matches every file of your working tree"),
        ({"paths": ["src/app.py", "../elsewhere/app.py"]}, ErrorCode.INVALID_PATH, "is outside your working tree"),
        ({"paths": ["/etc/passwd"]}, ErrorCode.INVALID_PATH, "is outside your working tree"),
        ({"paths": [f"src/{i}.py" for i in range(5000)]}, ErrorCode.INVALID_INPUT, "5000 paths in one call; at most 100"),
        ({"paths": ["src/a\x00pp.py"]}, ErrorCode.INVALID_IDENTIFIER, "holds a NUL character or a lone surrogate"),
        ({"paths": ["src/\ud800.py"]}, ErrorCode.INVALID_IDENTIFIER, "holds a NUL character or a lone surrogate"),
        ({"paths": ["src/a.py\nsrc/b.py"]}, ErrorCode.INVALID_PATH, "is not one line"),
        ({"paths": ["x" * 501]}, ErrorCode.INVALID_IDENTIFIER, "longer than 500 characters"),
        ({"paths": []}, ErrorCode.INVALID_INPUT, "paths is empty"),
        ({"paths": ["src/app.py"], "ttl_seconds": 0}, ErrorCode.INVALID_INPUT, "ttl_seconds must be a whole number of seconds from 60 to 86400"),
        ({"paths": ["src/app.py"], "ttl_seconds": 10 * 365 * 86400}, ErrorCode.INVALID_INPUT, "ttl_seconds must be a whole number of seconds from 60 to 86400"),
        ({"paths": ["src/app.py"], "ttl_seconds": -5}, ErrorCode.INVALID_INPUT, "ttl_seconds must be"),
        ({"paths": ["src/app.py"], "reason": "r" * 501}, ErrorCode.INVALID_INPUT, "The reason is longer than 500 characters"),
    ],
)
def test_bad_input_is_a_clear_4xx_and_nothing_is_stored(two, fields, code, phrase):
    before = file_counts()
    events = Event.objects.filter(name__startswith="file.").count()
    code_of(two.api.post("/files_reserve", {"hook_session": "hook-a", **fields}), code, phrase)
    assert file_counts() == before
    assert Event.objects.filter(name__startswith="file.").count() == events


@pytest.mark.parametrize("body", ['{"paths": "src/app.py", "hook_session": "hook-a"}', '{"paths": [1], "hook_session": "hook-a"}', '{"hook_session": "hook-a", "paths": ["a"], "ttl_seconds": 1.5}'])
def test_a_body_that_fails_the_schema_is_a_422_and_nothing_is_stored(two, client, body):
    before = file_counts()
    refused = client.post("/api/files_reserve", body, content_type="application/json", HTTP_AUTHORIZATION="Bearer test-token")
    assert (refused.status_code, refused.json()["code"]) == (422, "invalid_request")
    assert file_counts() == before


def test_a_session_holds_at_most_its_share_of_reservations(two, settings, monkeypatch):
    monkeypatch.setattr("collisions.files.HELD_MAX", 3)
    two.reserved("hook-a", ["a/1", "a/2"])
    code_of(two.reserve("hook-a", ["a/3", "a/4"]), ErrorCode.RESERVATIONS_FULL, "more than 3")
    assert FileReservation.objects.count() == 2


# --- The globs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, path, matched",
    [
        ("src/*.py", "src/app.py", True),
        ("src/*.py", "src/lib/app.py", False),
        ("src/**", "src/lib/deep/app.py", True),
        ("src/**", "srcx/app.py", False),
        ("**/*.py", "app.py", True),
        ("**/*.py", "a/b/app.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/a?.py", "src/ab.py", True),
        ("src/a?.py", "src/a/.py", False),
        ("src/[ab].py", "src/[ab].py", True),
        ("src/[ab].py", "src/a.py", False),
    ],
)
def test_a_glob_matches_within_a_folder_and_across_folders_with_a_double_star(pattern, path, matched):
    assert paths.matches(pattern, path) is matched
    # Two patterns overlap exactly when some path matches both: a literal path, here.
    assert paths.overlap(pattern, path) is matched


@pytest.mark.parametrize(
    "first, second, overlapping",
    [
        ("src/*.py", "src/*.js", False),
        ("src/*.py", "src/app.*", True),
        ("src/**", "**/test_*.py", True),
        ("src/*/x.py", "src/a/*.py", True),
        ("src/*/x.py", "src/*.py", False),
        ("docs/**", "src/**", False),
        ("a?c", "*b*", True),
        ("a?c", "a/c", False),
    ],
)
def test_two_globs_overlap_when_one_path_could_match_both(first, second, overlapping):
    assert paths.overlap(first, second) is overlapping
    assert paths.overlap(second, first) is overlapping
