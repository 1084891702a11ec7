"""The indexes relaybay's tables carry, as the migrations leave them on either database. Each index
is written with every row: every hook and every send writes feed rows, every send a message.
So an index stays only if a query needs it, and a foreign key's own index goes where another
index leads with the same column."""

import pytest
from django.apps import apps
from django.db import connection

from messaging.models import Dispatch, SessionMessage
from sessions_app.models import Event

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


def test_every_foreign_key_leads_an_index():
    """A row's messages, links, feed rows and dispatches are found by an index, and deleting a
    row finds what points at it by one too (Django's SET_NULL and CASCADE, and the databases'
    own checks of the key)."""
    for model in models():
        leads = {columns[0] for columns in indexes(model).values()}
        for field in model._meta.concrete_fields:
            if field.is_relation:
                assert field.column in leads, f"{model._meta.db_table}.{field.column} leads no index"


def declared(model):
    """(columns, conditional) of each index the model declares, its keys' own included."""
    found = [((field.column,), False) for field in model._meta.concrete_fields if field.db_index and not field.unique]
    found += [(tuple(model._meta.get_field(name.lstrip("-")).column for name in index.fields), index.condition is not None) for index in model._meta.indexes]
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
    assert set(indexes(Dispatch).values()) == {("sender_id", "created_at"), ("sender_id", "request_id")}
    # The message table's own: the keys' single-column indexes are gone (message_unread, on
    # the recipient too, holds only unread messages).
    names = indexes(SessionMessage)
    assert "message_unread" in names
    assert [name for name, columns in names.items() if columns in {("sender_id",), ("recipient_id",)}] == ["message_unread"]
