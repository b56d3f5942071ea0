"""A worker killed in the middle of a parse (SIGKILL, no chance to clean up) loses nothing (DESIGN §10).

The doomed worker claims the parse and then blocks on the run's row lock, which
the test holds; the test kills it there, so the version is left `parsing` with
its claim, exactly as a crash leaves it. The sweep hands it to the healthy
worker, which brings it to the same end as an undisturbed parse.
"""
import hashlib
import os
import signal
import subprocess
import sys
import uuid

import pytest
from django.db import transaction

from records import services
from records.models import IntegrationIssue, MemberVersion, Record
from records.parsing import parse_report
from reviews.audit import Actor, verify_chain
from reviews.models import Run
from tests.conftest import ROOT, seed_bytes, wait_until
from tests.records.test_worker import _worker_idle_before_teardown, upload_seed  # noqa: F401

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def start_worker(queue: str) -> subprocess.Popen:
    from django.db import connection

    db = connection.settings_dict
    env = dict(os.environ, DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
               CELERY_QUEUE=queue, DEBUG="1")
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "--concurrency=1", "--pool=solo",
         "--loglevel=WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def test_a_parse_killed_mid_task_is_redone_by_another_worker_after_the_sweep(worker, agent, run_factory):
    from config.celery import app

    run = run_factory()
    doomed_queue = f"aas-doomed-{uuid.uuid4().hex[:6]}"
    app.conf.task_default_queue = doomed_queue  # the upload's parse waits there for the doomed worker
    version = upload_seed(agent, run)
    app.conf.task_default_queue = worker["queue"]
    doomed = None
    try:
        with transaction.atomic():
            Run.objects.select_for_update().get(pk=run.pk)  # the parse will block on this lock
            doomed = start_worker(doomed_queue)
            wait_until(lambda: MemberVersion.objects.filter(pk=version.pk, status="parsing").exists(), timeout=60)
            os.killpg(doomed.pid, signal.SIGKILL)
            doomed.wait(20)
        stranded = MemberVersion.objects.get(pk=version.pk)
        assert stranded.status == MemberVersion.Status.PARSING and stranded.claimed_at is not None
        assert not Record.objects.filter(member_version=version).exists()

        requeued = services.sweep_stuck_members(older_than_seconds=0, actor=Actor.worker("sweep_stuck_members"))

        assert requeued["versions"] == 1
        done = wait_until(lambda: MemberVersion.objects.filter(pk=version.pk, status="validated").first(),
                          timeout=60)
        assert done.counts["declarations"] == 18 and done.counts["integration_issues"] == 8
        assert done.attempts == 2
        # The same result as an undisturbed parse: the records, read back from the database, are the
        # seed's declarations and annotations as the pure parser finds them, each once, in order.
        expected = parse_report(seed_bytes("002").decode("utf-8"))
        stored = list(Record.objects.filter(member_version=version).order_by("ordinal")
                      .values_list("record_id", "content_sha256"))
        assert stored == [(r.record_id, hashlib.sha256(r.text.encode("utf-8")).hexdigest())
                          for r in expected.declarations] + [
                         (a.target, hashlib.sha256(a.text.encode("utf-8")).hexdigest()) for a in expected.annotations]
        assert IntegrationIssue.objects.filter(member_version=version).count() == len(expected.integration_issues)
        assert verify_chain(run).ok
    finally:
        if doomed is not None and doomed.poll() is None:
            os.killpg(doomed.pid, signal.SIGKILL)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_delete(doomed_queue)
