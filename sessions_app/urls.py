from django.contrib.auth import views as auth_views
from django.urls import path

from . import views

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.sessions_list, name="sessions"),
    path("sessions/<int:pk>/", views.session_detail, name="session"),
    path("sessions/<int:pk>/comment/", views.write_comment, name="session-comment"),
    path("sessions/<int:pk>/edit/", views.edit_session, name="session-edit"),
]
