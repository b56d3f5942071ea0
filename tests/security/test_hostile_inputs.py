"""Hostile inputs at every door: each gets a clear 4xx in the error shape, or is stored and shown safely.

Never a 500 and never a hang (a hang would stop the suite). Content-heavy cases go through the real
pipeline (upload, parse, validate, sync) and then every page and API view that shows the member.
"""
from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from records.models import MemberReport, MemberVersion, Record
from reconcile.models import Mapping
from reviews.models import AuditEvent
from tests.packing import lying_zip, tar_gz_of, zip_of
from tests.reconcile.factories import MEMORY_SMALL, RUNTIME_SLUG, upload

pytestmark = pytest.mark.django_db

HEAD = """---
type: agentic-system-analyses/types/agentic-system-memory-report.md
---

# Supermemory memory report

## Shared records

### Operative objects

"""


def error_of(response, status: int) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:400])
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["message"]
    return body["error"]


@pytest.fixture
def run(run_factory):
    return run_factory()


@pytest.fixture(autouse=True)
def _answers_instead_of_raising(agent, reviewer, auditor):
    """A 500 must show as a status in the assertion, not as the view's exception."""
    for client in (agent, reviewer, auditor):
        client.raise_request_exception = False


# --- JSON bodies ---------------------------------------------------------------------------------

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_OBJECT = '{"a":' * 100_000 + "1" + "}" * 100_000


@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["array", "object"])
@pytest.mark.parametrize("path", ["/api/runs/", "/api/runs/{run}/members/", "/api/runs/{run}/mappings/",
                                  "/api/runs/{run}/reopen/", "/api/runs/{run}/approve/"])
def test_json_nested_100000_deep_is_a_400_naming_the_nesting(path, body, run, agent, reviewer):
    client = reviewer if "reopen" in path or "approve" in path else agent
    error = error_of(client.post(path.format(run=run.run_id), body, content_type="application/json"), 400)
    assert "nested too deeply" in error["message"]


@pytest.mark.parametrize("body, words", [
    ([1, 2, 3], "JSON object"),
    ("just a string", "JSON object"),
    ({"role": ["memory"], "content": "# x\n"}, "role"),
    ({"role": "memory", "content": {"text": "# x"}}, "content: must be a string"),
    ({"role": "memory", "content": "# x\n", "filename": 7}, "filename"),
    ({"role": "<script>alert(1)</script>", "content": "# x\n"}, "role"),
    ({"role": "x" * 10_000, "content": "# x\n"}, "role"),
])
def test_an_upload_body_of_the_wrong_shape_is_a_400(body, words, run, agent):
    error = error_of(agent.post(f"/api/runs/{run.run_id}/members/", body, format="json"), 400)
    assert words in error["message"]
    assert MemberVersion.objects.count() == 0


def test_json_that_is_not_json_or_not_utf8_is_a_400(run, agent):
    for raw in (b'{"role": "memory", "content": ', b'{"role": "memory", "content": "\xff\xfe"}', b"\x00\x01"):
        error_of(agent.post(f"/api/runs/{run.run_id}/members/", raw, content_type="application/json"), 400)


@pytest.mark.parametrize("body", [
    {"source": ["MEM-OBJ-x"], "relation": "new", "target": None},
    {"source": "MEM-OBJ-x", "relation": {"x": 1}, "target": None},
    {"source": "MEM-OBJ-" + "x" * 5_000, "relation": "new", "target": None},
    {"source": "MEM-OBJ-x\x00", "relation": "new", "target": None},
    {},
])
def test_a_mapping_proposal_of_the_wrong_shape_is_a_400(body, run, agent):
    error_of(agent.post(f"/api/runs/{run.run_id}/mappings/", body, format="json"), 400)


@pytest.mark.parametrize("content_type, body", [
    ("application/xml", b"<role>memory</role>"),
    ("text/plain", b"# report\n"),
    ("application/x-msgpack", b"\x81\xa4role"),
])
def test_a_wrong_content_type_is_a_415(content_type, body, run, agent):
    error = error_of(agent.post(f"/api/runs/{run.run_id}/members/", body, content_type=content_type), 415)
    assert error["code"] == "unsupported_media_type"


def test_a_bundle_sent_as_json_is_a_415(run, agent):
    error_of(agent.post(f"/api/runs/{run.run_id}/bundle/", {"file": "x"}, format="json"), 415)


# --- report bytes --------------------------------------------------------------------------------

def multipart(client, run, role, content: bytes, filename="report.md", content_type="text/markdown"):
    return client.post(f"/api/runs/{run.run_id}/members/",
                       {"role": role, "file": SimpleUploadedFile(filename, content, content_type)}, format="multipart")


