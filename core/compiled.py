"""Querysets whose SQL is built once: for the reads every hook and every tool call makes.

Building a query with the ORM (cloning, resolving lookups, compiling) costs several times
what SQLite or PostgreSQL take to answer a lookup by key (bench/compiled_queries.py), and the
MCP tools' lead over MCP Agent Mail rests on it: with every read of a send built by the ORM,
`message_send` takes 4.5 times as long in process and is 8.8 times as fast as Agent Mail's
over http, where compiled it is 17 times as fast (docs/mcp.md, "Built once, or by the ORM").
The queries on the hot paths are therefore written as ordinary querysets and built once per
vendor:

    @compiled
    def process_links(proof: str):
        return HookLink.objects.filter(process_proof=proof).values_list("hook_session")

    process_links(proof)        # the rows, as list(queryset) gives them
    process_links.first(proof)  # as queryset.first() gives it

A statement is used only once it is proven to answer as its queryset does; a queryset it
cannot prove that of raises `Unprovable` when its statement is built, so a call fails rather
than answer wrongly:

- The function is called twice with marks standing for its parameters (by annotation: int,
  str or datetime): plain marks, and marks that any lookup changing its value would change (a
  str with `%`, `_`, `\\`, quotes, capitals, a line break and spaces around it; ints near both
  ends of the 32-bit range; a datetime with microseconds in another time zone). Both must
  compile to the same SQL, and every mark must come back among the parameters whole and
  unchanged (a datetime as the database adapts it), each in the same places. So a lookup that
  escapes its value (`iexact` on SQLite), wraps it (`contains`), encodes it (a JSON key
  lookup) or casts it, a mark in a LIMIT, a value read at build time (the clock) and a
  parameter the queryset never uses are all refused. Every other parameter is a constant of
  the definition (a state, a channel), compiled in as a literal quoted by the database itself,
  so that SQLite plans a statement with a partial index's condition once, not on every call.
- The queryset selects one model's own fields (no select_related, annotations, extra,
  prefetch, combined or related-manager querysets; `.only()` leaves the others deferred, as
  the ORM does) or is a values_list.
- A call whose values are not of the kinds proven (None, a bool, a str for an int, a naive
  datetime, an int outside the marks' range) is answered by the ORM itself: the queryset is
  built with those values, as it would be without this module.
- `.first()` is a statement of its own, built as QuerySet.first() builds it: ordered by pk
  when the queryset has no ordering, LIMIT 1.
- A SELECT ... FOR UPDATE raises TransactionManagementError outside a transaction on every
  call, as the ORM does (Django checks it while compiling, which a statement does once).
- Model rows are made as `from_db` makes them, without `Model.__init__` (`loaded_rows`), while
  the model has no pre_init or post_init receiver; with one, by `Model.from_db` itself. A model
  overriding `__init__` or `from_db` is refused.

`insert(obj)` writes a new row as `obj.save()` does, with the model's INSERT built once (with a
pre_save or post_save receiver connected, by `save()` itself); `insert_all(objs)` writes several
rows of one model as `bulk_create` does, with one INSERT per batch.
"""

import functools
import inspect
from datetime import UTC, datetime, timedelta, timezone

from django.conf import settings as django_settings
from django.db import connection
from django.db.transaction import TransactionManagementError
from django.db.models import Model, signals
from django.db.models.base import ModelState
from django.db.models.query import FlatValuesListIterable, ModelIterable, ValuesListIterable


class Unprovable(ValueError):
    """A queryset whose statement cannot be shown to answer as the queryset does."""


# Marks no real value has: ids near the ends of the 32-bit range, texts with NULs, datetimes
# before relaybay. The checking marks differ from the plain ones in everything a lookup might
# change: case, spaces, LIKE's wildcards and escape, quotes, a line break, the time zone.
_INT_LOW = -(2**31) + 7
_INT_HIGH = 2**31 - 8
_EPOCH = datetime(1901, 1, 1, tzinfo=UTC)
_CHECKING_MOMENT = datetime(1902, 3, 4, 5, 6, 7, 123456, tzinfo=timezone(timedelta(hours=5, minutes=30)))
_MARK_TEXTS = ("relaybay-mark-", "Relaybay_Mark%")
_ROWS = (ModelIterable, ValuesListIterable, FlatValuesListIterable)


def _mark(kind, i, checking=False):
    if kind is int:
        return _INT_HIGH - i if checking else _INT_LOW + i
    if kind is str:
        return f" \x00Relaybay_Mark%{i}\\'\"\n\x00 " if checking else f"\x00relaybay-mark-{i}\x00"
    if kind is datetime:
        return (_CHECKING_MOMENT if checking else _EPOCH) + timedelta(days=i)
    raise TypeError(f"a compiled query's parameter is an int, a str or a datetime, not {kind!r}")


