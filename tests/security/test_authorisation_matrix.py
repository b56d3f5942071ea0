"""The authorisation matrix: every endpoint of the URL conf × every kind of caller (DESIGN §4, §9).

Routes come from `django.urls.get_resolver()`, not from a hand-kept list: an endpoint with no row
in EXPECTED fails `test_every_endpoint_has_a_row`, so nobody adds one without saying who may call it.
Each row says what every caller gets: anonymous, a revoked token, an agent that never touched the
run, the agent that uploaded its members, a reviewer, an auditor, an admin. API callers use their
token; pages are visited with the same users' browser sessions (a token is no page credential, so
the revoked token's holder is anonymous there).

Outcomes: a status code for reads (exact), ALLOWED for writes sent with an empty body (anything but
401, 403, a redirect to the login page or a 5xx: the request got past the access check and was
judged on its content), LOGIN (302 to the login page), or a status.

Who may call each write route is declared once, beside the route (`reviews.access.route_policy`): every
write route's view must carry a declaration, and every write route of a run is tried as an agent outside
the run, which must get 403 with nothing stored and nothing audited but its folded denial (DESIGN §9).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.apps import apps
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.test import APIClient

from reconcile.models import AmendmentDecision, CanonicalRecord, IssueDecision, Mapping
from reconcile.services import corrections
from records.models import MemberVersion
from records.services.snapshots import upload_source_snapshot
from reviews.access import CALLER_ROUTE, RUN_ROUTE, WRITE_METHODS, RoutePolicy
from reviews.audit import Actor
from reviews.models import ApiToken, AuditEvent
from reviews.services import issue_token, revoke_token
from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload
from tests.reconcile.page_factories import amendments
from tests.records.test_source_api import tar_gz

ANONYMOUS, REVOKED, AGENT, PARTICIPANT, REVIEWER, AUDITOR, ADMIN = (
    "anonymous", "revoked token", "agent", "participating agent", "reviewer", "auditor", "admin")
CALLERS = (ANONYMOUS, REVOKED, AGENT, PARTICIPANT, REVIEWER, AUDITOR, ADMIN)
ROLES = {AGENT, PARTICIPANT, REVIEWER, AUDITOR, ADMIN}
EVERY_ROLE = frozenset(ROLES)
UPLOADERS = frozenset({AGENT, PARTICIPANT, ADMIN})  # create runs; upload to a run only as its participant
PARTICIPANTS = frozenset({PARTICIPANT, ADMIN})  # the run's creator and added agents (§9), and admins
PROPOSERS = frozenset({PARTICIPANT, REVIEWER, ADMIN})  # an agent proposes to, and replies on, its runs only
DECIDERS = frozenset({REVIEWER, ADMIN})
AUDIT_READERS = frozenset({PARTICIPANT, REVIEWER, AUDITOR, ADMIN})  # an agent reads the trails of runs it acted on
EXPORTERS = frozenset({REVIEWER, AUDITOR, ADMIN})

ALLOWED, LOGIN = "allowed", "login"


@dataclass(frozen=True)
class Row:
    kind: str  # "api", "page" or "public"
    allowed: frozenset
    ok: int | str  # what an allowed caller gets: a status, or ALLOWED

    def expected(self, caller: str):
        if self.kind == "public":
            return self.ok
        if caller in (ANONYMOUS, REVOKED):
            return 401 if self.kind == "api" else LOGIN
        return self.ok if caller in self.allowed else 403


def api(allowed, ok=200) -> Row:
    return Row("api", frozenset(allowed), ok)


def page(allowed, ok=200) -> Row:
    return Row("page", frozenset(allowed), ok)


def public(ok) -> Row:
    return Row("public", EVERY_ROLE, ok)


R = "api/runs/<str:run_id>/"
P = "runs/<str:run_id>/"

EXPECTED: dict[tuple[str, str], Row] = {
    # Open to everyone: the login form, health, favicon.
    ("login/", "GET"): public(200),
    ("logout/", "POST"): public(LOGIN),  # to the login page (tried last: it ends the session)
    ("healthz", "GET"): public(200),
    ("favicon.ico", "GET"): public(200),
    # The API's contract is public and ignores credentials, even a revoked token.
    ("api/schema/", "GET"): public(200),
    ("api/docs/", "GET"): public(200),
    # Django's admin: only the admin role (staff) gets in; everyone else is sent to its login.
    ("admin/", "GET"): Row("admin", frozenset({ADMIN}), 200),
    # API (DESIGN §4), roles (§9).
    ("api/runs/", "GET"): api(EVERY_ROLE),
    ("api/runs/", "POST"): api(UPLOADERS, ALLOWED),
    ("api/whoami/", "GET"): api(EVERY_ROLE),
    (R, "GET"): api(EVERY_ROLE),
    (R, "PATCH"): api(DECIDERS, ALLOWED),  # participants
    (R + "members/", "POST"): api(PARTICIPANTS, ALLOWED),
    (R + "members/<str:member_id>/", "GET"): api(EVERY_ROLE),
    (R + "members/<str:member_id>/raw", "GET"): api(EVERY_ROLE),
    (R + "records/", "GET"): api(EVERY_ROLE),
    (R + "integration-issues/", "GET"): api(EVERY_ROLE),
    (R + "integration-issues/<int:decision_id>/decision/", "POST"): api(DECIDERS, ALLOWED),
    (R + "validation/", "GET"): api(EVERY_ROLE),
    (R + "canonical-records/", "GET"): api(EVERY_ROLE),
    (R + "mappings/", "GET"): api(EVERY_ROLE),
    (R + "mappings/", "POST"): api(PROPOSERS, ALLOWED),
    (R + "mappings/<int:mapping_id>/decision/", "POST"): api(DECIDERS, ALLOWED),
    (R + "amendments/", "GET"): api(EVERY_ROLE),
    (R + "amendments/<int:amendment_id>/decision/", "POST"): api(DECIDERS, ALLOWED),
    (R + "progress/", "GET"): api(EVERY_ROLE),
    (R + "approve/", "POST"): api(DECIDERS, ALLOWED),
    (R + "reopen/", "POST"): api(DECIDERS, ALLOWED),
    (R + "finalize/retry/", "POST"): api(DECIDERS, ALLOWED),
    (R + "result/", "GET"): api(EVERY_ROLE, 404),  # read allowed; this run has no result yet
    (R + "result.json", "GET"): api(EVERY_ROLE, 404),
    (R + "bundle/", "GET"): api(EXPORTERS),  # the export carries the audit trail
    (R + "bundle/", "POST"): api(PARTICIPANTS, ALLOWED),
    (R + "audit/", "GET"): api(AUDIT_READERS),
    (R + "audit/verify/", "GET"): api(AUDIT_READERS),
    # Pages (DESIGN §5): login required; reading for every role, deciding for reviewers.
    ("", "GET"): page(EVERY_ROLE),
    (P, "GET"): page(EVERY_ROLE),
    (P + "members/<str:member_id>/", "GET"): page(EVERY_ROLE),
    (P + "audit/", "GET"): page(AUDIT_READERS),
    (P + "result/", "GET"): page(EVERY_ROLE),
    (P + "approve/", "GET"): page(EVERY_ROLE),
    (P + "approve/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reopen/", "POST"): page(DECIDERS, ALLOWED),
    (P + "finalize/retry/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reconcile/", "GET"): page(EVERY_ROLE),
    (P + "reconcile/progress/", "GET"): page(EVERY_ROLE),
    (P + "reconcile/targets/", "GET"): page(EVERY_ROLE),  # the target choices matching what a reviewer types
    (P + "reconcile/blockers/", "GET"): page(EVERY_ROLE),
    (P + "reconcile/mappings/<int:mapping_id>/decide/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reconcile/issues/<int:issue_id>/decide/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reconcile/amendments/<int:amendment_id>/decide/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reconcile/bulk-accept/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reconcile/records/<str:source>/propose/", "POST"): page(PROPOSERS, ALLOWED),
    (P + "reconcile/canonical/<int:canonical_id>/reject/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reconcile/members/<str:role>/mappings/", "GET"): page(EVERY_ROLE),
    (P + "revise/", "POST"): page(DECIDERS, ALLOWED),  # this run is not final: the reviewer is told so
    (R + "blockers/", "GET"): api(EVERY_ROLE),
    (R + "quotations/", "GET"): api(EVERY_ROLE),
    (R + "source/", "GET"): api(EVERY_ROLE),
    (R + "source/", "POST"): api(PARTICIPANTS, ALLOWED),
    (R + "revise/", "POST"): api(DECIDERS, ALLOWED),  # "a reviewer revises" a final run (§3)
    ("api/runs/import/", "POST"): api(UPLOADERS, ALLOWED),
    ("api/keys/", "GET"): public(200),  # an auditor checks signatures offline against them
    # Correction requests (issue 19): reviewers raise and settle; reviewers and the run's agents reply.
    (R + "corrections/", "GET"): api(EVERY_ROLE),
    (R + "corrections/", "POST"): api(DECIDERS, ALLOWED),
    (R + "corrections/<int:correction_id>/resolve/", "POST"): api(DECIDERS, ALLOWED),
    (R + "corrections/<int:correction_id>/reopen/", "POST"): api(DECIDERS, ALLOWED),
    (R + "corrections/<int:correction_id>/withdraw/", "POST"): api(DECIDERS, ALLOWED),
    (R + "corrections/<int:correction_id>/replies/", "POST"): api(PROPOSERS, ALLOWED),
    (R + "members/<str:member_id>/diff/", "GET"): api(EVERY_ROLE),
    (P + "corrections/", "GET"): page(EVERY_ROLE),
    (P + "corrections/", "POST"): page(DECIDERS, ALLOWED),
    (P + "corrections/<int:correction_id>/<str:verb>/", "POST"): page(DECIDERS, ALLOWED),
    (P + "members/<str:role>/diff/", "GET"): page(EVERY_ROLE),
    (R + "attestation/", "GET"): api(EVERY_ROLE, 404),  # read allowed; this run is not final, so unsigned yet
    (P + "reconcile/counters/", "GET"): page(EVERY_ROLE),
    (P + "reconcile/bulk-accept/undo/", "POST"): page(DECIDERS, ALLOWED),
    # Events and webhooks (issue 20): every role reads its own feed and keeps its own subscriptions; a
    # subscription is its owner's alone, so another's (here: one that does not exist) is 404 to everyone.
    # Independent reviews (issue 21): every role reads the passes (blind where DESIGN §2 says), their
    # agreement and conflicts; reviewers set reviews_required, submit their pass and, with the adjudicate
    # permission, settle conflicts (this run has none: 404 past the role check).
    (R + "passes/", "GET"): api(EVERY_ROLE),
    (R + "passes/mine/submit/", "POST"): api(DECIDERS, ALLOWED),
    (R + "agreement/", "GET"): api(EVERY_ROLE),
    (R + "conflicts/", "GET"): api(EVERY_ROLE),
    (R + "conflicts/<int:conflict_id>/decision/", "POST"): api(DECIDERS, ALLOWED),
    (P + "reviews/", "GET"): page(EVERY_ROLE),
    (P + "reviews/", "POST"): page(DECIDERS, ALLOWED),
    (P + "reviews/submit/", "POST"): page(DECIDERS, ALLOWED),
    (P + "conflicts/", "GET"): page(EVERY_ROLE),
    (P + "conflicts/<int:conflict_id>/settle/", "POST"): page(DECIDERS, ALLOWED),
    ("api/events/", "GET"): api(EVERY_ROLE),
    ("api/webhooks/", "GET"): api(EVERY_ROLE),
    ("api/webhooks/", "POST"): api(EVERY_ROLE, ALLOWED),
    ("api/webhooks/<int:webhook_id>/", "GET"): api(EVERY_ROLE, 404),
    ("api/webhooks/<int:webhook_id>/", "PATCH"): api(EVERY_ROLE, ALLOWED),
    ("api/webhooks/<int:webhook_id>/", "DELETE"): api(EVERY_ROLE, ALLOWED),
    ("api/webhooks/<int:webhook_id>/deliveries/", "GET"): api(EVERY_ROLE, 404),
    ("api/webhooks/<int:webhook_id>/deliveries/<int:delivery_id>/redeliver/", "POST"): api(EVERY_ROLE, ALLOWED),
}

# Methods of function views (DRF views' methods are read from their classes).
FUNCTION_VIEW_METHODS = {"GET", "POST"}


def routes() -> dict[str, object]:
    """Every route string of the URL conf with its view (the first pattern a path matches wins)."""
    found: dict[str, object] = {}

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if route == "admin/":
                    found.setdefault(route, "django-admin")  # Django's own site, one row for all of it
                else:
                    walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                found.setdefault(route, pattern.callback)

    walk(get_resolver().url_patterns, "")
    return found


def drf_methods(view) -> set[str] | None:
    cls = getattr(view, "cls", None)
    if cls is None:
        return None
    return {m.upper() for m in cls.http_method_names if hasattr(cls, m) and m not in ("options", "head")}


def test_every_endpoint_has_a_row():
    rows = EXPECTED
    missing = []
    for route, view in routes().items():
        methods = drf_methods(view) if view != "django-admin" else {"GET"}
        if methods is None:
            methods = {m for m in FUNCTION_VIEW_METHODS if (route, m) in rows} or {"GET"}
        missing += [f"{method} /{route}" for method in sorted(methods) if (route, method) not in rows]
    assert missing == [], "endpoints with no row in the authorisation matrix: " + ", ".join(missing)


def test_every_row_names_an_endpoint_that_exists():
    known = routes()
    assert [key for key in EXPECTED if key[0] not in known] == []


def test_rows_of_api_views_name_exactly_the_methods_they_implement():
    known = routes()
    rows = EXPECTED
    for route, view in known.items():
        methods = drf_methods(view)
        if methods is not None:
            assert {m for r, m in rows if r == route} == methods, route


# --- who may write: one declaration per route ----------------------------------------------------

# Django's own views, not the app's: logging out ends the caller's session only; the admin site is
# staff-only and read-only for runs, tokens and events.
NOT_THE_APPS = {"logout/", "admin/"}
# A generic DRF view's handler calls its action: the declaration may sit on either.
GENERIC_ACTIONS = {"POST": "create", "PUT": "update", "PATCH": "partial_update", "DELETE": "destroy"}


def function_view_methods(view) -> set[str] | None:
    """The methods a function view's `require_http_methods` (`require_POST`, …) lets through, if it has one."""
    while view is not None:
        free = dict(zip(view.__code__.co_freevars, view.__closure__ or ()))
        if "request_method_list" in free:
            return {m.upper() for m in free["request_method_list"].cell_contents}
        view = getattr(view, "__wrapped__", None)
    return None


