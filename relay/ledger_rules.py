"""Building a session's decisions ledger from its events — kept verbatim, pure.

Stored events and plain records in, a :class:`~relay.ledger.Ledger` out (relay/ledger.py); no
I/O, no clock, no import of the relay's store or state. The decisions feature builds it for
``GET /api/sessions/{id}/decisions``; snapshots store it; the ``fresh`` resume hands it over.

**Decisions** come from the session's events (relay/convert.py), read in seq order:

* ``answer`` / ``typed_answer`` — an AskUserQuestion answered: one entry per question, its text
  the answer as Claude Code wrote it in the tool result, its ``context`` the question
  (relay/tool_answers.py has the texts). ``typed_answer`` when it is not (only) a listed option.
* ``plan_approved`` — an ExitPlanMode approved: the plan as approved (the result's ``## Approved
  Plan`` section when it has one, else the tool use's ``plan`` input, whose event is then the
  source), else the approval's first line.
* ``plan_rejected`` — a plan rejected with the person's words: those in the result (``the user
  said:``), or else the person's next prompt when nothing but the rejection's own markers comes
  between (how a plan card is declined and answered, at the desk and from the phone).
  ``plan_declined`` — rejected and the next thing was not a prompt: the plan that was declined.
* ``rejected`` — any other tool use rejected with the person's words (``the user said:``); its
  context is the tool and its summary. A rejection without words is not a decision.
* ``rule`` — permission rules: the agent's ``allow_all`` markers (an allow-all window starting or
  ending) and ``grant`` markers (an "always" given or revoked; a grant that merely ended with its
  claude process is not a decision), text as the marker says it; and, from the relay's audit log,
  card answers whose chosen option makes Claude Code keep a rule itself ("Yes, and don't ask
  again …", relay/ledger.py ``rule_from_card``), text the option's label. A card's bridge "always" is taken
  from its ``grant`` marker (the grant as the Mac gave it, with its seq), not from the audit row
  (the request), so it is listed once.
* ``model`` — Claude Code's ``/model`` result ``Set model to …`` (a local-command marker; the
  phone's model change types ``/model`` too, so it arrives the same way), its first line.
* ``mode`` — permission mode changes. They are not events (``permission-mode`` lines only carry a
  fact), so the feature records them as lines arrive (relay/ledger.py ``mode_changes``) and
  passes them in.

**Constraints** are the person's pins, given in; **open items** are given in too: the latest task
list (its not-completed tasks), the card waiting for an answer, messages held and not delivered.

Rules that hold for every ledger (tests/relay/test_ledger_rules.py checks them with Hypothesis):

* every decision's ``text`` is a slice of its source: of the source event's text or of a string in
  its input (or of the record it came from); nothing is reworded;
* decisions are in seq order (entries from relay records after the events of their seq, those
  with no seq last) and carry stable ids (``e<seq>.<n>`` from events, ``a<id>`` / ``m<id>`` from
  records), so building twice gives the same ledger;
* the output is bounded (:data:`MAX_DECISIONS`, :data:`ENTRY_MAX_CHARS` …: the oldest decisions
  beyond the limit are counted in ``dropped``); any event shape is read without raising.

With ``base`` (the ledger of the latest snapshot) only events after its ``through_seq`` are read,
so a ledger outlives the events that aged out of the window (``events_kept``). Constraints and
open items are always those given now: a removed pin or a finished task is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from relay import tool_answers
from relay.ledger import (
    Constraint,
    Decision,
    Ledger,
    OpenItem,
    RelaySide,
    Source,
)
from wire.protocol import EventKind, MarkerKind, NumberedEvent

__all__ = [
    "CONTEXT_MAX_CHARS",
    "ENTRY_MAX_CHARS",
    "MAX_DECISIONS",
    "build_ledger",
    "source_texts",
]

MAX_DECISIONS: Final = 500  # a ledger longer than this keeps its newest decisions
MAX_OPEN_TASKS: Final = 200
MAX_HELD: Final = 100
# A longer text is kept as its start (``truncated``): twice what an event keeps of a tool text
# by default (tool_result_max_chars), so only a long prompt or a raised setting reaches it.
ENTRY_MAX_CHARS: Final = 8_000
CONTEXT_MAX_CHARS: Final = 1_000

ASK_TOOL: Final = "AskUserQuestion"
PLAN_TOOL: Final = "ExitPlanMode"
PLAN_INPUT: Final = "plan"
MODEL_SET_PREFIX: Final = "Set model to "  # /model's result line (agent/modes.py reads it too)
# agent/grants.py ended_line: grants ending with their claude process; nobody decided that.
GRANTS_ENDED_PREFIX: Final = "🔒 Grants ended"
OPEN_TASK_STATUSES: Final = frozenset({"pending", "in_progress"})


# -- reading the events ------------------------------------------------------------------------


def source_texts(event: NumberedEvent) -> list[str]:
    """The texts of an event a decision may quote: its text and every string in its input."""
    texts = [event.text]
    stack: list[Any] = [event.input] if event.input is not None else []
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return texts


def _cap(text: str, limit: int = ENTRY_MAX_CHARS) -> tuple[str, bool]:
    return (text[:limit], True) if len(text) > limit else (text, False)


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def _questions(use: NumberedEvent | None) -> list[tool_answers.Question]:
    raw = use.input.get("questions") if use is not None and use.input else None
    if not isinstance(raw, list):
        return []
    questions = []
    for item in raw:
        if not isinstance(item, Mapping) or not isinstance(item.get("question"), str):
            continue
        options = item.get("options")
        labels = tuple(
            o["label"]
            for o in (options if isinstance(options, list) else [])
            if isinstance(o, Mapping) and isinstance(o.get("label"), str)
        )
        questions.append(
            tool_answers.Question(item["question"], labels, item.get("multiSelect") is True)
        )
    return questions


def _plan_input(use: NumberedEvent | None) -> str:
    plan = use.input.get(PLAN_INPUT) if use is not None and use.input else None
    return plan if isinstance(plan, str) else ""


def _sets_rule(event: NumberedEvent) -> bool:
    """An allow-all window starting or ending, an "always" given or revoked (agent markers)."""
    if event.marker is MarkerKind.ALLOW_ALL:
        return True
    return event.marker is MarkerKind.GRANT and not event.text.startswith(GRANTS_ENDED_PREFIX)


class _Reader:
    """Decisions from events, one event at a time (local to one :func:`build_ledger` call)."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []
        self.uses: dict[str, NumberedEvent] = {}
        # A declined plan waiting for the person's next prompt: (tool use, result).
        self.declined: tuple[NumberedEvent | None, NumberedEvent] | None = None
        self.parts: dict[int, int] = {}

    def add(
        self,
        kind: str,
        text: str,
        event: NumberedEvent,
        context: str = "",
        cut: bool = False,
    ) -> None:
        if not text.strip():
            return
        kept, capped = _cap(text)
        part = self.parts.get(event.seq, 0)
        self.parts[event.seq] = part + 1
        self.decisions.append(
            Decision(
                id=f"e{event.seq}.{part}",
                kind=kind,
                text=kept,
                source=Source(event.seq, event.timestamp),
                context=_cap(context, CONTEXT_MAX_CHARS)[0],
                truncated=capped or cut or event.truncated,
            )
        )

    def remember_use(self, event: NumberedEvent) -> None:
        if event.kind is EventKind.TOOL_USE and event.tool_use_id:
            self.uses[event.tool_use_id] = event

    def read(self, event: NumberedEvent) -> None:
        if self.declined is not None and not self._settle_declined(event):
            return
        if event.kind is EventKind.TOOL_RESULT:
            self._result(event)
        elif event.kind is EventKind.MARKER:
            self._marker(event)

    def finish(self) -> None:
        if self.declined is not None:
            self._declined_plan(*self.declined)
            self.declined = None

    def _settle_declined(self, event: NumberedEvent) -> bool:
        """Pair a declined plan with the prompt after it; False when ``event`` was that prompt."""
        if self.declined is None:
            return True
        if event.kind is EventKind.MARKER and event.marker in (
            MarkerKind.REJECTED,
            MarkerKind.INTERRUPTED,
        ):
            return True  # the rejection's own markers
        if event.kind is EventKind.USER and event.agent_id is None and event.text.strip():
            use, _ = self.declined
            self.declined = None
            self.add("plan_rejected", event.text, event, context=_plan_input(use))
            return False
        self.finish()
        return True

    def _declined_plan(self, use: NumberedEvent | None, result: NumberedEvent) -> None:
        plan = _plan_input(use)
        if use is not None and plan.strip():
            self.add("plan_declined", plan, use)
        else:
            self.add("plan_declined", _first_line(result.text), result)

    def _result(self, event: NumberedEvent) -> None:
        use = self.uses.get(event.tool_use_id or "")
        tool = use.tool if use is not None else None
        text = event.text
        if event.is_error:
            feedback = tool_answers.rejection_feedback(text)
            if feedback is not None:
                if tool == PLAN_TOOL:
                    self.add("plan_rejected", feedback.of(text), event)
                else:
                    about = ": ".join(p for p in (tool, use.summary if use else None) if p)
                    self.add("rejected", feedback.of(text), event, context=about)
            elif tool == PLAN_TOOL and text.startswith(tool_answers.REJECTION_PREFIXES):
                self.declined = (use, event)
            return
        if tool == ASK_TOOL:
            for answer in tool_answers.question_answers(_questions(use), text):
                kind = "typed_answer" if answer.typed else "answer"
                self.add(kind, answer.value.of(text), event, context=answer.question)
        elif tool == PLAN_TOOL and tool_answers.is_plan_approval(text):
            span = tool_answers.approved_plan(text)
            plan = _plan_input(use)
            if span is not None:
                self.add("plan_approved", span.of(text), event)
            elif use is not None and plan.strip():
                self.add("plan_approved", plan, use)
            else:
                self.add("plan_approved", _first_line(text), event)

    def _marker(self, event: NumberedEvent) -> None:
        text = event.text
        if _sets_rule(event):
            self.add("rule", text, event)
        elif event.marker is MarkerKind.LOCAL_COMMAND and text.startswith(MODEL_SET_PREFIX):
            self.add("model", _first_line(text), event)


