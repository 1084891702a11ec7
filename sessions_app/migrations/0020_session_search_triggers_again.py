"""SQLite adds the NOT NULL `engine` column (0015) by remaking the session table, which drops its
triggers: the board's search index (0002) follows session rows again."""

import importlib

from django.db import migrations

KEEP_SEARCH = importlib.import_module("sessions_app.migrations.0006_fleet_inbound_quiet_wakes")._session_search_triggers


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0019_file_edit_indexes_not_rewritten"),
    ]

    operations = [migrations.RunPython(KEEP_SEARCH, migrations.RunPython.noop)]
