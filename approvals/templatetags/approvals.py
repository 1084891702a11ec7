"""The board shell's Needs you count: the sidebar and the page title (docs/rules.md §8)."""

from django import template

from .. import lib

register = template.Library()


@register.simple_tag(takes_context=True)
def needs_you_count(context):
    """Counted once a page, however many places show it."""
    if "_needs_you_count" not in context.render_context:
        context.render_context["_needs_you_count"] = lib.waiting_count()
    return context.render_context["_needs_you_count"]
