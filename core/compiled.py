"""Querysets whose SQL is built once: for the reads every hook and every tool call makes.

Building a query with the ORM (cloning, resolving lookups, compiling) costs several times
what SQLite or PostgreSQL take to answer a lookup by key: the statements compiled with this
module cost 1.9 to 10.7 times as much built per call on SQLite, 1.5 to 4.8 times on PostgreSQL
(bench/compiled_queries.py; docs/mcp.md, "What the calls cost"). The queries on the hot
paths (the hook's pending check, the send's lookups and fleet checks, a name's rows, a page
of messages) are therefore written as ordinary querysets and compiled once per vendor:

    @compiled
    def process_links(proof: str):
        return HookLink.objects.filter(process_proof=proof).values_list("hook_session")[:1]

    process_links(proof)  # the rows, as the queryset would give them

The function is called once with marks standing for its parameters (by annotation: int,
str or datetime); the marks are found among the compiled statement's parameters and become
the call's values. Every other parameter (a state, a channel: the definition's constants) is
compiled into the statement as a literal quoted by the database itself, so that SQLite plans
a statement with a partial index's condition once, not on every call. A mark must stand for
a whole parameter (no `…__contains`: a LIKE pattern is no index lookup). The queryset must select one
model's own fields (no select_related or annotations; `.only()` leaves the others deferred) or
be a values_list;
a call returns model instances (made as `from_db` makes them, without `Model.__init__`:
`loaded_rows`; a model overriding either is refused) or tuples.

`insert(obj)` is the same for writing a new row: the model's INSERT built once; `insert_all(objs)`
writes several rows of one model with one INSERT.
"""

import functools
import inspect
from datetime import UTC, datetime, timedelta

from django.conf import settings as django_settings
from django.db import connection
from django.db.models import Model
from django.db.models.base import ModelState
from django.db.models.query import FlatValuesListIterable

# Marks no real value has: an id below any key, a text with NULs, a datetime before relaybay.
_INT_MARK = -(2**31) + 7
_EPOCH = datetime(1901, 1, 1, tzinfo=UTC)


def _mark(kind, i):
    if kind is int:
        return _INT_MARK + i
    if kind is str:
        return f"\x00relaybay-mark-{i}\x00"
    if kind is datetime:
        return _EPOCH + timedelta(days=i)
    raise TypeError(f"a compiled query's parameter is an int, a str or a datetime, not {kind!r}")


def _literal(value):
    """A constant as an SQL literal, quoted by the database itself, % doubled for the driver."""
    quote = "quote" if connection.vendor == "sqlite" else "quote_literal"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote}(%s)", [value])
        return cursor.fetchone()[0].replace("%", "%%")


class Statement:
    """The SQL of one queryset, and how a call's values become its parameters."""

    def __init__(self, build, kinds=None):
        self.kinds = list(kinds) if kinds is not None else [p.annotation for p in inspect.signature(build).parameters.values()]
        marks = [_mark(kind, i) for i, kind in enumerate(self.kinds)]
        queryset = build(*marks)
        query = queryset.query
        if query.select_related or query.annotations:
            raise ValueError("a compiled queryset selects one model's own fields, or values")
        self.model = queryset.model
        self.values = bool(query.values_select)
        self.flat = queryset._iterable_class is FlatValuesListIterable
        compiler = query.get_compiler(connection=connection)
        sql, compiled_params = compiler.as_sql()
        if not self.values:
            if self.model.__init__ is not Model.__init__ or self.model.from_db.__func__ is not Model.from_db.__func__:
                raise TypeError(f"{self.model.__name__} makes its instances in its own way; read it with the ORM")
            # Every concrete field, or those `.only()` names: the others are deferred, read
            # from the database if an instance is asked for one (as the ORM's would be).
            self.fields = [column.target.attname for column, _, _ in compiler.select]
        # What the ORM does to a row the driver gives (text to datetime or JSON, 0/1 to bool).
        self.compiler = compiler
        self.converters = compiler.get_converters([column for column, _, _ in compiler.select])
        adapted = [self._adapt(kind, mark) for kind, mark in zip(self.kinds, marks)]
        pieces = sql.split("%s")
        written = [pieces[0]]
        self.slots = []  # the argument each %s takes
        for param, piece in zip(compiled_params, pieces[1:]):
            slot = self._slot(param, marks, adapted)
            if slot is None:
                written += [_literal(param), piece]
            else:
                self.slots.append(slot)
                written += ["%s", piece]
        self.sql = "".join(written)

    @staticmethod
    def _adapt(kind, value):
        return connection.ops.adapt_datetimefield_value(value) if kind is datetime else value

    @staticmethod
    def _slot(param, marks, adapted):
        for i, (mark, value) in enumerate(zip(marks, adapted)):
            if param == mark or param == value:
                return i
            if isinstance(param, str) and isinstance(mark, str) and mark in param:
                raise ValueError("a compiled query's parameter stands for a whole value, not part of a pattern")
        return None

    def params(self, values):
        return [self._adapt(self.kinds[i], values[i]) for i in self.slots]

    def run(self, values):
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.params(values))
            rows = cursor.fetchall()
        if self.converters:
            rows = list(self.compiler.apply_converters(rows, self.converters))
        if self.values:
            return [row[0] for row in rows] if self.flat else rows
        return loaded_rows(self.model, self.fields, rows, connection.alias)