def _relay_decisions(relay: RelaySide) -> list[Decision]:
    found = [
        Decision(
            f"a{r.id}", "rule", _cap(r.label)[0], r.source, _cap(r.about, CONTEXT_MAX_CHARS)[0]
        )
        for r in relay.rules
    ]
    found.extend(Decision(f"m{m.id}", "mode", _cap(m.mode)[0], m.source) for m in relay.modes)
    return [d for d in found if d.text.strip()]


def _order(source: Source) -> tuple[bool, int]:
    return source.seq is None, source.seq or 0


def _open_items(relay: RelaySide) -> tuple[OpenItem, ...]:
    items: list[OpenItem] = []
    if relay.tasks is not None:
        open_tasks = [t for t in relay.tasks.tasks if t.status in OPEN_TASK_STATUSES]
        items.extend(
            OpenItem("task", _cap(t.subject)[0], relay.tasks.source, t.id, t.status)
            for t in open_tasks[:MAX_OPEN_TASKS]
        )
    items.extend(OpenItem("held", _cap(h.text)[0], h.source, h.id) for h in relay.held[-MAX_HELD:])
    if relay.card is not None:
        card = relay.card
        items.append(OpenItem("card", _cap(card.title)[0], card.source, card.id, card.kind))
    # Oldest first: the handoff drops from the front when it has to.
    return tuple(sorted(items, key=lambda item: _order(item.source)))