@pytest.mark.parametrize("content, words", [
    (bytes(range(256)) * 8, "NUL"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "NUL"),
    (b"# Report\n\nbad byte \xff\xfe here\n", "UTF-8"),
    (b"# Report\n\ntruncated \xe2\x82\n", "UTF-8"),
    ("\ufeff# Report in UTF-16\n".encode("utf-16"), "UTF-16"),
    ("# Report in UTF-16BE\n".encode("utf-16-be"), "NUL"),
    (b"# Report\n\nhidden\x00NUL\n", "NUL"),
])
def test_bytes_that_are_not_utf8_text_are_a_415_naming_the_problem(content, words, run, agent):
    error = error_of(multipart(agent, run, "memory", content), 415)
    assert error["code"] == "not_utf8_text" and words in error["message"]
    assert MemberVersion.objects.count() == 0


def test_a_nul_character_in_json_content_is_a_415(run, agent):
    error_of(agent.post(f"/api/runs/{run.run_id}/members/", {"role": "memory", "content": "# a\u0000b\n"},
                        format="json"), 415)


def test_a_lone_surrogate_in_json_content_is_a_415(run, agent):
    raw = b'{"role": "memory", "content": "# a \\ud800 b"}'
    error = error_of(agent.post(f"/api/runs/{run.run_id}/members/", raw, content_type="application/json"), 415)
    assert "surrogate" in error["message"]


def test_a_file_over_the_limit_is_a_413_and_nothing_is_stored(run, agent, settings):
    settings.MAX_UPLOAD_BYTES = 10_000
    error = error_of(multipart(agent, run, "memory", b"# x\n" + b"a" * 10_000), 413)
    assert error["code"] == "too_large" and "10000" in error["message"]
    error_of(agent.post(f"/api/runs/{run.run_id}/members/", {"role": "memory", "content": "b" * 10_001},
                        format="json"), 413)
    assert MemberVersion.objects.count() == 0


@pytest.mark.parametrize("filename, stored", [
    ("../../etc/passwd", "passwd"),
    ("..\\..\\windows\\system32\\evil.md", "evil.md"),
    ("/absolute/path/report.md", "report.md"),
    ("name\r\nSet-Cookie: session=stolen.md", "nameSet-Cookie: session=stolen.md"),
    ("<script>alert(1)<\\script>.md", "<script>alert(1)<\\script>.md"[-len("script>.md"):]),
    ("<b onmouseover=alert(1)>x.md", "<b onmouseover=alert(1)>x.md"),
    ("tab\there.md", "tabhere.md"),
])
def test_path_like_and_crlf_filenames_are_stored_as_a_plain_name(filename, stored, run, agent):
    response = agent.post(f"/api/runs/{run.run_id}/members/",
                          {"role": "memory", "content": MEMORY_SMALL, "filename": filename}, format="json")
    assert response.status_code == 201, response.content
    version = MemberVersion.objects.get()
    assert version.filename == stored
    assert "/" not in version.filename and "\r" not in version.filename and "\n" not in version.filename
    raw = agent.get(f"/api/runs/{run.run_id}/members/memory/raw")
    assert raw.status_code == 200 and raw.content == MEMORY_SMALL.encode()
    disposition = raw.headers["Content-Disposition"]
    assert "\r" not in disposition and "\n" not in disposition and "Set-Cookie" not in raw.headers


def test_a_multipart_filename_with_crlf_and_path_is_stored_as_a_plain_name(run, agent):
    response = multipart(agent, run, "memory", MEMORY_SMALL.encode(), filename="../x\r\ny.md")
    assert response.status_code == 201, response.content
    assert "/" not in MemberVersion.objects.get().filename


# --- content through the whole pipeline ---------------------------------------------------------

def pages_of(run, reviewer) -> list:
    browser = Client(raise_request_exception=False)
    browser.force_login(reviewer.user)
    responses = [browser.get(url) for url in (f"/runs/{run.run_id}/", f"/runs/{run.run_id}/members/memory/",
                                             f"/runs/{run.run_id}/reconcile/?member=memory")]
    responses += [reviewer.get(f"/api/runs/{run.run_id}/{tail}") for tail in (
        "", "members/memory/", "records/?member=memory", "mappings/", "validation/", "integration-issues/")]
    return responses


@pytest.mark.parametrize("name, text, records", [
    ("100k-lines", HEAD + "#### MEM-OBJ-a — a\n\n" + "".join(f"- Identity line {i}\n" for i in range(100_000)), 1),
    ("nested-2000-deep", HEAD + "#### MEM-OBJ-a — a\n\n" + "".join("  " * i + "- level\n" for i in range(2_000)), 1),
    ("10000-records", HEAD + "".join(f"#### MEM-OBJ-r{i} — record {i}\n\n- Identity: thing {i}\n\n"
                                     for i in range(10_000)), 10_000),
])
def test_large_and_deep_reports_are_stored_parsed_and_shown(name, text, records, run, reviewer):
    upload(run, "runtime", RUNTIME_SLUG)
    version = upload(run, "memory", text)
    assert version.status == MemberVersion.Status.VALIDATED, version.status_reason
    assert Record.objects.filter(member_version=version).count() == records
    for response in pages_of(run, reviewer):
        assert response.status_code == 200, (response.request["PATH_INFO"], response.status_code)


