"""The OpenAPI schema describes what the API really takes and returns (read from /api/schema/ as JSON)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(client):
    response = client.get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def resolve(schema: dict, node: dict) -> dict:
    """Follow $ref, and a lone allOf (how a read-only reference is written), to the schema itself."""
    while "$ref" in node or len(node.get("allOf", ())) == 1:
        node = node["allOf"][0] if "allOf" in node else node
        if "$ref" in node:
            node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def test_the_upload_body_is_multipart_file_and_role_or_json_role_and_content(schema):
    body = schema["paths"]["/api/runs/{run_id}/members/"]["post"]["requestBody"]
    assert body["required"] is True
    multipart = resolve(schema, body["content"]["multipart/form-data"]["schema"])
    assert multipart["properties"]["file"] == {"type": "string", "format": "binary",
                                               "description": multipart["properties"]["file"]["description"]}
    assert set(multipart["required"]) == {"file", "role"}
    roles = resolve(schema, multipart["properties"]["role"])["enum"]
    assert {"runtime", "memory", "workflow", "result", "memory-profile"} <= set(roles)
    json_body = resolve(schema, body["content"]["application/json"]["schema"])
    assert set(json_body["required"]) == {"role", "content"}
    assert json_body["properties"]["content"]["type"] == "string"


def test_the_bundle_import_body_is_a_multipart_archive(schema):
    body = schema["paths"]["/api/runs/{run_id}/bundle/"]["post"]["requestBody"]
    archive = resolve(schema, body["content"]["multipart/form-data"]["schema"])
    assert archive["properties"]["file"]["format"] == "binary" and archive["required"] == ["file"]


def test_counts_are_integers(schema):
    version = resolve(schema, schema["paths"]["/api/runs/{run_id}/members/"]["post"]["responses"]["201"]["content"]
                      ["application/json"]["schema"])
    counts = resolve(schema, version["properties"]["counts"])
    assert set(counts["properties"]) == {"declarations", "annotations", "integration_issues", "sources", "mappings",
                                         "quotations", "references", "citations", "mentions", "blockers", "limits"}
    assert {prop["type"] for prop in counts["properties"].values()} == {"integer"}
    detail = resolve(schema, schema["paths"]["/api/runs/{run_id}/"]["get"]["responses"]["200"]["content"]
                     ["application/json"]["schema"])
    assert resolve(schema, detail["properties"]["counts"]) == counts


def test_no_integer_is_documented_with_sqlites_64_bit_range(schema):
    maxima = {node.get("maximum") for node in walk(schema) if node.get("type") == "integer"}
    assert 2**63 - 1 not in maxima
    assert 2**31 - 1 in maxima  # PostgreSQL's integer, the columns' real range


def test_every_operation_documents_the_error_shape(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["error"]
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            assert responses["default"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"}, (method, path)
            for code, response in responses.items():
                if code.startswith("4"):
                    assert response["content"]["application/json"]["schema"]["$ref"].endswith("/Error"), (code, path)
