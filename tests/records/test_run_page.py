"""The run page and the member page in the browser (DESIGN §5)."""
import hashlib
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from records import services
from records.models import Finding, MemberVersion
from reviews.audit import Actor
from tests.conftest import seed_bytes

ACTOR = Actor.command("test")


@pytest.fixture
def browser(reviewer):
    client = Client()
    client.force_login(reviewer.user)
    return client


def ingest(run, role, content, capture, execute=True):
    with capture(execute=execute):
        version, _ = services.ingest_member_report(run=run, role=role, filename=f"{role}.md", content=content,
                                                   actor=ACTOR)
    return version


@pytest.mark.django_db
def test_it_lists_members_with_hash_counts_and_links(browser, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    ingest(run, "memory", seed_bytes("002"), django_capture_on_commit_callbacks)
    ingest(run, "workflow", seed_bytes("001"), django_capture_on_commit_callbacks)
    run.refresh_from_db()
    response = browser.get(f"/runs/{run.run_id}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert hashlib.sha256(seed_bytes("002")).hexdigest() in html
    assert hashlib.sha256(seed_bytes("001")).hexdigest() in html
    assert run.manifest_sha256 in html
    assert "18 declared · 5 annotated" in html
    assert f"/api/runs/{run.run_id}/members/memory/raw" in html
    assert f'href="/runs/{run.run_id}/reconcile/"' in html and f'href="/runs/{run.run_id}/audit/"' in html
    assert 'hx-trigger="load delay:' not in html  # everything finished: no polling
    # Findings grouped by member link to the line on the member page (`?line=`: its page of records).
    assert re.search(rf'/runs/{run.run_id}/members/memory/\?line=(\d+)#L\1"', html)
    assert "unresolved-reference" in html


@pytest.mark.django_db
def test_it_polls_while_the_pipeline_is_working(browser, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    ingest(run, "workflow", seed_bytes("001"), django_capture_on_commit_callbacks, execute=False)
    html = browser.get(f"/runs/{run.run_id}/").content.decode()
    assert 'hx-trigger="load delay:1.0s"' in html
    assert '<li class="done current">received</li>' in html


@pytest.mark.django_db
def test_it_returns_only_the_pipeline_partial_for_htmx(browser, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    ingest(run, "workflow", seed_bytes("001"), django_capture_on_commit_callbacks, execute=False)
    response = browser.get(f"/runs/{run.run_id}/", HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="pipeline"')
    assert "<html" not in html and "Validation" not in html
    assert 'hx-trigger="load delay:1.0s"' in html
    MemberVersion.objects.update(status=MemberVersion.Status.VALIDATED)
    run.status = "in_review"
    run.save(update_fields=["status"])
    done = browser.get(f"/runs/{run.run_id}/", HTTP_HX_REQUEST="true").content.decode()
    assert "hx-trigger" not in done  # the swap without a trigger stops the polling


@pytest.mark.django_db
def test_report_text_is_escaped(browser, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    evil = (b"# Memory report\n\n## Shared records\n\n### Operative objects\n\n"
            b"#### MEM-OBJ-evil-thing \xe2\x80\x94 <script>alert(1)</script> label\n\n"
            b"- Body: <img src=x onerror=alert(2)> and `code`\n")
    version = ingest(run, "memory", evil, django_capture_on_commit_callbacks)
    version.refresh_from_db()
    assert version.counts["declarations"] == 1
    for url in (f"/runs/{run.run_id}/", f"/runs/{run.run_id}/members/memory/"):
        html = browser.get(url).content.decode()
        assert "<script>alert(1)" not in html
        assert "<img src=x" not in html
    member_html = browser.get(f"/runs/{run.run_id}/members/memory/").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in member_html
    assert 'id="L7"' in member_html


@pytest.mark.django_db
def test_the_member_page_groups_records_by_kind_with_line_anchors(browser, run_factory,
                                                                 django_capture_on_commit_callbacks):
    run = run_factory()
    ingest(run, "result", seed_bytes("000"), django_capture_on_commit_callbacks)
    html = browser.get(f"/runs/{run.run_id}/members/result/").content.decode()
    for heading in ("Components", "Operative objects", "Routes", "Claims", "Evidenced absences",
                    "Behavioral-authority paths"):
        assert heading in html
    assert 'id="RTE-8"' in html
    assert "20 declarations · 0 annotations · 0 integration issues · 2 sources · 5 mapping statements" in html
    lines = seed_bytes("000").decode().splitlines()
    assert html.count('id="L') == len(lines)  # every line has exactly one anchor
    assert browser.get(f"/runs/{run.run_id}/members/result/", {"version": 9}).status_code == 404


@pytest.mark.django_db
def test_pages_need_login_and_a_role(run_factory, outsider):
    run = run_factory()
    anonymous = Client()
    response = anonymous.get(f"/runs/{run.run_id}/")
    assert response.status_code == 302 and "/login/" in response["Location"]
    stranger = Client()
    stranger.force_login(outsider.user)
    assert stranger.get(f"/runs/{run.run_id}/").status_code == 403
    assert Client().get("/runs/AAS-2026-01-01-none-01/").status_code == 302


@pytest.mark.django_db
def test_it_loads_decision_progress_and_the_approval_panel_with_fallback_links(browser, run_factory):
    run = run_factory()
    html = browser.get(f"/runs/{run.run_id}/").content.decode()
    assert f'hx-get="/runs/{run.run_id}/reconcile/progress/" hx-trigger="load"' in html
    assert f'hx-get="/runs/{run.run_id}/approve/" hx-trigger="load"' in html
    # Without JavaScript the same places link to the pages that show them.
    noscript = "".join(part.split("</noscript>")[0] for part in html.split("<noscript>")[1:])
    assert f'href="/runs/{run.run_id}/reconcile/"' in noscript and f'href="/runs/{run.run_id}/result/"' in noscript
    assert ">Result</a>" not in html  # no result link before the run is final
    panel = browser.get(f"/runs/{run.run_id}/approve/", HTTP_HX_REQUEST="true",
                        HTTP_HX_CURRENT_URL=f"http://testserver/runs/{run.run_id}/")
    assert panel.status_code == 200 and 'id="approve-panel"' in panel.content.decode()
    assert f'name="next" value="/runs/{run.run_id}/"' not in panel.content.decode()  # open: no form yet


@pytest.mark.django_db
def test_it_links_the_result_once_the_run_is_final(browser, run_factory):
    run = run_factory()
    run.status = "final"
    run.save(update_fields=["status"])
    html = browser.get(f"/runs/{run.run_id}/").content.decode()
    assert f'<a href="/runs/{run.run_id}/result/" class="button">Result</a>' in html


@pytest.mark.django_db
def test_it_renders_labels_and_finding_messages_isolated_so_a_control_cannot_reorder_the_page(
        browser, run_factory, django_capture_on_commit_callbacks):
    """Issue 25 item 5 / DESIGN §6: "pages render labels isolated (`<bdi>`)"."""
    text = seed_bytes("002").decode().replace("Label: Document content", "Label: \u202eDocument content", 1)
    assert "\u202e" in text
    run = run_factory()
    ingest(run, "memory", text.encode(), django_capture_on_commit_callbacks)
    html = browser.get(f"/runs/{run.run_id}/members/memory/").content.decode()
    assert "<bdi>\u202e" in html
    assert "<bdi>MEM-OBJ-document-content</bdi>" in html


@pytest.mark.django_db
def test_the_run_page_reads_its_findings_in_one_query_however_many_there_are(browser, run_factory,
                                                                            django_capture_on_commit_callbacks):
    few, many = run_factory(), run_factory()
    ingest(few, "result", seed_bytes("000"), django_capture_on_commit_callbacks)
    ingest(many, "memory", seed_bytes("002"), django_capture_on_commit_callbacks)
    counts = []
    for run in (few, many):
        browser.get(f"/runs/{run.run_id}/")
        with CaptureQueriesContext(connection) as queries:
            assert browser.get(f"/runs/{run.run_id}/").status_code == 200
        counts.append(len(queries))
    assert Finding.objects.filter(report__run=many).count() > Finding.objects.filter(report__run=few).count() + 20
    # Each finding's report was read back one query at a time (issue 23: 102 queries on the seed run's page).
    assert counts[0] == counts[1], counts


@pytest.mark.django_db
def test_the_run_page_reads_no_member_report_bytes_and_no_parse(browser, run_factory, django_capture_on_commit_callbacks):
    run = run_factory()
    ingest(run, "memory", seed_bytes("002"), django_capture_on_commit_callbacks)
    ingest(run, "workflow", seed_bytes("001"), django_capture_on_commit_callbacks)
    with CaptureQueriesContext(connection) as queries:
        assert browser.get(f"/runs/{run.run_id}/").status_code == 200
    wide = [q["sql"] for q in queries.captured_queries if re.search(r'"records_memberversion"\."(content|parsed)"', q["sql"])]
    assert wide == []


@pytest.mark.django_db
def test_a_second_read_of_the_run_page_reads_no_finding_report_or_quotation_again(
        browser, run_factory, django_capture_on_commit_callbacks):
    """records.run_page keeps the validation the page shows per audit chain head: reading the page again,
    nothing having changed, reads only what may change without an event (the members' pipeline)."""
    run = run_factory()
    ingest(run, "memory", seed_bytes("002"), django_capture_on_commit_callbacks)
    first, again = [], []
    for queries in (first, again):
        with CaptureQueriesContext(connection) as captured:
            html = browser.get(f"/runs/{run.run_id}/").content.decode()
        queries += [q["sql"] for q in captured.captured_queries]
    assert "46 errors" in html
    kept_tables = ("records_finding", "records_validationreport", "records_quotationcheck", "records_sourcesnapshot")
    assert [t for t in kept_tables if any(t in sql for sql in first)] == list(kept_tables)
    assert [sql for sql in again if any(t in sql for t in kept_tables)] == []


@pytest.mark.django_db
def test_the_run_page_shows_a_new_validation_and_a_new_snapshot_at_once(
        browser, agent, run_factory, django_capture_on_commit_callbacks):
    """Kept per chain head, never past it: each change of the findings or the quotations writes an event."""
    from tests.records.test_source_api import COMMIT, SOURCE, memory_report, post_member, post_source, quote, tar_gz

    run = run_factory()
    text = memory_report(quote("db.insert(row)\n    return row", f"`src/store.py` @ `{COMMIT}`"))
    with django_capture_on_commit_callbacks(execute=True):
        assert post_member(agent, run, text).status_code == 201
    before = browser.get(f"/runs/{run.run_id}/").content.decode()
    assert "No source snapshot yet" in before and "0 of 1 quotation verified" in before
    with django_capture_on_commit_callbacks(execute=True):
        assert post_source(agent, run, tar_gz(SOURCE)).status_code == 201
    after = browser.get(f"/runs/{run.run_id}/").content.decode()
    assert "No source snapshot yet" not in after and "1 of 1 quotation verified" in after

    ingest(run, "workflow", seed_bytes("001"), django_capture_on_commit_callbacks)
    run.refresh_from_db()
    report = services.latest_validation(run)
    html = browser.get(f"/runs/{run.run_id}/").content.decode()
    assert f"{report.errors} error{'s' if report.errors != 1 else ''}, {report.warnings} warning" in html
    assert "workflow" in html.split('id="findings"')[1]


@pytest.mark.django_db
def test_the_kept_run_page_is_the_page_read_afresh(browser, run_factory, django_capture_on_commit_callbacks):
    from records import run_page

    run = run_factory()
    ingest(run, "memory", seed_bytes("002"), django_capture_on_commit_callbacks)
    ingest(run, "workflow", seed_bytes("001"), django_capture_on_commit_callbacks)
    browser.get(f"/runs/{run.run_id}/")
    kept = browser.get(f"/runs/{run.run_id}/").content.decode()
    run_page.forget_kept()
    fresh = browser.get(f"/runs/{run.run_id}/").content.decode()

    def without_token(html):
        return re.sub(r'"X-CSRFToken": "[^"]+"|name="csrfmiddlewaretoken" value="[^"]+"', "", html)
    assert without_token(kept) == without_token(fresh)
