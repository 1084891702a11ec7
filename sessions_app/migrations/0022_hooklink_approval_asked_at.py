from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessions_app', '0021_cli_edit_content_not_stored'),
    ]

    operations = [
        migrations.AddField(
            model_name='hooklink',
            name='approval_asked_at',
            field=models.DateTimeField(blank=True, help_text='When its terminal asked about a native message whose send relaybay had not seen yet', null=True),
        ),
    ]
