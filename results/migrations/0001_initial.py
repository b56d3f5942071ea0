"""Approval and Result move from reconcile to results (issue 18): the tables stay where they are
(`reconcile_approval`, `reconcile_result`, rows untouched); only Django's idea of which app holds
the models changes. reconcile's 0006 forgets them once this state exists."""
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("reconcile", "0005_word_diff"),
        ("reviews", "0003_run_revises"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name="Approval",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("note", models.TextField()),
                        ("approved_by", models.CharField(max_length=200)),
                        ("approved_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("manifest_sha256", models.CharField(max_length=64)),
                        ("manifest", models.TextField()),
                        ("withdrawn_at", models.DateTimeField(blank=True, null=True)),
                        ("withdrawn_reason", models.TextField(blank=True)),
                        ("run", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                  related_name="approvals", to="reviews.run")),
                    ],
                    options={"db_table": "reconcile_approval", "ordering": ["-approved_at", "-id"]},
                ),
                migrations.CreateModel(
                    name="Result",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("markdown", models.TextField()),
                        ("data", models.JSONField()),
                        ("sha256", models.CharField(max_length=64)),
                        ("manifest_sha256", models.CharField(max_length=64)),
                        ("manifest", models.TextField()),
                        ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                        ("approval", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT,
                                                       related_name="+", to="results.approval")),
                        ("run", models.OneToOneField(on_delete=django.db.models.deletion.PROTECT,
                                                     related_name="result", to="reviews.run")),
                    ],
                    options={"db_table": "reconcile_result"},
                ),
            ],
        ),
    ]
