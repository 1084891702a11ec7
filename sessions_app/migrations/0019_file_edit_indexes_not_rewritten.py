"""The indexes of file edits that every edit rewrote, replaced (docs/rules.md §7.1): an edit updates
its row's last time, which sat in both. A file's edits are found by its key alone (a row per
session that edited it), a session's by the unique constraint that leads with it."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0018_file_notice_by_session'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='fileedit',
            name='file_edit_by_file',
        ),
        migrations.RemoveIndex(
            model_name='fileedit',
            name='file_edit_by_session',
        ),
        migrations.AddIndex(
            model_name='fileedit',
            index=models.Index(fields=['file_key'], name='file_edit_by_file'),
        ),
    ]
