"""A session's decisions ledger on the phone: decisions, pinned constraints, open items.

    GET    /api/sessions/{id}/decisions              the ledger (relay/ledger.py ``to_json``)
    POST   /api/sessions/{id}/constraints            pin {"text"} or {"seq"[, "text"]}
    PATCH  /api/sessions/{id}/constraints/{cid}      edit {"text"}
    DELETE /api/sessions/{id}/constraints/{cid}      remove
    POST   /api/sessions/{id}/remember               mark {"decision_id"}, {"seq"} or {"text"}
    DELETE /api/sessions/{id}/remember/{decision_id} unmark

The ledger is built by relay/ledger_rules.py ``build_ledger`` over the session's stored events,
on top of its latest snapshot (relay/features/snapshots.py keeps it), with what the relay knows
beside the events (relay/ledger.py ``RelaySide``):

* **pins** — the constraints of this feature's table ``ledger_constraints``: typed on the phone, or
  pinned from a message of the person or a line of Claude's (``seq``; then the text, when given,
  must be a part of that event's text, so a pin is always verbatim);
* **mode changes** and **the task list** — read from the lines as they are stored (a line
  observer in the ingest transaction: ``permission-mode`` facts through relay/ledger.py
  ``mode_changes``, task tools through wire/tasklist.py), kept in ``ledger_modes`` and
  ``ledger_facts``;
* **rules** — phone answers in the audit log whose option makes Claude Code keep a rule;
* **the pending card** and **held messages** — what the Mac last said (``state.live``).

Other features read the ledger through :func:`ledger_for` (the handoff, resume estimates) and
the decisions marked "remember" with the project's ledgers through :func:`remembered` (memory
candidates, relay/memory.py ``propose``).
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from fastapi import APIRouter, Depends
from pydantic import Field, model_validator

from relay.db import Connection, database_errors
from relay.db.migrations import add_column
from relay.deps import Body, Phone, State, refuse_read_only, session_or_404
from relay.errors import BadRequest, Conflict, NotFound
from relay.feature import Feature
from relay.handoff import HANDOFF_MIN_TOKENS, Handoff, build_handoff
from relay.ledger import (
    HeldMessage,
    Ledger,
    ModeChange,
    PendingCard,
    Pin,
    RelaySide,
    RuleAnswer,
    Source,
    Task,
    TaskList,
    anchor_seq,
    mode_changes,
    rule_from_card,
)
from relay.ledger_rules import ENTRY_MAX_CHARS, build_ledger
from relay.snapshot import Snapshot, take_snapshot
from relay.state import RelayState, iso
from relay.store import NewLines, Session
from relay.store import sessions as session_rows
from relay.store.ingest import is_claude_conversation
from wire.protocol import MAX_SEQ, EventKind, NumberedEvent
from wire.tasklist import TASK_TOOLS, TaskTracker
from wire.tasklist import Task as TrackedTask

__all__ = [
    "CONSTRAINTS_MAX",
    "FEATURE",
    "Decisions",
    "Inputs",
    "handoff_for",
    "inputs",
    "latest_snapshot",
    "ledger_for",
    "ledger_json",
    "remembered",
    "snapshot_now",
]

_log = logging.getLogger("relay.features.decisions")

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

CONSTRAINTS_MAX: Final = 200  # pins per session
HANDOFF_SETTING: Final = "handoff_max_tokens"
# The events a ledger is built from: at most this many bytes of JSON, the newest (older
# decisions live on in the latest snapshot).
EVENTS_READ_MAX_BYTES: Final = 32 * 1024 * 1024
REMEMBERED_MAX: Final = 500  # decisions marked "remember" per session
AUDIT_ROWS_READ: Final = 1000  # the newest phone answers read for rules
TRACKERS_KEPT: Final = 500  # conversations whose task list is followed in memory
# Sessions whose events stay parsed between two ledgers (EventsRead): the ones built lately.
EVENTS_KEPT_SESSIONS: Final = 4
ID_BYTES: Final = 6
OPEN_OR_DONE: Final = frozenset({"pending", "in_progress", "completed"})
# Events a pin may be taken from: the person's messages and Claude's lines.
PINNABLE: Final = frozenset({EventKind.USER, EventKind.ASSISTANT})
_TASK_MARKS: Final = tuple(f'"{name}"' for name in sorted(TASK_TOOLS))
_RESULT_MARK: Final = '"tool_result"'  # read only while a task tool use waits for its result

TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS ledger_constraints (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        text TEXT NOT NULL,
        seq INTEGER,
        at TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS ledger_constraints_session"
    " ON ledger_constraints(session_id, created_at)",
    """CREATE TABLE IF NOT EXISTS ledger_remembered (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        decision_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (session_id, decision_id)
    )""",
    """CREATE TABLE IF NOT EXISTS ledger_modes (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        id TEXT NOT NULL,
        mode TEXT NOT NULL,
        seq INTEGER,
        at TEXT,
        PRIMARY KEY (session_id, id)
    )""",
    """CREATE TABLE IF NOT EXISTS ledger_facts (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        mode TEXT,
        tasks TEXT,
        tasks_seq INTEGER,
        tasks_at TEXT,
        tasks_conversation TEXT
    )""",
)


def setup(conn: Connection) -> None:
    """The feature's tables (safe to run again)."""
    for sql in TABLES:
        conn.execute(sql)
    add_column(conn, "ledger_facts", "tasks_conversation", "TEXT")


