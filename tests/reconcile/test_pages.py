"""The reconciliation page and the decisions posted from it (Django test client)."""
import re

import pytest

from records.models import Record
from reconcile import services
from reconcile.models import AmendmentDecision, CanonicalRecord, IssueDecision, Mapping
from reviews.audit import Actor
from reviews.models import AuditEvent, DenialTally, Run
from tests.reconcile.page_factories import (
    amendments, build_reconcile_run, canonical_from, declaration, issues, make_member, make_run, suggestion,
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
    assert "{#" not in body and "{%" not in body and "{{" not in body  # no template syntax leaks into the page


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
    # Record texts are Markdown: backticks make code, and what is inside stays escaped (issue 22).
    assert "<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>" in body
    # Escaped once: the rows' values are escaped before the template prints them (rows.PairRow.display).
    assert "Store &lt;i&gt;it&lt;/i&gt;" in body and "label &lt;u&gt;similar&lt;/u&gt;" in body
    assert "&amp;lt;" not in body and "&amp;amp;" not in body


def test_it_filters_rows_by_kind(client, reviewer, small_run):
    client.force_login(reviewer.user)
    body = client.get(page(small_run, member="memory", kind="OBJ")).content.decode()
    assert "MEM-OBJ-slotb" in body and "MEM-CMP-slota" not in body


def test_it_filters_stale_rows_and_conflicts(client, reviewer, small_run):
    stale = same_mapping(small_run)
    Mapping.objects.filter(pk=stale.pk).update(state="stale")
    record = Record.objects.get(run=small_run, record_id="MEM-RTE-slotc")
    # Two open mappings of one record are undecided, not a conflict; two accepted ones are (one place
    # per record). Written here as an older run holds them: the decision service refuses the second.
    Mapping.objects.create(run=small_run, source=record.record_id, source_record=record, relation="new",
                           origin="agent", proposed_by="token:agent-1")
    client.force_login(reviewer.user)
    stale_body = client.get(page(small_run, show="stale")).content.decode()
    assert f'id="pair-{stale.pk}"' in stale_body and stale_body.count('class="pair state-') == 1
    assert client.get(page(small_run, show="conflicts")).content.decode().count('class="pair state-') == 0
    Mapping.objects.filter(run=small_run, source=record.record_id).update(state="accepted")
    # Written behind the services' back, with no event to move the run's chain head: the page's kept
    # standing (reconcile.blockers.kept_standing) is dropped as an event would make it stale.
    from reconcile import blockers
    blockers.forget_kept()
    conflicts = client.get(page(small_run, show="conflicts")).content.decode()
    assert conflicts.count('class="pair state-') == 2  # exactly the rows the several_places blockers name
    assert "MEM-RTE-slotc has 2 accepted mappings" in conflicts
    from reconcile.blockers import run_standing
    named = run_standing(small_run).conflict_mappings  # the one list of blockers agrees with the filter
    assert named and all(f'id="pair-{pk}"' in conflicts for pk in named) and len(named) == 2


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
    assert "This item changed since the page showed it" in body
    assert "status-rejected" in body and "user:reviewer-2" in body and "not the same" in body
    assert f'name="version" value="{mapping.version + 1}"' in body


def test_it_tells_a_plain_post_about_a_stale_version(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    services.decide_mapping(mapping=mapping, decision="accept", rationale="", actor=OTHER_REVIEWER,
                            expected_version=mapping.version)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "reject", "version": mapping.version,
                                                            "rationale": "no"}, follow=True)
    assert "This item changed since the page showed it" in response.content.decode()
    mapping.refresh_from_db()
    assert mapping.state == "accepted"