def write_methods(route: str, view) -> set[str]:
    methods = drf_methods(view)
    if methods is None:
        methods = function_view_methods(view) or {m for r, m in EXPECTED if r == route}
    return methods & WRITE_METHODS


def declared_policies(view, method: str) -> dict:
    """The `route_policy` declarations of the handler that answers `method`: {None: policy}, or one
    policy per value of a URL argument ({("verb", "reply"): policy, …}); {} when there is none."""
    cls = getattr(view, "cls", None)
    if cls is None:
        return getattr(view, "route_policies", {})
    handlers = [getattr(cls, method.lower(), None), getattr(cls, GENERIC_ACTIONS[method], None)]
    return next((h.route_policies for h in handlers if hasattr(h, "route_policies")), {})


def undeclared_write_routes(found: dict[str, object]) -> list[str]:
    return [f"{method} /{route}" for route, view in found.items() if route not in NOT_THE_APPS
            for method in sorted(write_methods(route, view)) if not declared_policies(view, method)]


def write_routes_of_a_run() -> list[tuple[str, str, dict, RoutePolicy]]:
    """(route, method, URL arguments the policy names, policy) of every write route that names a run."""
    found = []
    for route, view in routes().items():
        if route in NOT_THE_APPS:
            continue
        for method in sorted(write_methods(route, view)):
            for key, policy in declared_policies(view, method).items():
                if policy.scope == RUN_ROUTE:
                    found.append((route, method, dict([key]) if key else {}, policy))
    return found