setup.schema_version = 1  # type: ignore[attr-defined]


# -- what the lines say: mode changes and the task list (in the ingest transaction) -----------


@dataclass
class _LineSeqs:
    """Where each line of a batch sits among the batch's events: the seq and time of the last
    event at or before it (a line that makes no event is anchored there)."""

    seq: int | None
    at: str | None


def _anchors(new: NewLines) -> list[_LineSeqs]:
    seq = new.events[0][0] - 1 if new.events else None
    at: str | None = None
    found = []
    for _, conversion in new.lines:
        if conversion.events and seq is not None:
            seq += len(conversion.events)
            at = conversion.events[-1].timestamp or at
        found.append(_LineSeqs(seq, at))
    return found


@dataclass
class LineReader:
    """The line observer: permission-mode changes and the task list as lines are stored."""

    trackers: OrderedDict[tuple[str, str], TaskTracker] = field(default_factory=OrderedDict)

    def setup(self, conn: Connection) -> None:
        setup(conn)

    def on_lines(self, conn: Connection, new: NewLines) -> None:
        conn.execute("SAVEPOINT ledger_lines")
        errors: tuple[type[BaseException], ...] = (
            *database_errors(conn.dialect),
            ValueError,
            TypeError,
        )
        try:
            self._read(conn, new)
        except errors as exc:
            # Never refuse the lines: the ledger goes without this batch's modes and tasks.
            conn.execute("ROLLBACK TO ledger_lines")
            _log.warning("ledger facts of session %s not kept: %s", new.session_id, exc)
        conn.execute("RELEASE ledger_lines")

    def _read(self, conn: Connection, new: NewLines) -> None:
        anchors = _anchors(new)
        row = conn.execute(
            "SELECT mode, tasks, tasks_conversation FROM ledger_facts WHERE session_id = ?",
            (new.session_id,),
        ).fetchone()
        had_row = row is not None
        previous = row[0] if row else None
        kept_tasks = (row[1], row[2]) if row else (None, None)
        observed = [
            (
                f"{new.conversation_id[:80]}:{record.offset}",
                Source(anchor.seq, anchor.at),
                conversion.facts.permission_mode,
            )
            for (record, conversion), anchor in zip(new.lines, anchors, strict=True)
            if conversion.facts.permission_mode and conversion.facts.agent_id is None
        ]
        changes, mode = mode_changes(previous, observed)
        conn.executemany(
            "INSERT OR IGNORE INTO ledger_modes (session_id, id, mode, seq, at)"
            " VALUES (?, ?, ?, ?, ?)",
            [(new.session_id, c.id, c.mode, c.source.seq, c.source.at) for c in changes],
        )
        tasks = self._tasks(new, anchors, kept_tasks)
        if not had_row:
            conn.execute(
                "INSERT OR IGNORE INTO ledger_facts (session_id) VALUES (?)", (new.session_id,)
            )
        if mode != previous:
            conn.execute(
                "UPDATE ledger_facts SET mode = ? WHERE session_id = ?", (mode, new.session_id)
            )
        if tasks is not None:
            listed, source = tasks
            conn.execute(
                "UPDATE ledger_facts SET tasks = ?, tasks_seq = ?, tasks_at = ?,"
                " tasks_conversation = ? WHERE session_id = ?",
                (
                    json.dumps(listed, ensure_ascii=False),
                    source.seq,
                    source.at,
                    new.conversation_id,
                    new.session_id,
                ),
            )

    def _tasks(
        self,
        new: NewLines,
        anchors: Sequence[_LineSeqs],
        kept: tuple[str | None, str | None],
    ) -> tuple[list[dict[str, str]], Source] | None:
        """The task list after the batch, when it changed. A new conversation of Claude Code's
        (``/clear``, a fresh start) has a list of its own: the kept one ends with its first
        lines. A tracker the relay lost (a restart) starts from the list it kept."""
        key = (new.session_id, new.conversation_id)
        tracker = self.trackers.get(key)
        changed_at: Source | None = None
        kept_list, kept_conversation = kept
        main = is_claude_conversation(new.conversation_id)
        if main and kept_list and kept_conversation and kept_conversation != new.conversation_id:
            tracker = self.trackers[key] = TaskTracker()  # a new conversation: a list of its own
            first = anchors[0] if anchors else _LineSeqs(None, None)
            changed_at = Source(first.seq, first.at)
        elif tracker is None and kept_list and kept_conversation == new.conversation_id:
            tracker = self.trackers[key] = TaskTracker()
            tracker.seed(_stored_tasks(kept_list))
        for (record, conversion), anchor in zip(new.lines, anchors, strict=True):
            uses = any(mark in record.text for mark in _TASK_MARKS)
            if not uses and (tracker is None or _RESULT_MARK not in record.text):
                continue
            line: Any = conversion.line  # parsed once, as the line was converted
            if line is None:
                try:
                    line = json.loads(record.text)
                except (ValueError, RecursionError):
                    continue
            if tracker is None:
                tracker = self.trackers[key] = TaskTracker()
                while len(self.trackers) > TRACKERS_KEPT:
                    self.trackers.popitem(last=False)
            if isinstance(line, dict) and tracker.feed(line):
                changed_at = Source(anchor.seq, anchor.at)
        if tracker is None or changed_at is None:
            return None
        self.trackers.move_to_end(key)
        listed = [{"id": t.id, "subject": t.subject, "status": t.status} for t in tracker.tasks]
        return listed, changed_at


