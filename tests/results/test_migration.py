"""Approval and Result moved from reconcile to results without touching their tables (issue 18):
a database made before the move, with a final run in it, migrates and reads its result back
byte-identical."""
from __future__ import annotations

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("reconcile", "0005_word_diff"), ("records", "0005_lz4_compression"), ("reviews", "0003_run_revises")]
MARKDOWN = "---\n{\"run-id\": \"AAS-2026-09-25-moved-01\"}\n---\n# Result\n\nÜber `MEM-OBJ-1` → OBJ-5 — ⟨bytes⟩\n"


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_a_final_run_made_before_the_move_reads_its_result_back_byte_identical():
    leaves = MigrationExecutor(connection).loader.graph.leaf_nodes()
    old = migrate(BEFORE)
    try:
        Run = old.get_model("reviews", "Run")
        Approval = old.get_model("reconcile", "Approval")
        Result = old.get_model("reconcile", "Result")
        run = Run.objects.create(run_id="AAS-2026-09-25-moved-01", system="Moved", title="Moved", run_date="2026-09-25",
                                 reviewed_boundary="0" * 40, status="final")
        approval = Approval.objects.create(run=run, note="checked", approved_by="reviewer", manifest="m",
                                           manifest_sha256="a" * 64)
        digest = hashlib.sha256(MARKDOWN.encode("utf-8")).hexdigest()
        Result.objects.create(run=run, approval=approval, markdown=MARKDOWN, data={"run_id": run.run_id},
                              sha256=digest, manifest="m", manifest_sha256="a" * 64)
    finally:
        new = migrate(leaves)
    moved = new.get_model("results", "Result").objects.get(run__run_id="AAS-2026-09-25-moved-01")
    assert moved.markdown.encode("utf-8") == MARKDOWN.encode("utf-8")
    assert hashlib.sha256(moved.markdown.encode("utf-8")).hexdigest() == moved.sha256 == digest
    assert moved.approval.note == "checked"

    from results.models import Result as CurrentResult

    assert CurrentResult.objects.get(run__run_id="AAS-2026-09-25-moved-01").markdown == MARKDOWN
