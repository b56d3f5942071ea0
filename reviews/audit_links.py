"""Where an audit event's object lives: a page URL ending in the row's anchor.

reviews knows runs and (by their label `role/vN`) member versions; apps that
reviews must not import (records → reviews, reconcile → records → reviews)
register a resolver for their object types from their AppConfig.ready.
A resolver takes the run and the page's events of its type and returns
{event pk: url}; one call per type and page, so a page of links costs one
query per type at most.
"""
from __future__ import annotations

from typing import Callable, Iterable

from django.urls import reverse

Resolver = Callable[[object, list], dict]
_resolvers: dict[str, Resolver] = {}
# object_type → (run, events) → {event pk: the object as a reviewer names it} ("EPI-OBJ-1 → OBJ-6 (new)",
# not "mapping 47"); like a resolver, one call per type and page.
Namer = Callable[[object, list], dict]
_namers: dict[str, Namer] = {}


def register(object_type: str, resolver: Resolver, namer: Namer | None = None) -> None:
    _resolvers[object_type] = resolver
    if namer is not None:
        _namers[object_type] = namer


def object_names(run, events: Iterable) -> dict:
    """{event pk: its object in words} for these events of one run; a type nobody named reads
    "<type in words> <id>"."""
    by_type: dict[str, list] = {}
    for event in events:
        by_type.setdefault(event.object_type, []).append(event)
    names = {}
    for object_type, group in by_type.items():
        namer = _namers.get(object_type)
        found = namer(run, group) if namer else {}
        for event in group:
            names[event.pk] = found.get(event.pk) or f"{object_type.replace('_', ' ')} {event.object_id}"
    return names


def _member_version_names(run, events) -> dict:
    return {e.pk: "the {} report, version {}".format(*str(e.object_id).split("/v", 1))
            for e in events if "/v" in str(e.object_id)}


def run_url(run) -> str:
    return reverse("run-detail", args=[run.run_id])


def _member_version(run, events) -> dict:
    # object_id is "role/vN"; the run page's member rows are `member-<role>`.
    return {e.pk: f"{run_url(run)}#member-{e.object_id.split('/', 1)[0]}" for e in events}


register("member_version", _member_version, _member_version_names)
register("run", lambda run, events: {e.pk: run_url(run) for e in events},
         lambda run, events: {e.pk: f"run {e.object_id}" for e in events})


def object_urls(run, events: Iterable) -> dict:
    """{event pk: url of its object's row} for these events of one run; the run page for a type
    no app registered (or an object its resolver no longer finds)."""
    by_type: dict[str, list] = {}
    for event in events:
        by_type.setdefault(event.object_type, []).append(event)
    urls = {}
    for object_type, group in by_type.items():
        resolver = _resolvers.get(object_type)
        found = resolver(run, group) if resolver else {}
        for event in group:
            urls[event.pk] = found.get(event.pk) or run_url(run)
    return urls
