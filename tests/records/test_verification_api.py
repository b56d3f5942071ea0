"""A verification member over the API (issue 25 item 2): its Blockers, as the correction requests they
raise with their addressee, and its Limits, on the member; its role accepted at upload."""
from __future__ import annotations

import pytest

from tests.conftest import SHARED
from tests.records.test_upload_api import upload

VERIFICATION = (SHARED / "examples" / "links-form" / "AAS-2026-12-01-tinycache-0123456789ab-01"
                / "report-verification.md").read_bytes()


@pytest.mark.django_db
@pytest.mark.parametrize("role", ["report-verification", "profile-verification", "synthesis-verification"])
def test_it_accepts_each_verification_role_at_upload(role, agent, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(agent, run, role, VERIFICATION, filename=f"{role}.md")
    assert response.status_code == 201, response.content


@pytest.mark.django_db
def test_it_shows_the_blockers_with_their_addressee_and_the_limits(agent, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    with django_capture_on_commit_callbacks(execute=True):
        assert upload(agent, run, "report-verification", VERIFICATION, filename="report-verification.md").status_code == 201
    member = agent.get(f"/api/runs/{run.run_id}/members/report-verification/").json()
    assert [(b["addressee"], b["record_id"], b["line"], b["source"], b["author"]) for b in member["blockers"]] == [
        ("runtime", "RT-RTE-warm-start", 23, "verification", "report-verification v1")]
    assert member["blockers"][0]["text"].startswith("[RT-RTE-warm-start](runtime.md#rt-rte-warm-start) records")
    assert [(lim["line"], lim["references"]) for lim in member["limits"]] == [(28, ["MEM-ABS-size-budget"])]
    assert (member["counts"]["blockers"], member["counts"]["limits"]) == (1, 1)
