"""The Map (docs/rules.md §5.5): sessions as nodes and `session.message` events as edges with counts,
one edge per direction and channel (relaybay's, desktop, Claude Code's native), laid out on a
circle and drawn as SVG by the server; on request, a line between two live sessions that edited
the same files lately, with how many (docs/rules.md §7.4)."""

import math
from dataclasses import dataclass

from datetime import timedelta

from django.core.cache import cache
from django.db.models import Count, Max
from django.db.models.fields.json import KT
from django.utils import timezone

import engines
from messaging import reads
from core.inputs import parse_id
from collisions import files
from sessions_app import directory
from sessions_app.models import Event, Task

from . import pages

MAX_NODES = 120
LABEL_CHARS = 28
NODE_RADIUS = 7
FONT_SIZE = 11
MARGIN = 150
# The drawing is scaled to fill the page (about this many pixels high on a laptop): beyond
# this size, nodes, labels and arrows grow with it so they stay readable once scaled down.
SHOWN_PX = 600
EDGE_CACHE_KEY = "relaybay.map.edges.by-channel"
# An event older than this has committed: no transaction of an action stays open that long.
SETTLED = timedelta(seconds=30)


@dataclass
class Node:
    key: str
    name: str
    session_id: int | None
    css: str
    engine: str = ""
    doing: str = ""
    default_cli: bool = False  # its label names no CLI
    x: float = 0
    y: float = 0
    label_x: float = 0
    anchor: str = "start"

    @property
    def label(self):
        name = pages.visible_text(self.name)
        return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"

    @property
    def title(self):
        return pages.visible_text(self.name)

    @property
    def doing_title(self):
        return f": {pages.visible_text(self.doing)}" if self.doing else ""


@dataclass
class Edge:
    source: Node
    target: Node
    count: int
    channel: str = "mcp"
    path: str = ""
    label_x: float = 0
    label_y: float = 0
    scale: float = 1.0

    @property
    def width(self):
        return round((1 + math.log2(self.count)) * self.scale, 2)


@dataclass
class Drawing:
    nodes: list
    edges: list
    size: int
    task: Task | None
    scale: float = 1.0

    @property
    def font_size(self):
        return round(FONT_SIZE * self.scale, 1)

    @property
    def node_radius(self):
        return round(NODE_RADIUS * self.scale, 1)

    @property
    def arrow_size(self):
        return round(10 * self.scale, 1)


def _count_edges(events, counts):
    rows = (
        events.annotate(source=KT("data__from"), target=KT("data__to"), channel=KT("data__channel"))
        .values("source", "target", "channel")
        .annotate(count=Count("id"), source_name=Max(KT("data__from_name")), target_name=Max(KT("data__to_name")))
    )
    for row in rows:
        key = (row["source"], row["target"], row["channel"] or "mcp")
        count, source_name, target_name = counts.get(key, (0, None, None))
        counts[key] = (count + row["count"], row["source_name"] or source_name, row["target_name"] or target_name)
    return counts


def message_edges(task=None):
    """(from handle, to handle, count, from name, to name, channel), from the `session.message`
    events.

    Events are never changed once written, so the counts of settled events (older than
    SETTLED) are kept in the cache and only newer events are counted per request; the map
    is redrawn on every message ping and must not re-read a large event table each time.
    """
    events = Event.objects.filter(name="session.message")
    settled_id, counts = cache.get(EDGE_CACHE_KEY) or (0, {})
    if settled_id and not events.filter(id__gte=settled_id).exists():
        # The table is younger than the cache (a new database behind the same process).
        settled_id, counts = 0, {}
    settled = events.filter(id__gt=settled_id, created_at__lt=timezone.now() - SETTLED).aggregate(last=Max("id"))["last"]
    if settled:
        counts = _count_edges(events.filter(id__gt=settled_id, id__lte=settled), dict(counts))
        settled_id = settled
        cache.set(EDGE_CACHE_KEY, (settled_id, counts), None)
    fresh = events.filter(id__gt=settled_id)
    if fresh.exists():
        counts = _count_edges(fresh, dict(counts))
    if task is None:
        return [(source, target, *counted, channel) for (source, target, channel), counted in counts.items()]
    # As the board's task filter of messages (messaging.reads.involving): what the task's
    # sessions sent or received, and what was tagged with the task.
    handles = {f"S-{pk}" for pk in task.sessions.values_list("pk", flat=True)}
    pairs = reads.task_pairs(task)
    return [
        (source, target, count, source_name, target_name, channel)
        for (source, target, channel), (count, source_name, target_name) in counts.items()
        if source in handles or target in handles or (source, target) in pairs
    ]


