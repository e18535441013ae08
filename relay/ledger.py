"""A session's decisions ledger: what the person decided, pinned and left open — the model.

Plain typed values and their JSON, no I/O, no import of the relay's store or state. A
:class:`Ledger` holds:

* **decisions** (:class:`Decision`): ``kind`` (one of :data:`DECISION_KINDS`), ``text`` kept
  verbatim, ``context`` (what it answers), ``source`` (:class:`Source`: seq and time) and a
  stable ``id``. relay/ledger_rules.py reads them from the session's events and the relay's
  records;
* **constraints** (:class:`Constraint`): what the person pinned, as they pinned it;
* **open items** (:class:`OpenItem`): the task list's open tasks, the card waiting for an answer,
  messages held and not delivered — oldest first;
* ``through_seq``, the last event read, and ``dropped``, decisions left out beyond
  relay/ledger_rules.py's ``MAX_DECISIONS``.

:meth:`Ledger.to_json` is the body of ``GET /api/sessions/{id}/decisions`` (``{"decisions":
[{"kind", "text", "source": {"seq", "at"}, …}], "constraints": […], "open_items": […]}``) and a
snapshot's ``ledger``; :meth:`Ledger.from_json` reads it back and refuses anything else.

The inputs the relay knows beside the events are here too (:class:`RelaySide`: mode changes,
rule answers from the audit log, pins, the task list, the pending card, held messages), with the
small pure helpers that make them: :func:`rule_from_card`, :func:`mode_changes`,
:func:`anchor_seq`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from wire.protocol import NumberedEvent

__all__ = [
    "CORRECTION_KINDS",
    "DECISION_KINDS",
    "OPEN_KINDS",
    "RULE_LABEL_PREFIXES",
    "Constraint",
    "Decision",
    "HeldMessage",
    "Ledger",
    "ModeChange",
    "OpenItem",
    "PendingCard",
    "Pin",
    "RelaySide",
    "RuleAnswer",
    "Source",
    "Task",
    "TaskList",
    "anchor_seq",
    "mode_changes",
    "rule_from_card",
]

DECISION_KINDS: Final = (
    "answer",
    "typed_answer",
    "plan_approved",
    "plan_rejected",
    "plan_declined",
    "rejected",
    "rule",
    "model",
    "mode",
)
# The person's own words redirecting Claude (memory.py counts repeats of these).
CORRECTION_KINDS: Final = frozenset({"typed_answer", "plan_rejected", "rejected"})
OPEN_KINDS: Final = ("task", "card", "held")

# Card options after which Claude Code keeps a permission rule itself (2.1.332's dialogs:
# tests/fixtures/screens/2.1.332/d_bash_permission, e_write_edit_permission).
RULE_LABEL_PREFIXES: Final = (
    "Yes, and don't ask again",
    "Yes, and always allow",
    "Yes, allow all",
)


# -- what a ledger holds ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    """Where an entry came from: the event's seq (or the seq a record is anchored at) and time."""

    seq: int | None
    at: str | None  # ISO 8601, as the event or record carries it

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "at": self.at}


@dataclass(frozen=True, slots=True)
class Decision:
    id: str
    kind: str  # one of DECISION_KINDS
    text: str  # verbatim
    source: Source
    context: str = ""  # what it answers: the question, the tool and its summary
    truncated: bool = False  # the text is the start of a longer one (the stored event was cut)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "text": self.text,
            "context": self.context,
            "source": self.source.to_json(),
            "truncated": self.truncated,
        }


@dataclass(frozen=True, slots=True)
class Constraint:
    id: str
    text: str
    source: Source

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "source": self.source.to_json()}


@dataclass(frozen=True, slots=True)
class OpenItem:
    kind: str  # one of OPEN_KINDS
    text: str
    source: Source
    ref: str = ""  # the task's, card's or held message's id
    status: str = ""  # a task's status, a card's kind

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "ref": self.ref,
            "status": self.status,
            "source": self.source.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Ledger:
    decisions: tuple[Decision, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    open_items: tuple[OpenItem, ...] = ()
    through_seq: int = 0  # the last event read
    dropped: int = 0  # the oldest decisions left out (ledger_rules.MAX_DECISIONS)

    @property
    def empty(self) -> bool:
        """Nothing decided, pinned or left open."""
        return not (self.decisions or self.constraints or self.open_items)

    def to_json(self) -> dict[str, Any]:
        """The shape of ``GET /api/sessions/{id}/decisions`` (and of a snapshot's ``ledger``)."""
        return {
            "decisions": [d.to_json() for d in self.decisions],
            "constraints": [c.to_json() for c in self.constraints],
            "open_items": [o.to_json() for o in self.open_items],
            "through_seq": self.through_seq,
            "dropped": self.dropped,
        }

    @classmethod
    def from_json(cls, data: object) -> Ledger:
        """A ledger stored by :meth:`to_json`; ValueError when it is not one."""
        obj = _mapping(data, "ledger")
        return cls(
            decisions=tuple(
                Decision(
                    id=_text(d, "id"),
                    kind=_text(d, "kind"),
                    text=_text(d, "text"),
                    context=_text(d, "context"),
                    source=_source(d),
                    truncated=_flag(d, "truncated"),
                )
                for d in _items(obj, "decisions")
            ),
            constraints=tuple(
                Constraint(id=_text(c, "id"), text=_text(c, "text"), source=_source(c))
                for c in _items(obj, "constraints")
            ),
            open_items=tuple(
                OpenItem(
                    kind=_text(o, "kind"),
                    text=_text(o, "text"),
                    ref=_text(o, "ref"),
                    status=_text(o, "status"),
                    source=_source(o),
                )
                for o in _items(obj, "open_items")
            ),
            through_seq=_count(obj, "through_seq"),
            dropped=_count(obj, "dropped"),
        )


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} is not an object")
    return value


