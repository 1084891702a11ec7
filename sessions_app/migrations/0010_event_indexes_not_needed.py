"""Two indexes of the feed rows that no query needs, dropped: each was written with every feed
row, and every hook and every send writes some. The row's key is the lead of event_by_session;
nothing sorts or filters by created_at alone (the feed and the admin's time column go by
id, which follows it).

The indexes are dropped by name. Altering the fields on SQLite would remake the table, and
remaking it drops the board search's triggers on it (0002_board_search)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_hooklink_newest"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="event",
                    name="created_at",
                    field=models.DateTimeField(auto_now_add=True),
                ),
                migrations.AlterField(
                    model_name="event",
                    name="session",
                    field=models.ForeignKey(
                        blank=True,
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="events",
                        to="sessions_app.session",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    "DROP INDEX sessions_app_event_created_at_c38f0108",
                    "CREATE INDEX sessions_app_event_created_at_c38f0108 ON sessions_app_event (created_at)",
                ),
                migrations.RunSQL(
                    "DROP INDEX sessions_app_event_session_id_c115b7c5",
                    "CREATE INDEX sessions_app_event_session_id_c115b7c5 ON sessions_app_event (session_id)",
                ),
            ],
        ),
    ]
