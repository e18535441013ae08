"""What the person answered, read from the texts Claude Code 2.1.332 writes as tool results.

A pure module: plain strings in, spans of those strings out. Every text it returns is a slice of
the text it was given (verbatim, never re-quoted or reworded), so the decisions ledger can show
the person's own words and point at where they are.

The texts (seen in the captures where marked, else read from the 2.1.332 binary's
``mapToolResultToToolResultBlockParam`` of AskUserQuestion and ExitPlanMode and its rejection
constants):

* **AskUserQuestion**, answered with listed options only (tests/fixtures/transcripts/f_ask_question)::

      Your questions have been answered: "Q1"="A1", "Q2"="A2". You can now continue with these answers in mind.

  with a typed answer among them (screens/2.1.332/f_ask_question/14)::

      The user answered: "Q1"="typed text". Read the answers carefully — they may request clarification, changes, or that you not proceed — and follow what they actually say.

  A pair may also read ``"Q"=(no option selected)`` and carry `` selected preview:\\n…`` or
  `` notes: …`` after its value; a multi-select answer is its labels joined by ``, ``. A free
  reply instead of answers is ``The user responded: <text>``. Other forms (no answer, a follow-up
  request, the person away) carry no answer and give nothing here.
* **ExitPlanMode** approved: ``User has approved your plan. …\\n\\n## Approved Plan:\\n<plan>``
  (``## Approved Plan (edited by user):`` when the person edited it), or, when the plan is not in
  the result, ``User has approved exiting plan mode. You can now proceed.`` (the 2.1.332 capture,
  screens/2.1.332/g_plan_approval/05): the plan is then the tool use's ``plan`` input.
* **A rejected tool use** (any tool, the plan too): ``The user doesn't want to proceed with this
  tool use. … STOP what you are doing and wait for the user to tell you how to proceed.`` without
  feedback (captured), or ``… To tell you how to proceed, the user said:\\n<feedback>`` and
  ``Permission for this tool use was denied. … The user said:\\n<feedback>`` with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "Answer",
    "Question",
    "Span",
    "approved_plan",
    "is_plan_approval",
    "question_answers",
    "rejection_feedback",
]

ANSWERED_PREFIX: Final = "Your questions have been answered: "
ANSWERED_SUFFIX: Final = ". You can now continue with these answers in mind."
TYPED_PREFIX: Final = "The user answered: "
TYPED_SUFFIX: Final = (
    ". Read the answers carefully \u2014 they may request clarification, changes, or that you"
    " not proceed \u2014 and follow what they actually say."
)
RESPONDED_PREFIX: Final = "The user responded: "
MULTI_SELECT_JOIN: Final = ", "

PLAN_APPROVED_PREFIX: Final = "User has approved"
# The plan as approved follows one of these headings (the edited one when the person edited it).
APPROVED_PLAN_HEADINGS: Final = ("## Approved Plan (edited by user):\n", "## Approved Plan:\n")

# A rejection carries the person's words after one of these (the part before varies).
FEEDBACK_MARKERS: Final = (
    "To tell you how to proceed, the user said:\n",
    "The user said:\n",
)
REJECTION_PREFIXES: Final = (
    "The user doesn't want to proceed with this tool use.",
    "Permission for this tool use was denied.",
)


@dataclass(frozen=True, slots=True)
class Span:
    """``text[start:end]`` of the text it was read from."""

    start: int
    end: int

    def of(self, text: str) -> str:
        return text[self.start : self.end]


@dataclass(frozen=True, slots=True)
class Answer:
    """One question's answer inside a tool result: where the value is, and which question."""

    question: str  # as the tool use asked it ("" when the result could not be split by question)
    value: Span  # the answer as written in the result (quotes around a plain value left out)
    typed: bool  # not (only) a listed option: the person's own words


def _strip_quotes(text: str, span: Span) -> Span:
    value = span.of(text)
    if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
        return Span(span.start + 1, span.end - 1)
    return span


def _body(result: str) -> tuple[Span, bool] | None:
    """The answers part of an answered result and whether Claude Code called it typed."""
    for prefix, suffix, typed in (
        (ANSWERED_PREFIX, ANSWERED_SUFFIX, False),
        (TYPED_PREFIX, TYPED_SUFFIX, True),
    ):
        if result.startswith(prefix):
            # A stored result may be cut (tool_result_max_chars): then the suffix is missing.
            end = len(result) - len(suffix) if result.endswith(suffix) else len(result)
            return Span(len(prefix), max(len(prefix), end)), typed
    return None


def _is_listed(value: str, labels: Sequence[str], multi_select: bool) -> bool:
    if value in labels:
        return True
    parts = value.split(MULTI_SELECT_JOIN)
    return multi_select and len(parts) > 1 and all(part in labels for part in parts)


@dataclass(frozen=True, slots=True)
class Question:
    """A question as the tool use asked it: its text, its options' labels, multi-select or not."""

    text: str
    labels: tuple[str, ...] = ()
    multi_select: bool = False


def question_answers(questions: Sequence[Question], result: str) -> list[Answer]:
    """The answers in an AskUserQuestion result, in the order asked (see the module docstring).

    ``questions`` come from the tool use (possibly empty when it is not known): each answer is
    found by its question's ``"<question>"=`` in the result; the value runs to the next found
    question's pair or the end of the answers. When no question is found, the whole answers part
    is one answer. A free reply (``The user responded:``) is one typed answer.
    """
    if result.startswith(RESPONDED_PREFIX):
        span = Span(len(RESPONDED_PREFIX), len(result))
        return [Answer("", span, True)] if span.end > span.start else []
    found = _body(result)
    if found is None:
        return []
    body, typed_form = found
    starts: list[tuple[int, int, Question]] = []  # (pair start, value start, question)
    cursor = body.start
    for question in questions:
        if not question.text:
            continue
        key = f'"{question.text}"='
        at = result.find(key, cursor, body.end)
        if at < 0:
            continue  # an unanswered question is left out of the result
        starts.append((at, at + len(key), question))
        cursor = at + len(key)
    if not starts:
        return [Answer("", body, typed_form)] if body.end > body.start else []
    answers = []
    for index, (_, value_start, question) in enumerate(starts):
        end = body.end
        if index + 1 < len(starts):
            end = starts[index + 1][0]
            if result.endswith(MULTI_SELECT_JOIN, value_start, end):
                end -= len(MULTI_SELECT_JOIN)
        value = _strip_quotes(result, Span(value_start, max(value_start, end)))
        listed = _is_listed(value.of(result), question.labels, question.multi_select)
        answers.append(Answer(question.text, value, typed_form and not listed))
    return answers


def is_plan_approval(result: str) -> bool:
    return result.startswith(PLAN_APPROVED_PREFIX)


def approved_plan(result: str) -> Span | None:
    """The plan as approved, when the approval's result carries it; else None."""
    if not is_plan_approval(result):
        return None
    for heading in APPROVED_PLAN_HEADINGS:
        at = result.find(heading)
        if at >= 0:
            start = at + len(heading)
            return Span(start, len(result)) if len(result) > start else None
    return None


def rejection_feedback(result: str) -> Span | None:
    """The person's words in a rejected tool use's result, or None when there are none."""
    if not result.startswith(REJECTION_PREFIXES):
        return None
    for marker in FEEDBACK_MARKERS:
        at = result.find(marker)
        if at >= 0:
            start = at + len(marker)
            if result[start:].strip():
                return Span(start, len(result))
    return None