def test_a_500_character_id_fails_the_version_naming_the_line_and_the_pages_still_answer(run, reviewer):
    upload(run, "runtime", RUNTIME_SLUG)
    long_id = "MEM-OBJ-" + "x" * 492
    version = upload(run, "memory", HEAD + f"#### {long_id} — long\n\n- Identity: y\n")
    assert version.status == MemberVersion.Status.FAILED
    assert version.status_reason.startswith("line 11: the record ID MEM-OBJ-xxx")
    assert "500 characters; IDs are at most 120" in version.status_reason
    assert not Record.objects.filter(member_version=version).exists()
    for response in pages_of(run, reviewer):
        assert response.status_code == 200, (response.request["PATH_INFO"], response.status_code)


def test_a_500_character_id_in_a_reference_is_refused_the_same_way(run):
    version = upload(run, "memory", MEMORY_SMALL + "\nSee RT-OBJ-" + "y" * 490 + " for more.\n")
    assert version.status == MemberVersion.Status.FAILED
    assert "IDs are at most 120" in version.status_reason


# --- URLs and query parameters ------------------------------------------------------------------

JUNK_QUERIES = ["?page=-1", "?page=99999999999999999999999", "?page=abc", "?page_size=-5",
                "?status=%00", "?system=%ff%fe", "?member=%00", "?kind=<script>", "?version=-1",
                "?version=99999999999999999999999", "?prefix=" + "x" * 5000, "?severity=%0d%0a",
                "?actor=%00&action=%00", "?format=xml", "?format=api", "?member=memory&version=999999999999999999999"]
API_LISTS = ["/api/runs/", "/api/runs/{run}/records/", "/api/runs/{run}/validation/", "/api/runs/{run}/mappings/",
             "/api/runs/{run}/integration-issues/", "/api/runs/{run}/audit/", "/api/runs/{run}/canonical-records/",
             "/api/runs/{run}/members/memory/raw"]


@pytest.mark.parametrize("path", API_LISTS)
def test_junk_query_parameters_never_reach_a_500(path, run, reviewer):
    upload(run, "memory", MEMORY_SMALL)
    for query in JUNK_QUERIES:
        response = reviewer.get(path.format(run=run.run_id) + query)
        assert response.status_code < 500, (query, response.status_code)
        if response.status_code >= 400:
            error_of(response, response.status_code)


@pytest.mark.parametrize("path", ["/runs/{run}/", "/runs/{run}/reconcile/", "/runs/{run}/audit/", "/"])
def test_junk_query_parameters_on_pages_never_reach_a_500(path, run, reviewer):
    upload(run, "memory", MEMORY_SMALL)
    browser = Client(raise_request_exception=False)
    browser.force_login(reviewer.user)
    for query in JUNK_QUERIES:
        response = browser.get(path.format(run=run.run_id) + query)
        assert response.status_code < 500, (query, response.status_code)


@pytest.mark.parametrize("path", [
    "/api/runs/AAS%00/", "/api/runs/{run}/members/%00/", "/api/runs/{run}/members/memory%00/raw",
    "/runs/%00/", "/runs/{run}/members/%00/",
])
def test_a_nul_in_the_url_is_a_400(path, run, reviewer):
    browser = Client(raise_request_exception=False)
    browser.force_login(reviewer.user)
    response = (reviewer if path.startswith("/api/") else browser).get(path.format(run=run.run_id))
    assert response.status_code == 400
    if path.startswith("/api/"):
        assert error_of(response, 400)["code"] == "invalid_url"


@pytest.mark.parametrize("path", [
    "/api/runs/{run}/mappings/99999999999999999999999999/decision/",
    "/api/runs/{run}/integration-issues/99999999999999999999999999/decision/",
    "/api/runs/{run}/amendments/99999999999999999999999999/decision/",
    "/api/runs/{run}/mappings/0/decision/",
    "/api/runs/" + "A" * 5000 + "/approve/",
])
def test_huge_zero_and_overlong_ids_in_the_path_are_a_404(path, run, reviewer):
    error = error_of(reviewer.post(path.format(run=run.run_id), {"decision": "accept", "version": 1}, format="json"),
                     404)
    assert error["code"] == "not_found"


def test_negative_ids_in_the_path_do_not_match_a_route(run, reviewer):
    assert reviewer.post(f"/api/runs/{run.run_id}/mappings/-1/decision/", {}, format="json").status_code == 404


