"""core/compiled.py: a queryset compiled once answers as the ORM does, or is refused when
that cannot be shown; a compiled INSERT writes the row Model.save() writes. Runs on both
configurations (SQLite here, PostgreSQL in the scale-out pass), as every send and hook runs
these statements."""

import importlib
from datetime import datetime, timedelta

import pytest
from django.apps import apps as django_apps
from django.db.models import Model, Q
from django.db import connection, transaction
from django.db.models import signals
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext, override_settings
from django.utils import timezone

from messaging import fleet, reads
from messaging.models import Dispatch, SessionMessage
from core.compiled import Compiled, Unprovable, compiled, insert, insert_all
from sessions_app import directory
from sessions_app.models import Event, HookLink, Session, SessionName, Task

pytestmark = pytest.mark.django_db


def rows(queryset):
    return [(type(row), row.pk, {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}) for row in queryset]


@pytest.fixture
def two_sessions():
    alpha = Session.objects.create(title="Alpha 100%_done", aliases=["al"])
    beta = Session.objects.create(title="Beta")
    HookLink.objects.create(hook_session="hook-alpha", session=alpha, exact=True, state=HookLink.State.IDLE, process_proof="a" * 64)
    HookLink.objects.create(hook_session="hook-beta", session=beta, exact=False, state=HookLink.State.ENDED)
    return alpha, beta


def test_model_rows_come_back_as_the_orm_gives_them_converters_included(two_sessions):
    alpha, _ = two_sessions

    @compiled
    def links_of(session_id: int):
        return HookLink.objects.filter(session_id=session_id).order_by("-id")

    assert rows(links_of(alpha.pk)) == rows(HookLink.objects.filter(session_id=alpha.pk).order_by("-id"))
    link = links_of(alpha.pk)[0]
    assert link.exact is True and link.created_at.tzinfo is not None and link._state.adding is False


def test_a_compiled_row_is_the_instance_the_orm_makes_without_model_init(two_sessions, monkeypatch):
    """loaded_rows builds instances without Model.__init__: each must hold what the ORM's does
    (every field, a saved row's state) and behave as one: relations, saving, deferred fields."""
    alpha, _ = two_sessions
    task = Task.objects.create(title="ledger")
    Session.objects.filter(pk=alpha.pk).update(task=task)

    @compiled
    def row_of(pk: int):
        return Session.objects.filter(pk=pk)

    assert row_of(0) == [] and row_of.first(0) is None  # compiled, before Model.__init__ is made to fail
    built = []
    monkeypatch.setattr(Session, "__init__", lambda *a, **k: built.append(a) or pytest.fail("Model.__init__ ran"))
    row = row_of.first(alpha.pk)
    monkeypatch.undo()
    orm = Session.objects.get(pk=alpha.pk)
    assert not built
    assert {k: v for k, v in vars(row).items() if k != "_state"} == {k: v for k, v in vars(orm).items() if k != "_state"}
    assert (row._state.adding, row._state.db) == (False, orm._state.db) == (False, "default")
    assert row.get_deferred_fields() == set() and row == orm and hash(row) == hash(orm)
    assert row.task == task and row.aliases == ["al"] and row.created_at.tzinfo is not None
    row.title = "Alpha renamed"
    row.save(update_fields=["title"])
    assert Session.objects.get(pk=alpha.pk).title == "Alpha renamed"
    assert directory.find_sessions("Alpha renamed") == [row]  # its names were rewritten by its own save()


def test_a_name_is_a_whole_name_not_a_pattern(two_sessions):
    alpha, beta = two_sessions
    # "%" and "_" in a name are letters, not wildcards.
    assert directory.find_sessions("Alpha 100%_done") == [alpha]
    assert directory.find_sessions("Alpha 1000xdone") == []
    assert directory.find_sessions("al") == [alpha]
    assert directory.find_sessions(f"S-{beta.pk}") == [beta]
    assert directory.find_sessions("hook-beta") == [beta]


def test_a_mark_inside_a_pattern_is_refused():
    @compiled
    def titled_like(text: str):
        return Session.objects.filter(title__contains=text)

    with pytest.raises(Unprovable, match="not a whole parameter"):
        titled_like("x")


def test_a_lookup_that_escapes_its_value_is_refused_where_it_does(two_sessions):
    """`iexact` escapes LIKE's wildcards in its value on SQLite: a statement built with a mark
    would send "a_b" unescaped and find "axb" too. There it is refused; on PostgreSQL the value
    passes untouched (UPPER on both sides is in the SQL), and the statement answers as the ORM."""
    a_b = Session.objects.create(title="a_b")
    Session.objects.create(title="axb")

    @compiled
    def titled(title: str):
        return Session.objects.filter(title__iexact=title).order_by("pk")

    if connection.vendor == "sqlite":
        with pytest.raises(Unprovable, match="changed on its way"):
            titled("A_B")
    else:
        assert titled("A_B") == list(Session.objects.filter(title__iexact="A_B").order_by("pk")) == [a_b]