def test_every_write_route_declares_who_may_call_it():
    assert undeclared_write_routes(routes()) == []


def test_a_write_route_without_a_declaration_is_found(monkeypatch):
    """The check above bites: a new POST view with no `route_policy` is named."""
    from django.views.decorators.http import require_POST

    @require_POST
    def new_write(request, run_id: str):
        raise AssertionError("never called")

    assert undeclared_write_routes(routes() | {"runs/<str:run_id>/new/": new_write}) == [
        "POST /runs/<str:run_id>/new/"]


def test_every_declaration_is_of_a_known_scope_and_its_roles():
    for route, view in routes().items():
        for method in write_methods(route, view) if route not in NOT_THE_APPS else ():
            for policy in declared_policies(view, method).values():
                assert policy.scope in (RUN_ROUTE, CALLER_ROUTE) and policy.roles and policy.action, route
                # An agent writes to a run only as its participant (DESIGN §9).
                if policy.scope == RUN_ROUTE and "agent" in policy.roles:
                    assert policy.participant, f"{method} /{route}"
    assert len(write_routes_of_a_run()) >= 35


def app_rows() -> dict[str, int]:
    return {model._meta.label: model.objects.count() for label in ("reviews", "records", "reconcile", "results",
                                                                   "events")
            for model in apps.get_app_config(label).get_models()}


