"""Two indexes of the feed rows that no query needs, dropped: each was written with every feed
row, and every hook and every send writes some. The row's key is the lead of event_by_session;
nothing sorts or filters by created_at alone (the feed and the admin's time column go by
id, which follows it).

The indexes are dropped by name. Altering the fields on SQLite would remake the table, and
remaking it drops the board search's triggers on it (0002_board_search)."""

import django.db.models.deletion
from django.db import migrations, models


def dropped(name, table, column):
    """DROP INDEX by the name Django gave it; undone by making it again."""
    return migrations.RunSQL(f"DROP INDEX {name}", f"CREATE INDEX {name} ON {table} ({column})")


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
                dropped("sessions_app_event_created_at_c38f0108", "sessions_app_event", "created_at"),
                dropped("sessions_app_event_session_id_c115b7c5", "sessions_app_event", "session_id"),
            ],
        ),
    ]