# -- reading what the relay keeps ---------------------------------------------------------------


def _events(rows: Sequence[tuple[int, str]]) -> list[NumberedEvent]:
    found = []
    for _, data in rows:
        try:
            found.append(NumberedEvent.model_validate_json(data))
        except ValueError:
            continue
    return found


def _parsed(data: str) -> NumberedEvent | None:
    try:
        return NumberedEvent.model_validate_json(data)
    except ValueError:
        return None


@dataclass
class _ReadRows:
    epoch: str
    rows: list[tuple[int, int, NumberedEvent | None]]  # seq, bytes read, the event (None: not one)


@dataclass
class EventsRead:
    """The events a session's ledgers are built from, parsed once: the next ledger (a snapshot
    at every compaction, the Decisions panel) reads and parses only the events stored since.
    A stored event never changes within an epoch (a new epoch rewrites them: read again); the
    window's start and the bytes budget are those of a read from scratch."""

    sessions: OrderedDict[str, _ReadRows] = field(default_factory=OrderedDict)

    async def read(self, state: RelayState, session: Session) -> list[NumberedEvent]:
        first, last = session.oldest_seq or 1, session.last_seq
        known = self.sessions.get(session.id)
        kept = []
        if known is not None and known.epoch == session.epoch:
            kept = [row for row in known.rows if first <= row[0] <= last]
        start = kept[-1][0] + 1 if kept else first
        fresh = await state.store.read_events(
            session.id, start, last, max_bytes=EVENTS_READ_MAX_BYTES, newest=True
        )
        rows = within_budget([*kept, *((seq, len(d) + 1, _parsed(d)) for seq, d in fresh)])
        self.sessions[session.id] = _ReadRows(session.epoch, rows)
        self.sessions.move_to_end(session.id)
        while len(self.sessions) > EVENTS_KEPT_SESSIONS:
            self.sessions.popitem(last=False)
        return [event for _, _, event in rows if event is not None]

    def forget(self) -> None:
        self.sessions.clear()


