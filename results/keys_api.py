"""`GET /api/keys/`: the server's public signing keys, anonymous, retired keys kept (DESIGN §4, §7).

The keys document aas_verify takes with `--key`: each key with its `purpose` (result, audit, log), `valid_from`,
`valid_until` (null while current) and `fingerprint` (SHA-256 of the raw public key). Fetched from the server that
made a bundle it is not out of band: pin a fingerprint obtained elsewhere (README, "Auditing a result").
"""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews.audit_keys import published_audit_keys

from .signing import published_keys


class PublicKeysView(APIView):
    """Anyone may read the public keys: an auditor checks a bundle's signature against them."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        summary="The server's public signing keys (Ed25519) with purpose and validity window, retired ones included",
        responses={200: inline_serializer("PublicKeys", {"keys": serializers.ListField(child=inline_serializer(
            "PublicKey", {"keyid": serializers.CharField(), "algorithm": serializers.CharField(),
                          "public_key_pem": serializers.CharField(), "created": serializers.CharField(),
                          "retired": serializers.CharField(allow_null=True),
                          "purpose": serializers.ChoiceField(choices=["result", "audit", "log"]),
                          "valid_from": serializers.CharField(),
                          "valid_until": serializers.CharField(allow_null=True),
                          "fingerprint": serializers.CharField()}))})},
    )
    def get(self, request):
        return Response({"keys": [key.as_api() for key in (*published_keys(), *published_audit_keys())]})
