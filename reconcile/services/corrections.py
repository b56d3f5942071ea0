"""Correction requests: a reviewer (or a verification member's Blockers) sends work back to the analyst
who wrote a member, who answers with a corrected version (DESIGN §2, §3, §4, §5 "Sending work back").

States: open → answered (a new version of the addressed member answered it) → resolved (a reviewer
accepts the answer); answered or resolved → open again (reopened, with a reason); open or answered →
withdrawn (by its author). Every change is one audit event in the same transaction, and each carries
an optimistic-lock `version` as decisions do (a stale one gets 409 with the request as it is now).

The upload that answers requests is records' service; records calls `AnswerCheck` (bound from
ReconcileConfig.ready) inside the upload's transaction, before the version is stored, so an upload
whose answers do not match is refused whole and nothing of it is kept.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from records import parsed as parse_cache
from records.parsing import parse_report
from records.models import MemberReport, MemberVersion, Record
from records.services import AnswersRefused
from records.verification import VERIFICATION_ROLES, blocker_requests
from reviews.actions import Action
from reviews.audit import Actor, lock_run, record_event
from reviews.free_text import too_long
from reviews.models import Run

from ..models import CorrectionReply, CorrectionRequest
from ..errors import InvalidDecision, ProposalError, RunFinal, RunLocked, StaleVersion
from ..vocabulary import LOCKED_STATUSES
from .correction_answers import Answer, check_answers, dropped_ids, parse_answers

State = CorrectionRequest.State


def _text(name: str, text: str, *, required: bool = True) -> str:
    text = (text or "").strip()
    if required and not text:
        raise ProposalError(f"{name}: required; say what should change and why, it is sent to the analyst.", name)
    if refusal := too_long(name, text):
        raise ProposalError(refusal, name)
    return text


def snapshot(request: CorrectionRequest) -> dict:
    return {"state": request.state, "version": request.version, "member": request.member,
            "record": request.record_id, "answer": request.answer,
            "answered_in": request.answered_in.version if request.answered_in_id else None}


def _event(request: CorrectionRequest, *, actor: Actor, action: str, before: dict | None, **after) -> None:
    record_event(run=request.run, actor=actor, action=action, object_type="correction_request",
                 object_id=request.pk, before=before, after=snapshot(request) | after)


def _refuse_unless_open(run: Run) -> None:
    """Requests change only while the run is open to decisions: they decide whether it can be approved."""
    if run.status == Run.Status.FINAL:
        raise RunFinal(f"run {run.run_id} is final and closed for good: revise it to change it")
    if run.status in LOCKED_STATUSES:
        raise RunLocked(f"run {run.run_id} is {run.status}: reopen it before changing its correction requests")


def raise_correction(*, run: Run, member: str, text: str, actor: Actor, record_id: str = "",
                     line: int | None = None) -> CorrectionRequest:
    """A reviewer's request that `member`'s analyst change it; `record_id` and `line` narrow it."""
    text = _text("text", text)
    record_id = (record_id or "").strip()
    with transaction.atomic():
        locked = lock_run(run)
        _refuse_unless_open(locked)
        report = MemberReport.objects.filter(run=locked, role=member).select_related("current_version").first()
        if report is None or report.current_version is None:
            raise ProposalError(f"member: the run has no {member!r} report to correct", "member")
        if record_id and not Record.objects.filter(member_version=report.current_version,
                                                   record_id=record_id).exists():
            raise ProposalError(f"record: {record_id} is not a record of the current {member} report "
                                f"(version {report.current_version.version})", "record")
        request = CorrectionRequest.objects.create(run=locked, member=member, record_id=record_id, line=line,
                                                   text=text, author=actor.label)
        _event(request, actor=actor, action=Action.CORRECTION_REQUESTED, before=None, text=text, line=line)
    return request


def raise_from_verification(*, run: Run, version: MemberVersion, actor: Actor) -> list[CorrectionRequest]:
    """The Blockers of a current verification version, each a request to the member it addresses
    (once per blocker however often this runs). An unaddressed or unknown addressee is a validation
    error of the verification member and raises nothing. Caller holds the run's lock."""
    if version.member.role not in VERIFICATION_ROLES:
        return []
    roles = set(MemberReport.objects.filter(run=run).values_list("role", flat=True))
    author = f"{version.member.role} v{version.version}"
    made = []
    for index, blocker in enumerate(blocker_requests(parse_cache.version_report(version), author=author), 1):
        if blocker.addressee not in roles:
            continue
        request, created = CorrectionRequest.objects.get_or_create(
            raised_in=version, blocker_index=index,
            defaults={"run": run, "member": blocker.addressee, "record_id": blocker.record_id,
                      "line": blocker.line, "text": blocker.text, "author": author,
                      "source": CorrectionRequest.Source.VERIFICATION})
        if created:
            _event(request, actor=actor, action=Action.CORRECTION_REQUESTED, before=None, text=request.text,
                   line=blocker.line, raised_in=author)
            made.append(request)
    return made