@pytest.mark.parametrize("kind", [str, int])
def test_a_json_key_lookup_is_refused(two_sessions, kind):
    """A JSON key lookup encodes its value: its mark is never found among the parameters (it was
    once compiled into the statement as a literal, and every call matched nothing)."""
    Event.objects.create(name="x.json", data={"message": kind(7)})

    def about(message):
        return Event.objects.filter(data__message=message)

    with pytest.raises(Unprovable):
        Compiled(about, kinds=(kind,))(kind(7))
    assert len(about(kind(7))) == 1  # what the statement would have missed


def test_a_parameter_the_statement_never_uses_is_refused():
    @compiled
    def every_row(pk: int):
        return Session.objects.all()

    with pytest.raises(Unprovable, match="parameter 0 is not among"):
        every_row(1)


def test_a_value_read_while_building_is_refused(two_sessions):
    """The clock read in the build would be frozen into the statement at its first call."""

    @compiled
    def seen_lately(pk: int):
        return Session.objects.filter(pk=pk, created_at__gt=timezone.now() - timedelta(minutes=1))

    with pytest.raises(Unprovable, match="read while building"):
        seen_lately(1)


def test_values_not_of_the_kinds_proven_are_answered_by_the_orm(two_sessions):
    """None (the ORM's IS NULL, where a statement's `= NULL` finds nothing), a str or a bool
    for an int, an int out of the range the marks proved: the queryset answers, not the
    statement."""
    alpha, _ = two_sessions
    orphan = Event.objects.create(name="x.orphan")
    Event.objects.create(name="x.alpha", session=alpha)

    @compiled
    def feed_of(session_id: int):
        return Event.objects.filter(session_id=session_id)

    assert feed_of(alpha.pk) == list(Event.objects.filter(session_id=alpha.pk))
    assert feed_of(None) == list(Event.objects.filter(session_id=None)) == [orphan]
    assert feed_of(str(alpha.pk)) == list(Event.objects.filter(session_id=alpha.pk))
    assert feed_of(True) == list(Event.objects.filter(session_id=True))
    assert feed_of(2**40) == list(Event.objects.filter(session_id=2**40)) == []
    assert feed_of.first(None) == orphan


def test_first_reads_one_row_as_queryset_first_does(two_sessions):
    """`.first()` is its own statement: LIMIT 1, ordered as QuerySet.first() orders (the
    queryset's order, else by pk), never every row read to keep one."""
    alpha, _ = two_sessions
    HookLink.objects.bulk_create([HookLink(hook_session=f"old-{n}", session=alpha, state=HookLink.State.ENDED) for n in range(5)])

    @compiled
    def links(state: str):
        return HookLink.objects.filter(state=state)  # HookLink's own ordering: newest first

    @compiled
    def unordered(state: str):
        return HookLink.objects.filter(state=state).order_by()

    for build, orm in ((links, HookLink.objects.filter(state="ended")), (unordered, HookLink.objects.filter(state="ended").order_by())):
        with CaptureQueriesContext(connection) as queries:
            assert build.first("ended") == orm.first()
        assert queries.captured_queries[-1]["sql"].endswith("LIMIT 1")
    assert links.first("ended").hook_session == "old-4" and unordered.first("ended").hook_session == "hook-beta"
    assert links.first("nothing") is None


@pytest.mark.django_db(transaction=True)
def test_select_for_update_outside_a_transaction_is_refused_on_every_call():
    """Django refuses a SELECT ... FOR UPDATE outside a transaction while compiling it, which a
    statement does once: the statement asks on every call, where the database locks rows."""
    row = Session.objects.create(title="locked")
    HookLink.objects.create(hook_session="hook-locked", session=row)

    @compiled
    def locked(hook_session: str):
        return HookLink.objects.select_for_update().filter(hook_session=hook_session)

    with transaction.atomic():
        assert locked.first("hook-locked").session_id == row.pk
    for _ in range(2):
        if connection.features.has_select_for_update:
            with pytest.raises(TransactionManagementError):
                HookLink.objects.select_for_update().filter(hook_session="hook-locked").first()
            with pytest.raises(TransactionManagementError):
                locked.first("hook-locked")
        else:  # SQLite: the ORM runs it (a transaction of SQLite's own locks the database)
            assert locked.first("hook-locked") == HookLink.objects.select_for_update().filter(hook_session="hook-locked").first()


