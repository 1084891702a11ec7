"""Files sessions edit (docs/rules.md §7): each session's edits of each file (paths only), the
reservations sessions hold, the notices a hook carries about them, and the working tree a
link's hooks run in."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0015_engines'),
    ]

    operations = [
        migrations.AddField(
            model_name='hooklink',
            name='repository',
            field=models.TextField(blank=True, help_text='Which repository that tree belongs to (its origin, or its shared git folder)'),
        ),
        migrations.AddField(
            model_name='hooklink',
            name='tree_root',
            field=models.TextField(blank=True, help_text='The root of the working tree its hooks run in, as last reported'),
        ),
        migrations.CreateModel(
            name='FileEdit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('path_key', models.CharField(max_length=32)),
                ('file_key', models.CharField(max_length=32)),
                ('path', models.TextField(help_text='Absolute, with .. and symlinks resolved')),
                ('root', models.TextField(help_text='The root of the working tree holding it')),
                ('repository', models.TextField(blank=True, help_text='Its repository (origin, or shared git folder); empty outside git')),
                ('hook_session', models.CharField(blank=True, max_length=200)),
                ('tool', models.CharField(blank=True, max_length=200)),
                ('edits', models.PositiveIntegerField(default=1)),
                ('first_at', models.DateTimeField()),
                ('last_at', models.DateTimeField()),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='file_edits', to='sessions_app.session')),
            ],
            options={
                'indexes': [models.Index(fields=['file_key', 'last_at'], name='file_edit_by_file'), models.Index(fields=['session', '-last_at'], name='file_edit_by_session')],
                'constraints': [models.UniqueConstraint(fields=('session', 'path_key'), name='file_edit_once')],
            },
        ),
        migrations.CreateModel(
            name='FileNotice',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('editing', 'Editing'), ('broken', 'Broken')], max_length=10)),
                ('other_name', models.CharField(blank=True, help_text="The other session's name, as it went by then", max_length=200)),
                ('path', models.TextField(help_text="The file, or the reservation's pattern, relative to the root")),
                ('root', models.TextField()),
                ('changed_at', models.DateTimeField(blank=True, help_text='When the session itself last changed the file', null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('delivered_at', models.DateTimeField(blank=True, help_text='When a hook answer first carried it', null=True)),
                ('delivered_by', models.CharField(blank=True, max_length=300)),
                ('offered_at', models.DateTimeField(blank=True, null=True)),
                ('confirmed_at', models.DateTimeField(blank=True, null=True)),
                ('other', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='sessions_app.session')),
                ('session', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='file_notices', to='sessions_app.session')),
            ],
            options={
                'ordering': ['id'],
                'indexes': [models.Index(condition=models.Q(('delivered_at', None)), fields=['session', 'id'], name='file_notice_pending'), models.Index(condition=models.Q(('offered_at__isnull', False)), fields=['session', 'offered_at'], name='file_notice_offered')],
            },
        ),
        migrations.CreateModel(
            name='FileReservation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('hook_session', models.CharField(blank=True, max_length=200)),
                ('root', models.TextField(help_text='The root of the working tree the pattern is relative to')),
                ('pattern', models.CharField(help_text='A glob relative to the root: * and ? within a folder, ** across folders', max_length=500)),
                ('exclusive', models.BooleanField(default=True)),
                ('reason', models.CharField(blank=True, max_length=500)),
                ('created_at', models.DateTimeField()),
                ('expires_at', models.DateTimeField()),
                ('ended_at', models.DateTimeField(blank=True, null=True)),
                ('ended', models.CharField(blank=True, choices=[('released', 'released by its session'), ('session ended', 'its session ended'), ('broken', 'broken by the owner')], max_length=20)),
                ('session', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='file_reservations', to='sessions_app.session')),
            ],
            options={
                'ordering': ['-id'],
                'indexes': [models.Index(condition=models.Q(('ended_at', None)), fields=['expires_at'], name='file_reservation_held')],
            },
        ),
    ]
