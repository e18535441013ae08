"""Messages queued on the relay for a Mac that is offline, delivered once and in order when it is back.

A phone that sends to a session whose Mac is offline gets 409 ``device_offline``; it may then
queue the message here (``POST /api/sessions/{id}/outbox``). The queue is a table, so it survives
a relay restart. Each message has an id (the phone's own or one made here) that travels as the
``send`` command's ``message_id``: the Mac keeps one message per id, so a message sent again after
a link that broke mid-flush (the Mac took it, its answer was lost) is answered ``duplicate`` and
never typed twice. A message leaves the queue only when the Mac answered it; the queue of a
session is flushed oldest first, one message at a time, and stops at the first that is not taken
(the Mac went away again, or refused it: then it waits, visible with the Mac's reason, for the
person to drop it; the messages behind it wait too, so the order holds).

Flushing starts when the Mac reports the session (it does so as soon as it links) and on a
schedule (``outbox_retry_interval``) while anything waits. With several relay nodes (PostgreSQL)
only the node holding the Mac's link delivers; a node that queues for a Mac linked elsewhere
nudges that node over the cluster bus. What waits is part of each session's
snapshot as ``queued`` (the page lists it in its ledger as "queued on the relay"): each message's
first ``PREVIEW_CHARS`` characters, its length and whether it was cut; the whole text is read one
message at a time (``GET /api/sessions/{id}/outbox/{message id}``), so a listing or a stream's
snapshot stays small however long the messages are.

What waits is bounded, per session and per Mac, in messages and in bytes of text
(``outbox_max_per_session``, ``outbox_max_bytes_per_session``, ``outbox_max_per_mac``,
``outbox_max_bytes_per_mac``): one more is refused with 409 ``outbox_full``, naming the setting.
The count is made in the same transaction as the insert, with the Mac's row locked on PostgreSQL,
so two relay nodes queueing at once cannot pass it together.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from pydantic import Field

from relay.bodies import Body
from relay.db import Connection
from relay.db.migrations import add_column
from relay.deps import Phone, State, check_message_length, send_command, session_or_404
from relay.errors import Conflict, NotFound, RelayError
from relay.feature import Feature
from relay.state import RelayState, iso
from relay.store import Session, devices
from wire.config import Config
from wire.protocol import SENDER_MESSAGE_ID, SendArgs, SessionInfo
from wire.tasks import TaskSet

_log = logging.getLogger("relay.features.outbox")

TABLE = """
CREATE TABLE IF NOT EXISTS outbox (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at REAL NOT NULL,
    error TEXT,
    size INTEGER NOT NULL DEFAULT 0,
    UNIQUE (session_id, message_id)
)
"""

PREVIEW_CHARS = 200  # of each queued message, in listings and snapshots
# A Mac's answers after which a message waits for the next try, not for the person: the Mac is
# away, or its session holds as many messages as its settings allow (some are typed soon).
TRY_AGAIN = frozenset({"device_offline", "device_timeout", "held_full"})


def setup(conn: Connection) -> None:
    conn.execute(TABLE)
    # The text's UTF-8 size, counted against the byte limits (a table from before it had none).
    if add_column(conn, "outbox", "size", "INTEGER NOT NULL DEFAULT 0"):
        rows = conn.execute("SELECT position, text FROM outbox").fetchall()
        for position, text in rows:
            conn.execute(
                "UPDATE outbox SET size = ? WHERE position = ?", (_size(str(text)), position)
            )


setup.schema_version = 2  # type: ignore[attr-defined]  # 2: outbox.size


@dataclass(frozen=True)
class Limits:
    """What may wait on the relay, per session and per Mac (0: no limit)."""

    session_messages: int
    session_bytes: int
    mac_messages: int
    mac_bytes: int

    @classmethod
    def of(cls, config: Config) -> Limits:
        return cls(
            config.int("outbox_max_per_session"),
            config.int("outbox_max_bytes_per_session"),
            config.int("outbox_max_per_mac"),
            config.int("outbox_max_bytes_per_mac"),
        )


@dataclass(frozen=True)
class Waiting:
    """What waits now: messages and bytes, for one session and for all its Mac's."""

    session_messages: int
    session_bytes: int
    mac_messages: int
    mac_bytes: int


