"""Template helpers of the owner's board.

Names and bodies come from agents. `plain` is how the board shows them: escaped, with
invisible and direction-changing characters made visible, and the direction isolated so a
right-to-left override in one name cannot reorder the text around it.
"""

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import mark_safe

import engines
from messaging import reads

from .. import pages

register = template.Library()

@register.filter
def plain(value):
    return mark_safe(f"<bdi>{pages.plain_html(value)}</bdi>")


@register.filter
def engine_hue(name):
    """The hue of the badge of the CLI a session runs in (its engine's `hue`)."""
    return engines.of(name).hue


@register.filter
def visible(value):
    """Agent text for an attribute (a tooltip): invisible characters written out as U+XXXX;
    Django's autoescape does the rest."""
    return pages.visible_text(value)


@register.filter
def ago(moment):
    """A short age (12s, 5m, 3h, 2d) in a <time> element with the exact time as its title;
    static/board/live.js keeps it counting on an open page."""
    if not isinstance(moment, datetime):
        return ""
    seconds = max(0, int((timezone.now() - moment).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            short = f"{seconds // size}{unit}"
            break
    else:
        short = f"{seconds}s"
    exact = timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S %Z")
    return format_html('<time class="ago" datetime="{}" title="{}">{} ago</time>', moment.isoformat(), exact, short)


@register.filter
def stamp(moment):
    if not isinstance(moment, datetime):
        return ""
    return timezone.localtime(moment).strftime("%Y-%m-%d %H:%M:%S")


@register.simple_tag
def inbox_count():
    return reads.inbox_count()


@register.filter
def marks(event):
    return pages.event_marks(event)


@register.filter
def details(event):
    return pages.event_details(event)


@register.simple_tag(takes_context=True)
def query(context, **changes):
    """The current query string with some parameters changed (None or "" removes one)."""
    params = context["request"].GET.copy()
    for key, value in changes.items():
        params.pop(key, None)
        if value not in (None, ""):
            params[key] = value
    encoded = params.urlencode()
    return "?" + encoded if encoded else "?"


@register.inclusion_tag("board/_pager.html", takes_context=True)
def pager(context, page, before="before", after="after"):
    """Newer / older links of a keyset page, keeping the other query parameters."""
    params = context["request"].GET

    def link(key, value):
        changed = params.copy()
        changed.pop(before, None)
        changed.pop(after, None)
        if value is not None:
            changed[key] = value
        return "?" + changed.urlencode()

    return {
        "page": page,
        "newest": link(before, None) if (before in params or after in params) else None,
        "newer": link(after, page.newer) if page.newer is not None else None,
        "older": link(before, page.older) if page.older is not None else None,
    }


@register.inclusion_tag("board/_machine.html")
def machine_footer():
    """The footer's line: where relaybay serves, its live sessions, the CLIs connected on this
    machine and how, and what waits in a spool here (board/machine.py)."""
    from django.conf import settings

    from ..machine import machine

    return {"here": machine(), "url": settings.RELAYBAY_URL}
