"""The signed statement of a final result, and the audit chain head an approval saw (issue 24)."""
import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("results", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="approval", name="audit_head_seq",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="approval", name="audit_head_hash",
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.CreateModel(
            name="Attestation",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("envelope", models.TextField()),
                ("result_json", models.TextField()),
                ("keyid", models.CharField(max_length=64)),
                ("public_key_pem", models.TextField()),
                ("audit_head_seq", models.PositiveIntegerField()),
                ("audit_head_hash", models.CharField(max_length=64)),
                ("created_at", models.DateTimeField(default=django.utils.timezone.now)),
                ("result", models.OneToOneField(on_delete=django.db.models.deletion.PROTECT,
                                                related_name="attestation", to="results.result")),
            ],
        ),
    ]
