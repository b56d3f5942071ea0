"""`POST /api/runs/import/`: a run created from its own run directory (DESIGN §4)."""
from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from reviews.access import CALLER_ROUTE, UPLOAD, route_policy
from reviews.api import RunSerializer
from reviews.api_errors import ApiError, Conflict
from reviews.audit import Actor
from reviews.services import RunExists
from reviews.parsers import FormParser, MultiPartParser

from . import services
from .api import imported_members, refusal, run_directory_archive
from .run_import import import_run


class RunImportView(APIView):
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Create a run from a run directory (zip or tar.gz): identity from ARTIFACT.yaml and the "
                "members' front matter, every pin checked; 409 when the run exists",
        request={"multipart/form-data": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}},
                                         "required": ["file"]}},
        responses={201: OpenApiTypes.OBJECT})
    @route_policy(UPLOAD, action="import run", scope=CALLER_ROUTE)
    def post(self, request):
        actor = Actor.for_request(request)
        archive = run_directory_archive(request)
        try:
            run, results = import_run(archive=archive, actor=actor, user=request.user)
        except services.UploadRefused as error:
            raise refusal(error) from None
        except RunExists as exists:
            raise Conflict(str(exists), code="run_exists") from None
        except ValidationError as error:
            raise ApiError(f"The run directory's identity is not a valid run: {'; '.join(error.messages)}",
                           code="invalid_identity", details=error.message_dict if hasattr(error, "error_dict") else None) from None
        members = imported_members(results)
        run.refresh_from_db()
        return Response({"run": RunSerializer(run).data, "members": members}, status=status.HTTP_201_CREATED)
