"""What relaybay's two databases do differently, declared once.

As Django's backends declare what they support in their `features.py` and the ORM asks
`connection.features.supports_x`, relaybay asks `capabilities.of(connection).x`, never the
database's name: this module is the one place that names SQLite and PostgreSQL.
"""

from dataclasses import dataclass

from django.db import connection as default_connection


@dataclass(frozen=True)
class Capabilities:
    # Transaction-level advisory locks (pg_advisory_xact_lock): concurrent transactions about
    # one key take turns (directory.serialize_on). Without them nothing is needed: SQLite's
    # IMMEDIATE transactions let one writer in at a time.
    advisory_locks: bool
    # The board's search index: "fts5" (an FTS5 table) or "tsvector" (a tsvector column).
    search: str
    # Feed rows enter the search index in batches after they are written (sessions_app/search_index.py),
    # rather than by a trigger: one writer at a time takes ids in commit order.
    feed_indexed_in_batches: bool
    # The planner reads statistics gathered by ANALYZE (autovacuum gathers them as it runs): a
    # benchmark's bulk load is followed by an ANALYZE, as a running server would soon have one.
    plans_by_statistics: bool


SQLITE = Capabilities(advisory_locks=False, search="fts5", feed_indexed_in_batches=True, plans_by_statistics=False)
POSTGRESQL = Capabilities(advisory_locks=True, search="tsvector", feed_indexed_in_batches=False, plans_by_statistics=True)
_BY_VENDOR = {"sqlite": SQLITE, "postgresql": POSTGRESQL}


def of(connection=None):
    """The capabilities of `connection`'s database (the default connection's by default)."""
    return _BY_VENDOR[(connection or default_connection).vendor]
