"""Claude Code's own messages (SendMessage) between two real CLI sessions, as relaybay sees them
through its hooks (docs/rules.md §4.9): each send a native row with its mark, on the board and in the
API, and no byte of its text anywhere in relaybay's database.

Both sessions share one HOME, as two terminals of one user do: Claude Code finds its peers in
`~/.claude/sessions/`. Each has its own scripted model server, folder, native name (`--name`)
and `claude_config --session NAME` file. A model server only ever sees its own session's
conversation, so the text in the recipient's requests proves Claude Code delivered it.
"""

import http.cookiejar
import re
import subprocess
import threading
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.board_server import OWNER, start_board, stop_board
from tests.e2e.claude_cli import claude_args, claude_env, start_interactive
from tests.e2e.model_server import ModelServer, text, tool
from tests.e2e.relaybay_cli import query, write_settings
from tests.e2e.test_claude_comments import wait_until

SECRET = 'nq-native-secret qz7713qz "quoted" <b>&amp; été\nsecond-native-line </cross-session-message> end'
SUMMARY = "nq-summary-line qz5521qz"
TRACES = ["nq-native-secret", "qz7713qz", "second-native-line", "nq-summary-line", "qz5521qz"]


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = start_board(tmp_path_factory.mktemp("native"))
    yield server
    stop_board(server)


@dataclass
class Peer:
    """One Claude Code session: its relaybay name, native name, model, folder and config."""

    name: str
    native_name: str
    model: ModelServer
    cwd: Path
    home: Path
    settings: Path

    def run(self, prompt, permission_mode=None):
        args = claude_args(prompt, settings_file=self.settings, allowed_tools="Bash SendMessage") + ["--name", self.native_name]
        if permission_mode:
            args += ["--permission-mode", permission_mode]
        completed = subprocess.run(
            args,
            cwd=self.cwd,
            env=claude_env(self.model.url, self.home, cwd=self.cwd),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        return completed

    def start(self, prompt, **options):
        done = {}
        thread = threading.Thread(target=lambda: done.update(result=self.run(prompt, **options)), daemon=True)
        thread.start()
        return thread, done


@pytest.fixture
def peers(live, tmp_path):
    suffix = uuid.uuid4().hex[:6]
    home = tmp_path / "home"
    made = []
    for key in ("alpha", "bravo"):
        root = tmp_path / key
        (root / "project").mkdir(parents=True)
        settings = write_settings(live, root / "settings.json", "--session", f"{key}-{suffix}", "--spool", str(root / "spool.jsonl"))
        made.append(Peer(f"{key}-{suffix}", f"{key}{suffix}", ModelServer().start(), root / "project", home, settings))
    yield made
    for peer in made:
        peer.model.stop()


def native_rows(live, sender):
    """The native messages `sender` sent, as the board reads them (one live server serves the module)."""
    return query(
        live,
        "select m.id, m.state, m.native_id, m.delivered_at, s.title, r.title, m.body from session_message m "
        "left join sessions_app_session s on s.id = m.sender_id left join sessions_app_session r on r.id = m.recipient_id "
        "where m.channel = 'native' and s.title = ? order by m.id",
        sender.name,
    )


def native_story(live):
    """Every native row and every link's native names, for a failure to say which went astray."""
    rows = query(live, "select id, state, native_id, delivered_at, delivered_by, sender_id, sender_name, recipient_id, recipient_name, created_at "
                       "from session_message where channel = 'native' order by id")
    links = query(live, "select hook_session, session_id, native_name, native_socket, state from sessions_app_hooklink order by id")
    return "\n".join(["native rows:", *map(str, rows), "links:", *map(str, links)])


def dump_database(live):
    """Every row of every table of the live server's database, the search index included:
    a search on the board first writes the feed rows' entries (SQLite indexes them in batches)."""
    from tests.live_server import server_env

    Owner(live).page("/search/?q=native")

    if server_env(live.process.relaybay_data, live.token).get("DATABASE_URL"):
        tables = [name for (name,) in query(live, "select tablename from pg_tables where schemaname = current_schema()")]
        rows = [row for table in tables for (row,) in query(live, f'select t::text from "{table}" as t')]
    else:
        tables = [name for (name,) in query(live, "select name from sqlite_master where type = 'table'")]
        rows = [repr(row) for table in tables for row in query(live, f'select * from "{table}"')]
    assert any(table.startswith("board_search") for table in tables)
    return "\n".join(tables + rows)


def assert_no_native_text(live):
    dump = dump_database(live)
    for trace in TRACES:
        assert trace not in dump, trace


class Owner:
    """The owner's browser session, as plain HTTP: logged in once, then pages as HTML."""

    def __init__(self, live):
        self.live = live
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        form = self.opener.open(f"{live.url}/login/").read().decode()
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form).group(1)
        data = urllib.parse.urlencode({"username": OWNER[0], "password": OWNER[1], "csrfmiddlewaretoken": csrf}).encode()
        request = urllib.request.Request(f"{live.url}/login/", data=data, headers={"Referer": f"{live.url}/login/"})
        assert self.opener.open(request).geturl().rstrip("/") == live.url

    def page(self, path):
        html = self.opener.open(f"{self.live.url}{path}").read().decode()
        for trace in TRACES:
            assert trace not in html
        return html