def within_budget(
    rows: list[tuple[int, int, NumberedEvent | None]],
) -> list[tuple[int, int, NumberedEvent | None]]:
    """The newest rows (oldest first) within ``EVENTS_READ_MAX_BYTES``, at least one: what
    relay/store/events.py ``read`` keeps of a range read newest first."""
    size = 0
    for i in range(len(rows) - 1, -1, -1):
        size += rows[i][1]
        if size > EVENTS_READ_MAX_BYTES and i < len(rows) - 1:
            return rows[i + 1 :]
    return rows


def _rules(rows: Sequence[Sequence[Any]], events: Sequence[NumberedEvent]) -> list[RuleAnswer]:
    found = []
    for row_id, at, answer, tool, summary in rows:
        try:
            labels = json.loads(answer).get("labels") or []
        except (ValueError, AttributeError):
            continue
        when = iso(at)
        source = Source(anchor_seq(events, when) if when else None, when)
        rule = rule_from_card(str(row_id), labels, tool, summary, source)
        if rule is not None:
            found.append(rule)
    return found


def _stored_tasks(text: str) -> list[TrackedTask]:
    """The task list as ``ledger_facts.tasks`` keeps it, for a tracker to start from."""
    try:
        items = json.loads(text)
    except ValueError:
        return []
    found = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("status") in OPEN_OR_DONE:
            found.append(
                TrackedTask(str(item.get("id", "")), str(item.get("subject", "")), item["status"])
            )
    return found


def _task_list(row: Sequence[Any] | None) -> TaskList | None:
    if row is None or not row[0]:
        return None
    try:
        items = json.loads(row[0])
    except ValueError:
        return None
    tasks = tuple(
        Task(str(t.get("id", "")), str(t.get("subject", "")), str(t.get("status", "")))
        for t in items
        if isinstance(t, dict)
    )
    return TaskList(tasks, Source(row[1], row[2]))


@dataclass(frozen=True)
class _Kept:
    """What the feature's tables hold for one session."""

    pins: list[dict[str, Any]]
    modes: list[ModeChange]
    tasks: TaskList | None
    rules_rows: list[Sequence[Any]]
    remembered: frozenset[str]


