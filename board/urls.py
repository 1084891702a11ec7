from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import file_views, machine_views, message_views, views

# Only staff accounts may log in here: the board is the owner's (docs/rules.md §5.1).
login_view = auth_views.LoginView.as_view(template_name="login.html", authentication_form=AdminAuthenticationForm)

urlpatterns = [
    path("login/", login_view, name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.sessions_list, name="sessions"),
    path("", include("approvals.urls")),
    path("sessions/<int:pk>/", views.session_detail, name="session"),
    path("sessions/<int:pk>/comment/", views.write_comment, name="session-comment"),
    path("sessions/<int:pk>/edit/", views.edit_session, name="session-edit"),
    path("sessions/<int:pk>/inbound/", views.set_inbound, name="session-inbound"),
    path("sessions/<int:pk>/quiet/", views.set_quiet, name="session-quiet"),
    path("sessions/<int:pk>/export.md", views.session_export, name="session-export"),
    path("tasks/", views.tasks_list, name="tasks"),
    path("tasks/new/", views.create_task, name="task-create"),
    path("tasks/<int:pk>/", views.task_detail, name="task"),
    path("tasks/<int:pk>/edit/", views.edit_task, name="task-edit"),
    path("tasks/<int:pk>/attach/", views.attach_session, name="task-attach"),
    path("tasks/<int:pk>/detach/<int:session_pk>/", views.detach_session, name="task-detach"),
    path("tasks/<int:pk>/inbound/", views.set_task_inbound, name="task-inbound"),
    path("tasks/<int:pk>/export.md", views.task_export, name="task-export"),
    path("events/", views.events_feed, name="events"),
    path("map/", views.map_view, name="map"),
    path("search/", views.search_view, name="search"),
    path("messages/", message_views.messages_list, name="messages"),
    path("messages/<int:pk>/", message_views.message_thread, name="message"),
    path("messages/<int:pk>/comment/", message_views.comment_on_message, name="message-comment"),
    path("inbox/", message_views.inbox, name="inbox"),
    path("inbox/count/", message_views.inbox_count, name="inbox-count"),
    path("inbox/<int:pk>/seen/", message_views.inbox_seen, name="inbox-seen"),
    path("inbox/<int:pk>/decide/", message_views.inbox_decide, name="inbox-decide"),
    path("files/", file_views.files_page, name="files"),
    path("files/reservations/<int:pk>/break/", file_views.break_reservation, name="file-break"),
    path("machines/", machine_views.machines_page, name="machines"),
    path("machines/<str:name>/revoke/", machine_views.revoke_machine, name="machine-revoke"),
]