def test_rows_of_a_model_with_init_receivers_are_made_by_from_db(two_sessions):
    """loaded_rows skips Model.__init__ and so pre_init and post_init: with a receiver
    connected, rows are made by Model.from_db, and the receiver sees each as the ORM's would."""
    alpha, _ = two_sessions
    seen = []

    def saw(sender, instance, **kwargs):
        seen.append(instance.hook_session)

    directory.with_links(alpha)  # compiled, with no receiver
    signals.post_init.connect(saw, sender=HookLink)
    try:
        compiled_links = [link.hook_session for link in directory.with_links(alpha).newest_links()]
        orm_links = [link.hook_session for link in HookLink.objects.filter(session=alpha).order_by("-id")]
    finally:
        signals.post_init.disconnect(saw, sender=HookLink)
    assert compiled_links == orm_links == ["hook-alpha"] and seen == compiled_links + orm_links


def test_insert_sends_save_signals_when_a_receiver_listens(two_sessions):
    alpha, _ = two_sessions
    saved = []

    def saw(sender, instance, created, **kwargs):
        saved.append((instance.name, created))

    insert(Event(name="x.quiet", session=alpha))
    signals.post_save.connect(saw, sender=Event)
    try:
        row = insert(Event(name="x.heard", session=alpha))
    finally:
        signals.post_save.disconnect(saw, sender=Event)
    assert saved == [("x.heard", True)] and Event.objects.get(pk=row.pk).name == "x.heard"


def test_an_unsaved_related_row_is_refused_as_save_and_bulk_create_refuse_it():
    unsaved = Session(title="never saved")
    with pytest.raises(ValueError, match="unsaved related object"):
        insert(Event(name="x.lost", session=unsaved))
    with pytest.raises(ValueError, match="unsaved related object"):
        insert_all([Event(name="x.lost", session=unsaved)])
    assert not Event.objects.filter(name="x.lost").exists()


def test_a_name_is_looked_up_by_index_not_by_scanning_every_row(two_sessions):
    alpha, _ = two_sessions
    Session.objects.bulk_create([Session(kind="mcp", title=f"other {i}", name_keys=f"\nother {i}\n") for i in range(30)])
    directory.find_sessions("other 1")  # its statements compiled
    with CaptureQueriesContext(connection) as queries:
        assert directory.find_sessions("ALPHA 100%_done ") == [alpha]
    rows_sql = queries.captured_queries[0]["sql"]
    assert " LIKE " not in rows_sql.upper()
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + rows_sql)
            plan = [row[-1] for row in cursor.fetchall()]
        assert not [step for step in plan if step.startswith("SCAN")], plan


def test_live_rows_are_found_by_the_live_links_index_not_by_walking_every_link(two_sessions):
    """Most links have ended (one per /clear, restart or session id): the live rows
    (Session.objects.live(), behind a live list and a folder's broadcast) come from the partial
    index of live links, whose condition is the one definition of live."""
    (index,) = [index for index in HookLink._meta.indexes if index.name == "hooklink_live"]
    assert index.condition == Q(state__in=list(HookLink.LIVE_STATES))
    alpha, beta = two_sessions
    HookLink.objects.bulk_create([HookLink(hook_session=f"old-{n}", session=beta, state=HookLink.State.ENDED) for n in range(40)])
    assert list(Session.objects.live()) == [alpha]
    if connection.vendor == "sqlite":
        for shape in [(False, True, True, directory.LIST_LIMIT, shown) for shown in (False, True)] + [(True, False, True, directory.LIST_LIMIT, False)]:
            for statement in directory._listing(*shape):
                with connection.cursor() as cursor:
                    values = ([0] if shape[0] else []) + (["/work/a"] if shape[1] else [])
                    cursor.execute("EXPLAIN QUERY PLAN " + statement.statement().sql, statement.statement().params(values))
                    plan = [row[-1] for row in cursor.fetchall()]
                assert not [step for step in plan if step.startswith("SCAN") and "hooklink_live" not in step], plan


def test_a_list_reads_the_links_of_its_rows_only(two_sessions):
    """The links' statement of a list reads the listed rows' links by index, never every link
    there is (most belong to other rows): on SQLite by its plan, on PostgreSQL by the links
    its plan filters out, with sequential scans disfavoured as on a table of many links."""
    alpha, beta = two_sessions
    ledger = Task.objects.create(title="ledger")
    Session.objects.filter(pk=alpha.pk).update(task=ledger)
    others = Session.objects.bulk_create([Session(kind="mcp", title=f"other {i}") for i in range(40)])
    HookLink.objects.bulk_create(
        [HookLink(hook_session=f"old-{row.pk}-{n}", session=row, state=HookLink.State.ENDED) for row in others for n in range(50)]
    )
    for shape in [(True, False, False, False), (True, False, True, False), (False, True, True, False), (True, False, False, True)]:
        statement = directory._listing(*shape[:3], directory.LIST_LIMIT, shape[3])[1].statement()
        params = statement.params(([ledger.pk] if shape[0] else []) + (["/work/a"] if shape[1] else []))
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                cursor.execute("EXPLAIN QUERY PLAN " + statement.sql, params)
                plan = [row[-1] for row in cursor.fetchall()]
                assert not [step for step in plan if step.startswith("SCAN sessions_app_hooklink")], plan
            else:
                cursor.execute("ANALYZE sessions_app_hooklink")
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement.sql, params)
                removed = _removed_from(cursor.fetchone()[0][0]["Plan"], "sessions_app_hooklink")
                assert removed < 50, removed
    assert [row.pk for row in directory.listed_sessions(task=ledger)] == [alpha.pk]