def _proven(kind, value):
    """Whether `value` is of the kind the marks proved the statement for."""
    if kind is int:
        return type(value) is int and _INT_LOW <= value <= _INT_HIGH
    if kind is str:
        return isinstance(value, str)
    return isinstance(value, datetime) and value.utcoffset() is not None


def _adapt(kind, value):
    return connection.ops.adapt_datetimefield_value(value) if kind is datetime else value


def _same(param, value):
    return type(param) is type(value) and param == value


def _holds_mark(param):
    return isinstance(param, str) and any(text in param for text in _MARK_TEXTS)


def _literal(value):
    """A constant as an SQL literal, quoted by the database itself, % doubled for the driver."""
    quote = "quote" if connection.vendor == "sqlite" else "quote_literal"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote}(%s)", [value])
        return cursor.fetchone()[0].replace("%", "%%")


def _refuse_what_rows_cannot_show(queryset):
    query = queryset.query
    if query.select_related or query.annotations or query.extra or query.extra_tables or query.combinator:
        raise Unprovable("a compiled queryset selects one model's own fields, or values: no select_related, annotations, extra or union")
    if queryset._prefetch_related_lookups or queryset._known_related_objects:
        raise Unprovable("a compiled queryset is a model's own, without prefetch_related and not a related manager's")
    if queryset._iterable_class not in _ROWS:
        raise Unprovable("a compiled queryset gives model rows or values_list tuples (not dicts or named tuples)")
    if queryset.db != connection.alias:
        raise Unprovable(f"a compiled queryset reads the {connection.alias!r} database")


def _init_receivers(model):
    return signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model)


class Statement:
    """The SQL of one queryset, proven to answer as the queryset does (the module's docstring),
    and how a call's values become its parameters."""

    def __init__(self, build, kinds=None):
        self.build = build
        self.kinds = tuple(kinds) if kinds is not None else tuple(p.annotation for p in inspect.signature(build).parameters.values())
        plain = [_mark(kind, i) for i, kind in enumerate(self.kinds)]
        checking = [_mark(kind, i, checking=True) for i, kind in enumerate(self.kinds)]
        queryset = build(*plain)
        _refuse_what_rows_cannot_show(queryset)
        query = queryset.query
        self.model = queryset.model
        self.for_update = query.select_for_update
        self.values = queryset._iterable_class is not ModelIterable
        self.flat = queryset._iterable_class is FlatValuesListIterable
        compiler = query.get_compiler(connection=connection)
        sql, params = compiler.as_sql()
        other_sql, other_params = build(*checking).query.get_compiler(connection=connection).as_sql()
        if other_sql != sql or len(other_params) != len(params):
            raise Unprovable("the queryset's SQL depends on its parameters' values")
        if not self.values:
            if self.model.__init__ is not Model.__init__ or self.model.from_db.__func__ is not Model.from_db.__func__:
                raise TypeError(f"{self.model.__name__} makes its instances in its own way; read it with the ORM")
            # Every concrete field, or those `.only()` names: the others are deferred, read
            # from the database if an instance is asked for one (as the ORM's would be).
            self.fields = [column.target.attname for column, _, _ in compiler.select]
        # What the ORM does to a row the driver gives (text to datetime or JSON, 0/1 to bool).
        self.compiler = compiler
        self.converters = compiler.get_converters([column for column, _, _ in compiler.select])
        plain = [_adapt(kind, mark) for kind, mark in zip(self.kinds, plain)]
        checking = [_adapt(kind, mark) for kind, mark in zip(self.kinds, checking)]
        pieces = sql.split("%s")
        if len(pieces) != len(params) + 1:
            raise Unprovable("the queryset's SQL holds a %s that is not a parameter")
        written = [pieces[0]]
        self.slots = []  # the argument each %s takes
        for param, other, piece in zip(params, other_params, pieces[1:]):
            slot = next((i for i, mark in enumerate(plain) if _same(param, mark)), None)
            if slot is not None:
                if not _same(other, checking[slot]):
                    raise Unprovable(f"parameter {slot} is changed on its way to the database (a lookup that escapes, wraps, encodes or casts it)")
                self.slots.append(slot)
                written += ["%s", piece]
            elif _holds_mark(param) or _holds_mark(other) or not _same(param, other):
                raise Unprovable("a value made from a parameter (a pattern, an encoding), or read while building (the clock): not a whole parameter")
            else:
                written += [_literal(param), piece]
        missing = sorted(set(range(len(self.kinds))) - set(self.slots))
        if missing:
            raise Unprovable(f"parameter {missing[0]} is not among the statement's parameters (in a LIMIT, say, or not used)")
        self.sql = "".join(written)

    def proves(self, values):
        """Whether the statement answers for these values (else the ORM does)."""
        return len(values) == len(self.kinds) and all(_proven(kind, value) for kind, value in zip(self.kinds, values))

    def params(self, values):
        return [_adapt(self.kinds[i], values[i]) for i in self.slots]

    def run(self, values):
        if self.for_update and connection.features.has_select_for_update and connection.features.supports_transactions and connection.get_autocommit():
            raise TransactionManagementError("select_for_update cannot be used outside of a transaction.")
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.params(values))
            rows = cursor.fetchall()
        if self.converters:
            rows = list(self.compiler.apply_converters(rows, self.converters))
        if self.values:
            return [row[0] for row in rows] if self.flat else [tuple(row) for row in rows]
        if _init_receivers(self.model):
            return [self.model.from_db(connection.alias, self.fields, row) for row in rows]
        return loaded_rows(self.model, self.fields, rows, connection.alias)


