"""Schemathesis fuzzes every operation of /api/schema/: no 500, and every answer matches the schema.

In process through Django's WSGI application (no network), authenticated as an admin (who may call
everything), with the run, member and mapping in paths pinned to real rows half of the time so that
requests reach the views' logic instead of stopping at a 404. Bounded: a fixed number of examples
per operation, derandomized, so the run takes the same time every time.
"""
from __future__ import annotations

import pytest
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase, given, settings, strategies as st
from hypothesis.errors import Unsatisfiable

schemathesis = pytest.importorskip("schemathesis")

from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.generation import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from reconcile.models import Mapping  # noqa: E402
from tests.conftest import _token_for  # noqa: E402
from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload  # noqa: E402

pytestmark = pytest.mark.django_db

POSITIVE_EXAMPLES = 25
NEGATIVE_EXAMPLES = 10
CONFORMANCE = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@pytest.fixture
def _keep_the_test_connection():
    """Requests go through the real WSGI handler, whose request signals would close the test's database
    connection (and its transaction) after each one; Django's own test client unhooks them the same way."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_target(_keep_the_test_connection, run_factory, settings):
    settings.API_THROTTLE_RATE = "1000000/minute"
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    key = _token_for("fuzz-admin", "admin")
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    real = {"run_id": run.run_id, "member_id": "memory",
            "mapping_id": Mapping.objects.filter(run=run).values_list("pk", flat=True).first()}
    return schema, {"Authorization": f"Token {key}"}, real


def _fuzz(operation, headers, real, mode, examples, checks):
    pinned = {name: value for name, value in real.items() if "{" + name + "}" in operation.path}
    strategies = [operation.as_strategy(generation_mode=mode, headers=headers)]
    if pinned:
        strategies.append(operation.as_strategy(generation_mode=mode, headers=headers, path_parameters=pinned))

    @given(case=st.one_of(strategies))
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    def run(case):
        response = case.call(headers=headers)
        case.validate_response(response, checks=checks, headers=headers)

    run()


def operations(schema):
    for result in schema.get_all_operations():
        yield result.ok()


def test_every_operation_answers_within_its_schema_and_never_500(fuzz_target):
    schema, headers, real = fuzz_target
    seen = []
    for operation in operations(schema):
        seen.append(operation.label)
        _fuzz(operation, headers, real, GenerationMode.POSITIVE, POSITIVE_EXAMPLES, CONFORMANCE)
    assert len(seen) >= 25, seen  # every documented operation was exercised


def test_invalid_input_to_every_operation_is_refused_without_a_500(fuzz_target):
    schema, headers, real = fuzz_target
    fuzzed = []
    for operation in operations(schema):
        try:
            _fuzz(operation, headers, real, GenerationMode.NEGATIVE, NEGATIVE_EXAMPLES,
                  [not_a_server_error, content_type_conformance])
        except Unsatisfiable:
            continue  # nothing in this operation can be made invalid (a GET whose only parameter is pinned)
        fuzzed.append(operation.label)
    assert len(fuzzed) >= 15, fuzzed