def _read_kept(conn: Connection, session_id: str) -> _Kept:
    pins = [
        {"id": r[0], "text": r[1], "seq": r[2], "at": r[3], "created_at": r[4], "updated_at": r[5]}
        for r in conn.execute(
            "SELECT id, text, seq, at, created_at, updated_at FROM ledger_constraints"
            " WHERE session_id = ? ORDER BY created_at, id",
            (session_id,),
        )
    ]
    modes = [
        ModeChange(str(r[0]), str(r[1]), Source(r[2], r[3]))
        for r in conn.execute(
            "SELECT id, mode, seq, at FROM ledger_modes WHERE session_id = ? ORDER BY seq, id",
            (session_id,),
        )
    ]
    tasks = _task_list(
        conn.execute(
            "SELECT tasks, tasks_seq, tasks_at FROM ledger_facts WHERE session_id = ?",
            (session_id,),
        ).fetchone()
    )
    # The audit log's phone answers (relay/features/audit.py): its table is always made.
    rules_rows: list[Sequence[Any]] = list(
        conn.execute(
            "SELECT id, at, answer, tool, summary FROM audit WHERE session_id = ?"
            " AND source = 'phone' ORDER BY id DESC LIMIT ?",
            (session_id, AUDIT_ROWS_READ),
        )
    )
    remembered = frozenset(
        str(r[0])
        for r in conn.execute(
            "SELECT decision_id FROM ledger_remembered WHERE session_id = ?", (session_id,)
        )
    )
    return _Kept(pins, modes, tasks, rules_rows, remembered)


def _live_side(state: RelayState, session: Session) -> tuple[PendingCard | None, list[HeldMessage]]:
    """The card and held messages the Mac last said, while it is linked (else unknown: none)."""
    live = state.live.sessions.get(session.id)
    if live is None or state.live.link(session.device_id) is None:
        return None, []
    card = None
    if live.card is not None:
        card = PendingCard(live.card.id, live.card.kind, live.card.title, Source(None, None))
    held = [
        HeldMessage(h.id, h.text, Source(None, iso(h.created_at)))
        for h in live.held or []
        if h.state == "held"
    ]
    return card, held


@dataclass
class Decisions:
    """The feature's running part: the line observer; ``snapshot_of``, a session's latest
    snapshot (set by relay/features/snapshots.py: decisions outlive the events that age out);
    ``listeners``, told after a pin or a mark changed (the session, what changed)."""

    reader: LineReader
    events: EventsRead = field(default_factory=EventsRead)
    snapshot_of: Callable[[str], Awaitable[Snapshot | None]] | None = None
    listeners: list[Callable[[Session, str], Awaitable[None]]] = field(default_factory=list)

    async def close(self) -> None:
        self.reader.trackers.clear()
        self.events.forget()


@dataclass(frozen=True)
class Built:
    """A session's ledger and what the page shows beside it."""

    session: Session
    ledger: Ledger
    pins: list[dict[str, Any]]
    remembered: frozenset[str]


@dataclass(frozen=True)
class Inputs:
    """What a session's ledger is built from: its stored events (oldest first) and what the
    relay knows beside them; the pins and marks as the page shows them."""

    events: list[NumberedEvent]
    relay: RelaySide
    pins: list[dict[str, Any]]
    remembered: frozenset[str]


async def inputs(state: RelayState, session: Session) -> Inputs:
    """The inputs of ``build_ledger`` / ``take_snapshot`` for the session, read now."""
    part = state.part(Decisions)
    if part is not None:
        events = await part.events.read(state, session)
    else:
        rows = await state.store.read_events(
            session.id,
            session.oldest_seq or 1,
            session.last_seq,
            max_bytes=EVENTS_READ_MAX_BYTES,
            newest=True,
        )
        events = _events(rows)
    kept = await state.store.reading(lambda conn: _read_kept(conn, session.id))
    card, held = _live_side(state, session)
    relay = RelaySide(
        modes=tuple(kept.modes),
        rules=tuple(_rules(kept.rules_rows, events)),
        pins=tuple(Pin(p["id"], p["text"], Source(p["seq"], p["at"])) for p in kept.pins),
        tasks=kept.tasks,
        card=card,
        held=tuple(held),
    )
    return Inputs(events, relay, kept.pins, kept.remembered)


async def latest_snapshot(state: RelayState, session_id: str) -> Snapshot | None:
    """The session's latest snapshot (None: none yet, or no snapshots feature)."""
    part = state.part(Decisions)
    if part is None or part.snapshot_of is None:
        return None
    return await part.snapshot_of(session_id)