def _removed_from(plan, table):
    """The rows of `table` a PostgreSQL plan read and filtered out, in all its nodes."""
    removed = plan.get("Rows Removed by Filter", 0) if plan.get("Relation Name") == table else 0
    return removed + sum(_removed_from(child, table) for child in plan.get("Plans", []))


def test_a_row_that_joins_the_list_between_its_two_reads_is_left_out(two_sessions, monkeypatch):
    """The rows and their links are two statements: a row that became live in between (or took
    the task) is not listed, and its links are not wanted (rather than failing the call)."""
    alpha, beta = two_sessions
    rows_of, links_of = directory._listing(False, False, True, directory.LIST_LIMIT, False)

    def rows_then_beta_goes_live(*values):
        rows = rows_of(*values)
        HookLink.objects.filter(hook_session="hook-beta").update(state=HookLink.State.BUSY, exact=True)
        return rows

    monkeypatch.setattr(directory, "_listing", lambda *shape: (rows_then_beta_goes_live, links_of))
    (row,) = directory.listed_sessions(live_only=True)
    assert row == alpha and [link.hook_session for link in row.speaking_links] == ["hook-alpha"]


def test_a_rename_moves_the_rows_names(two_sessions):
    alpha, beta = two_sessions
    alpha.title = "Gamma"
    alpha.save(update_fields=["title"])
    assert directory.find_sessions("Alpha 100%_done") == []
    assert directory.find_sessions("gamma") == [alpha]
    assert directory.find_sessions("AL") == [alpha]
    alpha.aliases = ["Beta", "gamma"]  # an alias the title folds to is one name
    alpha.save()
    assert directory.find_sessions("al") == []
    assert sorted(row.pk for row in directory.find_sessions("beta")) == sorted([alpha.pk, beta.pk])
    assert sorted(SessionName.objects.filter(session=alpha).values_list("key", flat=True)) == ["beta", "gamma"]
    alpha.status = "working"
    with CaptureQueriesContext(connection) as queries:
        alpha.save(update_fields=["status"])
    assert not [q for q in queries.captured_queries if "sessions_app_sessionname" in q["sql"]]
    alpha.delete()
    assert directory.find_sessions("gamma") == [] and directory.find_sessions("beta") == [beta]


def test_the_migration_names_the_rows_there_were(two_sessions):
    alpha, beta = two_sessions
    SessionName.objects.all().delete()
    assert directory.find_sessions("al") == []
    migration = importlib.import_module("sessions_app.migrations.0007_session_names")
    migration._names_of_existing_rows(django_apps, None)
    assert directory.find_sessions("al") == [alpha] and directory.find_sessions("alpha 100%_done") == [alpha]
    assert directory.find_sessions("beta") == [beta]


def test_only_a_name_that_is_a_socket_asks_for_the_socket(two_sessions):
    alpha, _ = two_sessions
    HookLink.objects.filter(hook_session="hook-alpha").update(native_socket="/tmp/cc-socks/7.sock")
    assert directory.find_sessions("uds:/tmp/cc-socks/7.sock") == [alpha]
    assert directory.find_sessions("/tmp/cc-socks/7.sock") == [alpha]
    assert directory.find_sessions("/tmp/cc-socks/8.sock") == []
    with CaptureQueriesContext(connection) as queries:
        assert directory.find_sessions("Alpha 100%_done") == [alpha]
    assert not [q["sql"] for q in queries.captured_queries if "native_socket" in q["sql"].split("WHERE", 1)[-1]]


def test_find_sessions_loads_each_rows_links_newest_first_without_another_query(two_sessions):
    alpha, _ = two_sessions
    HookLink.objects.create(hook_session="hook-alpha-2", session=alpha, exact=False, state=HookLink.State.ENDED)
    (row,) = directory.find_sessions("Alpha 100%_done")
    with CaptureQueriesContext(connection) as queries:
        assert [link.hook_session for link in row.newest_links()] == ["hook-alpha-2", "hook-alpha"]
        assert directory.current_link(row).hook_session == "hook-alpha"
        assert all(link.session is row for link in row.newest_links())
    assert len(queries) == 0
    # A filter on the loaded links still asks the database, for this row only.
    assert [link.hook_session for link in row.links.filter(exact=True)] == ["hook-alpha"]


