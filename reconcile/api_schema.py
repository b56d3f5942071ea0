"""Serializers that document the reconciliation API's replies in the OpenAPI schema (reconcile/api.py builds
these shapes as plain data)."""
from __future__ import annotations

from rest_framework import serializers


def _count() -> serializers.IntegerField:
    return serializers.IntegerField(min_value=0)


class DecisionCountsSerializer(serializers.Serializer):
    total, accepted, rejected, proposed, stale = _count(), _count(), _count(), _count(), _count()
    decided, undecided = _count(), _count()


class AmendmentCountsSerializer(DecisionCountsSerializer):
    carried, conflicts = _count(), _count()


class ProgressSerializer(serializers.Serializer):
    mappings = DecisionCountsSerializer()
    issues = DecisionCountsSerializer()
    amendments = AmendmentCountsSerializer()
    total, decided, undecided, stale = _count(), _count(), _count(), _count()
