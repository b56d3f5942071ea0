"""What the OpenAPI schema says beyond the views' own annotations (drf-spectacular hooks).

- Every operation documents its errors: the `{"error": {"code", "message", "details"}}` shape
  (reviews/api_errors.py) as the `default` response, and as the body of any 4xx the view names.
- Integer ranges are the production database's: a PositiveIntegerField is a PostgreSQL
  `integer` (0..2147483647). Generated on SQLite, drf-spectacular would take SQLite's 64-bit
  range, which Swagger UI then shows as the example 9223372036854776000.
"""
from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "description": "Every API error (DESIGN.md §4).",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "A stable machine-readable code, e.g. `too_large`.",
                         "example": "invalid"},
                "message": {"type": "string", "description": "What is wrong, naming the field or file.",
                            "example": "role: required, one of runtime, memory, workflow"},
                "details": {"nullable": True, "description": "More about the problem, or null."},
            },
            "required": ["code", "message", "details"],
        }
    },
    "required": ["error"],
}
ERROR_REF = {"$ref": "#/components/schemas/Error"}
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def _fix_integers(node) -> None:
    if isinstance(node, dict):
        if node.get("type") == "integer" and node.get("maximum") == INT64_MAX:
            node["maximum"] = INT32_MAX
            node["format"] = "int32"
        for value in node.values():
            _fix_integers(value)
    elif isinstance(node, list):
        for value in node:
            _fix_integers(value)


def postprocess(result, generator, request, public):
    """drf-spectacular POSTPROCESSING_HOOK: error responses and integer ranges (see the module docstring)."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    for path_item in result.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for code, response in responses.items():
                if code.startswith("4"):
                    response.setdefault("description", "")
                    response["content"] = {"application/json": {"schema": ERROR_REF}}
            responses.setdefault("default", {
                "description": "An error (400 bad input, 401/403 authentication or role, 404, 409 state "
                               "conflict, 413 too large, 415 media type, 429 throttled)",
                "content": {"application/json": {"schema": ERROR_REF}},
            })
    _fix_integers(result)
    return result
