"""The single-column indexes of three foreign keys, dropped: other indexes lead with the same
column (the sender: message_sent, message_dedupe, message_rate, dispatch_rate; the recipient:
message_inbox, message_pending), and each was written with every message or dispatch.

Dropped by name rather than by altering the fields: on SQLite that would remake both tables."""

import django.db.models.deletion
from django.db import migrations, models


def dropped(name, table, column):
    """DROP INDEX by the name Django gave it; undone by making it again."""
    return migrations.RunSQL(f"DROP INDEX {name}", f"CREATE INDEX {name} ON {table} ({column})")


class Migration(migrations.Migration):
    dependencies = [
        ("messaging", "0005_pending_index_leads_with_delivered_at"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="dispatch",
                    name="sender",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="dispatches",
                        to="sessions_app.session",
                    ),
                ),
                migrations.AlterField(
                    model_name="sessionmessage",
                    name="recipient",
                    field=models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="received_messages",
                        to="sessions_app.session",
                    ),
                ),
                migrations.AlterField(
                    model_name="sessionmessage",
                    name="sender",
                    field=models.ForeignKey(
                        db_index=False,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="sent_messages",
                        to="sessions_app.session",
                    ),
                ),
            ],
            database_operations=[
                dropped("message_dispatch_sender_id_ae712ccc", "message_dispatch", "sender_id"),
                dropped("session_message_recipient_id_4096ec61", "session_message", "recipient_id"),
                dropped("session_message_sender_id_2056d49e", "session_message", "sender_id"),
            ],
        ),
    ]
