from django.apps import AppConfig


class InstallConfig(AppConfig):
    name = "install"
    verbose_name = "Connecting the agent CLIs (install time)"