def loaded_rows(model, fields, rows, db):
    """Model instances of `rows` (each a value for every one of `fields`, the model's concrete
    fields' attnames), as `model.from_db(db, fields, row)` makes them: the fields' values in
    the instance's __dict__ and a ModelState of a saved row. Without Model.__init__, whose
    per-field loop, pre_init and post_init made building the rows cost as much as fetching and
    converting them (85 sessions and their 45 links: 0.64 ms of sessions_list's 1.15 ms of
    loading). Only for a model with no pre_init or post_init receiver (Statement.run asks)."""
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


def _as_first(queryset):
    """The queryset QuerySet.first() reads: ordered by pk if it has no ordering, one row."""
    if not (queryset.ordered or not queryset.query.default_ordering):
        queryset._check_ordering_first_last_queryset_aggregation(method="first")
        queryset = queryset.order_by("pk")
    return queryset[:1]


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

    def statement(self, first=False):
        key = (connection.vendor, first, *(getattr(django_settings, name) for name in self.settings))
        found = self.statements.get(key)
        if found is None:
            build = (lambda *marks: _as_first(self.build(*marks))) if first else self.build
            found = self.statements[key] = Statement(build, self.kinds if self.kinds is not None else _kinds_of(self.build))
        return found

    def __call__(self, *values):
        statement = self.statement()
        if not statement.proves(values):
            return list(self.build(*values))
        return statement.run(values)

    def first(self, *values):
        statement = self.statement(first=True)
        if not statement.proves(values):
            return self.build(*values).first()
        rows = statement.run(values)
        return rows[0] if rows else None


def _kinds_of(build):
    return tuple(p.annotation for p in inspect.signature(build).parameters.values())


def compiled(build=None, *, settings=()):
    """`@compiled`, or `@compiled(settings=("RELAYBAY_UNREAD_CAP",))` for a build that reads
    those settings."""
    if build is None:
        return lambda build: Compiled(build, settings)
    return Compiled(build, settings)


class Insert:
    """One model's INSERT of `count` rows, built once: what `Model.save()` runs for each new row
    (each field's pre_save, such as auto_now_add, then its database value), without rebuilding
    the statement for every call."""

    def __init__(self, model, count):
        if model.save is not Model.save:
            raise TypeError(f"{model.__name__} saves in its own way; save it with .save()")
        meta = model._meta
        if meta.parents or any(f.generated or f.has_db_default() for f in meta.concrete_fields):
            raise TypeError(f"{model.__name__} has a parent or fields the database fills in; save it with .save()")
        quote = connection.ops.quote_name
        self.fields = [f for f in meta.concrete_fields if not f.primary_key]
        columns = ", ".join(quote(f.column) for f in self.fields)
        row = "(" + ", ".join(["%s"] * len(self.fields)) + ")"
        self.sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES {', '.join([row] * count)} RETURNING {quote(meta.pk.column)}"


_inserts = {}


def _save_receivers(model):
    return signals.pre_save.has_listeners(model) or signals.post_save.has_listeners(model)


def insert(obj):
    """Save `obj`, a new row, as `obj.save()` does, with its model's compiled INSERT; returns it
    with its id. (Every hook writes a feed row this way: one row needs no batching.) A row with
    its id already set, or of a model with a pre_save or post_save receiver, is saved by save()."""
    model = type(obj)
    _statement(model, 1)  # a model that saves in its own way is refused
    if obj.pk is not None or _save_receivers(model):
        obj.save()
        return obj
    obj._prepare_related_fields_for_save(operation_name="save")
    _insert_rows(model, [obj])
    return obj


def insert_all(objs):
    """Save new rows of one model, in order, as bulk_create does, with one compiled INSERT (a
    broadcast's messages and their feed rows; as many as the database takes parameters for in
    one statement, as bulk_create batches them); returns them with their ids. Rows with their
    ids already set are written by bulk_create itself."""
    if not objs:
        return objs
    model = type(objs[0])
    fields = _statement(model, 1).fields
    if any(obj.pk is not None for obj in objs):
        return model._default_manager.bulk_create(objs)
    for obj in objs:
        obj._prepare_related_fields_for_save(operation_name="bulk_create")
    batch = max(1, connection.ops.bulk_batch_size(fields, objs))
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
