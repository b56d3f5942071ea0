"""Two reviewers decide the same item at the same moment: one wins, the other gets 409 (DESIGN §10).

The race is forced, not hoped for. Each reviewer's request runs in its own thread on its own
database connection, through the API. Inside the decision's transaction, after reading the item
(version 1) and before any write, each thread waits at a barrier, so both transactions are provably
open at once with the same read. Then the first to take the run's row lock holds it until the
other thread's backend is seen waiting for that lock in pg_stat_activity, and only then writes.
The loser, let through after the winner commits, finds the version moved and answers 409 with
the item as it now is.
"""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from reconcile.services import decisions
from reconcile.models import CanonicalRecord, IssueDecision, Mapping
from reviews.audit import verify_chain
from reviews.models import AuditEvent
from tests.conftest import wait_until
from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload

pytestmark = pytest.mark.django_db(transaction=True)


class ForcedRace:
    """Hooks in the decision service that make two decisions overlap (see the module docstring)."""

    def __init__(self, model, pk: int) -> None:
        self.model, self.pk = model, pk
        self.barrier = threading.Barrier(2, timeout=20)
        self.pids: dict[str, int] = {}
        self.read_versions: dict[str, int] = {}
        self.lock_holder: str | None = None
        self.saw_other_waiting = False

    def install(self, monkeypatch) -> None:
        ensure_open, read_for_decision = decisions.ensure_open, decisions._read_for_decision

        def ensure_open_after_a_shared_read(run):
            name = threading.current_thread().name
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                self.pids[name] = cursor.fetchone()[0]
            # The read, inside this decision's transaction, before any lock or write.
            self.read_versions[name] = self.model.objects.get(pk=self.pk).version
            self.barrier.wait()  # both transactions are open and both have read
            ensure_open(run)

        def read_then_hold_until_the_other_waits(model, pk, expected_version, decision):
            result = read_for_decision(model, pk, expected_version, decision)
            if self.lock_holder is None:
                self.lock_holder = threading.current_thread().name
                other = next(pid for name, pid in self.pids.items() if name != self.lock_holder)
                wait_until(lambda: self._waiting_for_a_lock(other), timeout=20, interval=0.05)
                self.saw_other_waiting = True
            return result

        monkeypatch.setattr(decisions, "ensure_open", ensure_open_after_a_shared_read)
        monkeypatch.setattr(decisions, "_read_for_decision", read_then_hold_until_the_other_waits)

    @staticmethod
    def _waiting_for_a_lock(pid: int) -> bool:
        with connection.cursor() as cursor:
            cursor.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", [pid])
            row = cursor.fetchone()
        return row is not None and row[0] == "Lock"

    def run(self, calls: dict[str, callable]) -> dict[str, object]:
        outcomes: dict[str, object] = {}

        def worker(name: str) -> None:
            try:
                outcomes[name] = calls[name]()
            except Exception as error:  # noqa: BLE001 — the outcome under test
                outcomes[name] = error
            finally:
                connection.close()

        threads = [threading.Thread(target=worker, args=(name,), name=name) for name in calls]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert self.read_versions == {name: 1 for name in calls}, self.read_versions
        assert self.saw_other_waiting, "the second decision never waited on the first one's lock"
        return outcomes


@pytest.fixture
def run(run_factory):
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    connection.close()
    return run


def winner_and_loser(outcomes: dict) -> tuple[str, str]:
    statuses = {name: response.status_code for name, response in outcomes.items()}
    assert sorted(statuses.values()) == [200, 409], {n: getattr(r, "content", r) for n, r in outcomes.items()}
    winner = next(name for name, code in statuses.items() if code == 200)
    return winner, next(name for name in statuses if name != winner)


def test_two_reviewers_deciding_one_mapping_in_overlapping_transactions_one_wins_the_other_gets_409(
        run, reviewer, second_reviewer, monkeypatch):
    mapping = Mapping.objects.get(run=run, source="MEM-RTE-mcp-read")
    events = AuditEvent.objects.filter(run=run).count()
    race = ForcedRace(Mapping, mapping.pk)
    race.install(monkeypatch)
    url = f"/api/runs/{run.run_id}/mappings/{mapping.pk}/decision/"

    outcomes = race.run({
        "accepting": lambda: reviewer.post(url, {"decision": "accept", "rationale": "same route", "version": 1},
                                           format="json"),
        "rejecting": lambda: second_reviewer.post(url, {"decision": "reject", "rationale": "different",
                                                        "version": 1}, format="json"),
    })

    winner, loser = winner_and_loser(outcomes)
    assert race.lock_holder == winner
    error = outcomes[loser].json()["error"]
    assert error["code"] == "stale_version"
    assert error["details"]["current"]["version"] == 2
    assert error["details"]["current"]["state"] == outcomes[winner].json()["state"]
    mapping.refresh_from_db()
    assert (mapping.version, mapping.state) == (2, "accepted" if winner == "accepting" else "rejected")
    assert AuditEvent.objects.filter(run=run).count() == events + 1
    assert verify_chain(run).ok


def test_two_reviewers_accepting_one_new_mapping_at_once_allocate_one_canonical_record(
        run, reviewer, second_reviewer, monkeypatch):
    mapping = Mapping.objects.get(run=run, source="MEM-OBJ-memory-facts")
    assert mapping.relation == "new"
    race = ForcedRace(Mapping, mapping.pk)
    race.install(monkeypatch)
    url = f"/api/runs/{run.run_id}/mappings/{mapping.pk}/decision/"
    body = {"decision": "accept", "rationale": "", "version": 1}

    outcomes = race.run({"first": lambda: reviewer.post(url, body, format="json"),
                         "second": lambda: second_reviewer.post(url, body, format="json")})

    winner_and_loser(outcomes)
    assert CanonicalRecord.objects.filter(run=run, origin="mapping", source_record_id="MEM-OBJ-memory-facts").count() == 1


def test_two_reviewers_deciding_one_integration_issue_at_once_one_wins(run, reviewer, second_reviewer, monkeypatch):
    decision = IssueDecision.objects.filter(run=run).order_by("pk").first()
    race = ForcedRace(IssueDecision, decision.pk)
    race.install(monkeypatch)
    url = f"/api/runs/{run.run_id}/integration-issues/{decision.pk}/decision/"

    outcomes = race.run({
        "first": lambda: reviewer.post(url, {"decision": "accept", "rationale": "", "version": 1}, format="json"),
        "second": lambda: second_reviewer.post(url, {"decision": "reject", "rationale": "no", "version": 1},
                                               format="json"),
    })

    winner_and_loser(outcomes)
    decision.refresh_from_db()
    assert decision.version == 2
