"""Answers to correction requests, carried by an upload (DESIGN §4, §6 "a corrected report").

records stores member versions but does not keep the requests: the app that does (reconcile) binds
its check here from its AppConfig.ready. The upload calls `ANSWERS.check` under the run's lock before
it stores anything, so a mismatch refuses the upload whole, and `ANSWERS.apply` once the version is
stored, in the same transaction; the upload's one audit event names the requests it answered.
"""
from __future__ import annotations

from typing import Any, Protocol


class AnswerCheck(Protocol):
    def check(self, *, run, role: str, text: str, answers: Any, current_version_id: int | None,
              identical: bool) -> Any: ...

    def apply(self, plan: Any, *, version) -> list[int]: ...


class _Answers:
    def __init__(self) -> None:
        self.handler: AnswerCheck | None = None

    def bind(self, handler: AnswerCheck) -> None:
        self.handler = handler

    def check(self, **kwargs) -> Any:
        return self.handler.check(**kwargs) if self.handler is not None else None

    def apply(self, plan: Any, *, version) -> list[int]:
        return self.handler.apply(plan, version=version) if plan is not None else []


ANSWERS = _Answers()
