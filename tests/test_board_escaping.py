"""Agent-supplied names and bodies reach the board as plain text: escaped, never Markdown or
HTML, with invisible and direction-changing characters shown (docs/rules.md §5.1)."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from messaging.actions import do_send_message
from messaging.models import SessionMessage
from collisions import files
from sessions_app import actions
from sessions_app.hooks.ingest import ingest_hook
from sessions_app.models import Session
from tests.board_fixtures import board, named_session, owner  # noqa: F401

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert('x')</script>"
ATTRIBUTE = '" onmouseover="alert(1)" x="'
SINGLE = "' onfocus='alert(2)' autofocus='"
MARKDOWN = "**bold** _em_ [link](javascript:alert(3)) ![img](http://x/y.png) `code`"
IMAGE = "<img src=x onerror=alert(4)>"
RTL = "abc\u202edcba"
ZERO_WIDTH = "zero\u200bwidth\u2060joined\ufeff"
TEMPLATE = "{{ 7|add:7 }} {% now 'Y' %}"
LONG_WORD = "W" * 3000
CORPUS = [SCRIPT, ATTRIBUTE, SINGLE, MARKDOWN, IMAGE, RTL, ZERO_WIDTH, TEMPLATE]


@pytest.fixture
def hostile(db):
    """Every place an agent writes text, filled with the corpus."""
    peer = named_session("peer", folder="/work/peer")
    rows = []
    for i, text in enumerate(CORPUS):
        name = f"{text} {i}"
        hook = f"{text[:60]}-hook-{i}"
        ingest_hook({"hook_event_name": "SessionStart", "session_id": hook, "cwd": f"/work/{text}", "relaybay_session": name})
        ingest_hook({"hook_event_name": "UserPromptSubmit", "session_id": hook, "cwd": f"/work/{text}", "prompt": text})
        row = Session.objects.get(links__hook_session=hook)
        actions.do_update_session(session=row, aliases=[f"alias {text}"])
        actions.do_register_desktop(desktop_id=f"desk {text}", title=f"desk title {text}", folder=f"/d/{text}", status=text[:50])
        task = actions.do_save_task(title=f"task {text}")
        actions.do_update_session(session=row, task=task)
        do_send_message(body=f"{text}\n{LONG_WORD}", to="peer", session=name, hook_session=hook)
        do_send_message(body=f"back {text}", to=row.handle, session="peer", hook_session=peer.hook_session)
        # A sender no hook link proves: stored as "name not verified", with a row of kind mcp.
        do_send_message(body=f"unverified {text}", to="peer", session=f"mcp {text}")
        actions.do_write_comment(session=row, body=f"{text}\n{LONG_WORD}")
        actions.do_record_desktop_edge(sender=row, recipient=peer)
        # Paths are agents' text too: an edit, the same file edited by another session (the
        # Files page, the session page, the Map's shared files) and a reservation with a reason.
        edit = {"hook_event_name": "PreToolUse", "session_id": hook, "cwd": f"/work/{text}", "tool_name": "Edit", "tool_input": {"file_path": f"src/{text} {i}.py"}}
        ingest_hook(edit)
        ingest_hook({**edit, "session_id": peer.hook_session})
        link = files.access_caller_link(hook_session=hook)
        files.do_reserve_files(link=link, paths_given=[f"lib/{text} {i}.py"], reason=text)
        rows.append((row, task))
    actions.do_update_session(session=peer, title="W" * 200)
    return rows


def pages(rows):
    urls = ["/", "/tasks/", "/messages/", "/inbox/", "/map/", "/map/?files=1", "/files/", "/events/", "/search/?q=alert", "/search/?q=zero"]
    for row, task in rows:
        urls += [f"/sessions/{row.pk}/", f"/tasks/{task.pk}/", f"/messages/?session={row.handle}", f"/map/?task={task.pk}"]
    urls += [f"/messages/{m.pk}/" for m in SessionMessage.objects.all()[:5]]
    return urls


def outside_form_values(html):
    """The page without what the owner edits (input values, options) and the window title,
    the places where the raw text is the right thing to have."""
    html = re.sub(r'value="[^"]*"', "", html)
    html = re.sub(r"<option[^>]*>[^<]*</option>", "", html)
    return re.sub(r"<title>.*?</title>", "", html, flags=re.S)


def test_no_page_lets_agent_text_become_markup(board, hostile):
    for url in pages(hostile):
        response = board.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "<script>alert" not in html, url
        assert "<img src=x" not in html, url
        assert 'onmouseover="alert' not in html and "onfocus='alert" not in html, url
        assert "<strong>" not in html and "<em>" not in html and 'href="javascript' not in html, url


def test_hostile_text_is_shown_escaped_not_dropped(board, hostile):
    html = board.get("/messages/").content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "&quot; onmouseover=&quot;alert(1)&quot; x=&quot;" in html
    assert "**bold** _em_ [link](javascript:alert(3))" in html
    assert "{{ 7|add:7 }} {% now &#x27;Y&#x27; %}" in html


def test_direction_and_invisible_characters_are_shown_not_obeyed(board, hostile):
    for url in pages(hostile):
        html = board.get(url).content.decode()
        rest = outside_form_values(html)
        for ch in "\u202e\u200b\u2060\ufeff":
            assert ch not in rest, (url, hex(ord(ch)))
    html = board.get("/").content.decode()
    assert 'title="invisible character U+202E">U+202E</span>' in html
    assert "U+200B" in html and "U+2060" in html and "U+FEFF" in html


def test_agent_names_are_isolated_so_they_cannot_reorder_the_page(board, hostile):
    html = board.get("/messages/").content.decode()
    assert re.search(r"<bdi>abc<span class=\"ctl\"[^>]*>U\+202E</span>dcba 5</bdi>", html)


def test_very_long_words_are_kept_whole_and_wrap(board, hostile):
    html = board.get("/messages/").content.decode()
    assert LONG_WORD in html
    css = (Path(settings.BASE_DIR) / "static/board/board.css").read_text()
    assert re.search(r"\.body \{[^}]*overflow-wrap: anywhere", css)
    assert re.search(r"th, td \{[^}]*overflow-wrap: anywhere", css)


def test_the_map_labels_show_invisible_characters_as_text(board, hostile):
    html = board.get("/map/").content.decode()
    svg = re.search(r"<svg.*</svg>", html, re.S).group(0)
    assert "\u202e" not in svg and "⟨U+202E⟩" in svg
    assert "<script" not in svg.replace("&lt;script", "")


def test_the_markdown_export_escapes_names_and_never_renders_them(board, hostile):
    row, task = hostile[0]
    for url in (f"/sessions/{row.pk}/export.md", f"/tasks/{task.pk}/export.md"):
        text = board.get(url).content.decode()
        outside_code = "".join(text.split("```")[::2])
        assert "<script>" not in outside_code and r"\<script\>alert" in outside_code
    row, task = hostile[3]
    text = board.get(f"/tasks/{task.pk}/export.md").content.decode()
    assert "**bold**" not in text.split("```")[0] and r"\*\*bold\*\* \_em\_ \[link\]" in text
    row, task = hostile[5]
    text = board.get(f"/sessions/{row.pk}/export.md").content.decode()
    assert "abc⟨U+202E⟩dcba" in text
