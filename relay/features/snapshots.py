"""Snapshots of a session's decisions ledger, taken when things happen, kept as events.

relay/snapshot.py says when (``snapshot_reasons``) and what (``take_snapshot``); this feature
watches for the moments and stores the result:

* a turn ended (the Mac said the session went from ``busy`` to ``idle`` or ``waiting``) and the
  ledger gained a decision since the last snapshot;
* a ``compacted`` or ``cleared`` marker was stored (compaction, ``/clear``);
* the session ended (its claude exited or it was stopped).

Each snapshot is an event of kind ``snapshot`` numbered after the session's last
(``Store.add_event``): its ``text`` the one line the page shows collapsed, its ``input`` the
snapshot's JSON (or, over :data:`EVENT_INPUT_MAX_BYTES`, its counts and ``complete: false``).
It reaches the phones like any event and the Mac's archive in an ``events`` message. The
whole snapshot is also kept in ``ledger_snapshots`` (the latest per session): the ``base`` of the
next ledger and snapshot, so decisions outlive the events that age out of the relay's window.

After each snapshot, and whenever the person's pins change, the session's Mac is given the
handoff a ``fresh`` start would type (:func:`push_handoff`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from relay.db import Connection
from relay.feature import Feature
from relay.features import decisions
from relay.features.resume import ResumeState
from relay.features.search import index_decisions
from relay.ledger import Ledger
from relay.link import events_message
from relay.live import DeviceLink
from relay.snapshot import Snapshot, snapshot_reasons
from relay.state import RelayState, iso
from relay.store import Session
from relay.store import sessions as session_rows
from wire.protocol import (
    DisplayEvent,
    EventKind,
    MarkerKind,
    NumberedEvent,
    SessionInfo,
)
from wire.tasks import TaskSet

__all__ = [
    "EVENT_INPUT_MAX_BYTES",
    "FEATURE",
    "Snapshots",
    "latest",
    "push_handoff",
]

_log = logging.getLogger("relay.features.snapshots")

# A snapshot event carries the whole snapshot up to this size; beyond, its counts (the page
# opens the Decisions panel for the rest). Well under a page of events (max_page_bytes).
EVENT_INPUT_MAX_BYTES: Final = 64_000
WELCOME_WAIT: Final = 10.0  # seconds a snapshot waits for a linking Mac's welcome before it is sent
TURN_STATES: Final = frozenset({"idle", "waiting"})
_MARKS: Final = (f'"marker":"{MarkerKind.COMPACTED}"', f'"marker":"{MarkerKind.CLEARED}"')
# Decisions whose context (the question, the tool) is searched with them (a plan is too long).
SEARCHED_CONTEXT: Final = frozenset({"answer", "typed_answer", "rejected", "rule"})
# Sessions whose latest snapshot stays parsed in memory (the ones snapshotted lately).
SNAPSHOTS_KEPT_READ: Final = 64

TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS ledger_snapshots (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        through_seq INTEGER NOT NULL,
        data TEXT NOT NULL,
        taken_at REAL NOT NULL
    )""",
)


def setup(conn: Connection) -> None:
    for sql in TABLES:
        conn.execute(sql)


setup.schema_version = 1  # type: ignore[attr-defined]


def event_input(
    snapshot: Snapshot, whole: dict[str, Any] | None = None, text: str | None = None
) -> dict[str, Any]:
    """The snapshot event's ``input``: the whole snapshot, or its counts when too large.
    ``whole`` and ``text``, when the caller has them, are ``snapshot.to_json()`` and its JSON."""
    if whole is None:
        whole = snapshot.to_json()
    if text is None:
        text = json.dumps(whole, ensure_ascii=False)
    if len(text) <= EVENT_INPUT_MAX_BYTES:
        return {**whole, "complete": True}
    ledger = snapshot.ledger
    return {
        "version": whole["version"],
        "reasons": whole["reasons"],
        "through_seq": snapshot.through_seq,
        "counts": {
            "decisions": len(ledger.decisions),
            "constraints": len(ledger.constraints),
            "open_items": len(ledger.open_items),
            "files": len(snapshot.files),
        },
        "complete": False,
    }


def turn_ended(before: SessionInfo | None, after: SessionInfo) -> bool:
    return before is not None and before.state == "busy" and after.state in TURN_STATES