def loaded_rows(model, fields, rows, db):
    """Model instances of `rows` (each a value for every one of `fields`, the model's concrete
    fields' attnames), as `model.from_db(db, fields, row)` makes them: the fields' values in
    the instance's __dict__ and a ModelState of a saved row. Without Model.__init__, whose
    per-field loop, pre_init and post_init made building the rows cost as much as fetching and
    converting them (85 sessions and their 45 links: 0.64 ms of sessions_list's 1.15 ms of
    loading, docs/mcp.md). No signal is sent, as for `insert`: relaybay's models have no
    receivers."""
    new = model.__new__
    made = []
    for row in rows:
        obj = new(model)
        obj.__dict__.update(zip(fields, row))
        state = obj._state = ModelState()
        state.adding = False
        state.db = db
        made.append(obj)
    return made


class Compiled:
    """A queryset-building function compiled once per database vendor, and per value of the
    settings it reads (a limit, say). Call it with values for the rows, or `.first(...)` for
    the first row or None."""

    def __init__(self, build, settings=(), kinds=None):
        functools.update_wrapper(self, build)
        self.build = build
        self.settings = tuple(settings)
        self.kinds = kinds
        self.statements = {}

    def statement(self):
        key = (connection.vendor, *(getattr(django_settings, name) for name in self.settings))
        found = self.statements.get(key)
        if found is None:
            found = self.statements[key] = Statement(self.build, self.kinds)
        return found

    def __call__(self, *values):
        return self.statement().run(values)

    def first(self, *values):
        rows = self(*values)
        return rows[0] if rows else None


def compiled(build=None, *, settings=()):
    """`@compiled`, or `@compiled(settings=("RELAYBAY_UNREAD_CAP",))` for a build that reads
    those settings."""
    if build is None:
        return lambda build: Compiled(build, settings)
    return Compiled(build, settings)


class Insert:
    """One model's INSERT of `count` rows, built once: what `Model.save()` runs for each new row
    (each field's pre_save, such as auto_now_add, then its database value), without rebuilding
    the statement for every call. No signal is sent: relaybay's models have no receivers."""

    def __init__(self, model, count):
        if model.save is not Model.save:
            raise TypeError(f"{model.__name__} saves in its own way; save it with .save()")
        meta = model._meta
        quote = connection.ops.quote_name
        self.fields = [f for f in meta.concrete_fields if not f.primary_key]
        columns = ", ".join(quote(f.column) for f in self.fields)
        row = "(" + ", ".join(["%s"] * len(self.fields)) + ")"
        self.sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES {', '.join([row] * count)} RETURNING {quote(meta.pk.column)}"


_inserts = {}


def insert(obj):
    """Save `obj`, a new row, with its model's compiled INSERT; returns it with its id. (Every
    hook writes a feed row this way: one row needs no batching.)"""
    _insert_rows(type(obj), [obj])
    return obj


def insert_all(objs):
    """Save new rows of one model, in order, with one compiled INSERT (a broadcast's messages
    and their feed rows; as many as the database takes parameters for in one statement, as
    bulk_create would batch them); returns them with their ids."""
    if not objs:
        return objs
    model = type(objs[0])
    batch = max(1, connection.ops.bulk_batch_size(_statement(model, 1).fields, objs))
    for start in range(0, len(objs), batch):
        _insert_rows(model, objs[start : start + batch])
    return objs


def _statement(model, count):
    key = (connection.vendor, model, count)
    statement = _inserts.get(key)
    if statement is None:
        statement = _inserts[key] = Insert(model, count)
    return statement


def _insert_rows(model, objs):
    statement = _statement(model, len(objs))
    values = [f.get_db_prep_save(f.pre_save(obj, True), connection) for obj in objs for f in statement.fields]
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, values)
        # Ids are given in the order of the rows; RETURNING is not promised to list them so.
        ids = sorted(row[0] for row in cursor.fetchall())
    for obj, pk in zip(objs, ids, strict=True):
        obj.pk = pk
        obj._state.adding = False
        obj._state.db = connection.alias
