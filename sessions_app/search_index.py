"""The board search's entries of feed rows on SQLite, written in batches off the write path
(docs/rules.md §5.5; what it buys: docs/mcp.md, "Why the hot paths look like this").

Sessions, tasks and comments enter the index (board_search) by triggers as they are written
(0002_board_search). Feed rows are the rows written most: every hook writes one, a send two,
a broadcast to three seven. Through a trigger, each writing commit would add its rows'
entries as a new FTS5 segment: 15 of a broadcast's 36 WAL pages. On SQLite (0011_feed_search_in_batches)
their entries are written instead
- by the search, before it matches (`catch_up`), and
- by the write whose feed row's id is a multiple of CATCH_UP_EVERY (`keep_up`), so the index
  is never more than that many rows behind and no search waits long.
One statement indexes every row after the newest indexed one (its cost a row: docs/mcp.md).

PostgreSQL keeps its trigger. There, concurrent writers commit out of id order, so "every row
after the newest indexed id" could pass over a row committed late; on SQLite one writer at a
time takes the ids in commit order.
"""

import importlib

from django.db import connection, transaction

from core import capabilities

CATCH_UP_EVERY = 1000

_search = importlib.import_module("sessions_app.migrations.0002_board_search")
_KIND, _CODE, _, _TITLE, _BODY = _search.SQLITE_SOURCES["sessions_app_event"]

# The newest feed row indexed: rowids are 4 * id + kind code, so FTS5 walks its rowids down
# from the top (an index of its own) to the first of the feed's code.
NEWEST_INDEXED = f"SELECT rowid FROM board_search WHERE rowid % 4 = {_CODE} ORDER BY rowid DESC LIMIT 1"
INDEX_AFTER = (
    f"INSERT INTO board_search(rowid, kind, ref, title, body) "
    f"SELECT R.id * 4 + {_CODE}, '{_KIND}', R.id, {_TITLE}, {_BODY} FROM sessions_app_event AS R WHERE R.id > %s"
)


def catch_up():
    """Index every feed row written since the newest indexed one; returns how many. (On
    PostgreSQL the trigger has indexed each already.)"""
    if not capabilities.of(connection).feed_indexed_in_batches:
        return 0
    with transaction.atomic(), connection.cursor() as cursor:
        return index_newer(cursor)


def index_newer(cursor):
    """catch_up's statements, on SQLite (0011_feed_search_in_batches runs them too)."""
    cursor.execute(NEWEST_INDEXED)
    newest = cursor.fetchone()
    cursor.execute(INDEX_AFTER, [newest[0] // 4 if newest else 0])
    return cursor.rowcount


def keep_up(rows):
    """After feed rows are inserted, in the writer's transaction: the write whose row reaches a
    multiple of CATCH_UP_EVERY indexes every row not indexed yet, its own included."""
    if any(row.pk % CATCH_UP_EVERY == 0 for row in rows):
        catch_up()
