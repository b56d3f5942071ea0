"""The reconciliation page and the decisions posted from it (Django test client)."""
import pytest

from records.models import Record
from reconcile import services
from reconcile.models import CanonicalRecord, IssueDecision, Mapping
from reviews.audit import Actor
from reviews.models import AuditEvent, Run
from tests.reconcile.page_factories import (
    build_reconcile_run, canonical_from, declaration, issues, make_member, make_run, suggestion,
)

pytestmark = pytest.mark.django_db

OTHER_REVIEWER = Actor("user:reviewer-2")


@pytest.fixture
def small_run():
    run, member = build_reconcile_run(records=6, run_id="AAS-2026-09-25-pages-01")
    return run


def page(run, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return f"/runs/{run.run_id}/reconcile/" + (f"?{query}" if query else "")


def decide_url(run, mapping):
    return f"/runs/{run.run_id}/reconcile/mappings/{mapping.pk}/decide/"


def issue_url(run, decision):
    return f"/runs/{run.run_id}/reconcile/issues/{decision.issue_id}/decide/"


def same_mapping(run):
    return Mapping.objects.filter(run=run, relation="same").order_by("pk").first()


def new_mapping(run):
    return Mapping.objects.filter(run=run, relation="new").order_by("pk").first()


# Reading --------------------------------------------------------------------

def test_it_sends_anonymous_visitors_to_login(client, small_run):
    response = client.get(page(small_run))
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_it_refuses_the_page_to_a_user_without_a_role(client, outsider, small_run):
    client.force_login(outsider.user)
    assert client.get(page(small_run)).status_code == 403


def test_it_answers_404_for_an_unknown_run(client, reviewer):
    client.force_login(reviewer.user)
    assert client.get("/runs/AAS-2026-09-25-nothing-01/reconcile/").status_code == 404


def test_it_shows_member_records_beside_their_canonical_records(client, reviewer, small_run):
    client.force_login(reviewer.user)
    response = client.get(page(small_run, member="memory"))
    body = response.content.decode()
    assert response.status_code == 200
    assert "MEM-CMP-slota" in body and "RT-CMP-slota" in body
    assert "same slug &#x27;slota&#x27; under RT-" in body  # the suggestion's reason, escaped
    assert "new record: <code>MEM-CLM-slotd</code>" in body  # a `new` suggestion shows its would-be ID
    assert "<del>Memory</del>" in body and "<ins>Runtime</ins>" in body  # word-level differences
    assert 'hx-post="/runs/AAS-2026-09-25-pages-01/reconcile/mappings/' in body
    assert 'data-count="mappings-left">6<' in body and 'data-count="issues-left">4<' in body


def test_it_offers_only_non_runtime_members_with_declarations_in_the_picker(client, reviewer, small_run):
    make_member(small_run, "workflow")  # declares nothing
    client.force_login(reviewer.user)
    body = client.get(page(small_run)).content.decode()
    picker = body.split('class="member-picker"')[1].split("</nav>")[0]
    assert "?member=memory" in picker
    assert "?member=runtime" not in picker and "?member=workflow" not in picker


def test_it_shows_the_page_to_an_auditor_without_decision_buttons(client, auditor, small_run):
    client.force_login(auditor.user)
    response = client.get(page(small_run))
    body = response.content.decode()
    assert response.status_code == 200
    assert "MEM-OBJ-slotb" in body and "read-only" in body
    assert 'name="decision"' not in body and "Bulk accept" not in body


def test_it_escapes_report_text_everywhere(client, reviewer):
    run = make_run("AAS-2026-09-25-escape-01")
    runtime, memory = make_member(run, "runtime"), make_member(run, "memory")
    nasty = "Calls `<script>alert(1)</script>` when x < y && y > z."
    rt = declaration(runtime, 1, "RT-OBJ-store", "Store <b>bold</b>", nasty)
    rt.save()
    CanonicalRecord.objects.create(**{f.name: getattr(canonical_from(rt), f.name)
                                      for f in CanonicalRecord._meta.concrete_fields if f.name != "id"})
    mem = declaration(memory, 1, "MEM-OBJ-store", "Store <i>it</i>", nasty + " <img src=x onerror=alert(2)>")
    mem.save()
    suggestion(mem, relation="same", target="RT-OBJ-store", reason="label <u>similar</u>").save()
    issues(memory, ["MEM-OBJ-store <script>alert(3)</script> conflicts with RT-OBJ-store."])
    client.force_login(reviewer.user)
    body = client.get(page(run)).content.decode()
    assert "<script>alert" not in body and "<img src=x" not in body
    assert "<b>bold</b>" not in body and "<u>similar</u>" not in body and "<i>it</i>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body and "&lt;script&gt;alert(3)" in body
    assert "`" in body  # backticks are shown as written


def test_it_filters_rows_by_kind(client, reviewer, small_run):
    client.force_login(reviewer.user)
    body = client.get(page(small_run, member="memory", kind="OBJ")).content.decode()
    assert "MEM-OBJ-slotb" in body and "MEM-CMP-slota" not in body


def test_it_filters_stale_rows_and_conflicts(client, reviewer, small_run):
    stale = same_mapping(small_run)
    Mapping.objects.filter(pk=stale.pk).update(state="stale")
    record = Record.objects.get(run=small_run, record_id="MEM-RTE-slotc")
    Mapping.objects.create(run=small_run, source=record.record_id, source_record=record, relation="new",
                           origin="agent", proposed_by="token:agent-1")
    client.force_login(reviewer.user)
    stale_body = client.get(page(small_run, show="stale")).content.decode()
    assert f'id="pair-{stale.pk}"' in stale_body and stale_body.count('class="pair state-') == 1
    conflicts = client.get(page(small_run, show="conflicts")).content.decode()
    assert conflicts.count('class="pair state-') == 2  # MEM-RTE-slotc has two open mappings
    assert "MEM-RTE-slotc has 2 open mappings" in conflicts


def test_it_serves_only_the_row_table_for_an_htmx_filter_change(client, reviewer, small_run):
    client.force_login(reviewer.user)
    response = client.get(page(small_run, kind="CMP"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="pair-table")
    body = response.content.decode()
    assert response.status_code == 200 and body.lstrip().startswith('<section id="pair-table"')
    assert "<html" not in body and "MEM-CMP-slota" in body


# Deciding ---------------------------------------------------------------------

def test_it_returns_only_the_row_fragment_and_the_counters_for_htmx(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "accept", "version": mapping.version,
                                                             "rationale": "same store"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<article id="pair-{mapping.pk}"') and "<html" not in body
    assert body.count("<article") == 1
    assert 'id="counters" class="counters" aria-live="polite" hx-swap-oob="true"' in body
    assert 'data-count="mappings-left">5<' in body
    assert "status-accepted" in body and "Reopen" in body
    mapping.refresh_from_db()
    assert mapping.state == "accepted" and mapping.decided_by == "user:reviewer-1"
    assert AuditEvent.objects.filter(run=small_run, action="mapping.accepted").count() == 1


def test_it_redirects_a_plain_post_back_to_the_page_with_a_message(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping) + "?member=memory&kind=CMP",
                           {"decision": "reject", "version": mapping.version, "rationale": "different things"})
    assert response.status_code == 302
    assert response["Location"] == f"{page(small_run)}?member=memory&kind=CMP#pair-{mapping.pk}"
    followed = client.get(response["Location"])
    assert "Rejected" in followed.content.decode()
    mapping.refresh_from_db()
    assert mapping.state == "rejected" and mapping.rationale == "different things"


def test_every_row_form_carries_the_csrf_field_a_browser_without_javascript_posts(reviewer, small_run):
    import re

    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(reviewer.user)
    body = browser.get(page(small_run, member="memory")).content.decode()
    forms = re.findall(r'<form method="post" action="([^"]+decide/[^"]*)"[^>]*>(<input [^>]+>)', body)
    assert len(forms) == 6 + 4  # six mapping rows and four issues
    assert all('name="csrfmiddlewaretoken"' in field for _, field in forms)
    action, field = forms[0]
    token = re.search(r'value="([^"]+)"', field).group(1)
    version = re.search(rf'action="{re.escape(action)}".*?name="version" value="(\d+)"', body, re.S).group(1)
    response = browser.post(action.replace("&amp;", "&"), {"csrfmiddlewaretoken": token, "decision": "accept",
                                                           "version": version})
    assert response.status_code == 302  # not 403: the token is good
    swap = browser.post(action.replace("&amp;", "&"), {"csrfmiddlewaretoken": token, "decision": "reopen",
                                                       "version": int(version) + 1}, HTTP_HX_REQUEST="true")
    assert swap.status_code == 200 and 'name="csrfmiddlewaretoken"' in swap.content.decode()


def test_it_allocates_the_canonical_id_when_a_new_mapping_is_accepted(client, reviewer, small_run):
    mapping = new_mapping(small_run)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "accept", "version": mapping.version},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert CanonicalRecord.objects.filter(run=small_run, canonical_id=mapping.source, origin="mapping").exists()
    assert f"<code>{mapping.source}</code>" in response.content.decode()


def test_it_answers_a_stale_version_with_409_and_the_current_state(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    services.decide_mapping(mapping=mapping, decision="reject", rationale="not the same", actor=OTHER_REVIEWER,
                            expected_version=mapping.version)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "accept", "version": mapping.version},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 409
    assert "Another reviewer changed this item; here is its current state" in body
    assert "status-rejected" in body and "user:reviewer-2" in body and "not the same" in body
    assert f'name="version" value="{mapping.version + 1}"' in body


def test_it_tells_a_plain_post_about_a_stale_version(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=OTHER_REVIEWER,
                            expected_version=mapping.version)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "reject", "version": mapping.version,
                                                            "rationale": "no"}, follow=True)
    assert "Another reviewer changed this item" in response.content.decode()
    mapping.refresh_from_db()
    assert mapping.state == "accepted"


