from django.apps import AppConfig
from django.conf import settings

from core.private_files import secure_data_folder


class CoreConfig(AppConfig):
    """What every app of relaybay shares and none owns: errors, input rules, credentials, pings."""

    name = "core"
    verbose_name = "relaybay's shared library"

    def ready(self):
        # Every relaybay process passes here before it opens the database: the server, make
        # run's migrate and setup_owner, every command (core/private_files.py).
        secure_data_folder(settings.DATA_DIR, database=sqlite_database_file(settings.DATABASES["default"]))


def sqlite_database_file(database):
    """The file of an SQLite database setting, or None (another engine, or in memory)."""
    if database["ENGINE"] != "django.db.backends.sqlite3":
        return None
    name = str(database["NAME"])
    return None if name.startswith((":", "file:")) or not name else name
