"""Every page of the owner's board, its filters, its pages and its live fragments (docs/rules.md §5)."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from messaging.actions import do_mark_inbox_seen
from messaging.models import SessionMessage
from sessions_app import actions
from board import map as session_map
from sessions_app.hooks.ingest import ingest_hook
from sessions_app.models import Event, HookLink, Session, Task
from tests.board_fixtures import board, htmx_get, named_session, owner, send  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    """Two named sessions in a task talking, a desktop row a terminal's link is only guessed to
    (it started in that row's folder), a desktop row without a link."""
    alpha = named_session("alpha", folder="/work/alpha")
    beta = named_session("beta", folder="/work/beta")
    gamma = actions.do_register_desktop(desktop_id="desk-gamma", title="gamma", folder="/work/gamma").session
    ingest_hook({"hook_event_name": "SessionStart", "session_id": "hook-gamma", "cwd": "/work/gamma"})
    assert Session.objects.get(links__hook_session="hook-gamma", links__exact=False) == gamma
    desk = actions.do_register_desktop(desktop_id="desk-1", title="desktop one", folder="/work/desk").session
    task = actions.do_save_task(title="Ship the board")
    actions.do_update_session(session=alpha, task=task)
    actions.do_update_session(session=beta, task=task)
    question = send(alpha, beta, "question one")
    answer = send(beta, alpha, "answer one", in_reply_to=question.pk)
    loose = send(alpha, gamma, "to gamma")
    return {"alpha": alpha, "beta": beta, "gamma": gamma, "desk": desk, "task": task,
            "question": question, "answer": answer, "loose": loose}


def page_urls(world):
    alpha, task, question = world["alpha"], world["task"], world["question"]
    return [
        "/", f"/sessions/{alpha.pk}/", "/tasks/", f"/tasks/{task.pk}/", "/messages/", f"/messages/{question.pk}/",
        "/inbox/", "/inbox/count/", "/map/", "/events/", "/search/?q=alpha",
        f"/sessions/{alpha.pk}/export.md", f"/tasks/{task.pk}/export.md",
    ]


def post_urls(world):
    alpha, task, question = world["alpha"], world["task"], world["question"]
    return [
        f"/sessions/{alpha.pk}/comment/", f"/sessions/{alpha.pk}/edit/", "/tasks/new/", f"/tasks/{task.pk}/edit/",
        f"/tasks/{task.pk}/attach/", f"/tasks/{task.pk}/detach/{alpha.pk}/", f"/inbox/{question.pk}/seen/",
    ]


class TestLoginRequired:
    def test_every_page_sends_anonymous_visitors_to_the_login(self, client, world):
        for url in page_urls(world):
            response = client.get(url)
            assert response.status_code == 302, url
            assert response["Location"].startswith("/login/?next="), url

    def test_every_form_refuses_anonymous_posts_and_writes_nothing(self, client, world):
        before = (Event.objects.count(), Task.objects.count())
        for url in post_urls(world):
            response = client.post(url, {"body": "x", "title": "x", "session": "beta"})
            assert response.status_code == 302 and response["Location"].startswith("/login/"), url
        assert (Event.objects.count(), Task.objects.count()) == before

    def test_an_account_that_is_not_staff_is_not_the_owner(self, world):
        get_user_model().objects.create_user(username="guest", password="guest-pass-1")
        client = Client()
        assert client.login(username="guest", password="guest-pass-1")
        assert client.get("/messages/").status_code == 302

    def test_the_login_page_logs_the_owner_in(self, owner, world):
        client = Client()
        page = client.get("/login/")
        assert b'name="username"' in page.content and b"csrfmiddlewaretoken" in page.content
        response = client.post("/login/", {"username": "owner", "password": "owner-pass-123"})
        assert response.status_code == 302
        assert client.get("/").status_code == 200

    def test_the_login_page_refuses_a_wrong_password(self, owner):
        response = Client().post("/login/", {"username": "owner", "password": "nope"})
        assert response.status_code == 200
        assert b"did not match" in response.content


class TestShell:
    def test_every_page_renders_with_the_sidebar(self, board, world):
        for url in page_urls(world):
            response = board.get(url)
            assert response.status_code == 200, url
            if not url.endswith(".md") and "count" not in url:
                text = response.content.decode()
                for item in ["Needs you", "Sessions", "Tasks", "Messages", "Inbox", "Map", "Events", "Search"]:
                    assert f">{item}" in text, (url, item)

    def test_htmx_and_the_live_script_come_from_static_files(self, board, world):
        text = board.get("/").content.decode()
        scripts = re.findall(r'<script src="([^"]+)"', text)
        assert scripts == ["/static/django_htmx/htmx-2.min.js", "/static/board/live.js", "/static/approvals/needs_you.js"]

    def test_the_sidebar_counts_what_waits_in_the_inbox(self, board, world):
        SessionMessage.objects.filter(pk=world["question"].pk).update(needs_owner=True)
        assert re.search(r'id="inbox-count"[^>]*><span class="count">1</span>', board.get("/").content.decode())
        fragment = board.get("/inbox/count/").content.decode()
        assert fragment.strip() == '<span class="count">1</span>'


class TestSessions:
    def test_the_list_shows_kind_name_folder_task_link_state_and_unread(self, board, world):
        text = board.get("/").content.decode()
        alpha_row = re.search(rf'<tr id="session-{world["alpha"].pk}">(.*?)</tr>', text, re.S).group(1)
        for expected in ["alpha", "hook", "/work/alpha", "Ship the board", "exact", "idle"]:
            assert expected in alpha_row
        # beta's reply marked question one read; alpha has not read the answer yet.
        assert 'class="badge unread"' in alpha_row and ">1</a>" in alpha_row
        beta_row = re.search(rf'<tr id="session-{world["beta"].pk}">(.*?)</tr>', text, re.S).group(1)
        assert 'class="badge unread"' not in beta_row
        gamma_row = re.search(rf'<tr id="session-{world["gamma"].pk}">(.*?)</tr>', text, re.S).group(1)
        assert "guessed" in gamma_row and ">gamma</bdi>" in gamma_row and "desktop" in gamma_row
        assert "its hook link is only guessed" in gamma_row
        desk_row = re.search(rf'<tr id="session-{world["desk"].pk}">(.*?)</tr>', text, re.S).group(1)
        assert "desktop one" in desk_row and "no link" in desk_row

    @pytest.mark.parametrize(
        "query, shown, hidden",
        [
            ("state=live", ["alpha", "beta", "gamma"], ["desktop one"]),
            ("state=unlinked", ["desktop one"], ["alpha"]),
            ("kind=desktop", ["desktop one"], ["alpha"]),
            ("q=BET", ["beta"], ["alpha", "desktop one"]),
            ("q=/work/gamma", ["gamma"], ["alpha"]),
            ("q=hook-gamma", ["gamma"], ["alpha"]),
        ],
    )
    def test_the_list_filters(self, board, world, query, shown, hidden):
        text = board.get(f"/?{query}").content.decode()
        rows = re.search(r'<tbody>(.*)</tbody>', text, re.S).group(1)
        for name in shown:
            assert f">{name}</bdi>" in rows, (query, name)
        for name in hidden:
            assert f">{name}</bdi>" not in rows, (query, name)

    def test_the_list_filters_by_task(self, board, world):
        rows = re.search(r"<tbody>(.*)</tbody>", board.get(f"/?task={world['task'].pk}").content.decode(), re.S).group(1)
        assert rows.count('<tr id="session-') == 2

    def test_the_ended_filter_shows_sessions_whose_links_all_ended(self, board, world):
        ingest_hook({"hook_event_name": "SessionEnd", "session_id": world["beta"].hook_session, "cwd": "/work/beta"})
        rows = re.search(r"<tbody>(.*)</tbody>", board.get("/?state=ended").content.decode(), re.S).group(1)
        assert ">beta</bdi>" in rows and ">alpha</bdi>" not in rows

    def test_the_state_filter_keeps_the_rows_whose_badge_shows_that_state(self, board, world):
        # alpha is idle under its live exact link; a newer link of its row, only guessed, says
        # busy. The badge reads the exact link, and so does the filter.
        HookLink.objects.create(session=world["alpha"], hook_session="hook-alpha-guessed", state=HookLink.State.BUSY, exact=False)
        text = board.get("/").content.decode()
        alpha_row = re.search(rf'<tr id="session-{world["alpha"].pk}">(.*?)</tr>', text, re.S).group(1)
        assert "idle" in alpha_row and "busy" not in alpha_row
        assert ">alpha</bdi>" not in board.get("/?state=busy").content.decode()
        assert ">alpha</bdi>" in board.get("/?state=idle").content.decode()

    def test_the_list_pages_by_a_hundred(self, board, db):
        Session.objects.bulk_create([Session(kind="mcp", title=f"s{i:03}") for i in range(130)])
        first = board.get("/").content.decode()
        assert first.count('<tr id="session-') == 100 and "page 1 of 2" in first
        assert board.get("/?page=2").content.decode().count('<tr id="session-') == 30

    def test_the_session_page_shows_link_details_comments_messages_and_events(self, board, world):
        alpha = world["alpha"]
        actions.do_write_comment(session=alpha, body="look at the flaky test")
        text = board.get(f"/sessions/{alpha.pk}/").content.decode()
        assert alpha.hook_session in text and "exact" in text and "deliverable" in text
        assert "look at the flaky test" in text and "not delivered yet" in text
        assert "question one" in text and "answer one" in text and "to gamma" in text
        assert "hook.SessionStart" in text and "link.exact" in text
        assert f'action="/sessions/{alpha.pk}/comment/"' in text

    def test_the_session_page_threads_its_messages(self, board, world):
        text = board.get(f"/sessions/{world['alpha'].pk}/").content.decode()
        threads = text.split('<div class="thread">')[1:]
        question, answer = world["question"], world["answer"]
        [thread] = [t for t in threads if f'id="message-{question.pk}"' in t]
        assert thread.index(f'id="message-{question.pk}"') < thread.index(f'id="message-{answer.pk}"')
        assert f'id="message-{answer.pk}" style="--depth: 1"' in thread

    def test_the_session_page_says_why_nothing_can_be_delivered(self, board, world):
        text = board.get(f"/sessions/{world['gamma'].pk}/").content.decode()
        assert "nothing can be delivered now" in text and "only guessed" in text

    def test_the_session_page_pages_its_events(self, board, world):
        alpha = world["alpha"]
        for i in range(60):
            ingest_hook({"hook_event_name": "PreToolUse", "session_id": alpha.hook_session, "cwd": "/w", "tool_name": f"Tool{i}"})
        first = htmx_get(board, f"/sessions/{alpha.pk}/", "session-events").content.decode()
        assert first.count('<tr id="event-') == 50 and "tool_name</span> <bdi>Tool59" in first
        older = re.search(r'href="\?before=(\d+)"', first).group(1)
        second = htmx_get(board, f"/sessions/{alpha.pk}/?before={older}", "session-events").content.decode()
        assert "Tool9<" in second and "Tool59" not in second
        assert "« newest" in second

    def test_a_missing_session_is_a_404(self, board, db):
        assert board.get("/sessions/999/").status_code == 404


class TestTasks:
    def test_the_task_list_shows_tasks_with_their_session_counts(self, board, world):
        text = board.get("/tasks/").content.decode()
        row = re.search(rf'<tr id="task-{world["task"].pk}">(.*?)</tr>', text, re.S).group(1)
        assert "Ship the board" in row and '<td class="num">2</td>' in row and "open" in row

    def test_the_task_list_filters_by_status(self, board, world):
        actions.do_save_task(title="Old work", status="done")
        assert "Old work" not in board.get("/tasks/?status=open").content.decode()
        text = board.get("/tasks/?status=done").content.decode()
        assert "Old work" in text and "Ship the board" not in text

    def test_the_task_view_shows_sessions_comments_and_a_messages_block(self, board, world):
        actions.do_write_comment(session=world["beta"], body="beta, please rebase")
        text = board.get(f"/tasks/{world['task'].pk}/").content.decode()
        sessions = re.search(r'id="task-sessions"(.*?)</table>', text, re.S).group(1)
        assert ">alpha</bdi>" in sessions and ">beta</bdi>" in sessions and "desktop one" not in sessions
        assert "beta, please rebase" in text
        block = htmx_get(board, f"/tasks/{world['task'].pk}/", "task-messages").content.decode()
        assert "question one" in block and "answer one" in block
        # Its sessions' messages are shown even when not tagged with the task.
        assert "to gamma" in block

    def test_the_owner_creates_edits_attaches_and_detaches(self, board, world):
        response = board.post("/tasks/new/", {"title": "Fix CI"})
        task = Task.objects.get(title="Fix CI")
        assert response["Location"] == f"/tasks/{task.pk}/"
        board.post(f"/tasks/{task.pk}/edit/", {"title": "Fix CI now", "status": "done"})
        task.refresh_from_db()
        assert (task.title, task.status) == ("Fix CI now", "done")
        board.post(f"/tasks/{task.pk}/attach/", {"session": "desk-1"})
        assert Session.objects.get(pk=world["desk"].pk).task_id == task.pk
        board.post(f"/tasks/{task.pk}/detach/{world['desk'].pk}/")
        assert Session.objects.get(pk=world["desk"].pk).task_id is None

    def test_attaching_an_unknown_name_says_so(self, board, world):
        response = board.post(f"/tasks/{world['task'].pk}/attach/", {"session": "nobody"}, follow=True)
        assert "No session goes by &quot;nobody&quot;" in response.content.decode()

    def test_an_empty_task_title_is_refused_with_a_sentence(self, board, db):
        response = board.post("/tasks/new/", {"title": "  "}, follow=True)
        assert Task.objects.count() == 0
        assert "empty" in response.content.decode()


class TestMessages:
    def test_the_list_shows_marks_reasons_and_reply_links(self, board, world):
        text = board.get("/messages/").content.decode()
        question, answer, loose = world["question"], world["answer"], world["loose"]
        q = re.search(rf'id="message-{question.pk}"(.*?)<div class="body">', text, re.S).group(1)
        # The reply marked the question read (verified: beta proved its name with its hook id).
        assert 'mark-read">read<' in q and "1 reply" in q
        a = re.search(rf'id="message-{answer.pk}"(.*?)<div class="body">', text, re.S).group(1)
        assert "not delivered yet" in a and "it is idle and no wake-up hook of it is waiting; it sees this at its next prompt." in a
        assert f"reply to <a href=\"/messages/{question.pk}/\">M-{question.pk}</a>" in a
        lo = re.search(rf'id="message-{loose.pk}"(.*?)<div class="body">', text, re.S).group(1)
        assert "its hook link is only guessed" in lo

    def test_marks_follow_delivery_and_ack(self, board, world, api):
        answer = world["answer"]
        alpha = world["alpha"]
        ingest_hook({"hook_event_name": "UserPromptSubmit", "session_id": alpha.hook_session, "cwd": "/w", "prompt": "go"})
        fragment = htmx_get(board, "/messages/", "messages-rows").content.decode()
        a = re.search(rf'id="message-{answer.pk}"(.*?)<div class="body">', fragment, re.S).group(1)
        assert "mark-delivered" in a and "not delivered yet" not in a and ">unread<" in a
        assert api.post("/message_ack", {"message_id": answer.pk, "session": "alpha", "hook_session": alpha.hook_session}).status_code == 200
        fragment = htmx_get(board, "/messages/", "messages-rows").content.decode()
        a = re.search(rf'id="message-{answer.pk}"(.*?)<div class="body">', fragment, re.S).group(1)
        assert 'mark-read">read<' in a

    def test_a_read_mark_says_when_the_name_was_not_verified(self, board, world, api):
        desk = world["desk"]
        message = send(world["alpha"], desk, "for the desktop")
        assert api.post("/message_ack", {"message_id": message.pk, "session": "desk-1"}).status_code == 200
        text = board.get("/messages/").content.decode()
        m = re.search(rf'id="message-{message.pk}"(.*?)<div class="body">', text, re.S).group(1)
        assert "read (name not verified)" in m

    def test_a_message_whose_recipient_row_is_gone_says_so(self, board, world):
        loose = world["loose"]
        Session.objects.filter(pk=world["gamma"].pk).delete()
        text = board.get("/messages/").content.decode()
        m = re.search(rf'id="message-{loose.pk}"(.*?)<div class="body">', text, re.S).group(1)
        assert "row gone" in m and "not delivered yet" in m and "its session row is gone." in m

    @pytest.mark.parametrize("name", ["beta", "BETA ", "S-{beta}", "{beta_hook}"])
    def test_the_session_filter_takes_any_name_a_session_goes_by(self, board, world, name):
        name = name.format(beta=world["beta"].pk, beta_hook=world["beta"].hook_session)
        text = board.get("/messages/", {"session": name}).content.decode()
        assert "question one" in text and "answer one" in text and "to gamma" not in text

    def test_the_session_filter_says_when_no_session_goes_by_the_name(self, board, world):
        text = board.get("/messages/", {"session": "nobody"}).content.decode()
        assert "no session goes by" in text and "question one" not in text

    def test_the_task_filter_shows_the_task_messages(self, board, world):
        other = actions.do_save_task(title="Other")
        text = board.get("/messages/", {"task": world["task"].pk}).content.decode()
        assert "question one" in text and "to gamma" in text
        assert "question one" not in board.get("/messages/", {"task": other.pk}).content.decode()

    def test_the_session_and_task_filters_combine(self, board, world):
        other = actions.do_save_task(title="Other")
        actions.do_update_session(session=world["gamma"], task=other)
        text = board.get("/messages/", {"session": "hook-gamma", "task": world["task"].pk}).content.decode()
        assert "to gamma" in text and "question one" not in text
        text = board.get("/messages/", {"session": "desk-1", "task": world["task"].pk}).content.decode()
        assert "No message matches" in text

    @pytest.mark.parametrize("state, shown, hidden", [
        ("waiting", ["answer one", "to gamma"], ["question one"]),
        ("read", ["question one"], ["answer one"]),
        ("unread", ["answer one"], ["question one"]),
    ])
    def test_the_marks_filter(self, board, world, state, shown, hidden):
        text = board.get("/messages/", {"state": state}).content.decode()
        for body in shown:
            assert body in text
        for body in hidden:
            assert body not in text

    def test_the_list_pages_without_counting_the_table(self, board, world, django_assert_max_num_queries):
        alpha, beta = world["alpha"], world["beta"]
        SessionMessage.objects.bulk_create(
            SessionMessage(sender=alpha, sender_name="alpha", recipient=beta, recipient_name="beta", body=f"bulk {i:03}")
            for i in range(120)
        )
        first = htmx_get(board, "/messages/", "messages-rows").content.decode()
        assert first.count('class="msg"') == 50 and "bulk 119" in first and "bulk 070" in first and "bulk 069" not in first
        older = re.search(r'href="\?before=(\d+)"', first).group(1)
        second = board.get(f"/messages/?before={older}").content.decode()
        assert "bulk 069" in second and "bulk 020" in second and "bulk 019" not in second
        newer = re.search(r'href="\?after=(\d+)"', second).group(1)
        back = board.get(f"/messages/?after={newer}").content.decode()
        assert "bulk 119" in back and "bulk 070" in back and "bulk 069" not in back
        # The shell's own counts are among them: the Inbox's and Needs you's (one COUNT each).
        with django_assert_max_num_queries(13) as captured:
            board.get("/messages/")
        assert not any("COUNT(" in q["sql"] and "session_message" in q["sql"] and "GROUP BY" not in q["sql"]
                       and "owner_seen_at" not in q["sql"] and "held_until" not in q["sql"] for q in captured.captured_queries)

    def test_a_filtered_page_is_keyset_paged_too(self, board, world):
        alpha, beta, gamma = world["alpha"], world["beta"], world["gamma"]
        SessionMessage.objects.bulk_create(
            SessionMessage(sender=alpha, sender_name="alpha", recipient=r, recipient_name=r.title or "g", body=f"mix {i:03}")
            for i, r in enumerate([beta, gamma] * 60)
        )
        first = board.get("/messages/", {"session": "hook-gamma"}).content.decode()
        assert first.count('class="msg"') == 50
        assert "mix 119" in first and "mix 118" not in first
        older = re.search(r'href="\?session=hook-gamma&amp;before=(\d+)"', first).group(1)
        second = board.get("/messages/", {"session": "hook-gamma", "before": older}).content.decode()
        assert "mix 019" in second and "mix 021" not in second

    def test_the_thread_page_shows_the_whole_thread_from_any_message(self, board, world):
        for pk in (world["question"].pk, world["answer"].pk):
            text = board.get(f"/messages/{pk}/").content.decode()
            assert text.index("question one") < text.index("answer one")
            assert "to gamma" not in text


class TestInbox:
    def test_the_inbox_holds_depth_refused_parents_and_mail_of_gone_rows(self, board, world):
        SessionMessage.objects.filter(pk=world["question"].pk).update(needs_owner=True)
        Session.objects.filter(pk=world["gamma"].pk).delete()
        text = board.get("/inbox/").content.decode()
        assert f'id="inbox-{world["question"].pk}"' in text and "too deep" in text
        assert f'id="inbox-{world["loose"].pk}"' in text and "its session row is gone" in text
        assert f'id="inbox-{world["answer"].pk}"' not in text

    def test_marking_an_item_seen_takes_it_out(self, board, world):
        question = world["question"]
        SessionMessage.objects.filter(pk=question.pk).update(needs_owner=True)
        response = board.post(f"/inbox/{question.pk}/seen/", follow=True)
        assert f'id="inbox-{question.pk}"' not in response.content.decode()
        assert SessionMessage.objects.get(pk=question.pk).owner_seen_at is not None
        assert Event.objects.filter(name="message.owner_seen", data__message=question.pk).exists()

    def test_a_read_message_of_a_gone_row_does_not_wait_on_the_owner(self, board, world):
        Session.objects.filter(pk=world["beta"].pk).delete()
        assert f'id="inbox-{world["question"].pk}"' not in board.get("/inbox/").content.decode()

    def test_an_empty_inbox_says_nothing_waits(self, board, world):
        do_mark_inbox_seen(message=world["question"])
        assert "Nothing waits on you." in board.get("/inbox/").content.decode()


class TestEventsAndMap:
    def test_the_feed_lists_events_newest_first_with_their_marks(self, board, world):
        text = board.get("/events/").content.decode()
        names = re.findall(r'<td class="nowrap">([a-z]+\.[A-Za-z_]+)', text)
        assert names[0] == "message.sent" and "hook.SessionStart" in names and "session.message" in names
        assert "question one" not in text and "answer one" not in text

    @pytest.mark.parametrize("kind, expected, absent", [("hook", "hook.SessionStart", "message.sent"), ("message", "message.sent", "hook.SessionStart")])
    def test_the_feed_filters_by_kind(self, board, world, kind, expected, absent):
        text = board.get("/events/", {"kind": kind}).content.decode()
        assert expected in text and f">{absent}" not in text

    def test_the_feed_filters_by_session(self, board, world):
        text = board.get("/events/", {"session": "hook-gamma"}).content.decode()
        rows = re.findall(r'<tr id="event-', text)
        assert rows and all(e.session_id == world["gamma"].pk for e in Event.objects.filter(pk__in=re.findall(r'<tr id="event-(\d+)"', text)))

    def test_the_map_draws_sessions_and_message_edges_with_counts(self, board, world):
        send(world["alpha"], world["beta"], "again")
        text = board.get("/map/").content.decode()
        alpha, beta, gamma = world["alpha"], world["beta"], world["gamma"]
        assert "<svg" in text
        for s in (alpha, beta, gamma):
            assert f'id="node-S-{s.pk}"' in text
        assert "alpha → beta: 2 messages" in text and "beta → alpha: 1 message<" in text
        assert "alpha → gamma: 1 message<" in text

    def test_the_map_draws_desktop_edges_too(self, board, world):
        actions.do_record_desktop_edge(sender=world["desk"], recipient=world["alpha"])
        assert "desktop one → alpha: 1 message<" in board.get("/map/").content.decode()

    def test_the_map_filters_by_task(self, board, world):
        other = actions.do_save_task(title="Other")
        actions.do_update_session(session=world["desk"], task=other)
        actions.do_record_desktop_edge(sender=world["desk"], recipient=world["gamma"])
        text = board.get("/map/", {"task": world["task"].pk}).content.decode()
        assert "alpha → beta" in text and "desktop one" not in text
        text = board.get("/map/", {"task": other.pk}).content.decode()
        assert "desktop one → gamma" in text and "alpha → beta" not in text

    def test_the_maps_task_filter_shows_task_tagged_messages_as_the_messages_filter_does(self, board, world):
        # Neither session is in the task; their message is tagged with it.
        delta, epsilon = named_session("delta"), named_session("epsilon")
        send(delta, epsilon, "tagged for the task", task=world["task"].pk)
        send(epsilon, delta, "not tagged", task="")
        assert "tagged for the task" in board.get("/messages/", {"task": world["task"].pk}).content.decode()
        text = board.get("/map/", {"task": world["task"].pk}).content.decode()
        assert "delta → epsilon: 1 message<" in text and "epsilon → delta" not in text
        assert "delta → epsilon" not in board.get("/map/", {"task": actions.do_save_task(title="Other").pk}).content.decode()

    @pytest.fixture
    def edge_cache(self):
        cache.delete(session_map.EDGE_CACHE_KEY)
        yield
        cache.delete(session_map.EDGE_CACHE_KEY)

    def test_the_map_counts_settled_and_fresh_edges_together(self, board, world, edge_cache):
        # The sends of the fixture are old news: their counts are cached.
        Event.objects.update(created_at=timezone.now() - timedelta(hours=1))
        alpha, beta = world["alpha"], world["beta"]
        assert "alpha → beta: 1 message<" in board.get("/map/").content.decode()
        assert cache.get(session_map.EDGE_CACHE_KEY)[0] == Event.objects.filter(name="session.message").latest("id").pk
        send(alpha, beta, "fresh")
        assert "alpha → beta: 2 messages" in board.get("/map/").content.decode()
        Event.objects.update(created_at=timezone.now() - timedelta(hours=1))
        send(alpha, beta, "fresher")
        assert "alpha → beta: 3 messages" in board.get("/map/").content.decode()
        assert "alpha → beta: 3 messages" in board.get("/map/").content.decode()

    def test_an_empty_map_says_so(self, board, db):
        assert "No messages between sessions yet" in board.get("/map/").content.decode()


class TestLiveFragments:
    @pytest.mark.parametrize("url, target", [
        ("/", "sessions-rows"), ("/tasks/", "tasks-rows"), ("/messages/", "messages-rows"), ("/inbox/", "inbox-rows"),
        ("/map/", "map-svg"), ("/events/", "events-rows"),
        ("/sessions/{alpha}/", "session-now"), ("/sessions/{alpha}/", "session-link"), ("/sessions/{alpha}/", "session-comments"),
        ("/sessions/{alpha}/", "session-messages"), ("/sessions/{alpha}/", "session-events"),
        ("/tasks/{task}/", "task-sessions"), ("/tasks/{task}/", "task-comments"), ("/tasks/{task}/", "task-messages"),
        ("/messages/{question}/", "thread-rows"),
    ])
    def test_each_fragment_refetches_alone_into_its_own_container(self, board, world, url, target):
        url = url.format(alpha=world["alpha"].pk, task=world["task"].pk, question=world["question"].pk)
        page = board.get(url).content.decode()
        container = re.search(rf'<(div|section) id="{target}" ([^>]*)>', page)
        assert container, target
        # The container stays and its content is swapped: a ping arriving while a refetch
        # is in flight is queued on the container and not lost with a replaced element.
        assert f'hx-get="{url}"' in container.group(2) and 'hx-swap="innerHTML"' in container.group(2)
        assert "ping-" in container.group(2)
        fragment = htmx_get(board, url, target).content.decode().strip()
        assert fragment and f'id="{target}"' not in fragment
        assert "<html" not in fragment and "<nav" not in fragment

    def test_a_fragment_shows_a_change_the_full_page_had_not(self, board, world):
        page = board.get("/messages/").content.decode()
        assert "fresh news" not in page
        send(world["beta"], world["alpha"], "fresh news")
        assert "fresh news" in htmx_get(board, "/messages/", "messages-rows").content.decode()

    def test_every_topic_the_actions_ping_has_a_fragment_listening(self, board, world):
        listened = set()
        for url in page_urls(world):
            listened |= set(re.findall(r"ping-([a-z]+) from:body", board.get(url).content.decode()))
        assert {"sessions", "messages", "comments", "events", "map", "tasks", "inbox", "all"} <= listened


def test_the_tests_hash_passwords_cheaply(owner):
    # tests/conftest.py: the owner every board test makes must not cost a PBKDF2 hash.
    assert owner.password.startswith("md5$")
