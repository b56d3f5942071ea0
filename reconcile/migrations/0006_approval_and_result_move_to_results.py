"""Approval and Result now belong to results (results/migrations/0001): reconcile forgets them
without touching their tables."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("reconcile", "0005_word_diff"),
        ("results", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="Result"),
                migrations.DeleteModel(name="Approval"),
            ],
        ),
    ]
