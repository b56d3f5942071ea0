"""One signed POST of a webhook payload (Standard Webhooks), to the address that was checked.

Redirects are not followed (a 3xx is a failed attempt), proxies from the environment are
ignored, and only the first KB of the reply is read. Only a public target's reply is kept (its
first KB, a redirect's Location, a protocol error's text): from a loopback target, which only
WEBHOOK_ALLOW_PRIVATE lets through (events/addresses.py), the log keeps the status code and
nothing the target said, so a subscription cannot read the server's own services.
"""
from __future__ import annotations

import ssl
import time
from dataclasses import dataclass
from datetime import datetime
from functools import cache

import httpx
from standardwebhooks import Webhook as Signer

EXCERPT_BYTES = 1024
NOT_SHOWN = "(reply from a non-public target not shown)"


@cache
def _tls() -> ssl.SSLContext:
    # Loading the CA store costs ~100 ms; once per process, not per attempt.
    return ssl.create_default_context()


@dataclass(frozen=True)
class Reply:
    status_code: int | None
    excerpt: str
    error: str
    duration_ms: int

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def signed_headers(*, secret: str, message_id: str, sent_at: datetime, body: str) -> dict:
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": Signer(secret).sign(message_id, sent_at, body),
        "content-type": "application/json",
        "user-agent": "aas-webhooks/1",
    }


def post(*, url: str, host: str, port: int, address: str, public: bool, headers: dict, body: str,
         timeout: float) -> Reply:
    """POST `body` to `url`, connecting to `address` (checked) while naming `host` (Host header, TLS SNI
    and certificate check); what the reply says is kept only when `address` is `public`."""
    parsed = httpx.URL(url)
    target = parsed.copy_with(host=address, port=port)
    headers = dict(headers, host=parsed.netloc.decode("ascii"))
    extensions = {"sni_hostname": host} if parsed.scheme == "https" else {}
    started = time.perf_counter()
    try:
        with httpx.Client(follow_redirects=False, timeout=timeout, trust_env=False, verify=_tls()) as client:
            request = client.build_request("POST", target, content=body.encode("utf-8"), headers=headers,
                                           extensions=extensions)
            response = client.send(request, stream=True)
            try:
                excerpt = b""
                for chunk in response.iter_raw() if public else ():
                    excerpt += chunk
                    if len(excerpt) >= EXCERPT_BYTES:
                        break
            finally:
                response.close()
    except httpx.HTTPError as error:
        # Failing to connect, or in time, is this side's own news; a protocol error may quote the reply.
        said = public or isinstance(error, (httpx.ConnectError, httpx.TimeoutException))
        return Reply(None, "", f"{type(error).__name__}: {error if said else NOT_SHOWN}"[:500], _ms(started))
    error = ""
    if 300 <= response.status_code < 400:
        error = (f"redirect to {response.headers.get('location', '?')!r} not followed" if public
                 else f"redirect not followed {NOT_SHOWN}")[:500]
    text = excerpt[:EXCERPT_BYTES].decode("utf-8", errors="replace") if public else NOT_SHOWN
    return Reply(response.status_code, text, error, _ms(started))


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
