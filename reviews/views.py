from pathlib import Path
from urllib.parse import urlencode

from django.conf import settings as django_settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from . import login_throttle
from .access import TRAIL_READERS, run_for
from .actions import Action
from .audit import verify_chain
from .audit_diff import changed_fields
from .audit_links import object_names, object_urls
from .health import health_report
from .models import AuditEvent
from .withheld import shown, withheld_chain, withheld_events


FAVICON = Path(__file__).resolve().parent.parent / "static" / "favicon.ico"


@require_GET
def favicon(request):
    """/favicon.ico, which browsers ask for whatever the page links (pages link the static copy)."""
    response = FileResponse(FAVICON.open("rb"), content_type="image/x-icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


class LoginView(auth_views.LoginView):
    """Django's login form, answering 429 while the user name or address is locked out
    after too many failed logins (reviews/login_throttle.py counts them)."""

    template_name = "reviews/login.html"

    def post(self, request, *args, **kwargs):
        if login_throttle.is_locked(request, request.POST.get("username", "")):
            minutes = max(1, django_settings.LOGIN_FAILURE_WINDOW_SECONDS // 60)
            context = self.get_context_data(form=self.get_form_class()(request)) | {
                "locked": f"Too many failed logins. Try again in {minutes} minutes."}
            return render(request, self.template_name, context, status=429)
        return super().post(request, *args, **kwargs)


@require_GET
def healthz(request):
    """200 when the database and the broker answer (the broker by a write); 503 naming what is down."""
    body, healthy = health_report(request)
    return JsonResponse(body, status=200 if healthy else 503)


@login_required
@require_GET
def run_audit(request, run_id: str):
    """The run's audit timeline, filtered by actor and action, with the chain's check on top."""
    run = run_for(request, run_id, allowed=TRAIL_READERS)
    actor, action = request.GET.get("actor", ""), request.GET.get("action", "")
    trail = AuditEvent.objects.filter(run=run)
    events = trail.order_by("seq")
    if actor:
        events = events.filter(actor=actor)
    if action:
        events = events.filter(action=action)
    review_pass = request.GET.get("pass", "")
    if review_pass.isdigit():
        events = events.filter(object_type="review_pass", object_id=review_pass)
    page = Paginator(events, 100).get_page(request.GET.get("page"))
    events = list(page)
    urls, names = object_urls(run, events), object_names(run, events)
    withheld = withheld_events(run, request.user, events)
    unhashed = withheld_chain(run, request.user, events, withheld)  # unsalted withheld decisions: no hashes
    rows = [
        {
            "event": event,
            "what": Action.wording_of(event.action),
            "object_url": urls[event.pk],
            "object_name": names[event.pk],
            "changes": changed_fields(*shown(event, withheld)),
            "hash": None if "hash" in unhashed.get(event.pk, ()) else event.hash,
        }
        for event in events
    ]
    context = {
        "run": run,
        # The banner is outside the htmx region: a filter swap does not need the chain recomputed.
        "check": None if request.htmx else verify_chain(run),
        "page": page,
        "rows": rows,
        "actor": actor,
        "action": action,
        "actors": trail.order_by("actor").values_list("actor", flat=True).distinct(),
        "actions": trail.order_by("action").values_list("action", flat=True).distinct(),
        "review_pass": review_pass,
        "passes": trail.filter(object_type="review_pass").order_by("object_id").values_list("object_id", flat=True)
        .distinct(),
        "filter_query": urlencode({k: v for k, v in (("actor", actor), ("action", action), ("pass", review_pass))
                                   if v}),
    }
    template = "reviews/audit_timeline.html#timeline" if request.htmx else "reviews/audit_timeline.html"
    return render(request, template, context)
