"""Several agents upload to one run at once while their parses run: nobody deadlocks, nothing forks."""
import threading

import pytest
from django.db import connection, transaction

from records.models import MemberVersion
from records.services import ingest_member_report
from reviews.audit import Actor, verify_chain
from tests.conftest import seed_bytes


@pytest.mark.django_db(transaction=True)
def test_concurrent_uploads_and_parses_of_one_run_all_land(run_factory):
    run = run_factory()
    seed = seed_bytes("003").decode()
    roles = ["memory", "runtime", "epistemic", "workflow", "overview", "synthesis"]
    barrier = threading.Barrier(len(roles))
    errors = []

    def upload(role: str):
        try:
            barrier.wait()
            for attempt in range(3):
                content = (seed + f"\n<!-- {role} {attempt} -->\n").encode()
                with transaction.atomic():
                    # The parse and validation tasks run in this thread when the upload commits.
                    ingest_member_report(run=run, role=role, filename=f"{role}.md", content=content,
                                         actor=Actor(label=f"token:{role}-agent"))
        except Exception as error:  # noqa: BLE001 — collected and asserted below
            errors.append(f"{role}: {type(error).__name__}: {error}")
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(role,)) for role in roles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert errors == []
    assert MemberVersion.objects.filter(member__run=run).count() == len(roles) * 3
    assert not MemberVersion.objects.filter(member__run=run, status__in=["received", "parsing", "failed"]).exists()
    check = verify_chain(run)
    assert check.ok, check
