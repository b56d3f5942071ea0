"""The fan-out's wake-ups, coalesced (events/wakes.py): one fan-out queued at a time, and still no event
left undelivered: not one written while a fan-out runs, not one behind a worker killed mid-fan-out, not
one behind a mark that outlived its publish (the sweep)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid

import pytest
import redis
from django.conf import settings
from django.db import connection, transaction

from config.celery import app as celery_app
from events import addresses, wakes
from events.feed import EVENT_TYPES, SUBSCRIBABLE, event_types
from events.models import Delivery, FanOutMark
from events.services import deliveries
from events.services.deliveries import MARK
from events.services.jobs import DELIVER, FAN_OUT
from events.tasks import fan_out_events
from records import services
from reviews.audit import Actor, record_event
from tests.conftest import ROOT, wait_until
from tests.events.receiver import Receiver

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker():
    """Redis as the wakes see it, with this test's queue's mark cleared before and after."""
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: `make test` sets it")
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(wakes.mark_key())
    yield client
    client.delete(wakes.mark_key())
    client.close()


class Queued:
    """Stands in for a task bound to a Job: keeps what would have been published."""

    def __init__(self, name: str):
        self.name, self.calls = name, []

    def apply_async(self, args=(), **options):
        self.calls.append(tuple(args))


@pytest.fixture
def queued(monkeypatch, broker):
    """Tasks queued as with a broker (not run in process), caught instead of published."""
    celery_app.conf.task_always_eager = False  # put back by tests/conftest.py's _tasks_run_in_process
    fan_outs, sends = Queued("fan_out"), Queued("deliver")
    monkeypatch.setattr(FAN_OUT, "tasks", [fan_outs])
    monkeypatch.setattr(DELIVER, "tasks", [sends])
    return fan_outs, sends


@pytest.fixture
def hook(queued, agent, monkeypatch):
    """The agent's subscription to correction requests, at a public address (nothing is sent here); the
    fan-out its own event queued has run, so a test starts with none queued."""
    from events.services import create_webhook

    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.216.34"])
    made = create_webhook(owner=agent.user, url="https://hooks.example/aas", event_types=["correction.requested"],
                          run_ids=[], actor=Actor("token:agent-1", agent.user.pk))[0]
    fan_out_events()
    queued[0].calls.clear()
    return made


def request_correction(run, text: str):
    return record_event(run=run, actor=Actor("token:reviewer-1"), action="correction.requested",
                        object_type="correction_request", object_id=1, after={"text": text})


def test_it_queues_one_fan_out_for_the_events_committed_before_it_starts(queued, hook, run_factory, broker):
    fan_outs, _ = queued
    run = run_factory()
    first = request_correction(run, "cite it")  # its wake queues the fan-out...
    assert len(fan_outs.calls) == 1 and broker.exists(wakes.mark_key())
    events = [first] + [request_correction(run, f"cite it {n}") for n in range(2)]  # ...which these wait for
    assert len(fan_outs.calls) == 1
    fan_out_events()  # the worker takes the queued fan-out: every event is read by it
    assert not broker.exists(wakes.mark_key())
    assert set(Delivery.objects.values_list("event_id", flat=True)) == {e.pk for e in events}


def test_an_event_committed_while_the_fan_out_reads_queues_the_next_one(queued, hook, run_factory, monkeypatch):
    fan_outs, _ = queued
    run = run_factory()
    first = request_correction(run, "cite it")
    later = []
    real_read = deliveries.read_page

    def read_then_commit_another(*args, **kwargs):
        page = real_read(*args, **kwargs)
        if not later:  # past this read, while the fan-out's transaction is open, another event commits
            writer = threading.Thread(target=lambda: (later.append(request_correction(run, "and this")),
                                                      connection.close()))
            writer.start()
            writer.join()
        return page

    monkeypatch.setattr(deliveries, "read_page", read_then_commit_another)
    fan_out_events()
    assert list(Delivery.objects.values_list("event_id", flat=True)) == [first.pk]
    assert len(fan_outs.calls) == 2  # the mark was gone before the read: the late event queued a fan-out
    fan_out_events()
    assert sorted(Delivery.objects.values_list("event_id", flat=True)) == sorted([first.pk, later[0].pk])


def test_the_sweep_queues_a_fan_out_past_a_mark_whose_publish_was_lost(queued, hook, run_factory, broker):
    fan_outs, _ = queued
    run = run_factory()
    broker.set(wakes.mark_key(), "1", ex=wakes.MARK_SECONDS)  # a process died after the SET, before its publish
    event = request_correction(run, "cite it")
    assert fan_outs.calls == [] and broker.exists(wakes.mark_key())
    deliveries.sweep_deliveries()
    assert fan_outs.calls == [()]
    fan_out_events()
    assert list(Delivery.objects.values_list("event_id", flat=True)) == [event.pk]
    assert not broker.exists(wakes.mark_key())


def test_a_wake_queues_the_fan_out_when_redis_refuses_the_mark(queued, run_factory, monkeypatch):
    fan_outs, _ = queued

    class Refusing:
        def set(self, *args, **kwargs):
            raise redis.ConnectionError("refused")

    monkeypatch.setattr(wakes, "_redis", lambda: Refusing())
    run = run_factory()
    request_correction(run, "cite it")
    request_correction(run, "and this")
    assert len(fan_outs.calls) == 2  # one per event: without a mark, nothing is skipped


def test_tasks_run_in_process_fan_out_at_every_wake(run_factory, monkeypatch, broker):
    calls = []
    monkeypatch.setattr(FAN_OUT, "tasks", [type("T", (), {"name": "f", "apply_async": lambda *a, **k: calls.append(1)})])
    run = run_factory()
    request_correction(run, "cite it")
    request_correction(run, "and this")
    assert len(calls) == 2 and not broker.exists(wakes.mark_key())


# Only the events a subscription may be owed wake the fan-out (events.feed.may_be_delivered).

# An action that is each type a subscription may name, with the `after` that makes it that type.
_ACTION_OF = {"member.validated": ("run.validated", {"run_status": None}),
              "run.in_review": ("run.validated", {"run_status": {"after": "in_review"}}),
              "run.failed": ("run.validated", {"run_status": {"after": "failed"}}),
              "run.final": ("run.finalized", None)}


def test_an_event_no_subscription_can_be_owed_wakes_no_fan_out(queued, hook, run_factory, broker):
    fan_outs, _ = queued
    broker.delete(wakes.mark_key())
    run = run_factory()  # run.created
    services.ingest_member_report(run=run, role="memory", filename="m.md", content=b"# memory\n",
                                  actor=Actor("token:agent-1"))  # member.uploaded
    record_event(run=run, actor=Actor("token:agent-1"), action="webhook.created", object_type="webhook",
                 object_id=1)  # a type of its own name that no subscription may name
    assert fan_outs.calls == [] and not broker.exists(wakes.mark_key())


@pytest.mark.parametrize("event_type", EVENT_TYPES)
def test_every_type_a_subscription_may_name_wakes_the_fan_out(queued, agent, run_factory, broker, monkeypatch,
                                                              event_type):
    """A subscription made just now, to any type it may name, gets its event through the wake the event's
    commit queues: the rule keeps nothing that a new subscription could outdate."""
    from events.services import create_webhook

    fan_outs, _ = queued
    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.216.34"])
    run = run_factory()
    fan_out_events()
    create_webhook(owner=agent.user, url="https://hooks.example/aas", event_types=[event_type], run_ids=[],
                   actor=Actor("token:agent-1", agent.user.pk))
    fan_out_events()
    fan_outs.calls.clear()
    action, after = _ACTION_OF.get(event_type, (event_type, None))
    assert event_type in event_types(action, after)
    event = record_event(run=run, actor=Actor("token:reviewer-1"), action=action, object_type="run",
                         object_id=run.run_id, after=after)
    assert fan_outs.calls == [()]
    fan_out_events()
    assert list(Delivery.objects.values_list("event_id", "event_type")) == [(event.pk, event_type)]


def test_the_events_that_woke_no_fan_out_are_read_past_by_the_next(queued, hook, run_factory):
    fan_outs, _ = queued
    run = run_factory()
    services.ingest_member_report(run=run, role="memory", filename="m.md", content=b"# memory\n",
                                  actor=Actor("token:agent-1"))
    assert fan_outs.calls == []
    event = request_correction(run, "cite it")
    assert fan_outs.calls == [()]
    fan_out_events()
    assert list(Delivery.objects.values_list("event_id", flat=True)) == [event.pk]
    assert FanOutMark.objects.get(name=MARK).cursor.endswith(f"-{event.pk}")  # past the upload's event too


def test_a_subscription_may_name_no_type_the_fan_out_is_not_woken_for(agent, monkeypatch):
    from events.services import WebhookRefused, create_webhook

    monkeypatch.setattr(addresses, "resolve", lambda host, port: ["93.184.216.34"])
    assert SUBSCRIBABLE == set(EVENT_TYPES)
    with pytest.raises(WebhookRefused):
        create_webhook(owner=agent.user, url="https://hooks.example/aas", event_types=["member.uploaded"],
                       run_ids=[], actor=Actor("token:agent-1", agent.user.pk))


# With a real worker: the promise end to end.

@pytest.fixture
def hold_fan_out():
    """`hold_fan_out()` locks the fan-out's mark row from another connection, as a fan-out holds it while it
    reads: a fan-out that starts meanwhile waits inside its transaction, after it has cleared the queued
    mark. Returns the event that releases the lock."""
    FanOutMark.objects.get_or_create(name=MARK)
    release, holders = threading.Event(), []

    def hold():
        locked = threading.Event()

        def holding():
            with transaction.atomic():
                FanOutMark.objects.select_for_update().get(name=MARK)
                locked.set()
                release.wait(120)
            connection.close()

        holders.append(threading.Thread(target=holding))
        holders[-1].start()
        assert locked.wait(60), "the fan-out's mark row was not locked"
        return release

    yield hold
    release.set()
    for holder in holders:
        holder.join()


def _settled(broker):
    """Every fan-out queued so far has started (a fan-out is queued only when the mark is absent, and the
    start of the one queued last clears it)."""
    wait_until(lambda: not broker.exists(wakes.mark_key()), "the queued fan-outs to start",
               timeout=wakes.MARK_SECONDS // 2)  # well before the mark would expire on its own


def _delivered_once_each(receiver, events) -> bool:
    bodies = receiver.payloads()
    ids = [r["headers"]["webhook-id"] for r in receiver.received]
    assert len(ids) == len(set(ids)), "an event delivered twice"
    return sorted(p["data"]["id"] for p in bodies) == sorted(e.pk for e in events)


@pytest.fixture
def receiving(agent, settings):
    from events.services import create_webhook

    settings.WEBHOOK_ALLOW_PRIVATE = True
    with Receiver() as receiver:
        create_webhook(owner=agent.user, url=receiver.url, event_types=["correction.requested"], run_ids=[],
                       actor=Actor("token:agent-1", agent.user.pk))
        yield receiver


def test_an_event_written_while_a_worker_fans_out_is_delivered(worker, receiving, run_factory, broker, hold_fan_out):
    run = run_factory()
    _settled(broker)
    release = hold_fan_out()
    first = request_correction(run, "cite it")
    _settled(broker)  # the worker's fan-out has started, and waits for the mark row
    second = request_correction(run, "and this")  # the running fan-out may not see it: a new one is queued
    assert broker.exists(wakes.mark_key())
    release.set()
    wait_until(lambda: _delivered_once_each(receiving, [first, second]), "both events delivered", timeout=60)


def _start_worker(queue: str, log) -> subprocess.Popen:
    db = connection.settings_dict
    env = dict(os.environ, DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
               CELERY_QUEUE=queue, DEBUG="1", WEBHOOK_ALLOW_PRIVATE="1", WEBHOOK_RETRY_BASE_MS="50")
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queue, "--concurrency=1",
                             "--loglevel=INFO", "--without-gossip", "--without-mingle", "--without-heartbeat"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@pytest.fixture
def own_worker(transactional_db, broker, tmp_path):
    """A worker of this test's alone (it is killed), on a queue of its own; `start()` starts another on it."""
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: `make test` sets it")
    queue, default_queue = f"aas-test-kill-{uuid.uuid4().hex[:8]}", celery_app.conf.task_default_queue
    celery_app.conf.task_always_eager = False
    celery_app.conf.task_default_queue = queue
    started = []

    def start():
        started.append(_start_worker(queue, (tmp_path / f"worker-{len(started)}.log").open("wb")))
        return started[-1]

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(20)
    celery_app.conf.task_default_queue = default_queue
    broker.delete(wakes.mark_key(queue), queue)


def test_a_worker_killed_mid_fan_out_loses_no_event(own_worker, receiving, run_factory, broker, hold_fan_out):
    first_worker = own_worker()
    run = run_factory()
    _settled(broker)
    release = hold_fan_out()
    first = request_correction(run, "cite it")
    _settled(broker)  # the worker's fan-out has started, and waits for the mark row inside its transaction
    second = request_correction(run, "and this")  # queued behind the fan-out the worker is running
    os.killpg(first_worker.pid, signal.SIGKILL)  # mid-fan-out: its message unacknowledged, its transaction lost
    first_worker.wait(20)
    release.set()
    own_worker()
    wait_until(lambda: _delivered_once_each(receiving, [first, second]), "both events delivered", timeout=90)
    assert Delivery.objects.count() == 2
