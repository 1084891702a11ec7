"""The board's full-text index (docs/rules.md §5.5): sessions, tasks, comments and events, kept up to
date by triggers so every writer (actions, hook ingestion, bulk loads, the admin) is covered.

SQLite: an FTS5 table. PostgreSQL: a table with a generated tsvector and a GIN index.
Row ids are `4 * source id + kind` so a trigger finds its row by primary key. Message texts
(the session_message table) are never indexed.
"""

import unicodedata

from django.db import migrations

from core import capabilities

SQLITE_FORWARD = [
    """CREATE VIRTUAL TABLE board_search USING fts5(
        kind UNINDEXED, ref UNINDEXED, title, body, tokenize = 'unicode61 remove_diacritics 2')""",
]
SQLITE_SOURCES = {
    # table: (kind, code, columns whose update re-indexes, title expression, body expression)
    "sessions_app_session": (
        "session", 0, "title, aliases, desktop_id, folder, status, kind",
        "COALESCE(R.title, '') || ' ' || COALESCE(R.desktop_id, '') || ' S-' || R.id || ' '"
        " || COALESCE((SELECT group_concat(value, ' ') FROM json_each(R.aliases)), '')",
        "COALESCE(R.folder, '') || ' ' || COALESCE(R.status, '') || ' ' || R.kind",
    ),
    "sessions_app_task": ("task", 1, "title, status", "R.title", "R.status"),
    "sessions_app_comment": ("comment", 2, "body, session_name", "R.session_name", "R.body"),
    "sessions_app_event": (
        "event", 3, None,
        "R.name || ' ' || R.hook_session",
        "COALESCE((SELECT group_concat(atom, ' ') FROM json_tree(R.data) WHERE atom IS NOT NULL), '')",
    ),
}

for table, (kind, code, columns, title, body) in SQLITE_SOURCES.items():
    insert = (
        f"INSERT INTO board_search(rowid, kind, ref, title, body) "
        f"SELECT NEW.id * 4 + {code}, '{kind}', NEW.id, {title.replace('R.', 'NEW.')}, {body.replace('R.', 'NEW.')};"
    )
    delete = f"DELETE FROM board_search WHERE rowid = OLD.id * 4 + {code};"
    SQLITE_FORWARD.append(f"CREATE TRIGGER board_search_{kind}_ai AFTER INSERT ON {table} BEGIN {insert} END")
    SQLITE_FORWARD.append(f"CREATE TRIGGER board_search_{kind}_ad AFTER DELETE ON {table} BEGIN {delete} END")
    if columns:
        SQLITE_FORWARD.append(
            f"CREATE TRIGGER board_search_{kind}_au AFTER UPDATE OF {columns} ON {table} BEGIN {delete} {insert} END"
        )
    SQLITE_FORWARD.append(
        f"INSERT INTO board_search(rowid, kind, ref, title, body) "
        f"SELECT R.id * 4 + {code}, '{kind}', R.id, {title}, {body} FROM {table} AS R"
    )

SQLITE_BACKWARD = [
    *[f"DROP TRIGGER IF EXISTS board_search_{kind}_{op}" for kind, *_ in SQLITE_SOURCES.values() for op in ("ai", "ad", "au")],
    "DROP TABLE IF EXISTS board_search",
]



def _folded_latin():
    """Latin letters with diacritics (U+00C0-U+024F) and the ASCII letter each folds to, as
    FTS5's remove_diacritics does; PostgreSQL's "simple" configuration does not fold them."""
    pairs = []
    for code in range(0xC0, 0x250):
        base = unicodedata.normalize("NFD", chr(code))[0]
        if base.isascii() and base.isalpha() and base != chr(code):
            pairs.append((chr(code), base))
    return "".join(a for a, _ in pairs), "".join(b for _, b in pairs)


