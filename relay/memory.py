"""Memory candidates: durable facts proposed from the ledgers of one project's sessions — pure.

Session history and long-term memory are kept apart (the design's rule): only facts that are
reused are promoted, and only with the person's tap. This module proposes; the memory feature
keeps each candidate's fate (proposed / accepted / edited / dismissed) and writes accepted ones
with wire/memory_section.py. Three rules, each conservative (a wrong "you always say X" costs more
than a missed one):

* ``pinned_twice`` — a constraint pinned in more than one session of the project;
* ``remembered`` — a decision the person marked "remember" (one is enough: they asked);
* ``corrected_twice`` — a correction given twice. A *correction* is the person's own words
  redirecting Claude: a typed answer to a question (``typed_answer``), the words with which they
  rejected a plan (``plan_rejected``) or a tool use (``rejected``). Listed options, approvals,
  rules and mode or model changes are not corrections. *Twice* means the same normalised text at
  two places (two sessions, or two decisions of one session), never a fuzzy likeness; a text of
  fewer than :data:`MIN_CORRECTION_WORDS` words ("no", "stop") never counts.

*Normalised* text: case folded, runs of whitespace made one space, quotes and trailing
punctuation stripped (``"Use pnpm, not npm."`` and ``use pnpm,  not npm`` are one fact).

Each candidate has a **stable id**: a hash of the project and the normalised text. The same fact
found again — by the same rule or another, in the same sessions or new ones — has the same id, so
proposing twice is idempotent (the feature upserts by id and never re-proposes one already
accepted or dismissed: :func:`new_candidates`). Its text is the newest occurrence, verbatim; an
answer's fact reads ``<question> → <answer>`` so it stands alone. Its evidence lists every
``(session, seq, entry)`` it was found at.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from relay.ledger import CORRECTION_KINDS, Decision, Ledger

__all__ = [
    "FATES",
    "MIN_CORRECTION_WORDS",
    "RULES",
    "Candidate",
    "Evidence",
    "SessionLedger",
    "candidate_id",
    "new_candidates",
    "normalise",
    "propose",
]

RULES: Final = ("pinned_twice", "remembered", "corrected_twice")
FATES: Final = ("proposed", "accepted", "edited", "dismissed")
MIN_CORRECTION_WORDS: Final = 2
MIN_SESSIONS_PINNED: Final = 2
MIN_CORRECTIONS: Final = 2
FACT_MAX_CHARS: Final = 1000  # longer texts are not facts to keep in a memory file
MAX_CANDIDATES: Final = 100  # per proposal; the most evidenced first
ID_HEX_CHARS: Final = 16
ANSWER_KINDS: Final = frozenset({"answer", "typed_answer"})
ANSWER_JOIN: Final = " → "

_SPACE_RE: Final = re.compile(r"\s+")
_EDGE_CHARS: Final = " \"'`“”‘’.,;:!?。"


@dataclass(frozen=True, slots=True)
class SessionLedger:
    session_id: str
    ledger: Ledger
    remembered: frozenset[str] = frozenset()  # ids of decisions marked "remember"


@dataclass(frozen=True, slots=True, order=True)
class Evidence:
    session_id: str
    seq: int | None
    entry_id: str

    def to_json(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "seq": self.seq, "entry_id": self.entry_id}


@dataclass(frozen=True, slots=True)
class Candidate:
    id: str
    project: str
    text: str
    rules: tuple[str, ...]  # in RULES order
    evidence: tuple[Evidence, ...]  # sorted

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "project": self.project,
            "text": self.text,
            "rules": list(self.rules),
            "evidence": [e.to_json() for e in self.evidence],
        }


def normalise(text: str) -> str:
    return _SPACE_RE.sub(" ", text).strip(_EDGE_CHARS).casefold()


def candidate_id(project: str, text: str) -> str:
    digest = hashlib.sha256(f"{project}\n{normalise(text)}".encode()).hexdigest()
    return digest[:ID_HEX_CHARS]


def _fact_text(decision: Decision) -> str:
    if decision.kind in ANSWER_KINDS and decision.context:
        return f"{decision.context}{ANSWER_JOIN}{decision.text}"
    return decision.text


@dataclass
class _Found:
    text: str
    newest: tuple[int, int]  # (session index, seq) of the occurrence whose text is kept
    rules: set[str]
    evidence: set[Evidence]


def _usable(text: str) -> bool:
    return bool(normalise(text)) and len(text) <= FACT_MAX_CHARS


def propose(project: str, sessions: Sequence[SessionLedger]) -> list[Candidate]:
    """The candidates found in ``sessions`` (oldest session first) of ``project``."""
    found: dict[str, _Found] = {}

    def note(key: str, text: str, rule: str, where: Evidence, order: tuple[int, int]) -> None:
        entry = found.get(key)
        if entry is None:
            found[key] = _Found(text, order, {rule}, {where})
            return
        entry.rules.add(rule)
        entry.evidence.add(where)
        if order >= entry.newest:
            entry.text, entry.newest = text, order

    pins: dict[str, list[tuple[str, Evidence, tuple[int, int]]]] = {}
    corrections: dict[str, list[tuple[str, Evidence, tuple[int, int]]]] = {}
    for index, session in enumerate(sessions):
        for constraint in session.ledger.constraints:
            if _usable(constraint.text):
                where = Evidence(session.session_id, constraint.source.seq, constraint.id)
                order = (index, constraint.source.seq or 0)
                pins.setdefault(normalise(constraint.text), []).append(
                    (constraint.text, where, order)
                )
        for decision in session.ledger.decisions:
            text = _fact_text(decision)
            if not _usable(text):
                continue
            where = Evidence(session.session_id, decision.source.seq, decision.id)
            order = (index, decision.source.seq or 0)
            if decision.id in session.remembered:
                note(normalise(text), text, "remembered", where, order)
            words = normalise(decision.text).split()
            if decision.kind in CORRECTION_KINDS and len(words) >= MIN_CORRECTION_WORDS:
                corrections.setdefault(normalise(text), []).append((text, where, order))

    for key, seen in pins.items():
        if len({where.session_id for _, where, _ in seen}) >= MIN_SESSIONS_PINNED:
            for text, where, order in seen:
                note(key, text, "pinned_twice", where, order)
    for key, seen in corrections.items():
        if len({(where.session_id, where.entry_id) for _, where, _ in seen}) >= MIN_CORRECTIONS:
            for text, where, order in seen:
                note(key, text, "corrected_twice", where, order)

    candidates = [
        Candidate(
            id=candidate_id(project, entry.text),
            project=project,
            text=entry.text,
            rules=tuple(rule for rule in RULES if rule in entry.rules),
            evidence=tuple(sorted(entry.evidence, key=_evidence_order)),
        )
        for entry in found.values()
    ]
    candidates.sort(key=lambda c: (-len(c.evidence), c.id))
    return candidates[:MAX_CANDIDATES]


def _evidence_order(evidence: Evidence) -> tuple[str, int, str]:
    return evidence.session_id, evidence.seq if evidence.seq is not None else -1, evidence.entry_id


def new_candidates(found: Iterable[Candidate], known: Mapping[str, str]) -> list[Candidate]:
    """The candidates to store as ``proposed``: those whose id has no fate yet (``known``: id →
    fate). One already proposed keeps its row (the feature may refresh its evidence); one
    accepted, edited or dismissed is never proposed again."""
    return [candidate for candidate in found if candidate.id not in known]
