"""The indexes relaybay's tables carry, as the migrations leave them on either database. Each index
is written with every row: every hook and every send writes feed rows, every send a message.
So an index stays only if a query needs it, and a foreign key's own index goes where another
index leads with the same column."""

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.admin.utils import label_for_field
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from messaging.models import Dispatch, SessionMessage
from sessions_app.models import Event

from .board_fixtures import owner  # noqa: F401

pytestmark = pytest.mark.django_db

APPS = ("sessions_app", "messaging")


def models():
    return [model for app in APPS for model in apps.get_app_config(app).get_models()]


def indexes(model):
    """{name: columns} of the table's indexes in the database (unique ones too), the primary
    key's left out."""
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, model._meta.db_table)
    return {name: tuple(c["columns"]) for name, c in found.items() if (c["index"] or c["unique"]) and not c["primary_key"] and c["columns"]}


def conditional(model):
    """The names of the model's indexes and unique constraints that hold only some rows."""
    return {item.name for item in [*model._meta.indexes, *model._meta.constraints] if getattr(item, "condition", None) is not None}


def test_every_foreign_key_leads_an_index_of_every_row():
    """A row's messages, links, feed rows and dispatches are found by an index, and deleting a
    row finds what points at it by one too (Django's SET_NULL and CASCADE, and the databases'
    own checks of the key). An index with a condition does not count: it holds only the rows
    it names."""
    for model in models():
        partial = conditional(model)
        leads = {columns[0] for name, columns in indexes(model).items() if name not in partial}
        for field in model._meta.concrete_fields:
            if field.is_relation:
                assert field.column in leads, f"{model._meta.db_table}.{field.column} leads no index"


def declared(model):
    """(columns, conditional) of each index the model declares: its keys' and fields' own,
    its indexes and its unique constraints."""
    found = [((field.column,), False) for field in model._meta.concrete_fields if field.db_index or field.unique]
    for item in [*model._meta.indexes, *model._meta.constraints]:
        fields = getattr(item, "fields", ())
        if fields:
            columns = tuple(model._meta.get_field(name.lstrip("-")).column for name in fields)
            found.append((columns, getattr(item, "condition", None) is not None))
    return found


def test_no_index_repeats_the_lead_of_another():
    """An index of every row whose columns begin another index of every row adds nothing to a
    lookup and costs every write. (An index with a condition holds only the rows it names.)"""
    for model in models():
        whole = [columns for columns, conditional in declared(model) if not conditional]
        for columns in whole:
            longer = [other for other in whole if len(other) > len(columns) and other[: len(columns)] == columns]
            assert not longer, f"{model._meta.db_table}: {columns} is the lead of {longer}"


def test_the_tables_every_send_writes_carry_only_the_indexes_their_queries_use():
    """As the database has them after the migrations (0010 and 0006 drop four by name)."""
    assert set(indexes(Event).values()) == {("name",), ("session_id", "id")}
    # A dispatch: its rate slot by process (0007), its sender's key, its request id by sender.
    assert set(indexes(Dispatch).values()) == {("process", "created_at"), ("sender_id",), ("sender_id", "request_id")}
    # The message table's own: the keys' single-column indexes are gone (message_unread, on
    # the recipient too, holds only unread messages).
    names = indexes(SessionMessage)
    assert "message_unread" in names
    assert [name for name, columns in names.items() if columns in {("sender_id",), ("recipient_id",)}] == ["message_unread"]


def test_the_admins_feed_sorted_by_time_goes_by_the_primary_key(owner):
    """The admin's "created at" column sorts by id: created_at has no index, and a sort by it
    would read and sort every feed row there is."""
    owner.is_superuser = True
    owner.save()
    client = Client()
    client.force_login(owner)
    Event.objects.create(name="hook.Stop")
    site_admin = admin.site._registry[Event]
    labels = [label_for_field(name, Event, site_admin) for name in site_admin.list_display]
    column = 1 + labels.index("created at")
    with CaptureQueriesContext(connection) as queries:
        for order in (f"{column}", f"-{column}"):
            assert client.get(f"/admin/sessions_app/event/?o={order}").status_code == 200
    listed = [q["sql"] for q in queries.captured_queries if 'FROM "sessions_app_event"' in q["sql"] and "ORDER BY" in q["sql"]]
    assert listed
    for sql in listed:
        assert '"created_at"' not in sql.split("ORDER BY")[1], sql
