"""Where a webhook may be delivered (DESIGN.md §9): `https` to public addresses only.

Checked when a subscription is made or changed and again before every attempt, on the
addresses the name resolves to at that moment; the attempt then connects to the address
checked (events/sending.py), so a name that re-resolves between check and connect (DNS
rebinding) cannot steer it inside. `WEBHOOK_ALLOW_PRIVATE=1` (tests, local set-ups) allows
`http` and loopback addresses, nothing more: never link-local (cloud metadata), private or
reserved ones; `check --deploy` fails when it is set with DEBUG off. Nothing a loopback target
answers is shown in the deliveries log (`is_public`).
"""
from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from django.core.checks import Error, Tags, register


class AddressRefused(ValueError):
    """The URL may not receive webhooks; the message says why."""


def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (tests replace this to pretend a name resolves somewhere)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


LOOPBACK = "a loopback address"


def _refusal(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if address.is_loopback:
        return LOOPBACK
    if address.is_link_local:
        return "a link-local address (cloud metadata lives there)"
    if address.is_private:
        return "a private address"
    if address.is_multicast or address.is_reserved or address.is_unspecified or not address.is_global:
        return "not a public address"
    return ""


def is_public(address: str) -> bool:
    """Whether a checked address is a public one (else loopback, let through by WEBHOOK_ALLOW_PRIVATE): only a
    public target's reply is shown (events/sending.py)."""
    return not _refusal(ipaddress.ip_address(address.split("%", 1)[0]))


@register(Tags.security, deploy=True)
def private_targets_not_allowed_in_production(app_configs, **kwargs):
    if settings.WEBHOOK_ALLOW_PRIVATE and not settings.DEBUG:
        return [Error("WEBHOOK_ALLOW_PRIVATE is set with DEBUG off: webhooks could reach this host over http",
                      hint="Unset WEBHOOK_ALLOW_PRIVATE in production (it is for tests and local set-ups).",
                      id="events.E001")]
    return []


def checked_target(url: str, *, allow_private: bool | None = None) -> tuple[str, int, str]:
    """(host, port, address to connect to) for a URL that may receive webhooks; AddressRefused if not."""
    allow = settings.WEBHOOK_ALLOW_PRIVATE if allow_private is None else allow_private
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise AddressRefused(f"{url!r} is not a URL: {error}") from None
    schemes = {"https", "http"} if allow else {"https"}
    if parts.scheme not in schemes:
        raise AddressRefused(f"webhook URLs must use https, not {parts.scheme or 'no scheme'!r}")
    if not parts.hostname:
        raise AddressRefused(f"{url!r} names no host")
    if parts.username or parts.password:
        raise AddressRefused("webhook URLs may not carry credentials")
    port = port or (443 if parts.scheme == "https" else 80)
    try:
        addresses = resolve(parts.hostname, port)
    except (socket.gaierror, UnicodeError) as error:
        raise AddressRefused(f"{parts.hostname} does not resolve: {error}") from None
    if not addresses:
        raise AddressRefused(f"{parts.hostname} does not resolve")
    for text in addresses:
        why = _refusal(ipaddress.ip_address(text.split("%", 1)[0]))
        if why and not (allow and why == LOOPBACK):
            raise AddressRefused(f"{parts.hostname} resolves to {text}, {why}: webhooks go to public "
                                 "addresses only")
    return parts.hostname, port, addresses[0]
