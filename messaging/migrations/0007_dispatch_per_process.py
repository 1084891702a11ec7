"""A dispatch's rate slot belongs to the process that proved its sender, not to the sender's row
(docs/rules.md §4.8): the rate index leads with the process, and the sender's key gets an index of
its own (Django's CASCADE finds a row's dispatches by it). Dispatches written before keep "",
the budget unproven senders share, for the minute they still count."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("messaging", "0006_key_indexes_led_by_others"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="dispatch", name="dispatch_rate"),
        migrations.AddField(model_name="dispatch", name="process", field=models.CharField(blank=True, default="", max_length=80)),
        migrations.AddIndex(model_name="dispatch", index=models.Index(fields=["process", "created_at"], name="dispatch_rate")),
        migrations.AddIndex(model_name="dispatch", index=models.Index(fields=["sender"], name="dispatch_sender")),
    ]
