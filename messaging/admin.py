from django.contrib import admin

from .models import SessionMessage


@admin.register(SessionMessage)
class SessionMessageAdmin(admin.ModelAdmin):
    list_display = ["id", "sender_name", "sender_verified", "recipient_name", "created_at", "delivered_at", "read_at"]
    list_filter = ["sender_verified"]
    search_fields = ["sender_name", "recipient_name"]
