from django.apps import AppConfig


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Sessions, hooks and comments"

    def ready(self):
        from .hooks import delivery

        delivery.register(delivery.Comments())