def build_ledger(
    events: Iterable[NumberedEvent],
    relay: RelaySide | None = None,
    base: Ledger | None = None,
) -> Ledger:
    """The session's ledger from its events (and what the relay knows beside them), on top of
    ``base`` (a snapshot's ledger) when given. See the module docstring for the rules."""
    relay = relay or RelaySide()
    after = base.through_seq if base is not None else 0
    reader = _Reader()
    through = after
    for event in sorted(events, key=lambda e: e.seq):
        reader.remember_use(event)  # a result after ``after`` may answer a use before it
        if event.seq <= after:
            continue
        through = max(through, event.seq)
        reader.read(event)
    reader.finish()
    merged: dict[str, Decision] = {d.id: d for d in base.decisions} if base is not None else {}
    for decision in [*reader.decisions, *_relay_decisions(relay)]:
        merged.setdefault(decision.id, decision)
    ordered = sorted(merged.values(), key=lambda d: _order(d.source))
    dropped = (base.dropped if base is not None else 0) + max(0, len(ordered) - MAX_DECISIONS)
    return Ledger(
        decisions=tuple(ordered[-MAX_DECISIONS:]),
        constraints=tuple(
            Constraint(p.id, _cap(p.text)[0], p.source) for p in relay.pins if p.text.strip()
        ),
        open_items=_open_items(relay),
        through_seq=through,
        dropped=dropped,
    )
