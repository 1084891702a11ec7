from django.apps import AppConfig


class CoreConfig(AppConfig):
    """What every app of relaybay shares and none owns: errors, input rules, credentials, pings."""

    name = "core"
    verbose_name = "relaybay's shared library"
