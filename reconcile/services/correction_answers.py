"""A corrected report's answers and what it must keep of its predecessor (DESIGN §2 "Answer", §6).

Pure functions for the check that refuses a corrected version ("Send it back", issue 19),
`corrections.AnswerCheck`, which records' upload calls: it reads the answers with `parse_answers`,
checks them against the requests open on the member with `check_answers`, and asks `dropped_ids`
which declared IDs the new version lost. They live beside the corrections they serve, so an upload
calls into reconcile and no further.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from records.document import ParsedReport

CORRECTED = "corrected"
DECLINED = "declined"

_ENTRY_RE = re.compile(r"^- (?P<verdict>corrected|declined): (?P<text>.*)$")


@dataclass(frozen=True)
class Answer:
    verdict: str  # CORRECTED, DECLINED, or "" for a `- ` line that is no answer
    text: str  # what changed, or why not
    line: int  # 1-based line in the answers list


@dataclass(frozen=True)
class AnswersProblem:
    code: str  # "answers_mismatch"
    message: str
    line: int = 0


def parse_answers(text: str) -> list[Answer]:
    """Every line of `text` that starts `- `, in order; an indented line continues the entry above it.

    A `- ` line that is neither `- corrected: …` nor `- declined: …` is kept with the verdict "", so that
    `check_answers` can name it.
    """
    answers: list[Answer] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("- "):
            m = _ENTRY_RE.match(line.rstrip())
            if m:
                answers.append(Answer(m.group("verdict"), m.group("text").strip(), number))
            else:
                answers.append(Answer("", line[2:].strip(), number))
        elif answers and line[:1] in (" ", "\t") and line.strip():
            last = answers[-1]
            answers[-1] = Answer(last.verdict, f"{last.text}\n{line.strip()}", last.line)
    return answers


def check_answers(answers: list[Answer], open_request_count: int) -> list[AnswersProblem]:
    """What is wrong with `answers` for a member with `open_request_count` open requests: exactly one
    `corrected` or `declined` entry per request, in the requests' order, and no other `- ` line."""
    problems = [
        AnswersProblem("answers_mismatch",
                       f"Line {a.line} starts \"- \" but is no answer; start it \"- corrected: \" or \"- declined: \", "
                       "or do not start it with \"- \".", a.line)
        for a in answers if not a.verdict
    ]
    given = sum(1 for a in answers if a.verdict)
    if given != open_request_count:
        problems.append(AnswersProblem(
            "answers_mismatch",
            f"{given} answer{'s' if given != 1 else ''} for {open_request_count} open request"
            f"{'s' if open_request_count != 1 else ''}; give exactly one per request, in the requests' order."))
    return problems


def all_declined(answers: list[Answer]) -> bool:
    """Whether bytes identical to the predecessor may stand as the answer: every entry `declined`."""
    return bool(answers) and all(a.verdict == DECLINED for a in answers)


def dropped_ids(predecessor: ParsedReport, successor: ParsedReport) -> list[str]:
    """The IDs the predecessor declared that the successor no longer declares, in the predecessor's order."""
    kept = {d.record_id for d in successor.declarations}
    seen: set[str] = set()
    dropped = []
    for d in predecessor.declarations:
        if d.record_id not in kept and d.record_id not in seen:
            seen.add(d.record_id)
            dropped.append(d.record_id)
    return dropped