def over_limit(limits: Limits, waiting: Waiting, size: int) -> str | None:
    """Why one more message of ``size`` bytes cannot wait (None: it can), naming the setting."""
    checks = (
        (waiting.session_messages + 1, limits.session_messages, "outbox_max_per_session",
         "messages", "this session"),
        (waiting.session_bytes + size, limits.session_bytes, "outbox_max_bytes_per_session",
         "bytes", "this session"),
        (waiting.mac_messages + 1, limits.mac_messages, "outbox_max_per_mac",
         "messages", "this session's Mac"),
        (waiting.mac_bytes + size, limits.mac_bytes, "outbox_max_bytes_per_mac",
         "bytes", "this session's Mac"),
    )  # fmt: skip
    for total, limit, setting, unit, whose in checks:
        if limit > 0 and total > limit:
            return (
                f"the relay holds at most {limit:,} {unit} of queued messages for {whose} "
                f"({setting}); this one would make {total:,}. Wait until the Mac is back and "
                "takes them, or drop a queued message, then queue it again"
            )
    return None


class QueueBody(Body):
    text: str = Field(min_length=1)
    # Chosen by the phone and sent again with a retry: one queued message per id.
    id: str | None = Field(default=None, pattern=SENDER_MESSAGE_ID)


class Outbox:
    """The running part: what waits, per session (mirrored from the table), and the flushing."""

    def __init__(self, state: RelayState) -> None:
        self.state = state
        self.waiting: dict[str, list[dict[str, Any]]] = {}
        self.locks: dict[str, asyncio.Lock] = {}
        self.tasks = TaskSet("outbox", _log)

    async def load(self) -> None:
        rows = await self.state.store.read(
            "SELECT session_id, message_id, text, created_at, error FROM outbox ORDER BY position"
        )
        waiting: dict[str, list[dict[str, Any]]] = {}
        for session_id, message_id, text, created_at, error in rows:
            waiting.setdefault(session_id, []).append(_message(message_id, text, created_at, error))
        for session_id, lock in self.locks.items():
            if lock.locked() and session_id in self.waiting:  # being flushed: its own view holds
                waiting[session_id] = self.waiting[session_id]
        self.waiting = waiting

    async def reload(self, session_id: str) -> None:
        """One session's queue as the table holds it (PostgreSQL: another relay node may have
        queued a message for a Mac linked to this one)."""
        rows = await self.state.store.read(
            "SELECT message_id, text, created_at, error FROM outbox WHERE session_id = ?"
            " ORDER BY position",
            (session_id,),
        )
        if self._lock(session_id).locked():
            return  # being flushed here: its own view holds
        if rows:
            self.waiting[session_id] = [_message(*r) for r in rows]
        else:
            self.waiting.pop(session_id, None)

    async def snapshot(self, session: Session) -> Mapping[str, Any]:
        """PostgreSQL: the session's queue as stored, for its snapshot."""
        await self.reload(session.id)
        return self.fields(session)

    async def listed(self, account_id: str) -> Callable[[str], Mapping[str, Any]]:
        """PostgreSQL: every queue of the account as stored, for the session listing."""
        rows = await self.state.store.read(
            "SELECT session_id, message_id, text, created_at, error FROM outbox"
            " WHERE account_id = ? ORDER BY position",
            (account_id,),
        )
        found: dict[str, list[dict[str, Any]]] = {}
        for session_id, *message in rows:
            found.setdefault(session_id, []).append(_message(*message))
        return lambda session_id: {"queued": [shown(m) for m in found.get(session_id, [])]}

    @property
    def shared(self) -> bool:
        """Whether other relay nodes write the same table (PostgreSQL)."""
        return bool(self.state.store.dialect.postgres)

    def fields(self, session: Session) -> Mapping[str, Any]:
        return {"queued": [shown(m) for m in self.waiting.get(session.id, [])]}

    async def queue(self, session: Session, text: str, message_id: str | None) -> dict[str, Any]:
        message_id = message_id or "q" + secrets.token_hex(8)
        # PostgreSQL's text holds no NUL (its store keeps U+FFFD instead): so on every backend,
        # for what every node lists, reads back and delivers to be one and the same text.
        text = text.replace("\x00", "\ufffd")
        now = time.time()
        size = _size(text)
        limits = Limits.of(self.state.config)

        def job(conn: Connection) -> bool:
            if conn.execute(
                "SELECT 1 FROM outbox WHERE session_id = ? AND message_id = ?",
                (session.id, message_id),
            ).fetchone():
                return False  # sent again with its id: already waiting
            devices.take_turn(conn, session.device_id)  # nodes queueing for one Mac take turns
            why = over_limit(limits, _waiting(conn, session), size)
            if why is not None:
                raise Conflict(why, code="outbox_full")
            cur = conn.execute(
                "INSERT OR IGNORE INTO outbox (session_id, account_id, message_id, text,"
                " created_at, size) VALUES (?, ?, ?, ?, ?, ?)",
                (session.id, session.account_id, message_id, text, now, size),
            )
            return bool(cur.rowcount == 1)

        added = await self.state.store.write(job)
        if added:
            self.waiting.setdefault(session.id, []).append(
                {"id": message_id, "text": text, "created_at": iso(now), "error": None}
            )
            self.state.publish_session(session)
        self.kick(session.id)  # the Mac may be back already
        if (
            self.shared
            and self.state.cluster is not None
            and session.device_id in self.state.live.remote
        ):
            self.state.cluster.nudge("outbox", session.id)  # the node holding the Mac delivers it
        return {"message_id": message_id, "state": "queued", "duplicate": not added}

    async def whole(self, session: Session, message_id: str) -> dict[str, Any]:
        """One queued message with its whole text (the listings carry a preview)."""
        rows = await self.state.store.read(
            "SELECT message_id, text, created_at, error FROM outbox"
            " WHERE session_id = ? AND message_id = ?",
            (session.id, message_id),
        )
        if not rows:
            raise _not_queued()
        message = _message(*rows[0])
        return {**shown(message), "text": message["text"]}

    async def drop(self, session: Session, message_id: str) -> bool:
        def job(conn: Connection) -> bool:
            cur = conn.execute(
                "DELETE FROM outbox WHERE session_id = ? AND message_id = ?",
                (session.id, message_id),
            )
            return bool(cur.rowcount == 1)

        async with self._lock(session.id):  # never in the middle of its delivery
            dropped = await self.state.store.write(job)
            self._forget(session.id, message_id)
        if dropped:
            self.state.publish_session(session)
        return dropped

    def _lock(self, session_id: str) -> asyncio.Lock:
        return self.locks.setdefault(session_id, asyncio.Lock())

    def _forget(self, session_id: str, message_id: str) -> None:
        left = [m for m in self.waiting.get(session_id, []) if m["id"] != message_id]
        if left:
            self.waiting[session_id] = left
        else:
            self.waiting.pop(session_id, None)

    def watch(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo
    ) -> None:
        """A Mac reported the session (it does on linking): deliver what waits for it."""
        if self.shared:  # what waits may have been queued through another node
            self.nudged(session.id)
        elif session.id in self.waiting:
            self.kick(session.id)

    def nudged(self, session_id: str) -> None:
        """What waits for the session may have changed in the table (another node queued it, or
        its Mac reported): read it again and deliver it if the Mac is linked here."""
        self._start(self._reload_and_kick(session_id), f"reload {session_id}")

    async def _reload_and_kick(self, session_id: str) -> None:
        if self._lock(session_id).locked():
            return  # being flushed now, from what the table held
        await self.reload(session_id)
        self.kick(session_id)

    def kick(self, session_id: str) -> None:
        if session_id not in self.waiting or self._lock(session_id).locked():
            return
        self._start(self.flush(session_id), f"deliver to {session_id}")

    def _start(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        if self.tasks.closed:
            coro.close()  # the relay is stopping: what waits is delivered after its restart
            return
        self.tasks.start(coro, name=name)

    async def flush(self, session_id: str) -> None:
        async with self._lock(session_id):
            while self.waiting.get(session_id):
                message = self.waiting[session_id][0]
                if message["error"]:
                    return  # refused once: it waits for the person (drop it), the rest behind it
                rows = await self.state.store.read(
                    "SELECT account_id FROM outbox WHERE session_id = ? AND message_id = ?",
                    (session_id, message["id"]),
                )
                if not rows:
                    self._forget(session_id, message["id"])
                    continue
                try:
                    session = await self.state.store.get_session(rows[0][0], session_id)
                except NotFound:  # the session was deleted: nothing to deliver to
                    await self._delete(session_id, message["id"])
                    continue
                link = self.state.live.link(session.device_id)
                if link is None:
                    return  # still offline: the Mac's next report flushes
                if self.shared and self.state.live.local.get(session.device_id) is not link:
                    # Only the node holding the Mac delivers (nudged when a message is queued
                    # elsewhere, its sweep otherwise), so no message is sent twice at once.
                    return
                try:
                    await send_command(
                        self.state,
                        session,
                        SendArgs(text=message["text"], message_id=message["id"]),
                    )
                except RelayError as exc:
                    if exc.code not in TRY_AGAIN:
                        message["error"] = exc.message  # refused: it waits, saying why
                        await self._mark_error(session_id, message["id"], exc.message)
                        self.state.publish_session(session)
                    _log.info("outbox of %s waits: %s", session_id, exc.message)
                    return
                await self._delete(session_id, message["id"])
                self.state.publish_session(session)

    async def _delete(self, session_id: str, message_id: str) -> None:
        await self.state.store.write(
            lambda conn: conn.execute(
                "DELETE FROM outbox WHERE session_id = ? AND message_id = ?",
                (session_id, message_id),
            )
        )
        self._forget(session_id, message_id)

    async def _mark_error(self, session_id: str, message_id: str, error: str) -> None:
        await self.state.store.write(
            lambda conn: conn.execute(
                "UPDATE outbox SET error = ? WHERE session_id = ? AND message_id = ?",
                (error, session_id, message_id),
            )
        )

    async def sweep(self) -> None:
        every = self.state.config.float("outbox_retry_interval")
        while True:
            await asyncio.sleep(every)
            if self.shared:
                try:
                    await self.load()  # what the other relay nodes queued meanwhile
                except RelayError as exc:  # the database is away: the next round tries again
                    _log.info("outbox not read again: %s", exc.message)
            for session_id in list(self.waiting):
                self.kick(session_id)

    async def close(self) -> None:
        await self.tasks.close()


def _message(message_id: str, text: str, created_at: float, error: str | None) -> dict[str, Any]:
    return {"id": message_id, "text": text, "created_at": iso(created_at), "error": error}


def shown(message: Mapping[str, Any]) -> dict[str, Any]:
    """A queued message as listings and snapshots show it: a preview of its text, not all of it."""
    text = str(message["text"])
    return {
        "id": message["id"],
        "preview": text[:PREVIEW_CHARS],
        "length": len(text),
        "truncated": len(text) > PREVIEW_CHARS,
        "created_at": message["created_at"],
        "error": message["error"],
    }


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _waiting(conn: Connection, session: Session) -> Waiting:
    """What waits for the session and for its Mac, as the table holds it now."""
    mine = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM outbox WHERE session_id = ?",
        (session.id,),
    ).fetchone()
    macs = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(o.size), 0) FROM outbox o"
        " JOIN sessions s ON s.id = o.session_id WHERE s.device_id = ?",
        (session.device_id,),
    ).fetchone()
    return Waiting(int(mine[0]), int(mine[1]), int(macs[0]), int(macs[1]))


