"""A parse whose database connection drops after it claimed its version is retried by the task itself, within
seconds, taking its own claim back, instead of leaving the version `parsing` for the sweep (issue 23)."""
from __future__ import annotations

import pytest
from django.db import OperationalError

from records import services, tasks
from records.models import MemberVersion
from records.services import parse as parse_service
from reviews.audit import Actor
from tests.conftest import seed_bytes

pytestmark = pytest.mark.django_db


def stored_version(run):
    version, _ = services.ingest_member_report(run=run, role="memory", filename="m.md", content=seed_bytes("002"),
                                               actor=Actor.command("test"))
    return version


def drop_once(monkeypatch):
    """The parse's first write (the run's row lock, in its commit) fails as a dropped connection would."""
    real, calls = parse_service.lock_run, []

    def dropped(run):
        calls.append(1)
        if len(calls) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(run)

    monkeypatch.setattr(parse_service, "lock_run", dropped)
    return calls


def test_the_failed_parse_names_its_claim_and_the_retry_takes_it_back(run_factory, monkeypatch):
    version = stored_version(run_factory())
    drop_once(monkeypatch)
    with pytest.raises(OperationalError) as raised:
        services.parse_member_version(version_pk=version.pk, actor=Actor.worker("test"))
    claim = raised.value.claimed_at
    version.refresh_from_db()
    assert version.status == MemberVersion.Status.PARSING and version.claimed_at == claim
    # A fresh claim is nobody else's to take (the sweep waits PIPELINE_STUCK_AFTER_SECONDS)…
    assert services.parse_member_version(version_pk=version.pk, actor=Actor.worker("other")) is None
    # …but the task's own retry, naming it, takes it back at once.
    parsed = services.parse_member_version(version_pk=version.pk, actor=Actor.worker("test"), reclaim=claim)
    assert parsed is not None and parsed.status == MemberVersion.Status.PARSED


def test_the_task_retries_with_its_claim_within_seconds(run_factory, monkeypatch):
    version = stored_version(run_factory())
    drop_once(monkeypatch)
    retries = []

    def retry(*, exc, countdown, args, kwargs):
        retries.append((countdown, kwargs))
        return RuntimeError("retried")

    monkeypatch.setattr(tasks.parse_member_version, "retry", retry)
    with pytest.raises(RuntimeError):
        tasks.parse_member_version.run(version.pk)
    [(countdown, kwargs)] = retries
    assert countdown <= 2 and kwargs["version_pk"] == version.pk and kwargs["reclaim"]
    assert tasks.parse_member_version.run(**kwargs) == MemberVersion.Status.PARSED