def session_ended(before: SessionInfo | None, after: SessionInfo) -> bool:
    """A session seen running went to ``ended``. An ``ended`` first heard (the relay started,
    or a session's very first report before its claude ran) ends nothing that was seen."""
    return (
        after.state == "ended"
        and before is not None
        and before.state is not None
        and before.state != "ended"
    )


async def latest(state: RelayState, session_id: str) -> Snapshot | None:
    """The session's latest snapshot, None when it has none (or one this relay cannot read)."""
    return await LatestSnapshots().get(state, session_id)


@dataclass
class LatestSnapshots:
    """Each session's latest snapshot as last read, by the seq of its event: a take and the
    ledger it builds on read the row's seq and parse its JSON only when it changed (another
    relay of a cluster may have taken one meanwhile)."""

    read: OrderedDict[str, tuple[int, Snapshot]] = field(default_factory=OrderedDict)

    async def get(self, state: RelayState, session_id: str) -> Snapshot | None:
        known = self.read.get(session_id)
        rows = await state.store.read(
            "SELECT seq, CASE WHEN seq = ? THEN NULL ELSE data END FROM ledger_snapshots"
            " WHERE session_id = ?",
            (known[0] if known is not None else -1, session_id),
        )
        if not rows:
            self.read.pop(session_id, None)
            return None
        seq, data = int(rows[0][0]), rows[0][1]
        if known is not None and data is None:
            self.read.move_to_end(session_id)
            return known[1]
        try:
            snapshot = Snapshot.from_json(json.loads(data))
        except ValueError as exc:
            _log.warning("the snapshot of session %s is not readable: %s", session_id, exc)
            self.read.pop(session_id, None)
            return None
        self.remember(session_id, seq, snapshot)
        return snapshot

    def remember(self, session_id: str, seq: int, snapshot: Snapshot) -> None:
        """The snapshot just stored as the session's latest (its event's seq): it reads back
        equal (tests/relay/test_snapshot.py), so the next take need not parse it."""
        self.read[session_id] = (seq, snapshot)
        self.read.move_to_end(session_id)
        while len(self.read) > SNAPSHOTS_KEPT_READ:
            self.read.popitem(last=False)


async def push_handoff(state: RelayState, session: Session) -> bool:
    """Tell the session's Mac its resume scope again, with the handoff a ``fresh`` start types
    first rebuilt now (relay/features/resume.py ``tell_mac``, ``set_resume``); False when the
    Mac could not be told (it is told again at the next snapshot or change)."""
    resume = state.part(ResumeState)
    if resume is None:
        return False
    return await resume.tell_mac(session)