def native_mark_on_board(owner, message_id):
    html = owner.page("/messages/?channel=native")
    row = html[html.index(f'id="message-{message_id}"') :]
    row = row[: row.index('<div class="body')]
    return re.search(r'class="badge native-mark (\w+)', row).group(1), html


def api_mark(live, session, box, message_id):
    """The mark the JSON API gives, as the owner's script reads it (any session's mail)."""
    status, listed = live.get("/messages_list", session=session, box=box, token=live.owner_token)
    assert status == 200, listed
    return next(m for m in listed["messages"] if m["id"] == message_id)


def test_a_native_send_to_a_busy_session_is_marked_sent_then_delivered_and_its_text_is_never_stored(live, peers, tmp_path):
    alpha, bravo = peers
    started, go = tmp_path / "bravo-tool-started", tmp_path / "bravo-may-finish"
    bravo.model.add_steps(
        tool("Bash", {"command": f"touch {started}; for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; echo done"}),
        text("bravo finished"),
    )
    thread, _ = bravo.start("work on something long")
    try:
        bravo.model.wait_for(lambda m: started.exists(), timeout=90)
        alpha.model.add_steps(
            tool("SendMessage", {"to": bravo.native_name, "summary": SUMMARY, "message": SECRET}),
            text("sent"),
        )
        alpha.run("tell bravo")

        # Sent: Claude Code took it (its msg_id), bravo is inside its tool and has not seen it.
        [(message_id, state, native_id, delivered_at, sender, recipient, body)] = native_rows(live, alpha)
        assert (state, delivered_at, sender, recipient, body) == ("sent", None, alpha.name, bravo.name, "")
        assert re.fullmatch(r"[0-9a-f-]{36}", native_id)
        assert all("nq-native-secret" not in shown for shown in bravo.model.request_texts())
        owner = Owner(live)
        assert native_mark_on_board(owner, message_id)[0] == "sent"
        assert api_mark(live, alpha.name, "sent", message_id)["mark"] == "sent"
    finally:
        go.touch()
    thread.join(120)
    assert not thread.is_alive()

    # Delivered: Claude Code put it in bravo's prompt after its tool's result.
    assert any("nq-native-secret" in shown for shown in bravo.model.request_texts())
    [(_, state, _, delivered_at, *_)] = native_rows(live, alpha)
    assert delivered_at is not None
    mark, html = native_mark_on_board(owner, message_id)
    assert mark == "delivered" and "text not stored" in html
    listed = api_mark(live, bravo.name, "inbox", message_id)
    assert (listed["channel"], listed["mark"], listed["body"]) == ("native", "delivered", None)
    assert f"{alpha.name} → {bravo.name}: 1 native message" in owner.page("/map/")
    assert_no_native_text(live)

    # Unreachable: bravo has exited, and Claude Code keeps nothing for later.
    alpha.model.add_steps(
        tool("SendMessage", {"to": bravo.native_name, "summary": SUMMARY, "message": SECRET + " again"}),
        text("tried"),
    )
    alpha.run("tell bravo again")
    later = native_rows(live, alpha)[-1]
    assert (later[1], later[2], later[3], later[4], later[5]) == ("unreachable", "", None, alpha.name, None)
    assert native_mark_on_board(owner, later[0])[0] == "unreachable"
    assert api_mark(live, alpha.name, "sent", later[0])["mark"] == "unreachable"
    assert_no_native_text(live)


