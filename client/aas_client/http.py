"""A small HTTP layer over the documented API (DESIGN.md §4), on the standard library's urllib.

Why not a client generated from the OpenAPI schema, or httpx: an agent installs this into
whatever sandbox it runs in, often offline or with pinned packages of its own; with no
dependency `pip install ./client` cannot conflict with them or fail to fetch one. The API
surface used is a dozen calls, typed by hand after the schema (`/api/schema/`); the one thing
urllib lacks, multipart uploads, is the thirty lines below.
"""
from __future__ import annotations

import json
import mimetypes
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass


class Unreachable(Exception):
    """The server did not answer (exit code 3)."""


@dataclass
class ApiRefusal(Exception):
    """The server answered with an error: its status, code and message (DESIGN §4 error shape)."""

    status: int
    code: str
    message: str
    details: object = None

    def __str__(self) -> str:
        return f"{self.message} ({self.code}, HTTP {self.status})"


@dataclass(frozen=True)
class Part:
    """A file part of a multipart body."""

    filename: str
    content: bytes


def multipart(fields: dict) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    chunks = []
    for name, value in fields.items():
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"'
        if isinstance(value, Part):
            kind = mimetypes.guess_type(value.filename)[0] or "application/octet-stream"
            chunks.append(f'{head}; filename="{value.filename}"\r\nContent-Type: {kind}\r\n\r\n'.encode()
                          + value.content + b"\r\n")
        else:
            chunks.append(f"{head}\r\n\r\n".encode() + str(value).encode("utf-8") + b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


class Api:
    def __init__(self, url: str, token: str, *, timeout: float = 30.0):
        self.base = url.rstrip("/") + "/"
        self.token, self.timeout = token, timeout

    def request(self, method: str, path: str, *, query: dict | None = None, json_body=None,
                form: dict | None = None) -> tuple[int, object]:
        url = urllib.parse.urljoin(self.base, path.lstrip("/"))
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        headers = {"Authorization": f"Token {self.token}", "Accept": "application/json"}
        data = None
        if json_body is not None:
            data, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
        elif form is not None:
            data, headers["Content-Type"] = multipart(form)
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status, _decoded(response.read())
        except urllib.error.HTTPError as error:
            body = _decoded(error.read())
            found = body.get("error", {}) if isinstance(body, dict) else {}
            raise ApiRefusal(error.code, found.get("code", "http_error"),
                             found.get("message") or str(body or error.reason)[:500], found.get("details")) from None
        except (TimeoutError, urllib.error.URLError, ConnectionError) as error:
            raise Unreachable(f"{self.base} did not answer: {getattr(error, 'reason', error)}") from None

    def get(self, path: str, **query):
        return self.request("GET", path, query=query)[1]


def _decoded(raw: bytes):
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")