async def _build(state: RelayState, session: Session) -> Built:
    found = await inputs(state, session)
    base = await latest_snapshot(state, session.id)
    ledger = build_ledger(found.events, found.relay, base.ledger if base is not None else None)
    return Built(session, ledger, found.pins, found.remembered)


async def snapshot_now(
    state: RelayState, session: Session, base: Snapshot | Literal["read"] | None = "read"
) -> Snapshot:
    """The session as a snapshot would take it now (no reason, not stored): the ledger over
    the latest snapshot (``base``, read now unless the caller just read it), the files touched
    and the last exchange."""
    if isinstance(base, str):
        base = await latest_snapshot(state, session.id)
    found = await inputs(state, session)
    events = [e for e in found.events if e.kind is not EventKind.SNAPSHOT]
    return take_snapshot(events, (), found.relay, base)


async def handoff_for(state: RelayState, session: Session) -> Handoff:
    """The first message of a ``fresh`` start of the session, built now from its ledger (pins
    and open items included) within ``handoff_max_tokens`` (relay/handoff.py)."""
    now = await snapshot_now(state, session)
    budget = max(HANDOFF_MIN_TOKENS, state.config.int(HANDOFF_SETTING))
    return build_handoff(now.ledger, now.files, now.exchange, budget)


async def ledger_for(state: RelayState, session_id: str) -> Ledger:
    """The session's ledger as it stands now (any account's: the caller checked who asks);
    NotFound ``unknown_session`` when there is no such session."""
    session = await state.store.reading(lambda conn: session_rows.find(conn, session_id))
    if session is None:
        raise session_rows.unknown(session_id)
    return (await _build(state, session)).ledger


def ledger_json(built: Built) -> dict[str, Any]:
    """``GET …/decisions``: the ledger, each decision's ``remembered``, each constraint's
    ``created_at`` / ``updated_at``."""
    body = built.ledger.to_json()
    for decision in body["decisions"]:
        decision["remembered"] = decision["id"] in built.remembered
    times = {p["id"]: p for p in built.pins}
    for constraint in body["constraints"]:
        pin = times.get(constraint["id"], {})
        constraint["created_at"] = iso(pin.get("created_at"))
        constraint["updated_at"] = iso(pin.get("updated_at"))
    body["session_id"] = built.session.id
    return body


async def remembered(
    state: RelayState, project: str, account_id: str | None = None
) -> dict[str, frozenset[str]]:
    """The decisions marked "remember" in the project's sessions (``project``: their working
    folder; of one account when given): session id → decision ids. With :func:`ledger_for`,
    relay/memory.py ``propose``'s input (relay/features/memory.py ``project_ledgers``)."""
    where, params = "s.cwd = ?", [project]
    if account_id is not None:
        where += " AND s.account_id = ?"
        params.append(account_id)
    rows = await state.store.read(
        "SELECT r.session_id, r.decision_id FROM ledger_remembered r"
        f" JOIN sessions s ON s.id = r.session_id WHERE {where}",
        tuple(params),
    )
    found: dict[str, set[str]] = {}
    for session_id, decision_id in rows:
        found.setdefault(str(session_id), set()).add(str(decision_id))
    return {k: frozenset(v) for k, v in found.items()}


# -- changes -----------------------------------------------------------------------------------


class PinBody(Body):
    """A constraint: ``text`` typed, or the event ``seq`` (its whole text, or ``text`` from it)."""

    text: str | None = Field(default=None, max_length=ENTRY_MAX_CHARS)
    seq: int | None = Field(default=None, ge=1, le=MAX_SEQ)

    @model_validator(mode="after")
    def _something(self) -> PinBody:
        if self.seq is None and not (self.text or "").strip():
            raise ValueError("give the constraint's text, or the seq of a message to pin")
        return self


class EditBody(Body):
    text: str = Field(min_length=1, max_length=ENTRY_MAX_CHARS)