@pytest.mark.parametrize("version", [-1, 0, 10**30, "1; DROP TABLE", None, 1.5, [1]])
def test_a_huge_negative_or_junk_version_in_a_decision_is_a_4xx(version, run, reviewer):
    upload(run, "runtime", RUNTIME_SLUG)
    upload(run, "memory", MEMORY_SMALL)
    mapping = Mapping.objects.filter(run=run, state="proposed").first()
    response = reviewer.post(f"/api/runs/{run.run_id}/mappings/{mapping.pk}/decision/",
                             {"decision": "accept", "rationale": "r", "version": version}, format="json")
    assert response.status_code in (400, 409), response.content
    error_of(response, response.status_code)
    mapping.refresh_from_db()
    assert (mapping.state, mapping.version) == ("proposed", 1)


# --- notes ---------------------------------------------------------------------------------------

def test_a_one_megabyte_approval_note_is_a_400_and_nothing_is_stored(run, reviewer):
    events = AuditEvent.objects.count()
    error = error_of(reviewer.post(f"/api/runs/{run.run_id}/approve/", {"note": "x" * (1024 * 1024)}, format="json"),
                     400)
    assert "note: 1048576 characters; it may hold at most 20000" in error["message"]
    assert AuditEvent.objects.count() == events


def test_a_one_megabyte_reopening_reason_is_a_400(run, reviewer):
    error = error_of(reviewer.post(f"/api/runs/{run.run_id}/reopen/", {"reason": "y" * (1024 * 1024)}, format="json"),
                     400)
    assert "reason: 1048576 characters" in error["message"]


def test_a_one_megabyte_approval_note_from_the_page_is_refused_with_a_message(run, reviewer):
    browser = Client(raise_request_exception=False)
    browser.force_login(reviewer.user)
    response = browser.post(f"/runs/{run.run_id}/approve/", {"note": "x" * (1024 * 1024)}, follow=True)
    assert response.status_code == 200
    assert "it may hold at most 20000" in response.content.decode()


# --- bundles: bombs and path tricks over HTTP ------------------------------------------------

def post_bundle(client, run, data: bytes, name="bundle.zip"):
    return client.post(f"/api/runs/{run.run_id}/bundle/", {"file": SimpleUploadedFile(name, data)}, format="multipart")


@pytest.mark.parametrize("make, name", [
    (lambda limit: zip_of({"ARTIFACT.yaml": b"x", "memory.md": b"\n" * (limit + 1)}), "zip"),
    (lambda limit: tar_gz_of({"ARTIFACT.yaml": b"x", "memory.md": b"\n" * (limit + 1)}), "tar.gz"),
    (lambda limit: zip_of({f"part-{n}.md": b"\n" * (limit // 4) for n in range(6)}), "zip-many-parts"),
])
def test_a_bundle_bomb_is_a_413_at_the_limit_and_nothing_is_stored(make, name, run, agent, settings):
    settings.MAX_BUNDLE_BYTES = 2_000_000
    data = make(settings.MAX_BUNDLE_BYTES)
    assert len(data) < 100_000  # tiny on the wire, over the limit unpacked
    events = AuditEvent.objects.filter(run=run).count()
    error = error_of(post_bundle(agent, run, data, f"bomb.{name.split('-')[0]}"), 413)
    assert "2000000" in error["message"]
    assert (MemberReport.objects.count(), AuditEvent.objects.filter(run=run).count()) == (0, events)


def test_a_zip_entry_lying_about_its_size_is_refused_after_the_size_it_declares(run, agent, settings):
    settings.MAX_BUNDLE_BYTES = 2_000_000
    error = error_of(post_bundle(agent, run, lying_zip(settings.MAX_BUNDLE_BYTES + 1)), 400)
    assert "memory.md: unreadable in the zip" in error["message"]
    assert MemberReport.objects.count() == 0


@pytest.mark.parametrize("entry, words", [
    ("../../etc/cron.d/evil", "escapes"),
    ("/etc/passwd", "absolute"),
    ("C:\\Windows\\evil.md", "absolute"),
    ("ok/../../evil.md", "escapes"),
])
def test_path_tricks_in_a_bundle_are_a_400_naming_the_entry(entry, words, run, agent):
    for data in (zip_of({"ARTIFACT.yaml": b"x", entry: b"evil"}), tar_gz_of({"ARTIFACT.yaml": b"x", entry: b"evil"})):
        error = error_of(post_bundle(agent, run, data), 400)
        assert words in error["message"]
    assert MemberReport.objects.count() == 0


def test_a_bundle_of_more_than_a_thousand_entries_is_refused_at_the_count(run, agent):
    data = tar_gz_of({f"f{n}.md": b"" for n in range(1_100)})
    error = error_of(post_bundle(agent, run, data, "many.tar.gz"), 400)
    assert "more than 1000" in error["message"]
