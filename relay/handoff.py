"""The handoff: the first message of a ``fresh`` conversation, built from the ledger — pure.

A ``fresh`` resume starts a new Claude Code conversation inside the same session; its first
message is this text and nothing else of the old conversation. It holds, in this order:

1. an opening (:data:`~relay.recent_work.HANDOFF_OPENING` and what the text is);
2. **the decisions**, every one, verbatim (``- <what>: <text>``; an answer shows its question);
3. **the constraints** the person pinned, every one, verbatim;
4. **open items**: the task list's open tasks, a card waiting for an answer, held messages;
5. **files touched**, by latest use;
6. **the last exchange**: the person's last prompt and Claude's texts after it.

**The budget.** The text's estimate (relay/tokens.py) stays within ``budget`` tokens (the
``handoff_max_tokens`` setting). To get there the builder leaves out, in this order: the oldest
exchange text first (whole pieces, oldest first; the oldest piece it keeps may lose its start,
shown as ``…``), then files (oldest use first), then open items (oldest first). Decisions and
constraints are never left out, shortened or altered. When the opening, the decisions and the
constraints alone need more than the budget, the handoff holds just them and says so
(``fits`` False, ``needed`` tokens): the reopen card shows that, so the person raises
``handoff_max_tokens`` or picks another scope — cutting a decision would resume on a wrong premise.

The conversation's marker line is :func:`marker_text`: ``resumed fresh from N decisions``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from relay.ledger import Constraint, Decision, Ledger, OpenItem
from relay.recent_work import HANDOFF_OPENING, Exchange, Piece
from relay.tokens import max_units, text_units, tokens_of_units
from wire.markers import fresh_marker

__all__ = [
    "CONTEXT_SHOWN",
    "DECISION_LABELS",
    "HANDOFF_MAX_TOKENS_DEFAULT",
    "HANDOFF_MIN_TOKENS",
    "Handoff",
    "LeftOut",
    "build_handoff",
    "marker_text",
]

# Should become the setting ``handoff_max_tokens`` (wire/config.py): a few pages of text, a small
# share of a 200k context, and far below what a full resume re-reads.
HANDOFF_MAX_TOKENS_DEFAULT: Final = 8000
HANDOFF_MIN_TOKENS: Final = 500  # the setting's floor: below it not even the opening fits well

OPENING_LINES: Final = (
    HANDOFF_OPENING,
    "It starts fresh: below is what was decided and what is still open, quoted verbatim from "
    "the earlier conversation of this session. Treat the decisions and constraints as settled "
    "and ask before reopening one. Earlier details are not here; ask the person if you need one.",
)
# Each heading starts with a blank line: the sections read apart.
DECISIONS_HEADING: Final = "\n## Decisions"
CONSTRAINTS_HEADING: Final = "\n## Constraints (pinned by the person)"
OPEN_HEADING: Final = "\n## Open items"
FILES_HEADING: Final = "\n## Files touched"
EXCHANGE_HEADING: Final = "\n## The last exchange"
CUT_MARK: Final = "…"  # the start of the oldest exchange piece kept was left out
TRUNCATED_NOTE: Final = " [cut here: the rest is in the session's history]"
_NEWLINE: Final = "\n"

DECISION_LABELS: Final = {
    "answer": "answered",
    "typed_answer": "answered in their own words",
    "plan_approved": "approved the plan",
    "plan_rejected": "rejected the plan and said",
    "plan_declined": "declined the plan",
    "rejected": "rejected a tool use and said",
    "rule": "permission rule",
    "model": "model",
    "mode": "permission mode set to",
}
# Kinds whose context says what the decision is about (a plan's context is the plan: too long).
CONTEXT_SHOWN: Final = frozenset({"answer", "typed_answer", "rejected", "rule"})
OPEN_LABELS: Final = {
    "task": "task",
    "card": "waiting for the person's answer",
    "held": "message from the person, not yet delivered",
}
ROLE_LABELS: Final = {"person": "Person", "claude": "Claude"}


@dataclass(frozen=True, slots=True)
class LeftOut:
    """What the budget left out."""

    exchange_pieces: int = 0  # whole pieces of the last exchange
    exchange_chars: int = 0  # characters cut from the start of the oldest piece kept
    files: int = 0
    open_items: int = 0


@dataclass(frozen=True, slots=True)
class Handoff:
    text: str
    tokens: int  # estimate_tokens(text)
    budget: int
    fits: bool  # False: the decisions and constraints alone need more than the budget
    needed: int  # tokens of the opening, decisions and constraints alone
    decisions: int
    constraints: int
    left_out: LeftOut

    @property
    def marker(self) -> str:
        return marker_text(self.decisions)


def marker_text(decisions: int) -> str:
    """The marker line of a conversation resumed fresh (the agent writes it: wire/markers.py)."""
    return fresh_marker(decisions)


def _decision_line(decision: Decision) -> str:
    label = DECISION_LABELS.get(decision.kind, decision.kind)
    about = f" ({decision.context})" if decision.context and decision.kind in CONTEXT_SHOWN else ""
    note = TRUNCATED_NOTE if decision.truncated else ""
    return f"- {label}{about}: {decision.text}{note}"


def _constraint_line(constraint: Constraint) -> str:
    return f"- {constraint.text}"


def _open_line(item: OpenItem) -> str:
    label = OPEN_LABELS.get(item.kind, item.kind)
    status = f" [{item.status}]" if item.status else ""
    return f"- {label}{status}: {item.text}"


def _piece_line(piece: Piece, cut: int = 0) -> str:
    text = CUT_MARK + piece.text[cut:] if cut else piece.text
    return f"{ROLE_LABELS[piece.role]}: {text}"


class _Section:
    """A heading and its lines, measured once; shown only while it has lines."""

    def __init__(self, heading: str, lines: Sequence[str]) -> None:
        self.heading = heading
        self.lines = list(lines)
        self.units = [text_units(line) for line in self.lines]
        self.kept_from = 0  # lines before this index are left out
        self.heading_units = text_units(heading)

    @property
    def shown(self) -> bool:
        return self.kept_from < len(self.lines)

    def measure(self) -> tuple[int, int]:
        """(units, lines) of what it shows, heading included."""
        if not self.shown:
            return 0, 0
        kept = self.units[self.kept_from :]
        return self.heading_units + sum(kept), 1 + len(kept)

    def render(self) -> list[str]:
        return [self.heading, *self.lines[self.kept_from :]] if self.shown else []


def _total(sections: Sequence[_Section]) -> int:
    units, lines = 0, 0
    for section in sections:
        u, n = section.measure()
        units += u
        lines += n
    return units + max(0, lines - 1) * text_units(_NEWLINE)


def _trim_front(piece: Piece, over: int) -> int | None:
    """How many characters to cut from the start of ``piece`` to save ``over`` units (the cut
    mark included), or None when it cannot be done without emptying it."""
    saved = -text_units(CUT_MARK)
    for index, char in enumerate(piece.text):
        if saved >= over:
            return index if index < len(piece.text) else None
        saved += text_units(char)
    return None


def build_handoff(
    ledger: Ledger,
    files: Sequence[str],
    exchange: Exchange,
    budget: int = HANDOFF_MAX_TOKENS_DEFAULT,
) -> Handoff:
    """The first message of a fresh conversation (see the module docstring for the rules)."""
    if budget < 1:
        raise ValueError(f"a handoff budget must be at least one token, not {budget}")
    allowed = max_units(budget)
    opening = _Section(OPENING_LINES[0], OPENING_LINES[1:])
    decisions = _Section(DECISIONS_HEADING, [_decision_line(d) for d in ledger.decisions])
    constraints = _Section(CONSTRAINTS_HEADING, [_constraint_line(c) for c in ledger.constraints])
    open_items = _Section(OPEN_HEADING, [_open_line(o) for o in ledger.open_items])
    touched = _Section(FILES_HEADING, [f"- {path}" for path in files])
    pieces = list(exchange.pieces)
    talk = _Section(EXCHANGE_HEADING, [_piece_line(p) for p in pieces])
    sections = [opening, decisions, constraints, open_items, touched, talk]
    needed = tokens_of_units(_total([opening, decisions, constraints]))
    cut_chars = 0

    while _total(sections) > allowed and talk.shown:
        over = _total(sections) - allowed
        first = talk.kept_from
        cut = _trim_front(pieces[first], over)
        if cut is not None:
            talk.lines[first] = _piece_line(pieces[first], cut)
            talk.units[first] = text_units(talk.lines[first])
            cut_chars = cut
            break
        talk.kept_from += 1
    for section in (touched, open_items):
        while _total(sections) > allowed and section.shown:
            section.kept_from += 1

    text = _NEWLINE.join(line for section in sections for line in section.render())
    return Handoff(
        text=text,
        tokens=tokens_of_units(_total(sections)),
        budget=budget,
        fits=_total(sections) <= allowed,
        needed=needed,
        decisions=len(ledger.decisions),
        constraints=len(ledger.constraints),
        left_out=LeftOut(
            exchange_pieces=talk.kept_from,
            exchange_chars=cut_chars,
            files=touched.kept_from,
            open_items=open_items.kept_from,
        ),
    )
