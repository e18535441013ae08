"""Snapshots: the ledger as it stood when something happened, kept as an event — pure.

A snapshot is taken when things happen, never at resume time, so a resume reads one that
exists and two resumes read the same one. :func:`snapshot_reasons` says when, from what the
relay just stored and saw:

* ``decision`` — a turn ended (the session went from working to idle or waiting: the relay's
  live state says so, ``turn_ended``) and the ledger gained a decision since the last snapshot;
* ``compaction`` — a ``compacted`` marker among the new events (relay/convert.py: Claude Code's
  ``compact_boundary`` line, ``/compact`` or auto-compaction);
* ``clear`` — a ``cleared`` marker (``/clear``: the conversation starts over);
* ``end`` — the session ended (its claude exited or it was stopped: ``session_ended``) with
  something in its ledger.

Several reasons at once make one snapshot that lists them all.

:class:`Snapshot` is its content: the reasons, the ledger (relay/ledger.py), the files touched
and the last exchange (relay/recent_work.py) as of ``through_seq``. The feature stores it as an
event of kind ``snapshot`` (its ``input`` holds :meth:`Snapshot.to_json`, its ``text`` the line
:meth:`Snapshot.summary`), numbered like any event so it pages and catches up; the latest one is
the ``base`` of the next ledger (so decisions outlive the events that age out of the window) and
what the handoff and the search index read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from relay.ledger import Ledger, RelaySide
from relay.ledger_rules import build_ledger
from relay.recent_work import FILES_KEPT, Exchange, files_touched, last_exchange
from wire.protocol import EventKind, MarkerKind, NumberedEvent

__all__ = [
    "REASONS",
    "SNAPSHOT_KIND",
    "SNAPSHOT_VERSION",
    "Snapshot",
    "snapshot_reasons",
    "take_snapshot",
]

SNAPSHOT_KIND: Final = "snapshot"  # the event kind (to add to wire.protocol.EventKind)
SNAPSHOT_VERSION: Final = 1
REASONS: Final = ("decision", "compaction", "clear", "end")
_MARKER_REASONS: Final = {MarkerKind.COMPACTED: "compaction", MarkerKind.CLEARED: "clear"}
_REASON_WORDS: Final = {
    "decision": "a decision",
    "compaction": "compaction",
    "clear": "/clear",
    "end": "the session's end",
}


def snapshot_reasons(
    new_events: Iterable[NumberedEvent],
    ledger: Ledger,
    last_snapshot_seq: int,
    *,
    turn_ended: bool = False,
    session_ended: bool = False,
) -> tuple[str, ...]:
    """Why a snapshot is due now (empty: none is). ``new_events`` are those just stored,
    ``ledger`` the ledger with them, ``last_snapshot_seq`` the ``through_seq`` of the latest
    snapshot (0 when there is none)."""
    found: set[str] = set()
    if turn_ended and any(
        d.source.seq is not None and d.source.seq > last_snapshot_seq for d in ledger.decisions
    ):
        found.add("decision")
    for event in new_events:
        if event.kind is EventKind.MARKER and event.marker in _MARKER_REASONS:
            found.add(_MARKER_REASONS[event.marker])
    if session_ended and not ledger.empty:  # an empty ledger's end keeps nothing worth a line
        found.add("end")
    return tuple(reason for reason in REASONS if reason in found)


@dataclass(frozen=True, slots=True)
class Snapshot:
    reasons: tuple[str, ...]
    ledger: Ledger
    files: tuple[str, ...]
    exchange: Exchange
    through_seq: int

    def summary(self) -> str:
        """The snapshot event's one line, e.g. ``Snapshot at compaction: 3 decisions, 1
        constraint, 2 open items``."""
        why = " and ".join(_REASON_WORDS.get(r, r) for r in self.reasons) or "a request"
        counts = ", ".join(
            _count(n, noun)
            for n, noun in (
                (len(self.ledger.decisions), "decision"),
                (len(self.ledger.constraints), "constraint"),
                (len(self.ledger.open_items), "open item"),
            )
        )
        return f"Snapshot at {why}: {counts}"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": SNAPSHOT_VERSION,
            "reasons": list(self.reasons),
            "ledger": self.ledger.to_json(),
            "files": list(self.files),
            "exchange": self.exchange.to_json(),
            "through_seq": self.through_seq,
        }

    @classmethod
    def from_json(cls, data: object) -> Snapshot:
        """A snapshot event's ``input``; ValueError when it is not one this version reads."""
        if not isinstance(data, Mapping):
            raise ValueError("a snapshot is not an object")
        if data.get("version") != SNAPSHOT_VERSION:
            raise ValueError(f"snapshot version {data.get('version')!r} is not {SNAPSHOT_VERSION}")
        reasons, files, through = data.get("reasons"), data.get("files"), data.get("through_seq")
        if not isinstance(reasons, list) or not all(r in REASONS for r in reasons):
            raise ValueError("a snapshot's reasons are not known")
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise ValueError("a snapshot's files are not a list of paths")
        if isinstance(through, bool) or not isinstance(through, int) or through < 0:
            raise ValueError("a snapshot's through_seq is not a seq")
        return cls(
            reasons=tuple(reasons),
            ledger=Ledger.from_json(data.get("ledger")),
            files=tuple(files),
            exchange=Exchange.from_json(data.get("exchange")),
            through_seq=through,
        )


def take_snapshot(
    events: Iterable[NumberedEvent],
    reasons: tuple[str, ...],
    relay: RelaySide | None = None,
    base: Snapshot | None = None,
) -> Snapshot:
    """The snapshot of a session from its events on top of its latest snapshot (``base``): the
    ledger built over the base's, the files of both by latest use, and the last exchange of the
    events (the base's when the events hold none, e.g. when they all aged out)."""
    events = sorted(events, key=lambda e: e.seq)
    ledger = build_ledger(events, relay, base.ledger if base is not None else None)
    files = list(base.files) if base is not None else []
    for path in files_touched(events):
        if path in files:
            files.remove(path)
        files.append(path)
    exchange = last_exchange(events)
    if not exchange.pieces and base is not None:
        exchange = base.exchange
    return Snapshot(reasons, ledger, tuple(files[-FILES_KEPT:]), exchange, ledger.through_seq)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
