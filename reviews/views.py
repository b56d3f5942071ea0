from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .access import READ_RUNS, check_role
from .models import Run


@require_GET
def healthz(request):
    """200 when the database and the broker answer; 503 naming what is down."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as error:  # noqa: BLE001 — any failure means "down", and we say why
        checks["database"] = f"down: {error.__class__.__name__}: {error}"
    from django.conf import settings

    if settings.CELERY_TASK_ALWAYS_EAGER:
        checks["broker"] = "ok (in-process tasks, no broker configured)"
    else:
        from config.celery import app

        try:
            with app.connection_for_write() as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            checks["broker"] = "ok"
        except Exception as error:  # noqa: BLE001
            checks["broker"] = f"down: {error.__class__.__name__}: {error}"
    healthy = all(value.startswith("ok") for value in checks.values())
    return JsonResponse({"status": "ok" if healthy else "down", "checks": checks}, status=200 if healthy else 503)


@login_required
def runs_list(request):
    check_role(request.user, READ_RUNS)
    runs = Run.objects.all()
    status = request.GET.get("status", "")
    system = request.GET.get("system", "")
    if status in Run.Status.values:
        runs = runs.filter(status=status)
    if system:
        runs = runs.filter(system__iexact=system)
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    systems = Run.objects.order_by("system").values_list("system", flat=True).distinct()
    return render(request, "reviews/runs_list.html", {
        "page": page, "statuses": Run.Status.choices, "status": status, "system": system, "systems": systems,
    })