def test_an_agent_outside_the_run_writes_nothing_on_any_write_route(world):
    """Every write route of a run, as an agent that is no participant: 403, no row stored anywhere, no event
    but the caller's denial (folded: one event per caller label and run, its tally counting the rest)."""
    kwargs, callers = world
    api_client, browser = callers[AGENT]
    wrong = []
    for route, method, named, policy in write_routes_of_a_run():
        url = url_of(route, kwargs | named)
        client = api_client if route.startswith("api/") else browser
        before, last = app_rows(), AuditEvent.objects.order_by("pk").last().pk
        if client is api_client:
            response = getattr(client, method.lower())(url, {}, format="json")
        else:
            response = getattr(client, method.lower())(url, {})
        after = app_rows()
        changed = {name: after[name] - count for name, count in before.items() if after[name] != count}
        events = list(AuditEvent.objects.filter(pk__gt=last).values_list("action", "actor", "run"))
        if response.status_code != 403:
            wrong.append(f"{method} {url}: {response.status_code}, not 403")
        if not set(changed) <= {"reviews.AuditEvent", "reviews.DenialTally"} or any(n > 1 for n in changed.values()):
            wrong.append(f"{method} {url}: stored {changed}")
        # Denied on the run-less chain: nothing of the outsider's on the run's trail (issue 36 item 8).
        if any(action != "permission.denied" or not actor.endswith(":agent-outside") or run is not None
               for action, actor, run in events):
            wrong.append(f"{method} {url}: audited {events}")
        if policy.participant and response.status_code == 403 and client is api_client:
            assert "PATCH /api/runs/" in response.json()["error"]["message"], url  # how to be added
    assert wrong == [], "\n".join(wrong)
    denials = AuditEvent.objects.filter(action="permission.denied", actor__endswith=":agent-outside")
    assert denials.count() == 2  # one per label: the token's and the browser session's


