from django.urls import path

from . import views

urlpatterns = [
    path("needs-you/", views.needs_you, name="needs-you"),
    path("needs-you/state.json", views.needs_you_state, name="needs-you-state"),
    path("needs-you/<int:pk>/decide/", views.decide, name="needs-you-decide"),
    path("needs-you/session/<int:pk>/decide/", views.decide_session, name="needs-you-decide-session"),
]