def _items(obj: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise ValueError(f"{key} is not a list")
    return [_mapping(item, key) for item in value]


def _text(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key, "")
    if not isinstance(value, str):
        raise ValueError(f"{key} is not text")
    return value


def _flag(obj: Mapping[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"{key} is not true or false")
    return value


def _count(obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{key} is not a count")
    return value


def _source(obj: Mapping[str, Any]) -> Source:
    source = _mapping(obj.get("source", {}), "source")
    seq, at = source.get("seq"), source.get("at")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int)):
        raise ValueError("source.seq is not a number")
    if at is not None and not isinstance(at, str):
        raise ValueError("source.at is not text")
    return Source(seq, at)


# -- what the relay knows beside the events ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModeChange:
    """The permission mode changed (from a ``permission-mode`` fact; see :func:`mode_changes`)."""

    id: str
    mode: str
    source: Source


@dataclass(frozen=True, slots=True)
class RuleAnswer:
    """A card answer whose option makes Claude Code keep a rule (see :func:`rule_from_card`)."""

    id: str  # the audit row's id
    label: str  # the chosen option, as the card showed it
    about: str  # the card's tool and summary
    source: Source


@dataclass(frozen=True, slots=True)
class Task:
    """One task of Claude Code's list, as wire/tasklist.py reads it: id, subject, status."""

    id: str
    subject: str
    status: str


@dataclass(frozen=True, slots=True)
class TaskList:
    tasks: tuple[Task, ...]
    source: Source  # where the list as it stands was read


@dataclass(frozen=True, slots=True)
class PendingCard:
    id: str
    kind: str
    title: str
    source: Source


@dataclass(frozen=True, slots=True)
class HeldMessage:
    id: str
    text: str
    source: Source


@dataclass(frozen=True, slots=True)
class Pin:
    """A constraint the person pinned (typed, or from a message: then ``source.seq`` is its)."""

    id: str
    text: str
    source: Source


@dataclass(frozen=True, slots=True)
class RelaySide:
    """What the relay knows that the events do not say."""

    modes: tuple[ModeChange, ...] = ()
    rules: tuple[RuleAnswer, ...] = ()
    pins: tuple[Pin, ...] = ()
    tasks: TaskList | None = None
    card: PendingCard | None = None
    held: tuple[HeldMessage, ...] = ()


def rule_from_card(
    row_id: str, labels: Sequence[str], tool: str | None, summary: str | None, source: Source
) -> RuleAnswer | None:
    """An audit row's answer as a rule, when one of its chosen labels keeps a rule."""
    for label in labels:
        if isinstance(label, str) and label.startswith(RULE_LABEL_PREFIXES):
            about = ": ".join(part for part in (tool, summary) if part)
            return RuleAnswer(row_id, label, about, source)
    return None


def mode_changes(
    previous: str | None, observed: Iterable[tuple[str, Source, str | None]]
) -> tuple[list[ModeChange], str | None]:
    """The changes among observed permission modes (``(id, source, mode)`` in order; ``None``:
    the line said nothing), and the mode at the end. Claude Code writes the mode after every
    turn, so only a different value is a change; the first mode ever seen (``previous`` None) is
    where the session started, not a change."""
    changes: list[ModeChange] = []
    current = previous
    for change_id, source, mode in observed:
        if not mode or mode == current:
            continue
        if current is not None:
            changes.append(ModeChange(change_id, mode, source))
        current = mode
    return changes, current


def anchor_seq(events: Sequence[NumberedEvent], at: str) -> int | None:
    """The seq of the last event at or before ``at`` (ISO 8601): where a record without a seq of
    its own (an audit row from before the ledger) belongs in the history; None when before all."""
    moment = _instant(at)
    if moment is None:
        return None
    found: int | None = None
    for event in events:
        when = _instant(event.timestamp)
        if when is not None and when > moment:
            break
        found = event.seq
    return found


def _instant(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None