def test_a_list_of_rows_loads_each_rows_links_once_newest_first(two_sessions):
    alpha, beta = two_sessions
    HookLink.objects.create(hook_session="hook-alpha-2", session=alpha, exact=False, state=HookLink.State.ENDED)
    rows = {row.pk: row for row in directory.sessions_with_links()}
    message = SessionMessage.objects.create(sender_name="x", recipient=beta, recipient_name="Beta", body="hi")
    (loaded,) = reads.messages_by_ids([message.pk])
    with CaptureQueriesContext(connection) as queries:
        assert [link.hook_session for link in rows[alpha.pk].newest_links()] == ["hook-alpha-2", "hook-alpha"]
        assert directory.current_link(rows[alpha.pk]).hook_session == "hook-alpha"
        assert all(link.session is rows[alpha.pk] for link in rows[alpha.pk].newest_links())
        assert [link.hook_session for link in loaded.recipient.newest_links()] == ["hook-beta"]
    assert len(queries) == 0
    # A row loaded without its links reads them on each call, so it never shows stale ones.
    row = Session.objects.get(pk=beta.pk)
    assert [link.hook_session for link in row.newest_links()] == ["hook-beta"]
    HookLink.objects.create(hook_session="hook-beta-2", session=beta)
    assert [link.hook_session for link in row.newest_links()] == ["hook-beta-2", "hook-beta"]
    # Reloading a listed row forgets the links it was listed with, as Django forgets a prefetch.
    listed = rows[beta.pk]
    assert [link.hook_session for link in listed.newest_links()] == ["hook-beta"]
    listed.refresh_from_db()
    assert [link.hook_session for link in listed.newest_links()] == ["hook-beta-2", "hook-beta"]
    # And the links listed_sessions gave it for current_link.
    (listed,) = [row for row in directory.listed_sessions() if row.pk == beta.pk]
    HookLink.objects.create(hook_session="hook-beta-3", session=beta, exact=True, state=HookLink.State.BUSY)
    assert directory.current_link(listed).hook_session == "hook-beta-2"
    listed.refresh_from_db()
    assert directory.current_link(listed).hook_session == "hook-beta-3"


def test_datetime_marks_and_flat_values(two_sessions):
    alpha, _ = two_sessions
    now = timezone.now()
    for minutes in (0, 2):
        Dispatch.objects.create(sender=alpha, kind=Dispatch.Kind.SEND, created_at=now - timedelta(minutes=minutes))

    @compiled
    def since(sender_id: int, moment: datetime):
        return Dispatch.objects.filter(sender_id=sender_id, created_at__gt=moment).order_by("created_at").values_list("created_at", flat=True)

    window = now - timedelta(minutes=1)
    assert since(alpha.pk, window) == list(Dispatch.objects.filter(sender=alpha, created_at__gt=window).values_list("created_at", flat=True))
    assert len(since(alpha.pk, now - timedelta(minutes=5))) == 2


def test_a_setting_the_build_reads_keys_its_statement(two_sessions):
    alpha, _ = two_sessions
    now = timezone.now()
    process = "a" * 64
    for i in range(3):
        Dispatch.objects.create(sender=alpha, process=process, kind=Dispatch.Kind.SEND, created_at=now - timedelta(seconds=i))
    with override_settings(RELAYBAY_SENDS_PER_MINUTE=2):
        assert len(fleet._slots_taken(process, now - timedelta(minutes=1))) == 2
    with override_settings(RELAYBAY_SENDS_PER_MINUTE=10):
        taken = fleet._slots_taken(process, now - timedelta(minutes=1))
    assert taken == sorted(taken) and len(taken) == 3 and all(moment.tzinfo is not None for moment in taken)
    assert fleet._slots_taken(process, now) == [] and fleet._slots_taken("", now - timedelta(minutes=1)) == []


def test_constants_are_compiled_in_and_only_marks_are_parameters():
    statement = Compiled(lambda session_id: HookLink.objects.live().filter(session_id=session_id), kinds=(int,)).statement()
    assert statement.sql.count("%s") == 1 and "'busy'" in statement.sql and "'idle'" in statement.sql