def _claim(request: CorrectionRequest, expected_version: int | None, allowed: tuple[str, ...]) -> CorrectionRequest:
    """The request row-locked at `expected_version` in one of `allowed` states, else 409. The run's lock
    first, as every writer of a run takes it (reviews.audit.lock_run: one lock order, no deadlock)."""
    lock_run(Run(pk=request.run_id))
    current = (CorrectionRequest.objects.select_for_update(of=("self",)).select_related("run", "answered_in")
               .get(pk=request.pk))
    if expected_version is None or current.version != expected_version:
        raise StaleVersion(current)
    _refuse_unless_open(current.run)
    if current.state not in allowed:
        raise InvalidDecision(f"correction {current.pk} is {current.state}; only a request that is "
                              f"{' or '.join(allowed)} can be changed this way")
    return current


def _move(current: CorrectionRequest, *, state: str, actor: Actor, action: str, **changes) -> CorrectionRequest:
    before = snapshot(current)
    current.state = state
    current.version += 1
    for name, value in changes.items():
        setattr(current, name, value)
    current.save(update_fields=CorrectionRequest.STATE_FIELDS)
    _event(current, actor=actor, action=action, before=before,
           **{k: v for k, v in changes.items() if k in ("reason",)})
    return current


def resolve_correction(*, request: CorrectionRequest, actor: Actor, expected_version: int | None) -> CorrectionRequest:
    """A reviewer accepts the answer."""
    with transaction.atomic():
        current = _claim(request, expected_version, (State.ANSWERED,))
        return _move(current, state=State.RESOLVED, actor=actor, action=Action.CORRECTION_RESOLVED,
                     settled_by=actor.label, settled_at=timezone.now())


def reopen_correction(*, request: CorrectionRequest, reason: str, actor: Actor,
                      expected_version: int | None) -> CorrectionRequest:
    """The answer does not settle it: open again, waiting for another corrected version."""
    reason = _text("reason", reason)
    with transaction.atomic():
        current = _claim(request, expected_version, (State.ANSWERED, State.RESOLVED))
        return _move(current, state=State.OPEN, actor=actor, action=Action.CORRECTION_REOPENED, reason=reason,
                     answer="", answer_text="", answered_in=None, answered_against=None, settled_by="",
                     settled_at=None)


def withdraw_correction(*, request: CorrectionRequest, actor: Actor, expected_version: int | None,
                        reason: str = "") -> CorrectionRequest:
    """Its author takes it back (a verification's request: any reviewer, for the verifier)."""
    reason = _text("reason", reason, required=False)
    with transaction.atomic():
        current = _claim(request, expected_version, (State.OPEN, State.ANSWERED))
        if current.source == CorrectionRequest.Source.REVIEWER and current.author != actor.label:
            raise InvalidDecision(f"correction {current.pk} was raised by {current.author}; only its author "
                                  "withdraws it (reopen or resolve it instead)")
        return _move(current, state=State.WITHDRAWN, actor=actor, action=Action.CORRECTION_WITHDRAWN, reason=reason,
                     settled_by=actor.label, settled_at=timezone.now())


