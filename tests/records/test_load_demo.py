"""`load_demo` says which demo runs cannot be approved and why (issue 12 item 7)."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from records.finding_groups import blocking_reasons
from records.validation import Finding
from tests.conftest import SHARED


def test_it_explains_runtime_references_a_single_member_run_cannot_resolve():
    findings = [Finding("unresolved-reference", "error", "memory", f"RT-RTE-{name}", n, "m")
                for n, name in enumerate(["vercel-call", "tool-loop", "vercel-call", "search"], start=1)]
    findings.append(Finding("unknown-source", "error", "memory", "SRC-1", 9, "m"))
    findings.append(Finding("no-source-register", "warning", "memory", "", 0, "m"))
    reasons = blocking_reasons(findings, roles=["memory"])
    assert reasons[0].startswith("4 unresolved-reference (RT-RTE-vercel-call, RT-RTE-tool-loop, RT-RTE-search)")
    assert "runtime records (RT-…) that are not in the run" in reasons[0]
    assert reasons[1].startswith("1 unknown-source (SRC-1)") and "Source register" in reasons[1]


def test_it_gives_no_reason_when_nothing_blocks():
    assert blocking_reasons([Finding("missing-route-field", "warning", "result", "RTE-1", 3, "m")], roles=["result"]) == []


@pytest.mark.django_db
def test_load_demo_names_the_demo_runs_that_cannot_be_approved_and_why(monkeypatch):
    monkeypatch.setenv("SHARED_DIR", str(SHARED))
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    text = out.getvalue()
    lines = {line.split(":", 1)[0]: line for line in text.splitlines() if line.startswith("AAS-")}
    for run_id in ("AAS-2026-09-26-supermemory-03", "AAS-2026-09-27-ace-01"):
        assert "cannot be approved" in lines[run_id], text
        assert "runtime records (RT-…) that are not in the run" in lines[run_id]
    for run_id in ("AAS-2026-09-25-supermemory-02", "AAS-2026-10-02-dynamic-cheatsheet-01",
                   "AAS-2026-10-02-instinctual-memory-02", "AAS-2026-09-26-mem0-02",
                   "AAS-2026-12-01-tinycache-0123456789ab-01"):
        assert "no validation errors" in lines[run_id], text
    again = io.StringIO()
    call_command("load_demo", stdout=again)  # idempotent, and it says so again
    assert "AAS-2026-09-27-ace-01: cannot be approved" in again.getvalue()


@pytest.mark.django_db
def test_load_demo_says_a_signed_off_run_is_past_approving(monkeypatch):
    # Found by QA: after the dynamic-cheatsheet run was final, a repeated `make run` still printed
    # "no validation errors (1 warning); approvable once its mappings and issues are decided".
    from reviews.models import Run

    monkeypatch.setenv("SHARED_DIR", str(SHARED))
    call_command("load_demo", stdout=io.StringIO())
    Run.objects.filter(run_id="AAS-2026-10-02-dynamic-cheatsheet-01").update(status=Run.Status.FINAL)
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    lines = {line.split(":", 1)[0]: line for line in out.getvalue().splitlines() if line.startswith("AAS-")}
    assert lines["AAS-2026-10-02-dynamic-cheatsheet-01"] == (
        "AAS-2026-10-02-dynamic-cheatsheet-01: final, nothing left to approve; closed, Revise on its page starts "
        "the next run")
    assert "approvable once" in lines["AAS-2026-10-02-instinctual-memory-02"]