def test_insert_writes_what_save_writes(two_sessions):
    alpha, beta = two_sessions
    saved = Event.objects.create(name="x.saved", session=alpha, data={"a": [1, "é"]})
    inserted = insert(Event(name="x.inserted", session=alpha, data={"a": [1, "é"]}))
    assert inserted.pk and inserted._state.adding is False and inserted.created_at is not None
    again = Event.objects.get(pk=inserted.pk)
    assert (again.session_id, again.data, again.replay, again.hook_session) == (saved.session_id, saved.data, saved.replay, saved.hook_session)
    message = insert(SessionMessage(sender=alpha, sender_name="Alpha", recipient=beta, recipient_name="Beta", body="hi"))
    read = SessionMessage.objects.get(pk=message.pk)
    assert (read.sender_id, read.recipient_id, read.body, read.state, read.channel, read.sender_verified) == (
        alpha.pk, beta.pk, "hi", "sent", "mcp", False,
    )  # fmt: skip
    assert abs(read.created_at - message.created_at) < timedelta(seconds=1)


def test_insert_all_writes_several_rows_in_order_with_one_statement(two_sessions):
    alpha, beta = two_sessions
    assert insert_all([]) == []
    feed = [Event(name=f"x.{n}", session=alpha if n % 2 else beta, data={"n": n}) for n in range(5)]
    with CaptureQueriesContext(connection) as queries:
        assert insert_all(feed) is feed
    assert len(queries) == 1
    ids = [row.pk for row in feed]
    assert ids == sorted(ids) and all(row._state.adding is False for row in feed)
    assert [(e.pk, e.name, e.session_id, e.data) for e in Event.objects.filter(pk__in=ids).order_by("pk")] == [
        (row.pk, f"x.{n}", row.session_id, {"n": n}) for n, row in enumerate(feed)
    ]
    # A second call with as many rows uses the statement built by the first.
    more = insert_all([Event(name=f"y.{n}") for n in range(5)])
    assert min(row.pk for row in more) > max(ids)


def test_insert_all_writes_in_batches_the_database_takes(two_sessions, monkeypatch):
    monkeypatch.setattr(connection.ops, "bulk_batch_size", lambda fields, objs: 2)  # as if it took two rows' parameters
    feed = [Event(name=f"z.{n}", data={"n": n}) for n in range(5)]
    with CaptureQueriesContext(connection) as queries:
        insert_all(feed)
    assert len(queries) == 3
    assert [(e.pk, e.data["n"]) for e in Event.objects.filter(name__startswith="z.").order_by("pk")] == [(row.pk, n) for n, row in enumerate(feed)]


def test_a_model_that_makes_its_instances_in_its_own_way_is_not_compiled(monkeypatch):
    """loaded_rows skips Model.__init__ and from_db: a model overriding either is refused
    rather than loaded without what its override does."""
    monkeypatch.setattr(Task, "__init__", lambda self, *args, **kwargs: Model.__init__(self, *args, **kwargs), raising=False)

    @compiled
    def tasks(pk: int):
        return Task.objects.filter(pk=pk)

    with pytest.raises(TypeError, match="makes its instances in its own way"):
        tasks(1)
    monkeypatch.undo()
    monkeypatch.setattr(Task, "from_db", classmethod(lambda cls, db, names, values: Model.from_db.__func__(cls, db, names, values)), raising=False)
    with pytest.raises(TypeError, match="makes its instances in its own way"):
        Compiled(tasks.build)(1)


def test_insert_refuses_a_model_that_saves_in_its_own_way():
    with pytest.raises(TypeError, match="saves in its own way"):
        insert(Session(title="x"))


@pytest.mark.parametrize(
    "operation, fields",
    [
        ("message_send", {"body": "hello {n}", "to": "Beta", "session": "Alpha 100%_done", "hook_session": "hook-alpha"}),
        ("message_broadcast", {"body": "all {n}", "folder": "/work/g", "session": "Alpha 100%_done", "hook_session": "hook-alpha"}),
        ("messages_list", {"session": "Beta", "limit": 20}),
        ("message_ack", {"session": "Alpha 100%_done", "hook_session": "hook-alpha"}),
        ("message_ack", {"session": "Beta"}),  # a row whose proof does not hold: every unread message
        ("session_link", {"session": "Alpha 100%_done", "hook_session": "hook-alpha"}),
        ("sessions_list", {}),
    ],
)
def test_no_mcp_tool_has_the_orm_build_a_read_once_its_statements_are_compiled(two_sessions, monkeypatch, operation, fields):
    """Every read an MCP tool's step makes (mcp_server/http.py `_operate`, the http tools'
    own path) is a compiled statement: a query built by the ORM costs 3-10x its compiled twin
    (bench/compiled_queries.py)."""
    from django.db.models.sql.compiler import SQLCompiler

    from mcp_server.http import _operate

    for n in range(2):
        member = Session.objects.create(title=f"group-{n}", folder="/work/g")
        HookLink.objects.create(hook_session=f"hook-group-{n}", session=member, exact=True, state=HookLink.State.IDLE)

    def call(n):
        return _operate(operation, {key: value.format(n=n) if isinstance(value, str) else value for key, value in fields.items()}, "")

    call(0)  # its statements compiled
    built = []
    selects = SQLCompiler.as_sql
    monkeypatch.setattr(SQLCompiler, "as_sql", lambda self, *a, **k: built.append(self.query) or selects(self, *a, **k))
    call(1)
    assert built == []


