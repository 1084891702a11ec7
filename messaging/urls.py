from django.urls import path

from . import views

urlpatterns = [
    path("messages/", views.messages_list, name="messages"),
    path("messages/<int:pk>/", views.message_thread, name="message"),
    path("inbox/", views.inbox, name="inbox"),
    path("inbox/count/", views.inbox_count, name="inbox-count"),
    path("inbox/<int:pk>/seen/", views.inbox_seen, name="inbox-seen"),
]
