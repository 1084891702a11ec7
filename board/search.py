"""Full-text search over sessions, tasks, comments and events (docs/rules.md §5.5), with the database's
own engine: SQLite FTS5 or PostgreSQL text search over the `board_search` index that the
0002_board_search migration keeps up to date, and on SQLite sessions_app/search_index.py for the
feed rows (it catches up before a search matches). Message texts are never in the index.
"""

import re
import unicodedata
from dataclasses import dataclass, field

from django.db import connection
from django.utils.safestring import mark_safe

from core import capabilities

from sessions_app import directory
from sessions_app import search_index
from sessions_app.models import Comment, Event, Task

from . import pages

KINDS = ("session", "task", "comment", "event")
PER_KIND = 25
# Snippet highlight markers: control characters no indexed text contains, swapped for
# <mark> only after the snippet is escaped.
START, END = "\x02", "\x03"
WORD = re.compile(r"\w+")


@dataclass
class Results:
    query: str
    hits: dict = field(default_factory=dict)

    @property
    def total(self):
        return sum(len(rows) for rows in self.hits.values())


def _terms(text):
    """The words of a query, each a list of its letter-and-digit parts ("S-12" → ["S", "12"])."""
    return [parts for parts in (WORD.findall(word) for word in text.split()) if parts]


def _fts5_query(terms):
    # Each word is a phrase of its parts with the last part a prefix; words are ANDed.
    return " ".join('"' + " ".join(parts) + '"*' for parts in terms)


def _fold(part):
    """Lower case without diacritics, as the PostgreSQL index stores words."""
    return "".join(ch for ch in unicodedata.normalize("NFD", part.lower()) if not unicodedata.combining(ch))


def _tsquery(terms):
    words = []
    for parts in terms:
        quoted = ["'" + _fold(p).replace("'", "''") + "'" for p in parts]
        quoted[-1] += ":*"
        words.append("(" + " <-> ".join(quoted) + ")")
    return " & ".join(words)


def _matches(terms, kind):
    """(ref, snippet) pairs of one kind, best first."""
    with connection.cursor() as cursor:
        if capabilities.of(connection).search == "tsvector":
            # ts_headline would drop anything that looks like an HTML tag from the snippet,
            # so the snippet is cut here from the indexed text itself.
            cursor.execute(
                "SELECT ref, title || ' — ' || body FROM board_search, to_tsquery('simple', %s) AS q"
                " WHERE kind = %s AND doc @@ q ORDER BY ts_rank(doc, q) DESC, id DESC LIMIT %s",
                [_tsquery(terms), kind, PER_KIND],
            )
            return [(ref, _snippet(text, terms)) for ref, text in cursor.fetchall()]
        cursor.execute(
            "SELECT ref, snippet(board_search, -1, %s, %s, '…', 16) FROM board_search"
            " WHERE board_search MATCH %s AND kind = %s ORDER BY rank LIMIT %s",
            [START, END, _fts5_query(terms), kind, PER_KIND],
        )
        return cursor.fetchall()


def _snippet(text, terms, width=160):
    """Some words of `text` around the first match, the matching words marked."""
    words = re.compile(r"\b(?:" + "|".join(re.escape(part) for parts in terms for part in parts) + r")\w*", re.I)
    first = words.search(text)
    start = max(0, first.start() - width // 3) if first else 0
    window = words.sub(lambda match: START + match.group(0) + END, text[start : start + width])
    return ("…" if start else "") + window + ("…" if start + width < len(text) else "")


def highlight(snippet):
    """The snippet as safe HTML: escaped, invisible characters shown, matches in <mark>."""
    html = []
    for i, part in enumerate(re.split(f"[{START}{END}]", snippet or "")):
        shown = pages.plain_html(part)
        html.append(f"<mark>{shown}</mark>" if i % 2 else shown)
    return mark_safe("".join(html))


def _rows(kind, refs):
    if kind == "session":
        rows = pages.decorate_sessions(directory.sessions_with_links().filter(pk__in=refs))
    elif kind == "task":
        rows = Task.objects.filter(pk__in=refs)
    elif kind == "comment":
        rows = Comment.objects.filter(pk__in=refs).select_related("session")
    else:
        rows = Event.objects.filter(pk__in=refs).select_related("session")
    return {row.pk: row for row in rows}


def search(text):
    terms = _terms(text)
    results = Results(text)
    if not terms:
        return results
    search_index.catch_up()
    for kind in KINDS:
        matches = _matches(terms, kind)
        rows = _rows(kind, [ref for ref, _ in matches])
        hits = []
        for ref, snippet in matches:
            row = rows.get(int(ref))
            if row is not None:
                row.snippet = highlight(snippet)
                hits.append(row)
        results.hits[kind] = hits
    return results