ACCENTED, PLAIN = _folded_latin()
# Both backends split words on anything that is not a letter or digit, so "S-12" and
# "/work/proj" match their parts alike, and fold diacritics.
WORDS = "translate(regexp_replace({}, '[^[:alnum:]]+', ' ', 'g'), '" + ACCENTED + "', '" + PLAIN + "')"
PG_FORWARD = [
    """CREATE TABLE board_search (
        id bigint PRIMARY KEY,
        kind varchar(10) NOT NULL,
        ref bigint NOT NULL,
        title text NOT NULL,
        body text NOT NULL,
        doc tsvector GENERATED ALWAYS AS (
            setweight(to_tsvector('simple', WORDS_TITLE), 'A') || setweight(to_tsvector('simple', WORDS_BODY), 'B')
        ) STORED)""".replace("WORDS_TITLE", WORDS.format("title")).replace("WORDS_BODY", WORDS.format("body")),
    "CREATE INDEX board_search_doc ON board_search USING GIN (doc)",
    """CREATE FUNCTION board_search_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN DELETE FROM board_search WHERE kind = TG_ARGV[0]; RETURN NULL; END $$""",
]
PG_SOURCES = {
    "sessions_app_session": (
        "session", 0, "title, aliases, desktop_id, folder, status, kind",
        "COALESCE(R.title, '') || ' ' || COALESCE(R.desktop_id, '') || ' S-' || R.id || ' '"
        " || COALESCE((SELECT string_agg(a, ' ') FROM jsonb_array_elements_text(R.aliases) AS a), '')",
        "COALESCE(R.folder, '') || ' ' || COALESCE(R.status, '') || ' ' || R.kind",
    ),
    "sessions_app_task": ("task", 1, "title, status", "R.title", "R.status"),
    "sessions_app_comment": ("comment", 2, "body, session_name", "R.session_name", "R.body"),
    "sessions_app_event": (
        "event", 3, None,
        "R.name || ' ' || R.hook_session",
        "COALESCE((SELECT string_agg(v #>> '{}', ' ') FROM jsonb_path_query(R.data, 'strict $.**') AS v"
        " WHERE jsonb_typeof(v) IN ('string', 'number')), '')",
    ),
}
for table, (kind, code, columns, title, body) in PG_SOURCES.items():
    select = f"SELECT R.id * 4 + {code}, '{kind}', R.id, {title}, {body}"
    trigger_select = select.replace("R.", "NEW.")
    PG_FORWARD += [
        f"""CREATE FUNCTION board_search_{kind}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') THEN DELETE FROM board_search WHERE id = OLD.id * 4 + {code}; END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                INSERT INTO board_search (id, kind, ref, title, body) {trigger_select};
            END IF;
            RETURN NULL;
        END $$""",
        f"CREATE TRIGGER board_search_{kind} AFTER INSERT OR DELETE"
        + (f" OR UPDATE OF {columns}" if columns else "")
        + f" ON {table} FOR EACH ROW EXECUTE FUNCTION board_search_{kind}()",
        f"CREATE TRIGGER board_search_{kind}_truncate AFTER TRUNCATE ON {table}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION board_search_truncate('{kind}')",
        f"INSERT INTO board_search (id, kind, ref, title, body) {select} FROM {table} AS R",
    ]
PG_BACKWARD = [
    *[f"DROP TRIGGER IF EXISTS board_search_{kind} ON {table}" for table, (kind, *_) in PG_SOURCES.items()],
    *[f"DROP TRIGGER IF EXISTS board_search_{kind}_truncate ON {table}" for table, (kind, *_) in PG_SOURCES.items()],
    *[f"DROP FUNCTION IF EXISTS board_search_{kind}()" for kind, *_ in PG_SOURCES.values()],
    "DROP FUNCTION IF EXISTS board_search_truncate()",
    "DROP TABLE IF EXISTS board_search",
]


def _run(statements):
    def run(apps, schema_editor):
        for statement in statements[capabilities.of(schema_editor.connection).search]:
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"fts5": SQLITE_FORWARD, "tsvector": PG_FORWARD}),
            _run({"fts5": SQLITE_BACKWARD, "tsvector": PG_BACKWARD}),
        ),
    ]
