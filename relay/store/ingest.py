"""The two transactions that number a session's events: a batch of lines (``ingest``) and a Mac's
hello (``reconcile``).

Seq numbers are given inside the same transaction that stores the events, so a crash can never
leave a number given without its event, or the reverse: the session row is locked first (``FOR
UPDATE`` on PostgreSQL, where several relay nodes write), the idempotency marks (the
conversation's stored offset, the line uuids: relay/store/conversations.py) are read next, the
batch is planned from them (relay/store/batch.py, pure), and only then is the session's
``last_seq`` moved (``UPDATE … RETURNING``), so a retry or a second node never numbers a line
twice or leaves a hole.

The features' line observers run inside the ingest transaction, once per batch, with every line
stored for the first time and the events numbered for them (``NewLines``: relay/hookspecs.py);
the commit notices too (the other relay nodes are told on commit only); the event listeners run
after the commit, in commit order.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from relay import seq as seqrules
from relay.db import Connection
from relay.errors import BadRequest, Conflict
from relay.hookspecs import NewLines
from relay.store import batch, conversations, events, sessions
from relay.store.sessions import Session
from wire.markers import BRIDGE_CONVERSATION
from wire.protocol import (
    CONVERSATION_KEY,
    MAX_SEQ,
    DisplayEvent,
    DroppedLine,
    LineRecord,
    NumberedEvent,
    SessionPosition,
)

if TYPE_CHECKING:
    from relay.hookspecs import CommitNotice, EventListener, LineObserver


@dataclass(frozen=True)
class Lines:
    """A batch of one conversation's transcript lines, as a Mac sent it."""

    account_id: str
    device_id: str
    session_id: str
    conversation_id: str
    lines: Sequence[LineRecord]
    cwd: str | None = None  # the session's folder, for a session these lines make


@dataclass(frozen=True)
class Rules:
    """The settings an ingest follows."""

    limits: batch.Limits
    conversations_kept: int  # conversations_max_per_session
    sessions_per_mac: int  # sessions_max_per_mac


@dataclass(frozen=True)
class Hooks:
    """What the features and the cluster added to every ingest (relay/hookspecs.py)."""

    observers: Sequence[LineObserver] = ()
    notices: Sequence[CommitNotice] = ()
    listeners: Sequence[EventListener] = ()


@dataclass
class IngestResult:
    session: Session
    events: list[tuple[int, str]]  # (seq, NumberedEvent JSON), oldest first
    through_offset: int
    duplicates: int = 0
    rejected: list[str] = field(default_factory=list)
    dropped: list[DroppedLine] = field(default_factory=list)
    created: bool = False


def check_conversation_id(conversation_id: str) -> None:
    if not CONVERSATION_KEY.match(conversation_id):
        raise BadRequest(
            f"{conversation_id[:80]!r} is not a conversation id (a Claude Code conversation "
            "UUID, a subagent's agent-…, or bridge: letters, digits, - and _, 128 at most)",
            code="bad_conversation_id",
        )


def is_claude_conversation(conversation_id: str) -> bool:
    """A subagent's transcript (agent-…) and the bridge's own lines are not the session's
    conversation: they never replace its current conversation id."""
    return not conversation_id.startswith("agent-") and conversation_id != BRIDGE_CONVERSATION


def newest(items: list[str], kept: int) -> list[str]:
    """The last ``kept`` of ``items`` (all of them when ``kept`` is 0: no limit). Pure."""
    return items[-kept:] if kept > 0 else items


def _own_session(conn: Connection, lines: Lines, room: int) -> bool:
    """Lock the session's row (made when it is new); answers whether it was made here.
    NotFound for another account's session, Conflict ``not_your_session`` for another Mac's."""
    found = sessions.owner(conn, lines.session_id)
    created = False
    if found is None:
        sessions.check_room(conn, lines.device_id, room)
        created = sessions.insert(
            conn,
            lines.account_id,
            lines.device_id,
            lines.session_id,
            lines.cwd or "",
            "",
            seqrules.new_epoch(),
            0,
        )
        found = sessions.owner(conn, lines.session_id)
        assert found is not None
    if found.account_id != lines.account_id:
        raise sessions.unknown(lines.session_id)
    if found.device_id != lines.device_id:
        raise sessions.not_yours(lines.session_id)
    return created


