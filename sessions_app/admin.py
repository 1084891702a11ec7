from django.contrib import admin

from .models import Comment, Event, HookLink, Session, Task


class HookLinkInline(admin.TabularInline):
    model = HookLink
    extra = 0


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "title", "desktop_id", "folder", "task", "last_seen_at"]
    list_filter = ["kind"]
    search_fields = ["title", "desktop_id", "folder", "links__hook_session"]
    inlines = [HookLinkInline]


@admin.register(HookLink)
class HookLinkAdmin(admin.ModelAdmin):
    list_display = ["hook_session", "session", "exact", "state", "turn", "stop_blocks", "last_event_at"]
    list_filter = ["exact", "state"]
    search_fields = ["hook_session"]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "status", "created_at"]


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = ["id", "session_name", "created_at", "delivered_at", "delivered_by"]


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["id", "name", "session", "hook_session", "replay", "created"]
    list_filter = ["name", "replay"]

    # Feed rows are written in the order they happen, so the time sorts as the id does: by the
    # primary key, since created_at has no index (every hook and send writes feed rows).
    @admin.display(description="created at", ordering="id")
    def created(self, event):
        return event.created_at
