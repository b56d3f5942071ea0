"""The run row keeps its audit chain head (DESIGN §8), filled in from the events already there; denial folding."""
import django.db.models.deletion
from django.db import migrations, models


def fill_heads(apps, schema_editor):
    Run = apps.get_model("reviews", "Run")
    AuditEvent = apps.get_model("reviews", "AuditEvent")
    for run in Run.objects.all().iterator():
        last = AuditEvent.objects.filter(run=run).order_by("-seq").values_list("seq", "hash").first()
        if last is not None:
            Run.objects.filter(pk=run.pk).update(audit_head_seq=last[0], audit_head_hash=last[1])


class Migration(migrations.Migration):

    dependencies = [
        ("reviews", "0003_run_revises"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="audit_head_hash",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddField(
            model_name="run",
            name="audit_head_seq",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(fill_heads, migrations.RunPython.noop),
        migrations.CreateModel(
            name="DenialTally",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("actor", models.CharField(max_length=200)),
                ("window_start", models.DateTimeField()),
                ("count", models.PositiveIntegerField(default=1)),
                ("attempts", models.JSONField(default=dict)),
                ("event", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                            to="reviews.auditevent")),
                ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                          to="reviews.run")),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("run", "actor"),
                                                        name="denial_tally_one_per_caller_and_run")],
            },
        ),
    ]