def _not_queued() -> NotFound:
    return NotFound(
        "no such queued message (it may have been delivered already)", code="not_queued"
    )


async def start(state: RelayState) -> Outbox:
    outbox = Outbox(state)
    await outbox.load()
    state.hooks.watchers.append(outbox.watch)
    state.hooks.session_fields.append(outbox.fields)
    if outbox.shared:  # queued through any node: the listing and the snapshot read the table
        state.hooks.nudge_handlers["outbox"] = outbox.nudged
        state.hooks.list_fields.append(outbox.listed)
        state.hooks.snapshot_fields.append(outbox.snapshot)
    outbox.tasks.start(outbox.sweep(), name="sweep")
    return outbox


def _outbox(state: RelayState) -> Outbox:
    part = state.part(Outbox)
    assert part is not None, "the outbox feature is started with the relay"
    return part


router = APIRouter(prefix="/api")


@router.post("/sessions/{session_id}/outbox", status_code=201)
async def queue_message(
    session_id: str, body: QueueBody, principal: Phone, state: State
) -> dict[str, Any]:
    """Queue a message for the session's Mac, delivered once and in order when it is back."""
    check_message_length(state, body.text)
    session = await session_or_404(state, principal, session_id)
    await state.hooks.guard(session)  # an archived session takes no message, queued or not
    return await _outbox(state).queue(session, body.text, body.id)


@router.get("/sessions/{session_id}/outbox")
async def list_queued(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    outbox = _outbox(state)
    if outbox.shared:
        await outbox.reload(session.id)  # another node may have queued or delivered meanwhile
    return dict(outbox.fields(session))


@router.get("/sessions/{session_id}/outbox/{message_id}")
async def read_queued(
    session_id: str, message_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    """One queued message with its whole text."""
    session = await session_or_404(state, principal, session_id)
    return await _outbox(state).whole(session, message_id)


@router.delete("/sessions/{session_id}/outbox/{message_id}")
async def drop_queued(
    session_id: str, message_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    if not await _outbox(state).drop(session, message_id):
        raise _not_queued()
    return {"ok": True}


FEATURE = Feature("outbox", schema=setup, start=start, router=router)