def reply_to_correction(*, request: CorrectionRequest, text: str, actor: Actor) -> CorrectionReply:
    text = _text("text", text)
    with transaction.atomic():
        lock_run(Run(pk=request.run_id))
        current = CorrectionRequest.objects.select_for_update(of=("self",)).select_related("run").get(pk=request.pk)
        _refuse_unless_open(current.run)
        reply = CorrectionReply.objects.create(request=current, author=actor.label, text=text)
        record_event(run=current.run, actor=actor, action=Action.CORRECTION_REPLIED, object_type="correction_request",
                     object_id=current.pk, after={"reply": reply.pk, "text": text, "state": current.state})
    return reply


_OPEN_IDS = (f'SELECT "id" FROM "{CorrectionRequest._meta.db_table}" WHERE "run_id" = %s AND "member" = %s '
             'AND "state" = %s ORDER BY "raised_at", "id"')
# The same over records' member row `m` (PostgreSQL): records.services.answering.AnswerCheck.open_ids_sql.
OPEN_IDS_SQL = (f'ARRAY(SELECT "id" FROM "{CorrectionRequest._meta.db_table}" WHERE "run_id" = m."run_id" '
                'AND "member" = m."role" AND "state" = %s ORDER BY "raised_at", "id")', [State.OPEN.value])


def open_requests(run: Run, member: str, *, ids: list[int] | None = None) -> list[CorrectionRequest]:
    """The requests a new version of `member` must answer, in the order it answers them; `ids`: theirs, when
    the caller read them already under the run's lock (the upload, with its member row: OPEN_IDS_SQL).

    Every upload asks (under the run's lock), and almost every upload finds none: their ids by a plain
    statement, the rows only when there are some. Compiling the ORM query cost an upload ten times
    running it (0.9 against 0.09 ms of CPU; DESIGN §11 "uploads")."""
    if ids is None:
        with connection.cursor() as cursor:
            cursor.execute(_OPEN_IDS, [run.pk, member, State.OPEN.value])
            ids = [pk for (pk,) in cursor.fetchall()]
    if not ids:
        return []
    found = CorrectionRequest.objects.in_bulk(ids)
    return [found[pk] for pk in ids]


def pending_counts(run_ids) -> dict[int, dict[str, int]]:
    """{run pk: {"open": n, "answered": m}} for the runs list and the run page."""
    rows = (CorrectionRequest.objects.filter(run_id__in=run_ids).values("run_id")
            .annotate(open=Count("id", filter=Q(state=State.OPEN)), answered=Count("id", filter=Q(state=State.ANSWERED))))
    return {row["run_id"]: {"open": row["open"], "answered": row["answered"]} for row in rows}


def _read_answers(answers, open_count: int) -> tuple[list[Answer], list[int | None], list]:
    """(answers, the request each names or None, problems) from the upstream list or the JSON form."""
    if answers in (None, "", []):
        return [], [], []
    if isinstance(answers, str):
        found = parse_answers(answers)
        problems = check_answers(found, open_count)
        for answer in found:
            _refuse_long_answer(f"answers: line {answer.line}", answer.text, line=answer.line)
        return [a for a in found if a.verdict], [None] * sum(1 for a in found if a.verdict), problems
    given, named = [], []
    for index, item in enumerate(answers):
        verdict = item.get("answer") if isinstance(item, dict) else None
        text, request = (item.get("text", ""), item.get("request")) if isinstance(item, dict) else ("", None)
        if verdict not in CorrectionRequest.Answer.values or not isinstance(text, str) or not (
                request is None or (isinstance(request, int) and not isinstance(request, bool))):
            raise AnswersRefused(f"answers[{index}]: an object {{\"request\": id, \"answer\": \"corrected\" or "
                                 "\"declined\", \"text\": \"…\"}", code="answers_mismatch",
                                 details={"index": index})
        _refuse_long_answer(f"answers[{index}].text", text.strip(), index=index)
        given.append(Answer(verdict, text.strip(), index + 1))
        named.append(request)
    return given, named, []


