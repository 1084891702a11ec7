from django.apps import AppConfig


class MachinesConfig(AppConfig):
    name = "machines"
    default_auto_field = "django.db.models.BigAutoField"
