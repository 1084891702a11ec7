"""A message handed to a hook client that confirms what it prints stays offered until the
client confirms it (docs/rules.md §2.6): `offered_at`, `confirmed_at`, and an index of the
offered ones only, which a later hook reads to offer them again. Messages delivered before
keep both empty: delivered, never offered again."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("messaging", "0007_dispatch_per_process"),
    ]

    operations = [
        migrations.AlterField(
            model_name="sessionmessage",
            name="delivered_at",
            field=models.DateTimeField(blank=True, help_text="When a hook answer first carried it", null=True),
        ),
        migrations.AddField(
            model_name="sessionmessage",
            name="offered_at",
            field=models.DateTimeField(blank=True, help_text="Handed to a hook client that has not confirmed it yet, then", null=True),
        ),
        migrations.AddField(
            model_name="sessionmessage",
            name="confirmed_at",
            field=models.DateTimeField(blank=True, help_text="When the recipient's hook client confirmed it printed it", null=True),
        ),
        migrations.AddIndex(
            model_name="sessionmessage",
            index=models.Index(condition=models.Q(offered_at__isnull=False), fields=["recipient", "offered_at"], name="message_offered"),
        ),
    ]