# --- the matrix ---------------------------------------------------------------------------------

@pytest.fixture
def world(db, run_factory):
    """One run with members, mappings, issues, an amendment and a canonical record; every caller."""
    run = run_factory()
    upload(run, "runtime", RUNTIME_SLUG)
    memory = upload(run, "memory", MEMORY_SMALL)
    amendment = amendments(MemberVersion.objects.get(pk=memory.pk),
                           [("amendment", "MEM-OBJ-memory-facts is narrower than the runtime's.")])[0]
    upload_source_snapshot(run=run, archive=tar_gz({"src/store.py": b"db.insert(row)\n"}), commit="",
                           actor=Actor.command("test"))  # GET source/ lists it (404 before any snapshot)
    canonical = CanonicalRecord.objects.filter(run=run).first()
    assert canonical is not None and AmendmentDecision.objects.filter(pk=amendment.pk).exists()
    kwargs = {
        "run_id": run.run_id, "member_id": "memory", "role": "memory", "source": "MEM-OBJ-memory-facts",
        "mapping_id": Mapping.objects.filter(run=run).first().pk,
        "decision_id": IssueDecision.objects.filter(run=run).first().pk,
        "issue_id": IssueDecision.objects.filter(run=run).first().pk,
        "amendment_id": amendment.pk, "canonical_id": canonical.pk, "verb": "resolve",
        "webhook_id": 987654, "delivery_id": 987654, "conflict_id": 987654,
        "correction_id": corrections.raise_correction(run=run, member="memory", text="Cite the file.",
                                                      actor=Actor("user:reviewer-m")).pk,
    }
    callers = {ANONYMOUS: (APIClient(), Client())}
    names = {AGENT: ("agent-outside", "agent"), PARTICIPANT: ("agent-1", "agent"), REVIEWER: ("reviewer-m", "reviewer"),
             AUDITOR: ("auditor-m", "auditor"), ADMIN: ("admin-m", "admin"), REVOKED: ("agent-revoked", "agent")}
    for caller, (name, role) in names.items():
        token, key = issue_token(name=name, role=role, actor=Actor.command("test"))
        api_client, browser = APIClient(), Client()
        api_client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        if caller == REVOKED:
            revoke_token(token=token, actor=Actor.command("test"))
            browser.defaults["HTTP_AUTHORIZATION"] = f"Token {key}"  # no page credential: stays anonymous
        else:
            browser.force_login(token.user)
        callers[caller] = (api_client, browser)
    assert ApiToken.objects.get(name="agent-revoked").revoked_at is not None
    return kwargs, callers


