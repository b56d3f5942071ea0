"""Answers to correction requests, carried by an upload (DESIGN §4, §6 "a corrected report").

records stores member versions but does not keep the requests: the app that does (reconcile) binds
its check here from its AppConfig.ready. The upload calls `ANSWERS.check` under the run's lock before
it stores anything (with the ids of the open requests, read by the statement that locks the member row), so a mismatch refuses the upload whole, and `ANSWERS.apply` once the version is
stored, in the same transaction; the upload's one audit event names the requests it answered.
"""
from __future__ import annotations

from typing import Any, Protocol


class AnswerCheck(Protocol):
    # An SQL expression over the upload's member row (alias `m`) giving the ids of the requests open against
    # it, oldest first, with its parameters: the upload reads them with its member row, a statement fewer.
    open_ids_sql: tuple[str, list] | None

    def check(self, *, run, role: str, text: str, answers: Any, current_version_id: int | None,
              identical: bool, open_ids: list[int] | None) -> Any: ...

    def apply(self, plan: Any, *, version) -> list[int]: ...


class _Answers:
    def __init__(self) -> None:
        self.handler: AnswerCheck | None = None

    def bind(self, handler: AnswerCheck) -> None:
        self.handler = handler

    def open_ids_sql(self) -> tuple[str, list] | None:
        """The handler's open_ids_sql (PostgreSQL), or None: `check` is then given `open_ids=None` and reads them."""
        return getattr(self.handler, "open_ids_sql", None)

    def check(self, **kwargs) -> Any:
        """The handler's check; `open_ids`: the ids open_ids_sql read with the member row, None when not read."""
        return self.handler.check(**kwargs) if self.handler is not None else None

    def apply(self, plan: Any, *, version) -> list[int]:
        return self.handler.apply(plan, version=version) if plan is not None else []


ANSWERS = _Answers()
