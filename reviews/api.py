"""REST API for runs, and the pieces every app's API shares: errors, pagination, access."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.response import Response

from .access import CALLER_ROUTE, READ_RUNS, UPLOAD, check_role, roles_of, route_policy
from .audit import Actor
from .api_errors import ApiError, Conflict
from .models import Run
from .services import RUN_FIELDS, RunExists, create_run


class RunSerializer(serializers.ModelSerializer):
    class Meta:
        model = Run
        fields = [*RUN_FIELDS, "status", "status_reason", "manifest_sha256", "reviews_required", "created_at",
                  "updated_at"]
        read_only_fields = ["status", "status_reason", "manifest_sha256", "reviews_required", "created_at", "updated_at"]
        extra_kwargs = {"run_id": {"validators": []}}  # uniqueness is the database's job: 409 below


class RunListCreateView(generics.ListCreateAPIView):
    serializer_class = RunSerializer

    def get_queryset(self):
        check_role(self.request.user, READ_RUNS)
        runs = Run.objects.all()
        params = self.request.query_params
        if params.get("status"):
            if params["status"] not in Run.Status.values:
                raise ApiError(f"unknown status {params['status']!r}; use one of {', '.join(Run.Status.values)}",
                               code="invalid_filter")
            runs = runs.filter(status=params["status"])
        if params.get("system"):
            runs = runs.filter(system__icontains=params["system"])  # part of the name, any case
        return runs

    @extend_schema(summary="Create a run", responses={201: RunSerializer})
    @route_policy(UPLOAD, action="create run", scope=CALLER_ROUTE)
    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            run = create_run(actor=Actor.for_request(request), user=request.user, **serializer.validated_data)
        except RunExists as exists:
            raise Conflict(str(exists), code="run_exists") from None
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)


class WhoAmIView(generics.GenericAPIView):
    """Who the token belongs to and which roles it carries: an agent's first check of its credentials."""

    serializer_class = None

    @extend_schema(summary="The caller's user name and roles", responses={200: inline_serializer("WhoAmI", {
        "username": serializers.CharField(),
        "roles": serializers.ListField(child=serializers.ChoiceField(choices=["agent", "reviewer", "auditor", "admin"])),
        "token": serializers.CharField(allow_null=True, help_text="The token's name; null for a browser session"),
    })})
    def get(self, request):
        token = request.auth if hasattr(request.auth, "name") else None
        return Response({
            "username": request.user.get_username(),
            "roles": sorted(roles_of(request.user)),
            "token": token.name if token else None,
        })