def test_a_verified_send_that_names_its_sender_reads_its_link_once_without_its_row(two_sessions):
    """The send rule's lookups on the path every named, verified send takes: the claim's link
    (compiled, without its row: the name gives the row), then the same link locked while
    link_hook_session decides (compiled; its row loaded only if the link moves)."""
    from messaging.actions import do_send_message

    alpha, beta = two_sessions
    with CaptureQueriesContext(connection) as queries:
        sent = do_send_message(body="named", to="Beta", session="Alpha 100%_done", hook_session="hook-alpha")
    assert sent.answer["sender_verified"] is True
    statements = [q["sql"] for q in queries.captured_queries]
    assert not [sql for sql in statements if "JOIN" in sql and "sessions_app_hooklink" in sql.split("FROM", 1)[1][:40]]
    by_pk = f'"sessions_app_session"."id" = {alpha.pk} '
    assert not [sql for sql in statements if sql.startswith('SELECT "sessions_app_session"') and by_pk in sql + " "]
    assert len([sql for sql in statements if '"sessions_app_hooklink"."hook_session" = ' in sql and "hook-alpha" in sql]) == 2


@pytest.mark.parametrize("task", [False, True])
@pytest.mark.parametrize("folder", [False, True])
@pytest.mark.parametrize("live_only", [False, True])
def test_sessions_list_reads_each_shape_with_two_statements_as_the_orm_would(two_sessions, api, task, folder, live_only):
    """sessions_list's compiled statements (directory.listed_sessions), in every shape its filters
    make: the ORM's rows in the ORM's order, each row's links newest first and its task."""
    alpha, beta = two_sessions
    ledger = Task.objects.create(title="ledger")
    for n in range(4):
        row = Session.objects.create(title=f"w{n}", folder="/work/a" if n % 2 else "/work/b", task=ledger if n < 3 else None)
        HookLink.objects.create(hook_session=f"hook-w{n}", session=row, exact=True, state=HookLink.State.BUSY if n else HookLink.State.ENDED)
        HookLink.objects.create(hook_session=f"hook-w{n}-old", session=row, state=HookLink.State.ENDED)
    Session.objects.filter(title="w2").update(last_seen_at=timezone.now() + timedelta(minutes=1))
    params = {"task": "ledger"} if task else {}
    params.update({"folder": "/work/a"} if folder else {})
    params.update({"live_only": "true"} if live_only else {})
    expected = Session.objects.live() if live_only else Session.objects.all()
    expected = expected.filter(task=ledger) if task else expected
    expected = expected.filter(folder="/work/a") if folder else expected
    expected = list(expected.order_by("-last_seen_at", "-id"))
    assert expected  # every shape lists someone

    api.get("/sessions_list", **params)  # the shape's statements compiled (their constants quoted)
    with CaptureQueriesContext(connection) as queries:
        response = api.get("/sessions_list", **params)
    listed = response.json()["sessions"]
    assert [s["handle"] for s in listed] == [row.handle for row in expected]
    for summary, row in zip(listed, expected):
        assert (summary["link"], summary["state"]) == directory.link_state(row)  # the row's links, read fresh
        assert summary["task"] == (row.task.title if row.task_id else None)
    # The rows, their links, the task once when rows have one (and the token's own reads).
    with CaptureQueriesContext(connection) as fewer:
        api.get("/sessions_list", **{**params, "folder": "/nowhere"})
    assert len(queries) - len(fewer) <= 1
    rows = directory.listed_sessions(task=ledger if task else None, folder="/work/a" if folder else "", live_only=live_only)
    for row in rows:
        # Loaded: only what current_link chooses from, newest first, each knowing its row.
        every = list(row.links.order_by("-id"))
        wanted = [link for link in every if link is every[0] or (link.exact and link.live)]
        assert [link.hook_session for link in row.speaking_links] == [link.hook_session for link in wanted]
        assert all(link.session is row for link in row.speaking_links)


def test_only_leaves_the_other_fields_deferred_as_the_orm_does(two_sessions):
    alpha, _ = two_sessions

    @compiled
    def names_of(pk: int):
        return Session.objects.filter(pk=pk).only("title", "aliases")

    row = names_of.first(alpha.pk)
    orm = Session.objects.only("title", "aliases").get(pk=alpha.pk)
    assert row.get_deferred_fields() == orm.get_deferred_fields() and "folder" in row.get_deferred_fields()
    assert (row.pk, row.title, row.aliases) == (orm.pk, orm.title, orm.aliases) == (alpha.pk, "Alpha 100%_done", ["al"])
    with CaptureQueriesContext(connection) as queries:
        assert row.created_at == alpha.created_at  # a deferred field, read when asked for
    assert len(queries) == 1