def test_it_requires_a_rationale_to_reject(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    client.force_login(reviewer.user)
    response = client.post(decide_url(small_run, mapping), {"decision": "reject", "version": mapping.version},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert "a rejection needs a rationale" in response.content.decode()
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
    # Each target choice names the canonical record's label beside its ID (issue 22).
    assert re.search(r'<datalist id="targets-OBJ">(<option value="RT-OBJ-(store|cache)">RT-OBJ-\2 — [^<]+</option>){2}'
                     r'</datalist>', body)
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
    # Three denials to one caller on one run within a minute fold into one event (reviews.audit.record_denial),
    # on the run-less chain for an agent outside the run (issue 36 item 8).
    chain = None if persona == "agent" else small_run
    assert AuditEvent.objects.filter(run=chain, object_id=small_run.run_id, action="permission.denied").count() == 1
    assert DenialTally.objects.get(run=small_run).count == 3


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
    assert response.status_code == 409 and "This item changed since the page showed it" in response.content.decode()


def test_it_bulk_accepts_suggestions_scoring_above_the_threshold(client, reviewer, small_run):
    client.force_login(reviewer.user)
    url = f"/runs/{small_run.run_id}/reconcile/bulk-accept/"
    preview = client.post(url, {"min_score": "0.9"})
    listed = re.findall(r'name="mapping" value="(\d+)"', preview.content.decode())
    assert len(listed) == 2 and not Mapping.objects.filter(run=small_run, state="accepted").exists()
    response = client.post(url, {"min_score": "0.9", "confirm": "1", "mapping": listed}, follow=True)
    assert "Accepted 2 suggestions scoring at least 0.90: " in response.content.decode()
    accepted = Mapping.objects.filter(run=small_run, state="accepted")
    assert accepted.count() == 2 and all(m.score >= 0.9 for m in accepted)


def test_the_bulk_accept_preview_lists_the_rows_by_name_and_accepts_nothing(client, reviewer, small_run):
    client.force_login(reviewer.user)
    seq = AuditEvent.objects.filter(run=small_run).count()
    body = client.post(f"/runs/{small_run.run_id}/reconcile/bulk-accept/", {"min_score": "0.9"}).content.decode()
    for m in Mapping.objects.filter(run=small_run, origin="suggested", score__gte=0.9):
        assert f"{m.source} → {m.target} (same)" in body
    assert "Accept these 2" in body and "This accepts <strong>2 suggestions</strong>" in body
    assert AuditEvent.objects.filter(run=small_run).count() == seq


def test_it_accepts_only_the_previewed_rows_even_if_more_qualify_since(client, reviewer, small_run):
    client.force_login(reviewer.user)
    [first, *_] = Mapping.objects.filter(run=small_run, origin="suggested", score__gte=0.9).order_by("pk")
    client.post(f"/runs/{small_run.run_id}/reconcile/bulk-accept/",
                {"min_score": "0.9", "confirm": "1", "mapping": [first.pk]})
    assert list(Mapping.objects.filter(run=small_run, state="accepted").values_list("pk", flat=True)) == [first.pk]


def test_undo_reopens_exactly_the_bulk_accepted_decisions_as_one_step(client, reviewer, small_run):
    client.force_login(reviewer.user)
    url = f"/runs/{small_run.run_id}/reconcile/bulk-accept/"
    listed = re.findall(r'name="mapping" value="(\d+)"', client.post(url, {"min_score": "0.9"}).content.decode())
    client.post(url, {"min_score": "0.9", "confirm": "1", "mapping": listed})
    page_body = client.get(page(small_run)).content.decode()
    assert "Your last bulk accept: 2 suggestions" in page_body and "Undo it" in page_body
    seq = AuditEvent.objects.filter(run=small_run).order_by("-seq").first().seq
    response = client.post(url + "undo/", follow=True)
    assert "Undone: reopened 2 suggestions" in response.content.decode()
    assert not Mapping.objects.filter(run=small_run, state="accepted").exists()
    events = AuditEvent.objects.filter(run=small_run, seq__gt=seq).order_by("seq")
    assert [(e.action, e.object_id) for e in events] == [("mapping.reopened", pk) for pk in sorted(listed, key=int)]
    assert "Undo it" not in client.get(page(small_run)).content.decode()


def test_undo_changes_nothing_when_one_of_the_decisions_changed_since(client, reviewer, small_run):
    client.force_login(reviewer.user)
    url = f"/runs/{small_run.run_id}/reconcile/bulk-accept/"
    listed = re.findall(r'name="mapping" value="(\d+)"', client.post(url, {"min_score": "0.9"}).content.decode())
    client.post(url, {"min_score": "0.9", "confirm": "1", "mapping": listed})
    changed = Mapping.objects.get(pk=listed[1])
    services.decide_mapping(mapping=changed, decision="reopen", rationale="by hand", actor=Actor("reviewer:other"),
                            expected_version=changed.version)
    response = client.post(url + "undo/", follow=True)
    assert "Not undone: " in response.content.decode()
    assert Mapping.objects.get(pk=listed[0]).state == "accepted"


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


# Proposing from the page ----------------------------------------------------------

def propose_url(run, source):
    return f"/runs/{run.run_id}/reconcile/records/{source}/propose/"


def test_it_proposes_another_mapping_and_returns_the_records_rows_with_it(client, reviewer, small_run):
    suggested = same_mapping(small_run)  # MEM-CMP-slota → RT-CMP-slota
    client.force_login(reviewer.user)
    response = client.post(propose_url(small_run, "MEM-CMP-slota") + "?member=memory",
                           {"relation": "part-of", "target": "RT-CMP-slota", "row": f"pair-{suggested.pk}"},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    proposed = Mapping.objects.get(run=small_run, source="MEM-CMP-slota", relation="part-of")
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="rows-MEM-CMP-slota" class="record-rows">')
    assert body.count("<article") == 2 and f'id="pair-{suggested.pk}"' in body and f'id="pair-{proposed.pk}"' in body
    assert "Proposed: MEM-CMP-slota is part of RT-CMP-slota." in body
    assert "Conflict:" not in body  # two open mappings of one record are undecided, not a conflict
    assert 'hx-swap-oob="true"' in body and 'data-count="mappings-left">7<' in body
    assert f'/mappings/{proposed.pk}/decide/?member=memory' in body  # the new row keeps the page's filters
    assert proposed.origin == "agent" and proposed.proposed_by == "user:reviewer-1" and proposed.state == "proposed"
    assert AuditEvent.objects.filter(run=small_run, action="mapping.proposed", object_id=str(proposed.pk)).count() == 1


def test_it_says_an_identical_open_proposal_is_already_there(client, agent, small_run):
    small_run.participants.add(agent.user)  # an agent proposes to the runs it takes part in (DESIGN §9)
    client.force_login(agent.user)
    data = {"relation": "no-counterpart", "target": ""}
    client.post(propose_url(small_run, "MEM-ABS-slote"), data, HTTP_HX_REQUEST="true")
    again = client.post(propose_url(small_run, "MEM-ABS-slote"), data, HTTP_HX_REQUEST="true")
    assert again.status_code == 200 and "Already proposed and still open" in again.content.decode()
    assert Mapping.objects.filter(run=small_run, source="MEM-ABS-slote", relation="no-counterpart").count() == 1


def test_it_answers_a_refused_proposal_with_400_and_the_form_open_with_the_input(client, reviewer, small_run):
    client.force_login(reviewer.user)
    suggested = same_mapping(small_run)
    response = client.post(propose_url(small_run, "MEM-CMP-slota"),
                           {"relation": "same", "target": "RT-OBJ-<b>", "row": f"pair-{suggested.pk}"},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 400
    assert "is not a record ID" in body and "row-message error" in body
    assert 'class="row-form propose-form"' in body and 'value="RT-OBJ-&lt;b&gt;"' in body  # input kept, escaped
    assert '<option selected>same</option>' in body
    assert "<b>" not in body
    assert Mapping.objects.filter(run=small_run, source="MEM-CMP-slota").count() == 1


def test_it_answers_a_proposal_of_another_kind_with_400_naming_both(client, reviewer, small_run):
    client.force_login(reviewer.user)
    response = client.post(propose_url(small_run, "MEM-CMP-slota"), {"relation": "same", "target": "RT-OBJ-slotb"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert "kinds differ: MEM-CMP-slota is CMP but RT-OBJ-slotb is OBJ" in response.content.decode()


def test_it_answers_a_malformed_relation_with_400(client, reviewer, small_run):
    client.force_login(reviewer.user)
    response = client.post(propose_url(small_run, "MEM-CMP-slota"), {"relation": "twin"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "relation:" in response.content.decode()


def test_it_answers_a_proposal_on_an_approved_run_with_409(client, reviewer, small_run):
    Run.objects.filter(pk=small_run.pk).update(status=Run.Status.APPROVED)
    client.force_login(reviewer.user)
    response = client.post(propose_url(small_run, "MEM-CMP-slota"), {"relation": "no-counterpart"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 409 and "reopen it before changing" in response.content.decode()


def test_a_plain_post_proposal_redirects_back_to_the_record_with_a_message(client, reviewer, small_run):
    client.force_login(reviewer.user)
    response = client.post(propose_url(small_run, "MEM-CLM-slotd") + "?member=memory&kind=CLM",
                           {"relation": "no-counterpart", "target": ""})
    assert response.status_code == 302
    assert response["Location"] == f"{page(small_run)}?member=memory&kind=CLM#rows-MEM-CLM-slotd"
    followed = client.get(response["Location"]).content.decode()
    assert "Proposed: MEM-CLM-slotd has no counterpart in the shared set." in followed
    assert followed.count('id="rows-MEM-CLM-slotd"') == 1 and followed.count("<article") == 2 + 4


def test_an_unknown_source_is_refused_without_a_500(client, reviewer, small_run):
    client.force_login(reviewer.user)
    plain = client.post(propose_url(small_run, "MEM-OBJ-nowhere"), {"relation": "new"}, follow=True)
    assert "MEM-OBJ-nowhere is not declared by a current member report" in plain.content.decode()
    swap = client.post(propose_url(small_run, "MEM-OBJ-nowhere"), {"relation": "new"}, HTTP_HX_REQUEST="true")
    assert swap.status_code == 200 and swap["HX-Refresh"] == "true"  # no row to draw: reload with the message
    assert client.get(propose_url(small_run, "not-an-id")).status_code == 404
    assert not Mapping.objects.filter(run=small_run, source="MEM-OBJ-nowhere").exists()


def test_it_opens_the_propose_form_in_place_or_on_its_own_page_without_javascript(client, reviewer, small_run):
    client.force_login(reviewer.user)
    body = client.get(page(small_run, member="memory")).content.decode()
    link = f'href="{propose_url(small_run, "MEM-OBJ-slotb")}?member=memory&amp;row=pair-'
    assert link in body and "Propose another mapping…" in body
    fragment = client.get(propose_url(small_run, "MEM-OBJ-slotb") + "?member=memory&row=pair-9",
                          HTTP_HX_REQUEST="true").content.decode()
    assert fragment.startswith('<form class="row-form propose-form"') and "<html" not in fragment
    assert 'hx-target="closest .record-rows"' in fragment and 'name="row" value="pair-9"' in fragment
    assert 'list="targets-OBJ"' in fragment and 'name="csrfmiddlewaretoken"' in fragment
    standalone = client.get(propose_url(small_run, "MEM-OBJ-slotb") + "?member=memory").content.decode()
    assert "<html" in standalone and "hx-post" not in standalone.split('class="row-form')[1].split(">")[0]
    assert ('<datalist id="targets-OBJ"><option value="RT-OBJ-slotb">RT-OBJ-slotb — Runtime thing 1</option>'
            '</datalist>') in standalone
    assert f'href="{page(small_run)}?member=memory"' in standalone  # back to the page it came from


def test_an_agent_proposes_from_the_page_but_is_offered_no_decision(client, agent, small_run):
    small_run.participants.add(agent.user)  # an agent proposes to the runs it takes part in (DESIGN §9)
    client.force_login(agent.user)
    body = client.get(page(small_run)).content.decode()
    assert "Propose another mapping…" in body
    assert 'name="decision"' not in body and "Reject RT-" not in body
    response = client.post(propose_url(small_run, "MEM-OBJ-slotb"), {"relation": "part-of", "target": "RT-OBJ-slotb"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and 'name="decision"' not in response.content.decode()
    assert Mapping.objects.get(run=small_run, relation="part-of").proposed_by == "user:agent-1"


def test_an_auditor_is_offered_no_proposal_and_refused_one(client, auditor, small_run):
    client.force_login(auditor.user)
    assert "Propose another mapping" not in client.get(page(small_run)).content.decode()
    response = client.post(propose_url(small_run, "MEM-OBJ-slotb"), {"relation": "no-counterpart"},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    assert AuditEvent.objects.filter(run=small_run, action="permission.denied").count() == 1
    assert not Mapping.objects.filter(run=small_run, relation="no-counterpart").exists()


# Rejecting a canonical record -------------------------------------------------------

def reject_url(run, canonical):
    return f"/runs/{run.run_id}/reconcile/canonical/{canonical.pk}/reject/"


def test_it_rejects_a_canonical_record_from_the_row_that_shows_it(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    canonical = CanonicalRecord.objects.get(run=small_run, canonical_id=mapping.target)
    client.force_login(reviewer.user)
    body = client.get(page(small_run)).content.decode()
    assert f'href="{reject_url(small_run, canonical)}?mapping={mapping.pk}"' in body
    response = client.post(reject_url(small_run, canonical), {"rationale": "not a <real> component",
                                                              "mapping": mapping.pk}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<article id="pair-{mapping.pk}"') and body.count("<article") == 1
    assert "Taken out of the shared set: “not a &lt;real&gt; component”" in body and "status-rejected" in body
    assert f"Reject {canonical.canonical_id}…" not in body
    canonical.refresh_from_db()
    assert canonical.state == "rejected" and canonical.rationale == "not a <real> component"
    assert AuditEvent.objects.filter(run=small_run, action="canonical.rejected").count() == 1


def test_it_redraws_the_other_rows_of_the_page_that_point_at_the_rejected_record(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    record = Record.objects.get(run=small_run, record_id="MEM-OBJ-slotb")
    other = Mapping.objects.create(run=small_run, source=record.record_id, source_record=record, relation="part-of",
                                   target=mapping.target, origin="agent", proposed_by="token:agent-1")
    canonical = CanonicalRecord.objects.get(run=small_run, canonical_id=mapping.target)
    client.force_login(reviewer.user)
    body = client.post(reject_url(small_run, canonical), {"rationale": "duplicate", "mapping": mapping.pk},
                       HTTP_HX_REQUEST="true").content.decode()
    assert body.count("<article") == 2
    assert f'<article id="pair-{other.pk}" class="pair state-proposed conflict" hx-swap-oob="true"' in body \
        or f'<article id="pair-{other.pk}" class="pair state-proposed" hx-swap-oob="true"' in body
    assert body.count("Taken out of the shared set: “duplicate”") == 2


def test_it_requires_a_rationale_to_reject_a_canonical_record(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    canonical = CanonicalRecord.objects.get(run=small_run, canonical_id=mapping.target)
    client.force_login(reviewer.user)
    response = client.post(reject_url(small_run, canonical), {"rationale": "  ", "mapping": mapping.pk},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 400
    assert "Rejecting a record needs a rationale" in body and 'class="row-form reject-form"' in body
    canonical.refresh_from_db()
    assert canonical.state == "active"


def test_it_answers_rejecting_a_rejected_record_with_409(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    canonical = CanonicalRecord.objects.get(run=small_run, canonical_id=mapping.target)
    services.reject_canonical_record(record=canonical, rationale="first", actor=OTHER_REVIEWER)
    client.force_login(reviewer.user)
    response = client.post(reject_url(small_run, canonical), {"rationale": "second", "mapping": mapping.pk},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 409 and "already rejected" in body and "“first”" in body
    canonical.refresh_from_db()
    assert canonical.rationale == "first"


def test_a_plain_post_rejection_redirects_back_to_the_row(client, reviewer, small_run):
    mapping = same_mapping(small_run)
    canonical = CanonicalRecord.objects.get(run=small_run, canonical_id=mapping.target)
    client.force_login(reviewer.user)
    form_page = client.get(reject_url(small_run, canonical) + f"?member=memory&mapping={mapping.pk}").content.decode()
    assert "<html" in form_page and f'name="mapping" value="{mapping.pk}"' in form_page
    response = client.post(reject_url(small_run, canonical) + "?member=memory",
                           {"rationale": "duplicate", "mapping": mapping.pk})
    assert response["Location"] == f"{page(small_run)}?member=memory#pair-{mapping.pk}"
    assert "Rejected RT-CMP-slota" in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize("persona", ["agent", "auditor"])
def test_only_reviewers_reject_canonical_records(client, request, small_run, persona):
    canonical = CanonicalRecord.objects.filter(run=small_run).first()
    client.force_login(request.getfixturevalue(persona).user)
    response = client.post(reject_url(small_run, canonical), {"rationale": "no"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    canonical.refresh_from_db()
    assert canonical.state == "active"


# The integration-issues panel follows the member picker -------------------------------

@pytest.fixture
def two_members(small_run):
    epistemic = make_member(small_run, "epistemic")
    declaration(epistemic, 1, "EPI-CLM-trust", "Trust", "The runtime trusts recall.").save()
    issues(epistemic, ["EPI-CLM-trust questions RT-OBJ-slotb.", "A second epistemic issue."])
    return small_run


def test_the_issues_panel_shows_the_picked_members_issues(client, reviewer, two_members):
    client.force_login(reviewer.user)
    memory = client.get(page(two_members, member="memory")).content.decode()
    panel = memory.split('id="issues"')[1]
    assert "Integration issues of memory" in panel and panel.count('class="issue state-') == 4
    assert "A second epistemic issue" not in panel
    assert f'href="{page(two_members)}?member=memory&amp;issues=all#issues"' in panel
    assert "Show all members' issues (6)" in panel
    epistemic = client.get(page(two_members, member="epistemic")).content.decode().split('id="issues"')[1]
    assert epistemic.count('class="issue state-') == 2 and "A second epistemic issue" in epistemic


def test_the_issues_panel_shows_every_members_issues_on_request_and_keeps_it(client, reviewer, two_members):
    client.force_login(reviewer.user)
    body = client.get(page(two_members, member="memory", issues="all")).content.decode()
    panel = body.split('id="issues"')[1]
    assert "Integration issues of all members" in panel and panel.count('class="issue state-') == 6
    assert "Show only memory's issues (4)" in panel
    assert "?member=epistemic&amp;issues=all" in body  # the picker keeps the choice
    assert '<input type="hidden" name="issues" value="all">' in body  # and so does the filter form
    decision = IssueDecision.objects.filter(run=two_members).order_by("pk").first()
    response = client.post(issue_url(two_members, decision) + "?member=memory&issues=all",
                           {"decision": "accept", "version": 1})
    assert response["Location"].startswith(f"{page(two_members)}?member=memory&issues=all#issue-")


# Amendments and unresolved conflicts ------------------------------------------------------

def amendment_url(run, amendment):
    return f"/runs/{run.run_id}/reconcile/amendments/{amendment.pk}/decide/"


@pytest.fixture
def amended_run(small_run):
    """A reconciliation member with a supersession (decided with its supersedes mapping), a value
    amendment and an unresolved conflict."""
    reconciliation = make_member(small_run, "reconciliation")
    record = Record.objects.get(run=small_run, record_id="MEM-OBJ-slotb")
    mapping = Mapping.objects.create(
        run=small_run, source="MEM-OBJ-slotb", source_record=record, relation="supersedes", target="RT-OBJ-slotb",
        origin="reconciliation", proposed_by="worker:sync",
        origin_key=services.statement_key("MEM-OBJ-slotb", "supersedes", "RT-OBJ-slotb"))
    supersession, value, conflict = amendments(reconciliation, [
        ("amendment", "MEM-OBJ-slotb is superseded by RT-OBJ-slotb."),
        ("amendment", "RT-CMP-slota's label is narrowed to <the> store."),
        ("unresolved-conflict", "MEM-RTE-slotc and RT-RTE-slotc disagree on expiry."),
    ])
    AmendmentDecision.objects.filter(pk=supersession.pk).update(mapping=mapping)
    return small_run, {"supersession": supersession, "value": value, "conflict": conflict, "mapping": mapping}


def test_it_lists_amendments_and_conflicts_with_what_is_left(client, reviewer, amended_run):
    run, items = amended_run
    client.force_login(reviewer.user)
    body = client.get(page(run, member="memory")).content.decode()
    panel = body.split('id="amendments"')[1]
    assert panel.count('class="amendment state-proposed"') == 3
    assert "Unresolved conflict</span> 1" in panel or "Unresolved conflict</span> 3" in panel
    assert "RT-CMP-slota&#x27;s label is narrowed to &lt;the&gt; store." in panel  # escaped
    assert "Decided with its mapping <code>MEM-OBJ-slotb is superseded by RT-OBJ-slotb</code>" in panel
    supersession = panel.split(f'id="amendment-{items["supersession"].pk}"')[1].split("</article>")[0]
    assert 'value="carry"' not in supersession and 'value="accept"' in supersession
    value = panel.split(f'id="amendment-{items["value"].pk}"')[1].split("</article>")[0]
    assert 'value="carry"' in value
    assert 'data-count="amendments-left">3<' in body


def test_the_counters_say_nothing_of_amendments_when_there_are_none(client, reviewer, small_run):
    client.force_login(reviewer.user)
    body = client.get(page(small_run)).content.decode()
    assert 'data-count="amendments-left"' not in body
    assert "No member states an amendment or an unresolved conflict." in body


def test_it_carries_an_unresolved_conflict_into_the_limitations_through_htmx(client, reviewer, amended_run):
    run, items = amended_run
    conflict = items["conflict"]
    client.force_login(reviewer.user)
    response = client.post(amendment_url(run, conflict), {"decision": "carry", "version": conflict.version,
                                                          "rationale": "the code does not settle it"},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith(f'<article id="amendment-{conflict.pk}" class="amendment state-carried"')
    assert body.count("<article") == 1 and "“the code does not settle it”" in body and "Reopen" in body
    assert 'data-count="amendments-left">2<' in body and 'hx-swap-oob="true"' in body
    conflict.refresh_from_db()
    assert conflict.state == "carried" and conflict.decided_by == "user:reviewer-1"
    assert AuditEvent.objects.filter(run=run, action="amendment.carried").count() == 1


@pytest.mark.parametrize("decision", ["carry", "reject"])
def test_it_needs_a_rationale_to_carry_or_reject_an_amendment(client, reviewer, amended_run, decision):
    run, items = amended_run
    client.force_login(reviewer.user)
    response = client.post(amendment_url(run, items["value"]), {"decision": decision, "version": 1},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "needs a rationale" in response.content.decode()
    items["value"].refresh_from_db()
    assert items["value"].state == "proposed"


def test_it_refuses_to_carry_a_supersession_with_409_saying_why(client, reviewer, amended_run):
    run, items = amended_run
    client.force_login(reviewer.user)
    response = client.post(amendment_url(run, items["supersession"]),
                           {"decision": "carry", "version": 1, "rationale": "keep it open"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 409 and "accept or reject it" in response.content.decode()


def test_it_answers_a_stale_amendment_decision_with_409_and_the_current_state(client, reviewer, amended_run):
    run, items = amended_run
    services.decide_amendment(amendment=items["value"], decision="reject", rationale="not in the code",
                              actor=OTHER_REVIEWER, expected_version=1)
    client.force_login(reviewer.user)
    response = client.post(amendment_url(run, items["value"]), {"decision": "accept", "version": 1},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 409 and "This item changed since the page showed it" in body
    assert "status-rejected" in body and "not in the code" in body and 'name="version" value="2"' in body


def test_accepting_a_supersession_redraws_its_mapping_row_on_the_page_that_shows_it(client, reviewer, amended_run):
    run, items = amended_run
    client.force_login(reviewer.user)
    response = client.post(amendment_url(run, items["supersession"]) + "?member=memory",
                           {"decision": "accept", "version": 1}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert f'<article id="pair-{items["mapping"].pk}" class="pair state-accepted' in body
    assert body.count('hx-swap-oob="true"') == 3  # the mapping's row, the counters and the blockers
    items["mapping"].refresh_from_db()
    assert items["mapping"].state == "accepted"
    assert "status-accepted" in body.split("</article>")[0]  # the amendment follows its mapping


def test_a_supersession_decided_from_another_page_sends_no_row_that_page_lacks(client, reviewer, amended_run):
    run, items = amended_run
    Mapping.objects.create(run=run, source="MEM-OBJ-1", relation="same", target="RT-OBJ-slotb", origin="result",
                           proposed_by="worker:test", origin_key="MEM-OBJ-1|same|RT-OBJ-slotb")
    client.force_login(reviewer.user)
    body = client.post(amendment_url(run, items["supersession"]) + "?member=statements",
                       {"decision": "reject", "version": 1, "rationale": "different"},
                       HTTP_HX_REQUEST="true").content.decode()
    assert f'id="pair-{items["mapping"].pk}"' not in body and body.count('hx-swap-oob="true"') == 2


def test_deciding_a_supersedes_mapping_redraws_the_amendment_that_follows_it(client, reviewer, amended_run):
    run, items = amended_run
    client.force_login(reviewer.user)
    response = client.post(decide_url(run, items["mapping"]), {"decision": "reject", "version": 1,
                                                                 "rationale": "not superseded"},
                           HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert f'<article id="amendment-{items["supersession"].pk}" class="amendment state-rejected" ' \
           f'hx-swap-oob="true"' in body
    assert 'data-count="amendments-left">2<' in body


def test_a_plain_post_amendment_decision_redirects_back_to_the_panel(client, reviewer, amended_run):
    run, items = amended_run
    client.force_login(reviewer.user)
    response = client.post(amendment_url(run, items["value"]) + "?member=memory",
                           {"decision": "accept", "version": 1})
    assert response["Location"] == f"{page(run)}?member=memory#amendment-{items['value'].pk}"
    assert "Amendment 2: accepted." in client.get(response["Location"]).content.decode()


@pytest.mark.parametrize("persona", ["agent", "auditor"])
def test_it_refuses_amendment_decisions_from_agents_and_auditors(client, request, amended_run, persona):
    run, items = amended_run
    client.force_login(request.getfixturevalue(persona).user)
    body = client.get(page(run)).content.decode().split('id="amendments"')[1]
    assert 'name="decision"' not in body
    response = client.post(amendment_url(run, items["value"]), {"decision": "accept", "version": 1},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 403
    items["value"].refresh_from_db()
    assert items["value"].state == "proposed"
