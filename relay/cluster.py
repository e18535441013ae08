"""Several relay nodes on one PostgreSQL database: no sticky routing, nothing lost between them.

Every node can serve any phone and any Mac. What one node learns, the others hear through
PostgreSQL's LISTEN/NOTIFY:

- **Events** (``cb_events``): the ingest transaction sends a notification (``pg_notify`` in the
  same transaction, so it is delivered only on commit: relay/store/store.py ``add_notice``). A node with
  viewers of that session publishes the events to its own hub: from the notification when they
  fit in it, else read from the store from the last seq it delivered. The SSE stream fills any gap
  from the store by seq (relay/sse.py), so a lost notification costs time, never an event.
- **The account stream** (``cb_bus``): session states, cards, previews, devices online, revoked
  logins and restarted histories, as the hub publishes them (relay/hub.py ``forward``), and each
  session's live side (``Live.sessions``), so any node's snapshot shows a Mac linked to another.
  A message too large for a notification (8,000 bytes) travels through ``node_messages``.
- **Links**: which node holds which Mac is in ``device_links``; a node's lease on its Macs is its
  heartbeat in ``relay_nodes``. A node that stops beating for ``node_lease_seconds`` is taken for
  dead: its Macs show offline on the other nodes until they link again, to any node. A Mac that
  links to a second node while its old link still lives on the first closes the old one there
  (the newest link wins, as on one node).
- **Commands and history** for a Mac linked to another node: a row in ``node_requests`` and a
  notification (``cb_request``) to the node holding the link, which sends it over its link with
  the same timeout and writes the answer back (``cb_answer``). To the caller it is a
  :class:`RemoteLink`, with the same methods, timeouts and errors as a local ``DeviceLink``.

When the listening connection drops (PostgreSQL restarted), the node connects again, re-reads the
links and live sessions, catches its viewers up from the store and sends its account streams a
``resync`` (the page reconnects and gets a fresh snapshot).

Every message is one of relay/nodebus.py's typed messages; one a node cannot read is logged and
skipped. Every task of the node (the listener, the sender, the handler, the heartbeat, and each
request it serves) runs on its TaskSet, closed when the relay stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay.db import Connection
from relay.errors import (
    Conflict,
    GatewayTimeout,
    RelayError,
    StoreUnavailable,
    TooManyRequests,
)
from relay.live import DeviceLink
from relay.nodebus import (
    AccountUpdate,
    BusMessage,
    ErrorBody,
    LiveSession,
    MacClose,
    MacCommand,
    MacHistory,
    MacLinked,
    MacRequest,
    MacUnlinked,
    Nudge,
    RequestAnswer,
    Resync,
    Revoke,
    SessionEvents,
    address,
    addressed,
    bus_text,
    events_notice,
    read_answer,
    read_bus,
    read_events,
    read_request,
)
from relay.store import sessions
from wire.protocol import (
    CLOSE_REPLACED,
    Command,
    CommandArgs,
    CommandResult,
    History,
    SessionInfo,
)
from wire.tasks import TaskSet

if TYPE_CHECKING:
    import psycopg

    from relay.db.postgres import PostgresDatabase
    from relay.state import RelayState

_log = logging.getLogger("relay.cluster")

EVENTS = "cb_events"
BUS = "cb_bus"
REQUEST = "cb_request"
ANSWER = "cb_answer"
CHANNELS = (EVENTS, BUS, REQUEST, ANSWER)

NOTIFY_LIMIT = 7900  # bytes of a notification payload (PostgreSQL's limit is 8,000)
REQUEST_MARGIN = 2.0  # seconds a caller waits beyond the Mac's own timeout for the other node
MESSAGE_KEEP = 120.0  # seconds large bus messages and answered requests are kept
RECONNECT_PAUSE = 0.5  # seconds between attempts to listen again
SEND_BATCH = 100  # bus messages sent in one transaction
CLOSE_WAIT = 5.0  # seconds a node leaving waits for the other nodes' request it is serving
NOW = "EXTRACT(EPOCH FROM clock_timestamp())"  # the database's clock: one for every node


def new_node_id() -> str:
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{secrets.token_hex(3)}"


def error_from(body: ErrorBody) -> RelayError:
    """A RelayError as another node raised it (same status, code, message and details)."""
    kinds: list[type[RelayError]] = [RelayError, *RelayError.__subclasses__()]
    kind = next((k for k in kinds if k.status == body.status), RelayError)
    error = kind(body.message, code=body.code, **body.details)
    error.status = body.status
    return error


def error_body(exc: RelayError) -> ErrorBody:
    error = exc.body()["error"]
    details = {k: v for k, v in error.items() if k not in ("code", "message")}
    return ErrorBody(status=exc.status, code=exc.code, message=exc.message, details=details)


@dataclass(eq=False)
class RemoteLink:
    """A Mac linked to another node, as callers of ``Live.link`` see it: commands and history
    go to that node through the database (``Cluster.request``)."""

    device_id: str
    account_id: str
    name: str
    node_id: str
    cluster: Cluster
    closed: bool = False
    replaced: bool = False

    async def command(self, session_id: str, args: CommandArgs, timeout: float) -> CommandResult:
        message = Command.of(secrets.token_hex(8), session_id, args)
        request = MacCommand(message=message.model_dump(mode="json"), timeout=timeout)
        return CommandResult.model_validate(await self.cluster.request(self, request, timeout))

    async def history(self, session_id: str, before: int, limit: int, timeout: float) -> History:
        request = MacHistory(session_id=session_id, before=before, limit=limit, timeout=timeout)
        return History.model_validate(await self.cluster.request(self, request, timeout))

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(RelayError):
            await self.cluster.request(self, MacClose(code=code, reason=reason), CLOSE_WAIT)

    def fail_pending(self) -> None:
        """Nothing waits here: the other node fails its own pending requests."""


class Cluster:
    """This node's part in a cluster of relay nodes (made by relay/app.py on PostgreSQL)."""

    def __init__(self, state: RelayState, db: PostgresDatabase) -> None:
        self.state = state
        self.db = db
        self.node_id = new_node_id()
        self.heartbeat = state.config.float("node_heartbeat_interval")
        self.lease = state.config.float("node_lease_seconds")
        self.listening = asyncio.Event()
        self.tasks = TaskSet("cluster", _log)
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._inbox: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._answers: dict[str, asyncio.Future[RequestAnswer]] = {}
        self._closing = False
        self._resumed_once = False

    # -- start and stop -----------------------------------------------------------------

    async def start(self) -> None:
        await self.start_row()
        self.tasks.start(self._listen(), name="listen")
        self.tasks.start(self._send(), name="send")
        self.tasks.start(self._handle(), name="handle")
        self.tasks.start(self._beat(), name="heartbeat")
        # Serve once listening (what others said before it is read from the tables).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.listening.wait(), 10)
        _log.info("relay node %s joined the cluster on %s", self.node_id, self.db.describe())

    async def close(self) -> None:
        self._closing = True
        await self.tasks.close()
        with contextlib.suppress(Exception):
            # Leave at once rather than after the lease: the Macs may link elsewhere now.
            await self._run("DELETE FROM device_links WHERE node_id = ?", (self.node_id,))
            await self._run("DELETE FROM live_sessions WHERE node_id = ?", (self.node_id,))
            await self._run("DELETE FROM relay_nodes WHERE node_id = ?", (self.node_id,))

    async def _run(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return await self.db.aquery(sql, params)

    # -- what the core tells the cluster ----------------------------------------------------

    def event_notice(
        self, conn: Connection, account_id: str, session_id: str, events: list[tuple[int, str]]
    ) -> None:
        """In the ingest transaction: tell the other nodes (delivered on commit only)."""
        self.db.notify(conn, EVENTS, events_notice(self.node_id, session_id, events, NOTIFY_LIMIT))

    def forward_account(self, account_id: str, event: str, data: dict[str, Any]) -> None:
        """The hub published this to its account streams: the other nodes' streams too."""
        self._broadcast(AccountUpdate(account_id=account_id, event=event, data=data))

    def forward_resync(self, session_id: str, reason: str) -> None:
        self._broadcast(Resync(session_id=session_id, reason=reason))

    def forward_revoke(self, token_hashes: list[str]) -> None:
        self._broadcast(Revoke(token_hashes=token_hashes))

    def nudge(self, topic: str, session_id: str) -> None:
        """Tell the other nodes' ``topic`` feature that the session has news for it."""
        self._broadcast(Nudge(topic=topic, session_id=session_id))

    async def linked(self, link: DeviceLink) -> None:
        """A Mac linked to this node: record it (the lease), and end an older link elsewhere."""
        await self._run(
            f"INSERT INTO device_links (device_id, account_id, node_id, name, linked_at)"
            f" VALUES (?, ?, ?, ?, {NOW}) ON CONFLICT (device_id) DO UPDATE SET"
            " account_id = excluded.account_id, node_id = excluded.node_id,"
            " name = excluded.name, linked_at = excluded.linked_at",
            (link.device_id, link.account_id, self.node_id, link.name),
        )
        self.state.live.remote.pop(link.device_id, None)
        self._broadcast(
            MacLinked(
                device_id=link.device_id,
                account_id=link.account_id,
                name=link.name,
                node_id=self.node_id,
            )
        )

    async def unlinked(self, link: DeviceLink) -> bool:
        """A Mac's link here ended; answers whether this node still held it (False when it
        linked to another node meanwhile: it is not offline then)."""
        held = True
        with contextlib.suppress(RelayError):
            rows = await self._run(
                "DELETE FROM device_links WHERE device_id = ? AND node_id = ? RETURNING device_id",
                (link.device_id, self.node_id),
            )
            held = bool(rows)
            await self._run(
                "DELETE FROM live_sessions WHERE device_id = ? AND node_id = ?",
                (link.device_id, self.node_id),
            )
        if held:
            self._broadcast(MacUnlinked(device_id=link.device_id, node_id=self.node_id))
        return held

    def share_live(self, account_id: str, device_id: str, info: SessionInfo, keep: bool) -> None:
        """A session's live side changed on this node (its Mac is linked here). ``keep``: also
        store it, for nodes that start later (not for a preview alone: they change often)."""
        self._broadcast(LiveSession(account_id=account_id, device_id=device_id, info=info))
        if keep:
            text = info.model_dump_json()
            self._spawn(self._keep_live(info.session_id, account_id, device_id, text), "keep live")

    async def _keep_live(self, session_id: str, account_id: str, device_id: str, text: str) -> None:
        with contextlib.suppress(RelayError):
            await self._run(
                f"INSERT INTO live_sessions (session_id, account_id, device_id, node_id, data,"
                f" updated_at) VALUES (?, ?, ?, ?, ?, {NOW}) ON CONFLICT (session_id) DO UPDATE"
                " SET account_id = excluded.account_id, device_id = excluded.device_id,"
                " node_id = excluded.node_id, data = excluded.data,"
                " updated_at = excluded.updated_at",
                (session_id, account_id, device_id, self.node_id, text),
            )

    async def check_rate(self, bucket: str, limit: int, window: float) -> None:
        """A sliding window shared by every node (pairing attempts per client address)."""

        def job(conn: Connection) -> int:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(?))", (bucket,))
            now = time.time()
            conn.execute("DELETE FROM rate_hits WHERE at <= ?", (now - window,))
            count, first = conn.execute(
                "SELECT COUNT(*), MIN(at) FROM rate_hits WHERE bucket = ?", (bucket,)
            ).fetchone()
            if int(count) >= limit:
                return int(first + window - now) + 1
            conn.execute("INSERT INTO rate_hits (bucket, at) VALUES (?, ?)", (bucket, now))
            return 0

        retry = await self.state.store.write(job)
        if retry:
            raise TooManyRequests(
                f"too many pairing attempts; wait {retry} s and try again",
                code="pair_rate_limited",
                retry_after=retry,
            )

    # -- requests to a Mac on another node -------------------------------------------------

    async def live_nodes(self) -> set[str]:
        """The nodes whose lease still runs (a heartbeat within ``node_lease_seconds``)."""
        rows = await self._run(
            f"SELECT node_id FROM relay_nodes WHERE heartbeat_at > {NOW} - ?", (self.lease,)
        )
        return {self.node_id, *(str(r[0]) for r in rows)}

    async def request(
        self, link: RemoteLink, request: MacRequest, timeout: float
    ) -> dict[str, Any]:
        request_id = secrets.token_hex(12)
        future: asyncio.Future[RequestAnswer] = asyncio.get_running_loop().create_future()
        self._answers[request_id] = future
        text = request.model_dump_json()

        def job(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO node_requests (id, origin, target, device_id, kind, body, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    request_id,
                    self.node_id,
                    link.node_id,
                    link.device_id,
                    request.kind,
                    text,
                    time.time(),
                ),
            )
            self.db.notify(conn, REQUEST, address(link.node_id, request_id))

        try:
            await self.state.store.write(job)
            answer = await asyncio.wait_for(future, timeout + REQUEST_MARGIN)
        except TimeoutError:
            raise GatewayTimeout(
                f"the Mac '{link.name}' did not answer within {timeout:g} s; try again",
                code="device_timeout",
            ) from None
        finally:
            self._answers.pop(request_id, None)
        if answer.error is not None:
            raise error_from(answer.error)
        return answer.ok or {}

    async def _serve_request(self, request_id: str) -> None:
        rows = await self._run(
            "SELECT origin, device_id, body FROM node_requests WHERE id = ?", (request_id,)
        )
        if not rows:
            return
        origin, device_id, text = rows[0]
        request = read_request(text)
        try:
            if request is None:
                raise Conflict("a request this node cannot read", code="bad_request")
            answer = RequestAnswer(ok=await self._on_request(str(device_id), request))
        except RelayError as exc:
            answer = RequestAnswer(error=error_body(exc))
        except Exception as exc:  # a bug here must reach the caller as an answer, not a wait
            _log.exception("a request from node %s failed", origin)
            answer = RequestAnswer(error=ErrorBody(code="internal", message=str(exc)[:500]))
        reply = answer.model_dump_json(exclude_none=True)

        def job(conn: Connection) -> None:
            conn.execute("UPDATE node_requests SET answer = ? WHERE id = ?", (reply, request_id))
            self.db.notify(conn, ANSWER, address(str(origin), request_id))

        await self.state.store.write(job)

    async def _on_request(self, device_id: str, request: MacRequest) -> dict[str, Any]:
        """Carry out another node's request over the Mac's link here; answers the Mac's answer."""
        link = self.state.live.local.get(device_id)
        if link is None or link.closed:
            raise Conflict(
                "the Mac is offline; start its agent or wait for it to reconnect",
                code="device_offline",
                device_id=device_id,
            )
        if isinstance(request, MacCommand):
            message = Command.model_validate(request.message)
            result = await link.command(message.session_id, message.parsed_args(), request.timeout)
            return result.model_dump(mode="json")
        if isinstance(request, MacHistory):
            history = await link.history(
                request.session_id, request.before, request.limit, request.timeout
            )
            return history.model_dump(mode="json")
        link.fail_pending()
        await link.close(request.code, request.reason)
        return {}

    async def _take_answer(self, request_id: str) -> None:
        future = self._answers.get(request_id)
        if future is None or future.done():
            return
        rows = await self._run(
            "DELETE FROM node_requests WHERE id = ? RETURNING answer", (request_id,)
        )
        if rows and rows[0][0] is not None and not future.done():
            future.set_result(read_answer(rows[0][0]))

    # -- the listening side ------------------------------------------------------------------

    async def _listen(self) -> None:
        import psycopg

        while not self._closing:
            try:
                conn = await psycopg.AsyncConnection.connect(
                    self.db.url, autocommit=True, connect_timeout=5
                )
                async with conn:
                    for channel in CHANNELS:
                        await conn.execute(f"LISTEN {channel}")
                    await self._resume()
                    self.listening.set()
                    async for note in conn.notifies():
                        self._inbox.put_nowait((note.channel, note.payload))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self.listening.is_set():
                    _log.warning("relay node %s stopped hearing the others: %s", self.node_id, exc)
                self.listening.clear()
            await asyncio.sleep(RECONNECT_PAUSE)

    async def _handle(self) -> None:
        """One notification at a time, in the order they came: a session's events stay in order."""
        while True:
            channel, payload = await self._inbox.get()
            try:
                await self._dispatch(channel, payload)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.exception("a notification on %s could not be handled", channel)

    async def _dispatch(self, channel: str, payload: str) -> None:
        if channel == EVENTS:
            notice = read_events(payload)
            if notice is not None:
                await self._on_events(notice)
        elif channel == BUS:
            if payload.startswith("@"):  # too large for a notification: it waits in a table
                if not payload[1:].isdigit():
                    _log.warning("a bus notification was skipped, unreadable: %.120s", payload)
                    return
                rows = await self._run(
                    "SELECT body FROM node_messages WHERE id = ?", (int(payload[1:]),)
                )
                if not rows:
                    return
                payload = str(rows[0][0])
            message = read_bus(payload)
            if message is not None:
                self._on_bus(message)
        elif channel in (REQUEST, ANSWER):
            node, request_id = addressed(payload)
            if node != self.node_id:
                return
            if channel == REQUEST:
                self._spawn(self._serve_request(request_id), f"request {request_id}")
            else:
                await self._take_answer(request_id)

    async def _on_events(self, note: SessionEvents) -> None:
        if note.sender == self.node_id:
            return  # published here after commit already (relay/app.py)
        hub = self.state.hub
        if not hub.has_viewers(note.session_id):
            return
        delivered = hub.latest.get(note.session_id, 0)
        if note.last <= delivered:
            return
        if note.events is not None:
            events = [
                (int(e["seq"]), json.dumps(e, ensure_ascii=False, separators=(",", ":")))
                for e in note.events
            ]
        else:
            # Too large to travel in the notification: from the store, after what was delivered
            # (or just the newest, whose gap each stream fills from the store itself).
            first = delivered + 1 if delivered else note.last
            events = await self.state.store.read_events(
                note.session_id, max(first, note.first), note.last
            )
        if events:
            hub.publish_events(note.session_id, events)

    def _on_bus(self, message: BusMessage) -> None:
        if message.sender == self.node_id:
            return  # PostgreSQL delivers a node its own notifications too
        state = self.state
        if isinstance(message, AccountUpdate):
            state.hub.publish_account(
                message.account_id, message.event, message.data, forward=False
            )
        elif isinstance(message, LiveSession):
            if message.device_id not in state.live.local:
                state.live.sessions[message.info.session_id] = message.info
        elif isinstance(message, MacLinked):
            local = state.live.local.get(message.device_id)
            if local is not None:
                # The same Mac linked to another node: that link is the newer one.
                local.replaced = True
                local.fail_pending()
                self._spawn(
                    local.close(CLOSE_REPLACED, "replaced by a newer link from the same Mac"),
                    f"close {message.device_id}",
                )
                state.live.detach(local)
            state.live.remote[message.device_id] = RemoteLink(
                message.device_id,
                message.account_id,
                message.name or message.device_id,
                message.node_id,
                self,
            )
        elif isinstance(message, MacUnlinked):
            remote = state.live.remote.get(message.device_id)
            if remote is not None and remote.node_id == message.node_id:
                self._drop_remote(message.device_id)
        elif isinstance(message, Resync):
            state.hub.resync_session(message.session_id, message.reason, forward=False)
        elif isinstance(message, Revoke):
            state.hub.revoke(message.token_hashes, forward=False)
        else:
            state.hooks.nudged(message.topic, message.session_id)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``coro`` beside the loop that heard it, on the node's TaskSet (cancelled on
        close); nothing more starts once the node is leaving."""
        if self.tasks.closed:
            coro.close()
            return
        self.tasks.start(coro, name=name)

    def _drop_remote(self, device_id: str) -> None:
        remote = self.state.live.remote.pop(device_id, None)
        if remote is not None:
            remote.closed = True

    def _broadcast(self, message: BusMessage) -> None:
        if not self._closing:
            self._outbox.put_nowait(bus_text(message, self.node_id))

    async def _send(self) -> None:
        """Send bus messages in order, on a connection of their own (the listener only listens)."""
        import psycopg

        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            while True:
                payloads = [await self._outbox.get()]
                while not self._outbox.empty() and len(payloads) < SEND_BATCH:
                    payloads.append(self._outbox.get_nowait())
                try:
                    if conn is None or conn.closed:
                        conn = await psycopg.AsyncConnection.connect(
                            self.db.url, autocommit=True, connect_timeout=5
                        )
                    async with conn.transaction():
                        for payload in payloads:
                            await self._notify_bus(conn, payload)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    # The database is away: these updates are lost to the other nodes, which
                    # send their streams a resync when they hear again (``_resume``).
                    _log.warning("relay node %s could not tell the others: %s", self.node_id, exc)
                    if conn is not None:
                        with contextlib.suppress(Exception):
                            await conn.close()
                    conn = None
                    await asyncio.sleep(RECONNECT_PAUSE)
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()

    async def _notify_bus(self, conn: psycopg.AsyncConnection[Any], payload: str) -> None:
        if len(payload.encode()) > NOTIFY_LIMIT:
            # Too large for a notification: the message waits in a table, the notification
            # names it.
            cursor = await conn.execute(
                "INSERT INTO node_messages (created_at, body) VALUES (%s, %s) RETURNING id",
                (time.time(), payload),
            )
            row = await cursor.fetchone()
            assert row is not None  # INSERT … RETURNING answers its row
            payload = f"@{row[0]}"
        await conn.execute("SELECT pg_notify(%s, %s)", (BUS, payload))

    async def _resume(self) -> None:
        """Listening (again): read what the other nodes hold, catch the viewers up."""
        await self._refresh_links(load_live=True)
        hub = self.state.hub
        if self._resumed_once:
            for session_id in hub.viewed_sessions():
                account_id = await self.state.store.reading(
                    functools.partial(sessions.account_of, session_id=session_id)
                )
                if account_id is None:
                    continue
                session = await self.state.store.get_session(account_id, session_id)
                if session.last_seq > hub.latest.get(session_id, 0):
                    newest = await self.state.store.read_events(
                        session_id, session.last_seq, session.last_seq
                    )
                    hub.publish_events(session_id, newest)  # each stream fills its gap
            hub.resync_accounts("relay_reconnected")
        self._resumed_once = True

    async def _refresh_links(self, *, load_live: bool = False) -> None:
        rows = await self._run(
            "SELECT l.device_id, l.account_id, l.node_id, l.name FROM device_links l"
            " JOIN relay_nodes n ON n.node_id = l.node_id"
            f" WHERE n.heartbeat_at > {NOW} - ? AND l.node_id <> ?",
            (self.lease, self.node_id),
        )
        live = self.state.live
        current = {str(r[0]): r for r in rows if str(r[0]) not in live.local}
        for device_id in list(live.remote):
            if device_id not in current:
                account_id = live.remote[device_id].account_id
                self._drop_remote(device_id)
                # Its node died (or left): offline here until it links again, to any node.
                self.state.publish_device(account_id, device_id, forward=False)
        for device_id, (_, account_id, node_id, name) in current.items():
            known = live.remote.get(device_id)
            if known is None or known.node_id != node_id:
                live.remote[device_id] = RemoteLink(device_id, account_id, name, node_id, self)
        if load_live:
            for session_id, device_id, data in await self._run(
                "SELECT session_id, device_id, data FROM live_sessions WHERE node_id <> ?",
                (self.node_id,),
            ):
                if device_id in current:
                    live.sessions[str(session_id)] = SessionInfo.model_validate_json(data)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.heartbeat)
            try:
                rows = await self._run(
                    f"UPDATE relay_nodes SET heartbeat_at = {NOW} WHERE node_id = ?"
                    " RETURNING node_id",
                    (self.node_id,),
                )
                if not rows:
                    await self._rejoin()
                await self._refresh_links()
                await self._prune()
            except asyncio.CancelledError:
                raise
            except (RelayError, StoreUnavailable) as exc:
                _log.warning("relay node %s: heartbeat failed: %s", self.node_id, exc.message)

    async def _rejoin(self) -> None:
        """Taken for dead (the database was away longer than the lease) and pruned: join again
        with the Macs still linked here."""
        await self.start_row()
        for link in list(self.state.live.local.values()):
            if not link.closed:
                await self.linked(link)

    async def start_row(self) -> None:
        await self._run(
            f"INSERT INTO relay_nodes (node_id, name, started_at, heartbeat_at)"
            f" VALUES (?, ?, {NOW}, {NOW}) ON CONFLICT (node_id) DO UPDATE SET"
            " heartbeat_at = excluded.heartbeat_at",
            (self.node_id, socket.gethostname()[:100]),
        )

    async def _prune(self) -> None:
        """Forget dead nodes (three leases without a beat) and old messages."""
        dead = await self._run(
            f"DELETE FROM relay_nodes WHERE heartbeat_at < {NOW} - ? RETURNING node_id",
            (self.lease * 3,),
        )
        for (node_id,) in dead:
            await self._run("DELETE FROM device_links WHERE node_id = ?", (node_id,))
            await self._run("DELETE FROM live_sessions WHERE node_id = ?", (node_id,))
        await self._run(f"DELETE FROM node_messages WHERE created_at < {NOW} - ?", (MESSAGE_KEEP,))
        await self._run(f"DELETE FROM node_requests WHERE created_at < {NOW} - ?", (MESSAGE_KEEP,))