def test_it_requires_a_rationale_to_reject(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "reject", "version": mapping.version},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert "A rejection needs a rationale" in response.content.decode()
    mapping.refresh_from_db()
    assert mapping.state == "proposed"


@pytest.mark.parametrize("payload", [
    {"decision": "maybe", "version": 1},
    {"decision": "accept", "version": "x"},
    {"decision": "accept"},
])
def test_it_answers_malformed_decisions_with_400_naming_the_problem(client, reviewer, small_run, payload):
    mapping = same_mapping(small_run)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), payload, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert ("decision:" in response.content.decode()) or ("version:" in response.content.decode())


def test_it_refuses_a_target_of_another_kind(client, reviewer, small_run):
    mapping = same_mapping(small_run)  # a CMP record
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "accept", "version": mapping.version,
                                                            "target": "RT-OBJ-slotb"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "row-message error" in response.content.decode()
    mapping.refresh_from_db()
    assert mapping.state == "proposed"


def test_it_changes_the_target_when_accepting(client, reviewer):
    run = make_run("AAS-2026-09-25-retarget-01")
    runtime, memory = make_member(run, "runtime"), make_member(run, "memory")
    first = declaration(runtime, 1, "RT-OBJ-store", "Store", "keeps documents")
    second = declaration(runtime, 2, "RT-OBJ-cache", "Cache", "keeps documents for a while")
    Record.objects.bulk_create([first, second])
    CanonicalRecord.objects.bulk_create([canonical_from(first), canonical_from(second)])
    mem = declaration(memory, 1, "MEM-OBJ-cache", "Cache", "keeps documents for a while")
    mem.save()
    mapping = suggestion(mem, relation="same", target="RT-OBJ-store")
    mapping.save()
    client.force_login(reviewer.user)
    body = client.get(page(run)).content.decode()
    assert '<datalist id="targets-OBJ"><option value="RT-OBJ-store"><option value="RT-OBJ-cache">' in body \
        or '<datalist id="targets-OBJ"><option value="RT-OBJ-cache"><option value="RT-OBJ-store">' in body
    response = client.post(decide_url(run, mapping), {"decision": "accept", "version": 1, "target": "RT-OBJ-cache"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    mapping.refresh_from_db()
    assert mapping.state == "accepted" and mapping.target == "RT-OBJ-cache"


@pytest.mark.parametrize("persona", ["agent", "auditor"])
def test_it_refuses_decisions_from_agents_and_auditors_with_403(client, request, small_run, persona):
    user = request.getfixturevalue(persona).user
    mapping, decision = same_mapping(small_run), IssueDecision.objects.filter(run=small_run).first()
    client.force_login(user)
    for url, data in ((decide_url(small_run, mapping), {"decision": "accept", "version": 1}),
                      (issue_url(small_run, decision), {"decision": "accept", "version": 1}),
                      (f"/runs/{small_run.run_id}/reconcile/bulk-accept/", {"min_score": 0.1})):
        assert client.post(url, data, HTTP_HX_REQUEST="true").status_code == 403
    mapping.refresh_from_db()
    decision.refresh_from_db()
    assert mapping.state == "proposed" and decision.state == "proposed"
    assert AuditEvent.objects.filter(run=small_run, action="permission.denied").count() == 3


def test_it_answers_404_for_a_mapping_of_another_run(client, reviewer, small_run):
    other, _ = build_reconcile_run(records=2, run_id="AAS-2026-09-25-pages-02")
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, same_mapping(other)), {"decision": "accept", "version": 1})
    assert response.status_code == 404