class RememberBody(Body):
    """Which decision: its ``decision_id``, the ``seq`` of its event, or its ``text`` as listed."""

    decision_id: str | None = Field(default=None, min_length=1, max_length=64)
    seq: int | None = Field(default=None, ge=1, le=MAX_SEQ)
    text: str | None = Field(default=None, min_length=1, max_length=ENTRY_MAX_CHARS)


def _new_id() -> str:
    return "c_" + secrets.token_hex(ID_BYTES)


async def _event(state: RelayState, session: Session, seq: int) -> NumberedEvent:
    rows = await state.store.read_events(session.id, seq, seq)
    events = _events(rows)
    if not events:
        raise NotFound(
            f"no event {seq} in this session's history kept on the relay: pin a message "
            f"between {session.oldest_seq} and {session.last_seq}, or type the constraint",
            code="unknown_event",
        )
    return events[0]


async def _pin_from(state: RelayState, session: Session, body: PinBody) -> Pin:
    if body.seq is None:
        text = (body.text or "").strip()
        return Pin(_new_id(), text, Source(None, None))
    event = await _event(state, session, body.seq)
    if event.kind not in PINNABLE or event.agent_id is not None:
        raise BadRequest(
            f"event {body.seq} is a {event.kind}: pin a message of yours or a line of Claude's",
            code="not_pinnable",
        )
    text = event.text if body.text is None else body.text.strip()
    if not text.strip() or text not in event.text:
        raise BadRequest(
            "the text to pin must be a part of that message, as it was written",
            code="not_in_message",
        )
    return Pin(_new_id(), text[:ENTRY_MAX_CHARS], Source(event.seq, event.timestamp))


async def _changed(state: RelayState, session: Session, what: str) -> None:
    """Tell the account's pages, and the features that follow constraints (the handoff)."""
    state.hub.publish_account(session.account_id, "decisions", {"session_id": session.id})
    part = state.part(Decisions)
    for listener in part.listeners if part is not None else []:
        try:
            await listener(session, what)
        except Exception:  # a follower's failure must not undo the change
            _log.exception("after a ledger change of session %s", session.id)


async def _built(state: RelayState, principal: Phone, session_id: str) -> Built:
    return await _build(state, await session_or_404(state, principal, session_id))


# -- routes ------------------------------------------------------------------------------------


