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


@pytest.mark.django_db(transaction=True)
def test_concurrent_uploads_to_one_member_by_run_id_number_its_versions_in_turn(run_factory):
    """As the upload API calls it (the run named by its ID, read once under its lock): each upload waits for
    the run's lock, so the versions count 1..n with no number taken twice and the chain does not fork."""
    run = run_factory()
    seed = seed_bytes("003").decode()
    uploads = 8
    barrier = threading.Barrier(uploads)
    results, errors = [], []

    def upload(n: int):
        try:
            barrier.wait()
            results.append(ingest_member_report(run=run.run_id, role="memory", filename="memory.md",
                                                content=(seed + f"\n<!-- {n} -->\n").encode(),
                                                actor=Actor(label="token:agent")))
        except Exception as error:  # noqa: BLE001 — collected and asserted below
            errors.append(f"{n}: {type(error).__name__}: {error}")
        finally:
            connection.close()

    threads = [threading.Thread(target=upload, args=(n,)) for n in range(uploads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert errors == []
    assert all(created for _, created in results)
    assert sorted(version.version for version, _ in results) == list(range(1, uploads + 1))
    current = MemberVersion.objects.filter(member__run=run).order_by("-version").first()
    assert current.member.current_version_id == current.pk
    check = verify_chain(run)
    assert check.ok, check