def test_it_refuses_get_on_a_decision_url(client, reviewer, small_run):
    client.force_login(reviewer.user)
    assert client.get(decide_url(small_run, same_mapping(small_run))).status_code == 405


def test_it_decides_an_integration_issue_through_htmx(client, reviewer, small_run):
    decision = IssueDecision.objects.filter(run=small_run).order_by("pk").first()
    client.force_login(reviewer.user)
    response = client.post(issue_url(small_run, decision), {"decision": "reject", "version": decision.version,
                                                            "rationale": "already covered"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<article id="issue-{decision.issue_id}"') and body.count("<article") == 1
    assert 'data-count="issues-left">3<' in body and "already covered" in body
    decision.refresh_from_db()
    assert decision.state == "rejected"


def test_it_answers_a_stale_issue_decision_with_409(client, reviewer, small_run):
    decision = IssueDecision.objects.filter(run=small_run).order_by("pk").first()
    services.decide_issue(issue_decision=decision, decision="accept", rationale="", actor=OTHER_REVIEWER,
                          expected_version=decision.version)
    client.force_login(reviewer.user)
    response = client.post(issue_url(small_run, decision), {"decision": "accept", "version": decision.version},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 409 and "Another reviewer changed this item" in response.content.decode()


def test_it_bulk_accepts_suggestions_scoring_above_the_threshold(client, reviewer, small_run):
    client.force_login(reviewer.user)
    response = client.post(f"/runs/{small_run.run_id}/reconcile/bulk-accept/", {"min_score": "0.9"}, follow=True)
    assert "Accepted 2 suggestions scoring at least 0.90." in response.content.decode()
    accepted = Mapping.objects.filter(run=small_run, state="accepted")
    assert accepted.count() == 2 and all(m.score >= 0.9 for m in accepted)


def test_it_refuses_a_bulk_accept_without_a_valid_score(client, reviewer, small_run):
    client.force_login(reviewer.user)
    response = client.post(f"/runs/{small_run.run_id}/reconcile/bulk-accept/", {"min_score": "lots"}, follow=True)
    assert "needs a minimum score between 0 and 1" in response.content.decode()
    assert not Mapping.objects.filter(run=small_run, state="accepted").exists()


def test_it_lists_mapping_statements_without_a_member_record_under_their_own_entry(client, reviewer, small_run):
    Mapping.objects.create(run=small_run, source="MEM-OBJ-1", relation="same", target="RT-OBJ-slotb",
                           origin="result", proposed_by="worker:test", origin_key="MEM-OBJ-1|same|RT-OBJ-slotb")
    client.force_login(reviewer.user)
    body = client.get(page(small_run)).content.decode()
    assert "?member=statements" in body and "1 without a member record" in body
    assert "MEM-OBJ-1" not in body  # the memory member's rows come first
    statements = client.get(page(small_run, member="statements")).content.decode()
    assert statements.count('class="pair state-') == 1
    assert "<code>MEM-OBJ-1</code>" in statements and "a proposal kept outside the run" in statements
    assert "<code>RT-OBJ-slotb</code>" in statements


def test_it_tells_a_bulk_accept_on_an_approved_run_to_reopen_it_first(client, reviewer, small_run):
    Run.objects.filter(pk=small_run.pk).update(status=Run.Status.APPROVED)
    client.force_login(reviewer.user)
    response = client.post(f"/runs/{small_run.run_id}/reconcile/bulk-accept/", {"min_score": "0.5"}, follow=True)
    assert response.status_code == 200
    assert "reopen it before changing its reconciliation" in response.content.decode()
    assert not Mapping.objects.filter(run=small_run, state="accepted").exists()
