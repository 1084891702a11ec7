"""A session's file notices are found by an index of every row, the key's own: deleting a session
finds what points at it (tests/test_indexes.py); the pending and offered indexes hold only some."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0017_file_content_not_stored'),
    ]

    operations = [
        migrations.AlterField(
            model_name='filenotice',
            name='session',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='file_notices', to='sessions_app.session'),
        ),
    ]