@dataclass
class Snapshots:
    """The running part: the moments watched, one snapshot of a session at a time."""

    state: RelayState
    loop: asyncio.AbstractEventLoop
    tasks: TaskSet = field(default_factory=lambda: TaskSet("snapshots", _log))
    # One snapshot at a time (they are rare): two moments at once make one, then none.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    latest: LatestSnapshots = field(default_factory=LatestSnapshots)

    # -- the moments ----------------------------------------------------------------------

    def on_update(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo
    ) -> None:
        # A session with no history yet (its claude ended before it wrote a line) has nothing
        # a snapshot could keep.
        ended = session_ended(before, after) and session.last_seq > 0
        turn = turn_ended(before, after)
        if (turn or ended) and not self.tasks.closed:
            self.tasks.start(
                self.take(session.id, (), turn_ended=turn, ended=ended), name="snapshot"
            )

    def on_events(self, account_id: str, session_id: str, events: list[tuple[int, str]]) -> None:
        """A store listener (the writer's thread): compaction and /clear markers."""
        found = [data for _, data in events if any(mark in data for mark in _MARKS)]
        if found and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._markers, session_id, found)

    def _markers(self, session_id: str, found: list[str]) -> None:
        new = []
        for data in found:
            try:
                event = NumberedEvent.model_validate_json(data)
            except ValueError:
                continue
            if event.kind is EventKind.MARKER:
                new.append(event)
        if new and not self.tasks.closed:
            self.tasks.start(self.take(session_id, tuple(new)), name="snapshot")

    # -- taking one -------------------------------------------------------------------------

    async def take(
        self,
        session_id: str,
        new_events: Sequence[NumberedEvent],
        *,
        turn_ended: bool = False,
        ended: bool = False,
    ) -> Snapshot | None:
        """A snapshot of the session when one is due, stored as an event; None when none is."""
        async with self.lock:
            return await self._take(session_id, new_events, turn_ended, ended)

    async def _take(
        self, session_id: str, new_events: Sequence[NumberedEvent], turn: bool, ended: bool
    ) -> Snapshot | None:
        state = self.state
        session = await state.store.reading(lambda conn: session_rows.find(conn, session_id))
        if session is None:
            return None
        base = await self.latest.get(state, session_id)
        snapshot = await decisions.snapshot_now(state, session, base)
        last = base.through_seq if base is not None else 0
        reasons = snapshot_reasons(
            new_events, snapshot.ledger, last, turn_ended=turn, session_ended=ended
        )
        if not reasons or _nothing_new(base, snapshot):
            return None
        snapshot = Snapshot(
            reasons, snapshot.ledger, snapshot.files, snapshot.exchange, snapshot.through_seq
        )
        whole = snapshot.to_json()
        data = json.dumps(whole, ensure_ascii=False)  # made once: the event's and the row's
        event = DisplayEvent(
            kind=EventKind.SNAPSHOT,
            text=snapshot.summary(),
            input=event_input(snapshot, whole, data),
            timestamp=iso(time.time()),
        )
        stored = await state.store.add_event(session.account_id, session.id, event)
        if stored is None:
            return None
        after, numbered = stored
        seq = numbered[0][0]

        def keep(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO ledger_snapshots (session_id, seq, through_seq, data, taken_at)"
                " VALUES (?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " seq = excluded.seq, through_seq = excluded.through_seq, data = excluded.data,"
                " taken_at = excluded.taken_at",
                (session.id, seq, snapshot.through_seq, data, time.time()),
            )

        await state.store.write(keep)
        self.latest.remember(session.id, seq, snapshot)
        await index(state, session.id, snapshot.ledger)
        link = state.live.link(after.device_id)
        if isinstance(link, DeviceLink) and not link.closed:
            # The Mac's archive keeps it too (a Mac linked to another node, or offline, is
            # sent it after its next hello, as any event it missed). A link still saying hello
            # hears nothing before its welcome.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(link.welcomed.wait(), WELCOME_WAIT)
                if not link.closed:
                    await link.send(events_message(after.id, after.epoch, numbered))
        state.publish_session(after)
        await self._handoff(after)
        return snapshot

    async def _handoff(self, session: Session) -> None:
        try:
            await push_handoff(self.state, session)
        except Exception:
            _log.exception("the handoff of session %s was not given to its Mac", session.id)

    async def pins_changed(self, session: Session, what: str) -> None:
        if what == "constraints":
            now = await decisions.snapshot_now(self.state, session)
            await index(self.state, session.id, now.ledger)
            await self._handoff(session)

    async def snapshot_of(self, session_id: str) -> Snapshot | None:
        return await self.latest.get(self.state, session_id)

    async def close(self) -> None:
        await self.tasks.close()


def search_text(ledger: Ledger) -> str:
    """What search keeps of a ledger: each decision (with what it answers, for answers and
    rules) and each constraint, one per line."""
    lines = []
    for decision in ledger.decisions:
        about = decision.context if decision.kind in SEARCHED_CONTEXT else ""
        lines.append(f"{about} {decision.text}".strip())
    lines.extend(c.text for c in ledger.constraints)
    return "\n".join(lines)


async def index(state: RelayState, session_id: str, ledger: Ledger) -> None:
    """The session's decisions and constraints into the search index."""
    text = search_text(ledger)
    await state.store.write(lambda conn: index_decisions(conn, session_id, text))


def _nothing_new(base: Snapshot | None, snapshot: Snapshot) -> bool:
    """The session ended (or a turn did) with nothing read since the last snapshot."""
    return (
        base is not None
        and base.through_seq >= snapshot.through_seq
        and base.ledger.constraints == snapshot.ledger.constraints
        and base.ledger.open_items == snapshot.ledger.open_items
    )


async def start(state: RelayState) -> Snapshots:
    part = Snapshots(state, asyncio.get_running_loop())
    state.hooks.watchers.append(part.on_update)
    state.store.add_listener(part.on_events)
    ledger_part = state.part(decisions.Decisions)
    if ledger_part is not None:
        ledger_part.snapshot_of = part.snapshot_of
        ledger_part.listeners.append(part.pins_changed)
    return part


FEATURE = Feature("snapshots", schema=setup, start=start)