def file_edges(task=None):
    """(handle, handle, count, name, name, "files") for each pair of live sessions that edited the
    same files within the collision window, counting those files; with a task, the pairs with one
    of its sessions."""
    pairs, names = {}, {}
    for group in files.shared(timezone.now(), "path_key"):
        for edit in group:
            names[edit.session_id] = edit.session.public_name
        editors = sorted({edit.session_id for edit in group})
        for i, first in enumerate(editors):
            for second in editors[i + 1 :]:
                pairs[first, second] = pairs.get((first, second), 0) + 1
    members = set(task.sessions.values_list("pk", flat=True)) if task is not None else None
    return [
        (f"S-{a}", f"S-{b}", count, names[a], names[b], "files")
        for (a, b), count in pairs.items()
        if members is None or a in members or b in members
    ]


def draw(task=None, shared_files=False):
    edges = [e for e in message_edges(task) if e[0] and e[1]] + (file_edges(task) if shared_files else [])
    traffic, names = {}, {}
    for source, target, count, source_name, target_name, _ in edges:
        traffic[source] = traffic.get(source, 0) + count
        traffic[target] = traffic.get(target, 0) + count
        names.setdefault(source, source_name or source)
        names.setdefault(target, target_name or target)
    if task is not None:
        for pk in task.sessions.values_list("pk", flat=True):
            traffic.setdefault(f"S-{pk}", 0)
    keys = sorted(traffic, key=lambda k: (-traffic[k], k))[:MAX_NODES]
    ids = [parse_id(k[2:]) for k in keys if k.startswith("S-") and parse_id(k[2:])]
    rows = {f"S-{s.pk}": s for s in pages.decorate_sessions(directory.sessions_with_links().filter(pk__in=ids))}
    nodes = {}
    for key in keys:
        row = rows.get(key)
        if row is None:
            nodes[key] = Node(key, names.get(key, key), None, "gone")
        else:
            exactness, state = directory.link_state(row)
            needs_you = " needs-you" if row.needs_you else ""
            nodes[key] = Node(key, row.board_name, row.pk, f"{exactness} {state} {row.engine}{needs_you}".strip(), row.get_engine_display(), doing=row.doing, default_cli=row.engine == engines.DEFAULT.name)
    scale = _scale(len(nodes))
    size = _layout(list(nodes.values()), scale)
    drawn = [Edge(nodes[s], nodes[t], n, channel) for s, t, n, _, _, channel in edges if s in nodes and t in nodes and s != t]
    for edge in drawn:
        _route(edge, scale)
    return Drawing(list(nodes.values()), sorted(drawn, key=lambda e: e.count), size, task, scale)


def _radius(count):
    return max(110, count * 9)


def _scale(count):
    """How much larger than at SHOWN_PX the drawing of `count` nodes is."""
    return max(1.0, 2 * (_radius(count) + MARGIN) / SHOWN_PX)


def _layout(nodes, scale=1.0):
    radius = _radius(len(nodes))
    center = radius + MARGIN * scale
    for i, node in enumerate(nodes):
        angle = -math.pi / 2 + 2 * math.pi * i / max(1, len(nodes))
        node.x = round(center + radius * math.cos(angle), 1)
        node.y = round(center + radius * math.sin(angle), 1)
        right = math.cos(angle) >= -1e-9
        node.anchor = "start" if right else "end"
        node.label_x = round(node.x + (NODE_RADIUS + 5) * scale * (1 if right else -1), 1)
    return int(2 * center)


def _route(edge, scale=1.0):
    """A gentle curve, bent to its right-hand side so A→B and B→A do not overlap; a native
    edge bends further, so it stands beside the same pair's relaybay edge."""
    edge.scale = scale
    x1, y1, x2, y2 = edge.source.x, edge.source.y, edge.target.x, edge.target.y
    dx, dy = x2 - x1, y2 - y1
    length = math.hypot(dx, dy) or 1
    ux, uy = dx / length, dy / length
    # A native edge bends further, so it stands beside the same pair's relaybay edge; a line of
    # shared files, having no direction, runs straight between the two.
    bend = min(40 * scale, length / 5) * {"native": 2, "files": 0}.get(edge.channel, 1)
    cx, cy = (x1 + x2) / 2 - uy * bend, (y1 + y2) / 2 + ux * bend
    # Start and end on the node circles, not at their centres.
    sx, sy = x1 + ux * NODE_RADIUS * scale, y1 + uy * NODE_RADIUS * scale
    ex, ey = x2 - ux * (NODE_RADIUS + 3) * scale, y2 - uy * (NODE_RADIUS + 3) * scale
    edge.path = f"M{sx:.1f},{sy:.1f} Q{cx:.1f},{cy:.1f} {ex:.1f},{ey:.1f}"
    edge.label_x = round(0.25 * sx + 0.5 * cx + 0.25 * ex, 1)
    edge.label_y = round(0.25 * sy + 0.5 * cy + 0.25 * ey, 1)