@router.get("/sessions/{session_id}/decisions")
async def decisions(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """The session's ledger: decisions, constraints, open items, with where each came from."""
    return ledger_json(await _built(state, principal, session_id))


@router.post("/sessions/{session_id}/constraints")
async def pin(session_id: str, body: PinBody, principal: Phone, state: State) -> dict[str, Any]:
    """Pin a constraint: typed, or from a message (``seq``)."""
    session = await session_or_404(state, principal, session_id)
    found = await _pin_from(state, session, body)
    now = time.time()

    def job(conn: Connection) -> bool:
        count = conn.execute(
            "SELECT COUNT(*) FROM ledger_constraints WHERE session_id = ?", (session.id,)
        ).fetchone()[0]
        if int(count) >= CONSTRAINTS_MAX:
            return False
        conn.execute(
            "INSERT INTO ledger_constraints (id, session_id, text, seq, at, created_at,"
            " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (found.id, session.id, found.text, found.source.seq, found.source.at, now, now),
        )
        return True

    if not await state.store.write(job):
        raise Conflict(
            f"this session has {CONSTRAINTS_MAX} constraints already: remove one first",
            code="too_many_constraints",
        )
    await _changed(state, session, "constraints")
    return {**_pin_json(found), "created_at": iso(now), "updated_at": iso(now)}


def _pin_json(found: Pin) -> dict[str, Any]:
    return {"id": found.id, "text": found.text, "source": found.source.to_json()}


@router.patch("/sessions/{session_id}/constraints/{constraint_id}")
async def edit(
    session_id: str, constraint_id: str, body: EditBody, principal: Phone, state: State
) -> dict[str, Any]:
    """Change a constraint's text (where it came from stays)."""
    session = await session_or_404(state, principal, session_id)
    text = body.text.strip()
    if not text:
        raise BadRequest("a constraint cannot be empty: remove it instead", code="empty_text")
    now = time.time()

    def job(conn: Connection) -> Sequence[Any] | None:
        row: Sequence[Any] | None = conn.execute(
            "UPDATE ledger_constraints SET text = ?, updated_at = ? WHERE id = ?"
            " AND session_id = ? RETURNING id, text, seq, at, created_at, updated_at",
            (text, now, constraint_id, session.id),
        ).fetchone()
        return row

    row = await state.store.write(job)
    if row is None:
        raise _no_constraint(constraint_id)
    await _changed(state, session, "constraints")
    return {
        "id": row[0],
        "text": row[1],
        "source": {"seq": row[2], "at": row[3]},
        "created_at": iso(row[4]),
        "updated_at": iso(row[5]),
    }


def _no_constraint(constraint_id: str) -> NotFound:
    return NotFound(
        f"no constraint {constraint_id[:40]!r} in this session (removed already?)",
        code="unknown_constraint",
    )


@router.delete("/sessions/{session_id}/constraints/{constraint_id}")
async def remove(
    session_id: str, constraint_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)

    def job(conn: Connection) -> int:
        cursor = conn.execute(
            "DELETE FROM ledger_constraints WHERE id = ? AND session_id = ?",
            (constraint_id, session.id),
        )
        return int(cursor.rowcount)

    if not await state.store.write(job):
        raise _no_constraint(constraint_id)
    await _changed(state, session, "constraints")
    return {"ok": True, "removed": constraint_id}


@router.post("/sessions/{session_id}/remember")
async def remember(
    session_id: str, body: RememberBody, principal: Phone, state: State
) -> dict[str, Any]:
    """Mark a decision "remember" (by its id, or the decisions of an event ``seq``): it becomes
    a memory candidate for the project."""
    built = await _built(state, principal, session_id)
    chosen = [
        d
        for d in built.ledger.decisions
        if (body.decision_id is not None and d.id == body.decision_id)
        or (body.seq is not None and d.source.seq == body.seq)
        or (body.text is not None and d.text == body.text.strip())
    ]
    if body.decision_id is None and body.seq is None and body.text is None:
        raise BadRequest(
            "give the decision_id, the seq or the text of the decision", code="bad_request"
        )
    if not chosen:
        raise NotFound("no such decision in this session's ledger", code="unknown_decision")
    now = time.time()

    def job(conn: Connection) -> bool:
        count = conn.execute(
            "SELECT COUNT(*) FROM ledger_remembered WHERE session_id = ?", (built.session.id,)
        ).fetchone()[0]
        if int(count) + len(chosen) > REMEMBERED_MAX:
            return False
        conn.executemany(
            "INSERT OR IGNORE INTO ledger_remembered (session_id, decision_id, created_at)"
            " VALUES (?, ?, ?)",
            [(built.session.id, d.id, now) for d in chosen],
        )
        return True

    if not await state.store.write(job):
        raise Conflict(
            f"{REMEMBERED_MAX} decisions of this session are marked already", code="too_many"
        )
    await _changed(state, built.session, "remembered")
    return {"ok": True, "remembered": [d.id for d in chosen]}


@router.delete("/sessions/{session_id}/remember/{decision_id}")
async def forget(
    session_id: str, decision_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)

    def job(conn: Connection) -> int:
        return int(
            conn.execute(
                "DELETE FROM ledger_remembered WHERE session_id = ? AND decision_id = ?",
                (session.id, decision_id),
            ).rowcount
        )

    if not await state.store.write(job):
        raise NotFound("that decision is not marked remember", code="unknown_decision")
    await _changed(state, session, "remembered")
    return {"ok": True, "forgotten": decision_id}


async def start(state: RelayState) -> Decisions:
    reader = LineReader()
    state.store.add_observer(reader)
    return Decisions(reader)


FEATURE = Feature("decisions", schema=setup, start=start, router=router)
