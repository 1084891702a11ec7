"""Sessions of three coding-agent CLIs on one board (docs/rules.md §1.6): each row's `engine`
(every row made before is Claude Code's), and the sessions a CLI named in MCP calls while none
of their hooks arrived (a Codex session whose hooks are not trusted yet)."""

from django.db import migrations, models

ENGINES = [("claude-code", "Claude Code"), ("codex", "Codex"), ("gemini", "Gemini CLI")]


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0014_comment_offered_confirmed"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="engine",
            field=models.CharField(choices=ENGINES, default="claude-code", max_length=12),
        ),
        migrations.CreateModel(
            name="UnheardSession",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("engine", models.CharField(choices=ENGINES, max_length=12)),
                ("hook_session", models.CharField(max_length=200, unique=True)),
                ("calls", models.PositiveIntegerField(default=0)),
                ("first_at", models.DateTimeField()),
                ("last_at", models.DateTimeField()),
            ],
            options={"ordering": ["-last_at"]},
        ),
    ]