def ingest(
    conn: Connection,
    after_commit: list[Callable[[], None]],
    lines: Lines,
    rules: Rules,
    hooks: Hooks,
) -> IngestResult:
    """Store a batch of transcript lines as numbered events, once each (idempotent).

    A session keeps at most ``conversations_max_per_session`` conversations listed (its
    ``conversation_ids``) and their stored offsets, the newest: a Mac sending lines under ever
    new conversation ids makes the oldest be forgotten, never a stored event."""
    session_id, conversation_id = lines.session_id, lines.conversation_id
    # The session row first, locked: two nodes ingesting one session take turns here, and each
    # sees what the other committed before it checks for duplicates.
    created = _own_session(conn, lines, rules.sessions_per_mac)
    before = sessions.select(conn, session_id)
    last_offset = conversations.stored_offset(conn, session_id, conversation_id)
    uuids = [line.uuid for line in lines.lines if line.uuid]
    stored = batch.Stored(
        last_offset=-1 if last_offset is None else last_offset,
        known_uuids=frozenset(conversations.known_uuids(conn, session_id, uuids)),
        numbering=before.numbering,
    )
    plan = batch.plan_batch(session_id, conversation_id, lines.lines, stored, rules.limits)
    new = NewLines(lines.account_id, session_id, conversation_id, plan.converted, plan.events)
    for observer in hooks.observers:
        # Same transaction: what observers derive (titles, usage, search…) is stored exactly
        # when the lines are, never twice for a line sent again.
        observer.on_lines(conn, new)
    if plan.events:
        events.insert(conn, session_id, plan.events)
        events.age_out(conn, session_id, before.oldest_seq, plan.numbering.oldest_seq)
    conversations.keep_uuids(conn, session_id, plan.new_uuids)
    if plan.through != stored.last_offset:
        conversations.record_offset(conn, session_id, conversation_id, plan.through, time.time())
        if last_offset is None:
            conversations.forget_oldest(conn, session_id, rules.conversations_kept)
    claudes = is_claude_conversation(conversation_id)
    conversation_ids = list(before.conversation_ids)
    if claudes and conversation_id not in conversation_ids:
        conversation_ids = newest([*conversation_ids, conversation_id], rules.conversations_kept)
    # The number moves here, once, in the transaction that stores the events (under the row
    # lock taken above): what was given is what the row now says.
    sessions.record_numbering(
        conn,
        session_id,
        sessions.Numbered(
            added=len(plan.events),
            numbering=plan.numbering,
            conversation_id=conversation_id if claudes else None,
            conversation_ids=conversation_ids,
            permission_mode=plan.permission_mode,
        ),
    )
    if plan.events:
        for notice in hooks.notices:
            notice(conn, lines.account_id, session_id, plan.events)
        after_commit.extend(
            functools.partial(listener, lines.account_id, session_id, plan.events)
            for listener in hooks.listeners
        )
    return IngestResult(
        session=sessions.select(conn, session_id),
        events=plan.events,
        through_offset=plan.through,
        duplicates=plan.duplicates,
        rejected=plan.rejected,
        dropped=plan.dropped,
        created=created,
    )


# -- an event the relay makes itself ------------------------------------------------------------


def add_event(
    conn: Connection,
    after_commit: list[Callable[[], None]],
    owned: tuple[str, str],
    event: DisplayEvent,
    events_kept: int,
    hooks: Hooks,
) -> tuple[Session, list[tuple[int, str]]] | None:
    """Number and store one event the relay made for a session (``owned``: account id, session
    id), e.g. a snapshot of its ledger: after its last seq, in one transaction with the row
    locked, like a batch of lines; the commit notices and event listeners are told as for any
    batch, so it pages and catches up like any event. None when the session is gone."""
    account_id, session_id = owned
    found = sessions.owner(conn, session_id, account_id)
    if found is None or found.numbering.last_seq >= MAX_SEQ:
        return None
    numbers, numbering = seqrules.number(found.numbering, 1, events_kept)
    seq = numbers[0]
    data = NumberedEvent(
        **event.model_dump(), session_id=session_id, seq=seq, epoch=numbering.epoch
    ).model_dump_json(exclude_none=True)
    stored = [(seq, data)]
    events.insert(conn, session_id, stored)
    events.age_out(conn, session_id, found.numbering.oldest_seq, numbering.oldest_seq)
    before = sessions.select(conn, session_id)
    sessions.record_numbering(
        conn,
        session_id,
        sessions.Numbered(
            added=1,
            numbering=numbering,
            conversation_id=None,
            conversation_ids=list(before.conversation_ids),
            permission_mode=None,
        ),
    )
    for notice in hooks.notices:
        notice(conn, account_id, session_id, stored)
    after_commit.extend(
        functools.partial(listener, account_id, session_id, stored) for listener in hooks.listeners
    )
    return sessions.select(conn, session_id), stored


# -- a Mac's hello ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reconciled:
    session: Session
    send_after: int | None  # send the Mac the events after this seq
    restarted: bool  # a new epoch began for a session the relay had: viewers must resync


@dataclass
class Reconciliation:
    sessions: list[Reconciled] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # session ids of another Mac: untouched
    # New session ids past sessions_max_per_mac: not stored (and why)
    over_limit: list[str] = field(default_factory=list)
    over_limit_reason: str = ""


def reconcile(
    conn: Connection,
    account_id: str,
    device_id: str,
    positions: Iterable[SessionPosition],
    room: int,
) -> Reconciliation:
    """Apply the Mac's hello: for each session, the relay's numbering and what to send back.

    A Mac speaks only for its own sessions (the device the session is on): another Mac's are
    refused and left untouched. A Mac ahead of the relay (the relay lost its latest events)
    starts a new epoch numbered after the Mac's seq (relay/seq.py), but what the relay has
    stored stays: a Mac's word never deletes an event."""
    out = Reconciliation()
    for pos in positions:
        found = sessions.owner(conn, pos.session_id)
        if found is not None and found.account_id != account_id:
            continue  # another account's session id: ignore, reveal nothing
        if found is not None and found.device_id != device_id:
            out.refused.append(pos.session_id)
            continue
        relay_seq = found.numbering if found is not None else None
        decision = seqrules.reconcile(relay_seq, pos.last_seq, pos.epoch)
        if found is None:
            try:
                sessions.check_room(conn, device_id, room)
            except Conflict as exc:
                out.over_limit.append(pos.session_id)  # left out, named to the Mac
                out.over_limit_reason = exc.message
                continue
            sessions.insert(
                conn,
                account_id,
                device_id,
                pos.session_id,
                "",
                "",
                decision.seq.epoch,
                decision.seq.last_seq,
            )
        elif decision.new_epoch:
            sessions.start_epoch(conn, pos.session_id, decision.seq)
            # The stored events stay, below the new epoch's start, and are read from here
            # (relay/history.py); they belong to the new epoch now.
            events.adopt_epoch(conn, pos.session_id, decision.seq.epoch)
        session = sessions.select(conn, pos.session_id)
        out.sessions.append(
            Reconciled(session, decision.send_after, decision.new_epoch and found is not None)
        )
    return out