def url_of(route: str, kwargs: dict) -> str:
    path = route
    for name, value in kwargs.items():
        for converter in ("str", "int"):
            path = path.replace(f"<{converter}:{name}>", str(value))
    assert "<" not in path, path
    return "/" + path


def outcome(response) -> int | str:
    if response.status_code == 302 and response.headers.get("Location", "").startswith("/login/"):
        return LOGIN
    return response.status_code


def matches(expected, got) -> bool:
    if expected == ALLOWED:
        return got not in (401, 403, LOGIN) and isinstance(got, int) and got < 500
    return got == expected


@pytest.mark.parametrize("caller", CALLERS)
def test_each_caller_gets_what_the_design_allows_on_every_endpoint(caller, world):
    kwargs, callers = world
    api_client, browser = callers[caller]
    for client in (api_client, browser):
        client.raise_request_exception = False
    wrong = []
    for (route, method), row in sorted(EXPECTED.items(), key=lambda item: item[0][0] == "logout/"):
        url = url_of(route, kwargs)
        client = api_client if route.startswith("api/") else browser
        if method == "GET":
            response = client.get(url)
        elif method in ("PATCH", "DELETE"):
            response = getattr(client, method.lower())(url, {}, format="json")
        else:
            response = client.post(url, {}, format="json") if client is api_client else client.post(url, {})
        got = outcome(response)
        if row.kind == "admin":
            expected = 200 if caller == ADMIN else "admin-login"
            ok = got == 200 if caller == ADMIN else (got == 302 and "/admin/login/" in response["Location"])
        else:
            expected = row.expected(caller)
            ok = matches(expected, got)
        if not ok:
            wrong.append(f"{method} {url}: expected {expected}, got {got}")
        if isinstance(got, int) and got in (401, 403) and route.startswith("api/"):
            assert set(response.json()) == {"error"}, url  # refusals in the error shape too
    assert wrong == [], f"{caller}:\n" + "\n".join(wrong)