def _refuse_long_answer(name: str, text: str, **where) -> None:
    """An answer's text is a caller's text like any other (reviews.free_text): 400 naming it, nothing stored."""
    if refusal := too_long(name, text):
        raise AnswersRefused(refusal, code="invalid", details={"field": "answers", **where})


@dataclass(frozen=True)
class AnswerPlan:
    """What an upload's answers will do once its version is stored."""

    requests: tuple[CorrectionRequest, ...]
    answers: tuple[Answer, ...]
    previous: MemberVersion | None


class AnswerCheck:
    """Bound to records' upload (records.services.answering) from ReconcileConfig.ready."""

    open_ids_sql = OPEN_IDS_SQL

    @staticmethod
    def check(*, run: Run, role: str, text: str, answers, current_version_id: int | None,
              identical: bool, open_ids: list[int] | None = None) -> AnswerPlan | None:
        """Refuse (AnswersRefused, 400) an upload whose answers do not match the member's open requests,
        or that drops a declared ID while answering; None when there is nothing to answer. `open_ids`: the
        open requests' ids as the upload read them under the run's lock (None: read them here)."""
        requests = open_requests(run, role, ids=open_ids)
        given, named, problems = _read_answers(answers, len(requests))
        if not requests and not given and not problems:  # a `- ` line that is no answer is refused with none open
            return None
        ids = [r.pk for r in requests]
        if problems and not (len(given) != len(requests)):
            raise AnswersRefused("answers: " + " ".join(p.message for p in problems), code="answers_mismatch",
                                 details={"requests": ids, "lines": [p.line for p in problems if p.line]})
        if len(given) != len(requests) or any(n is not None and n != i for n, i in zip(named, ids)):
            raise AnswersRefused(
                f"answers: the {role} report has {len(requests)} open correction request"
                f"{'s' if len(requests) != 1 else ''} ({', '.join(f'#{i}' for i in ids) or 'none'}), oldest first; "
                f"the upload gives {len(given)} answer{'s' if len(given) != 1 else ''}"
                f"{' naming ' + ', '.join(f'#{n}' for n in named if n is not None) if any(named) else ''}. "
                "Give exactly one `- corrected: …` or `- declined: …` line per request, in their order.",
                code="answers_mismatch", details={"requests": ids, "answers": len(given)})
        previous = (MemberVersion.objects.select_related("member").defer("content").get(pk=current_version_id)
                    if current_version_id else None)
        if identical and any(a.verdict == CorrectionRequest.Answer.CORRECTED for a in given):
            raise AnswersRefused(
                f"answers: these bytes are {role} version {previous.version} unchanged, so nothing was corrected; "
                "answer `declined` with why, or upload the corrected report.",
                code="answers_mismatch", details={"requests": ids, "identical_to": previous.version})
        if previous is not None and not identical:
            missing = dropped_ids(parse_cache.version_report(previous), parse_report(text))
            if missing:
                raise AnswersRefused(
                    f"dropped-id: the corrected {role} report no longer declares {', '.join(missing)}, which "
                    f"version {previous.version} declared; a corrected report keeps every ID its predecessor "
                    "declared (mark a record superseded instead of removing it).",
                    code="dropped-id", details={"ids": missing, "predecessor_version": previous.version})
        return AnswerPlan(tuple(requests), tuple(given), previous)

    @staticmethod
    def apply(plan: AnswerPlan, *, version: MemberVersion) -> list[int]:
        """Move the requests to answered by `version` (in the upload's transaction; its event names them)."""
        for request, answer in zip(plan.requests, plan.answers):
            request.state, request.version = State.ANSWERED, request.version + 1
            request.answer, request.answer_text = answer.verdict, answer.text
            request.answered_in, request.answered_against = version, plan.previous
            request.save(update_fields=CorrectionRequest.STATE_FIELDS)
        return [r.pk for r in plan.requests]


def members_uploaded_by(run: Run, labels: set[str]) -> list[str]:
    """The roles of the run's members whose current version one of `labels` uploaded: what that agent answers."""
    return list(MemberReport.objects.filter(run=run, current_version__uploaded_by__in=labels)
                .values_list("role", flat=True))