def test_sessions_list_reads_only_the_columns_it_shows_and_answers_as_every_column_would(two_sessions, api, settings):
    """sessions_list's rows and links are read with only what session_summary and
    why_not_deliverable use (directory.SHOWN, directory.SHOWN_OF_LINKS): the answer is the one the rows'
    every column gives, for a row in each state a listing tells apart, and no field left
    out is read row by row."""
    alpha, beta = two_sessions  # alpha: exact and idle; beta: guessed and ended
    ledger = Task.objects.create(title="ledger")
    Session.objects.filter(pk=alpha.pk).update(task=ledger, desktop_id="desk-alpha")
    Session.objects.create(title="", desktop_id="desk-only")  # no link, named by its desktop id
    capped = Session.objects.create(title="capped")
    HookLink.objects.create(hook_session="hook-capped", session=capped, exact=True, state=HookLink.State.IDLE, agent_wakes=settings.RELAYBAY_WAKE_CAP)
    waking = Session.objects.create(title="waking")
    HookLink.objects.create(hook_session="hook-waking", session=waking, exact=True, state=HookLink.State.IDLE, waiter="w-1")
    ended = Session.objects.create(title="ended")
    HookLink.objects.create(hook_session="hook-ended", session=ended, exact=True, state=HookLink.State.ENDED)
    busy = Session.objects.create(title="busy", aliases=["b", "bee"], folder="/work/b")
    HookLink.objects.create(hook_session="hook-busy-old", session=busy, exact=True, state=HookLink.State.BUSY)
    HookLink.objects.create(hook_session="hook-busy-new", session=busy, state=HookLink.State.ENDED)

    api.get("/sessions_list")
    with CaptureQueriesContext(connection) as queries:
        listed = api.get("/sessions_list").json()["sessions"]
    queries = list(queries.captured_queries)  # a request outside a capture empties the log
    every_column = []
    for row in directory.listed_sessions():
        summary, why = directory.session_summary(row), directory.why_not_deliverable(row)
        every_column.append({**summary, "reachable_now": not why, "why_not": why})
    assert listed == every_column and len(listed) == 7
    assert {s["why_not"] for s in listed} >= {"", directory.NOT_DELIVERABLE[directory.Arrival.NO_LINK], directory.NOT_DELIVERABLE[directory.Arrival.ENDED], directory.NOT_DELIVERABLE[directory.Arrival.GUESSED]}
    # Nothing read row by row (a field left out and then asked for would be): seven rows take
    # the statements one row takes, and the task's.
    api.get("/sessions_list", folder="/work/b")  # that shape's statements compiled
    with CaptureQueriesContext(connection) as one_row:
        assert len(api.get("/sessions_list", folder="/work/b").json()["sessions"]) == 1
    assert len(queries) == len(one_row) + 1
    listing = [q["sql"] for q in queries if "sessions_app_session" in q["sql"] and "ORDER BY" in q["sql"]]
    assert len(listing) == 2  # the rows and their links
    left_out = ['"name_keys"', '"created_at"', '"last_seen_at"', '"hook_session"', '"process_proof"', '"transcript_path"']
    for sql in listing:
        selected = sql.split(" FROM ", 1)[0]
        assert not [column for column in left_out if column in selected], selected


def test_a_listed_row_loads_two_links_at_most_however_many_it_had(two_sessions, api):
    """A row gets a new link with every /clear, restart or new session id: listing it loads
    its newest link and its live exact one, not its history, and says what the whole history
    says."""
    alpha, beta = two_sessions
    for n in range(30):
        HookLink.objects.create(hook_session=f"hook-alpha-{n}", session=alpha, state=HookLink.State.ENDED, exact=n % 2 == 0)
        HookLink.objects.create(hook_session=f"hook-beta-{n}", session=beta, state=HookLink.State.ENDED)
    rows = {row.pk: row for row in directory.listed_sessions()}
    # alpha: its live exact link (the first it had) and its newest; beta: its newest alone.
    assert [link.hook_session for link in rows[alpha.pk].speaking_links] == ["hook-alpha-29", "hook-alpha"]
    assert [link.hook_session for link in rows[beta.pk].speaking_links] == ["hook-beta-29"]
    fresh = {row.pk: row for row in Session.objects.all()}
    listed = {s["handle"]: (s["link"], s["state"]) for s in api.get("/sessions_list").json()["sessions"]}
    assert listed == {row.handle: directory.link_state(row) for row in fresh.values()} == {alpha.handle: ("exact", "idle"), beta.handle: ("guessed", "ended")}
