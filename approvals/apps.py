from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    verbose_name = "Needs you"

    def ready(self):
        # Every hook of a session says whether what waited on the owner still waits
        # (docs/rules.md §8): the hook's pass calls this app's step (sessions_app/hooks/steps.py).
        from sessions_app.hooks import steps

        from .following import RequestStep

        steps.register(RequestStep())