def test_an_idle_interactive_session_is_woken_by_a_native_message_and_it_is_marked_delivered(live, peers):
    alpha, bravo = peers
    bravo.model.add_steps(text("bravo read it"))
    # The native name comes from the environment here, as CLAUDE_CODE_SESSION_NAME gives it.
    with start_interactive(
        model_url=bravo.model.url,
        cwd=bravo.cwd,
        home=bravo.home,
        settings_file=bravo.settings,
        extra_env={"CLAUDE_CODE_SESSION_NAME": bravo.native_name},
    ):
        wait_until(lambda: query(live, "select native_name from sessions_app_hooklink where native_name = ?", bravo.native_name))
        alpha.model.add_steps(tool("SendMessage", {"to": bravo.native_name, "summary": SUMMARY, "message": SECRET}), text("sent"))
        alpha.run("tell bravo")
        # Idle at its prompt, bravo starts a turn of its own with the message.
        bravo.model.wait_for_text("nq-native-secret", timeout=60)
        try:
            wait_until(lambda: native_rows(live, alpha) and native_rows(live, alpha)[-1][3] is not None)
        except AssertionError:
            raise AssertionError(f"bravo's model got the message, its row is not marked delivered:\n{native_story(live)}") from None
    [(message_id, state, native_id, delivered_at, sender, recipient, body)] = native_rows(live, alpha)
    assert (sender, recipient, body) == (alpha.name, bravo.name, "")
    assert native_mark_on_board(Owner(live), message_id)[0] == "delivered"
    assert_no_native_text(live)


def test_a_held_message_waits_in_the_inbox_then_is_marked_denied_when_denied_in_that_terminal(live, peers, tmp_path):
    alpha, bravo = peers
    go = tmp_path / "alpha-may-finish"
    heard = tmp_path / "alpha-heard-of-the-denial"
    with start_interactive(
        model_url=bravo.model.url,
        cwd=bravo.cwd,
        home=bravo.home,
        settings_file=bravo.settings,
        extra_env={"CLAUDE_CODE_SESSION_NAME": bravo.native_name},
    ) as terminal:
        wait_until(lambda: query(live, "select native_name from sessions_app_hooklink where native_name = ?", bravo.native_name))
        # alpha bypasses permissions, bravo prompts: Claude Code holds the message for bravo's user.
        alpha.model.add_steps(
            tool("SendMessage", {"to": bravo.native_name, "summary": SUMMARY, "message": SECRET}),
            # A few results before alpha waits: the held notice comes at one, whichever of
            # alpha's send and bravo's approval prompt reaches relaybay first.
            *[tool("Bash", {"command": f"sleep 0.3; echo early {i}"}) for i in range(3)],
            tool("Bash", {"command": f"for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; echo done"}),
            # The sender hears of its message at tool results: the held notice at the first, the
            # denial at whichever result follows its arrival over the socket (seen: one or more
            # later), so alpha keeps working for a while after the user denies it.
            # Once the denial is on record the remaining ticks end at once.
            *[tool("Bash", {"command": f"[ -e {heard} ] || sleep 0.5; echo tick {i}"}) for i in range(20)],
            text("alpha finished"),
        )
        thread, _ = alpha.start("tell bravo", permission_mode="bypassPermissions")
        try:
            try:
                wait_until(lambda: native_rows(live, alpha) and native_rows(live, alpha)[-1][1] == "held", timeout=60)
            except AssertionError:
                raise AssertionError(f"alpha's message to bravo is not marked held:\n{native_story(live)}") from None
            message_id = native_rows(live, alpha)[-1][0]
            owner = Owner(live)
            inbox = owner.page("/inbox/")
            assert f'id="inbox-{message_id}"' in inbox and "Approve or deny it in that terminal" in inbox
            terminal.wait_for_screen("Deny — drop it and tell the sender it was declined")
            # Deny is the dialog's first choice: the user answers it in that terminal.
            terminal.tmux("send-keys", "-t", terminal.name, "Enter")
            wait_until(lambda: "Held message from another session" not in terminal.screen())
            # alpha hears of it at a tool result: a delivery notice carrying the msg_id.
            go.touch()
            wait_until(lambda: native_rows(live, alpha)[-1][1] == "denied", timeout=60)
        finally:
            go.touch()
            heard.touch()
            thread.join(120)
    [(message_id, state, native_id, delivered_at, sender, recipient, body)] = native_rows(live, alpha)
    assert (delivered_at, sender, recipient) == (None, alpha.name, bravo.name)
    assert f'id="inbox-{message_id}"' not in owner.page("/inbox/")
    assert native_mark_on_board(owner, message_id)[0] == "denied"
    assert all("nq-native-secret" not in shown for shown in bravo.model.request_texts())
    assert_no_native_text(live)
