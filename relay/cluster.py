"""Several relay nodes on one PostgreSQL database: no sticky routing, nothing lost between them.

Every node can serve any phone and any Mac. What one node learns, the others hear through
PostgreSQL's LISTEN/NOTIFY:

- **Events** (``cb_events``): the ingest transaction sends a notification (``pg_notify`` in the
  same transaction, so it is delivered only on commit: relay/store.py ``add_notice``). A node with
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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay.errors import (
    Conflict,
    GatewayTimeout,
    RelayError,
    StoreUnavailable,
    TooManyRequests,
)
from relay.live import DeviceLink
from wire.protocol import (
    CLOSE_REPLACED,
    Command,
    CommandArgs,
    CommandResult,
    History,
    SessionInfo,
)

if TYPE_CHECKING:
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
NOW = "EXTRACT(EPOCH FROM clock_timestamp())"  # the database's clock: one for every node


def new_node_id() -> str:
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{secrets.token_hex(3)}"


def _error_from(body: dict[str, Any]) -> RelayError:
    """A RelayError as another node raised it (same status, code, message and details)."""
    status = int(body.get("status", 500))
    details = dict(body.get("details") or {})
    kinds: list[type[RelayError]] = [RelayError, *RelayError.__subclasses__()]
    kind = next((k for k in kinds if k.status == status), RelayError)
    error = kind(str(body.get("message", "")), code=body.get("code"), **details)
    error.status = status
    return error


def _error_body(exc: RelayError) -> dict[str, Any]:
    error = exc.body()["error"]
    details = {k: v for k, v in error.items() if k not in ("code", "message")}
    return {
        "status": exc.status,
        "code": exc.code,
        "message": exc.message,
        "details": details,
    }


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
        answer = await self.cluster.request(
            self, "command", {"message": message.model_dump(mode="json"), "timeout": timeout},
            timeout,
        )  # fmt: skip
        return CommandResult.model_validate(answer)

    async def history(self, session_id: str, before: int, limit: int, timeout: float) -> History:
        body = {"session_id": session_id, "before": before, "limit": limit, "timeout": timeout}
        answer = await self.cluster.request(self, "history", body, timeout)
        return History.model_validate(answer)

    async def close(self, code: int, reason: str) -> None:
        with contextlib.suppress(RelayError):
            await self.cluster.request(self, "close", {"code": code, "reason": reason}, 5.0)

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
        self._tasks: list[asyncio.Task[None]] = []
        self._outbox: asyncio.Queue[str] = asyncio.Queue()
        self._inbox: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self._answers: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._served: set[asyncio.Task[None]] = set()
        self._closing = False
        self._resumed_once = False

    # -- start and stop -----------------------------------------------------------------

    async def start(self) -> None:
        await self.start_row()
        loop = asyncio.get_running_loop()
        for coro in (self._listen(), self._send(), self._handle(), self._beat()):
            self._tasks.append(loop.create_task(coro))
        # Serve once listening (what others said before it is read from the tables).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.listening.wait(), 10)
        _log.info("relay node %s joined the cluster on %s", self.node_id, self.db.describe())

    async def close(self) -> None:
        self._closing = True
        for task in [*self._tasks, *self._served]:
            task.cancel()
        for task in [*self._tasks, *self._served]:
            with contextlib.suppress(BaseException):
                await task
        with contextlib.suppress(Exception):
            # Leave at once rather than after the lease: the Macs may link elsewhere now.
            await self._run("DELETE FROM device_links WHERE node_id = ?", (self.node_id,))
            await self._run("DELETE FROM live_sessions WHERE node_id = ?", (self.node_id,))
            await self._run("DELETE FROM relay_nodes WHERE node_id = ?", (self.node_id,))

    async def _run(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return await self.db.aquery(sql, params)

    # -- what the core tells the cluster ----------------------------------------------------

    def event_notice(
        self, conn: Any, account_id: str, session_id: str, events: list[tuple[int, str]]
    ) -> None:
        """In the ingest transaction: tell the other nodes (delivered on commit only)."""
        head = {"n": self.node_id, "s": session_id, "f": events[0][0], "l": events[-1][0]}
        payload = json.dumps(head, separators=(",", ":"))
        size = len(payload) + sum(len(data) + 1 for _, data in events) + 8
        if size <= NOTIFY_LIMIT:
            inline = ",".join(data for _, data in events)
            payload = payload[:-1] + f',"e":[{inline}]}}'
        self.db.notify(conn, EVENTS, payload)

    def forward_account(self, account_id: str, event: str, data: dict[str, Any]) -> None:
        """The hub published this to its account streams: the other nodes' streams too."""
        self._broadcast({"t": "acct", "a": account_id, "e": event, "b": data})

    def forward_resync(self, session_id: str, reason: str) -> None:
        self._broadcast({"t": "resync", "s": session_id, "r": reason})

    def forward_revoke(self, token_hashes: list[str]) -> None:
        self._broadcast({"t": "revoke", "h": token_hashes})

    def nudge(self, topic: str, session_id: str) -> None:
        """Tell the other nodes' ``topic`` feature that the session has news for it."""
        self._broadcast({"t": "nudge", "k": topic, "s": session_id})

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
            {"t": "link", "d": link.device_id, "a": link.account_id, "m": link.name,
             "n": self.node_id}
        )  # fmt: skip

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
            self._broadcast({"t": "unlink", "d": link.device_id, "n": self.node_id})
        return held

    def share_live(self, account_id: str, device_id: str, info: SessionInfo, keep: bool) -> None:
        """A session's live side changed on this node (its Mac is linked here). ``keep``: also
        store it, for nodes that start later (not for a preview alone: they change often)."""
        data = info.model_dump(mode="json")
        self._broadcast({"t": "live", "a": account_id, "d": device_id, "i": data})
        if keep:
            text = json.dumps(data, separators=(",", ":"))
            self._spawn(self._keep_live(info.session_id, account_id, device_id, text))

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

        def job(conn: Any) -> int:
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

    async def request(
        self, link: RemoteLink, kind: str, body: dict[str, Any], timeout: float
    ) -> dict[str, Any]:
        request_id = secrets.token_hex(12)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._answers[request_id] = future
        text = json.dumps(body, separators=(",", ":"))

        def job(conn: Any) -> None:
            conn.execute(
                "INSERT INTO node_requests (id, origin, target, device_id, kind, body, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (request_id, self.node_id, link.node_id, link.device_id, kind, text, time.time()),
            )
            self.db.notify(conn, REQUEST, f"{link.node_id} {request_id}")

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
        if "error" in answer:
            raise _error_from(answer["error"])
        result: dict[str, Any] = answer["ok"]
        return result

    async def _serve_request(self, request_id: str) -> None:
        rows = await self._run(
            "SELECT origin, device_id, kind, body FROM node_requests WHERE id = ?", (request_id,)
        )
        if not rows:
            return
        origin, device_id, kind, text = rows[0]
        body = json.loads(text)
        answer: dict[str, Any]
        try:
            link = self.state.live.local.get(device_id)
            if link is None or link.closed:
                raise Conflict(
                    "the Mac is offline; start its agent or wait for it to reconnect",
                    code="device_offline",
                    device_id=device_id,
                )
            if kind == "command":
                message = Command.model_validate(body["message"])
                result = await link.command(
                    message.session_id, message.parsed_args(), float(body["timeout"])
                )
                answer = {"ok": result.model_dump(mode="json")}
            elif kind == "history":
                history = await link.history(
                    body["session_id"], int(body["before"]), int(body["limit"]),
                    float(body["timeout"]),
                )  # fmt: skip
                answer = {"ok": history.model_dump(mode="json")}
            elif kind == "close":
                link.fail_pending()
                await link.close(int(body["code"]), str(body["reason"]))
                answer = {"ok": {}}
            else:
                raise Conflict(f"unknown request {kind!r}", code="bad_request")
        except RelayError as exc:
            answer = {"error": _error_body(exc)}
        except Exception as exc:  # a bug here must reach the caller as an answer, not a wait
            _log.exception("request %s from node %s failed", kind, origin)
            answer = {"error": {"status": 500, "code": "internal", "message": str(exc)[:500]}}
        text = json.dumps(answer, separators=(",", ":"))

        def job(conn: Any) -> None:
            conn.execute("UPDATE node_requests SET answer = ? WHERE id = ?", (text, request_id))
            self.db.notify(conn, ANSWER, f"{origin} {request_id}")

        await self.state.store.write(job)

    async def _take_answer(self, request_id: str) -> None:
        future = self._answers.get(request_id)
        if future is None or future.done():
            return
        rows = await self._run(
            "DELETE FROM node_requests WHERE id = ? RETURNING answer", (request_id,)
        )
        if rows and rows[0][0] is not None and not future.done():
            future.set_result(json.loads(rows[0][0]))

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
            await self._on_events(json.loads(payload))
        elif channel == BUS:
            if payload.startswith("@"):
                rows = await self._run(
                    "SELECT body FROM node_messages WHERE id = ?", (int(payload[1:]),)
                )
                if not rows:
                    return
                payload = str(rows[0][0])
            self._on_bus(json.loads(payload))
        elif channel in (REQUEST, ANSWER):
            node, _, request_id = payload.partition(" ")
            if node != self.node_id:
                return
            if channel == REQUEST:
                self._spawn(self._serve_request(request_id))
            else:
                await self._take_answer(request_id)

    async def _on_events(self, note: dict[str, Any]) -> None:
        if note.get("n") == self.node_id:
            return  # published here after commit already (relay/app.py)
        hub = self.state.hub
        session_id = str(note["s"])
        if not hub.has_viewers(session_id):
            return
        last = int(note["l"])
        delivered = hub.latest.get(session_id, 0)
        if last <= delivered:
            return
        inline = note.get("e")
        if inline is not None:
            events = [
                (int(e["seq"]), json.dumps(e, ensure_ascii=False, separators=(",", ":")))
                for e in inline
            ]
        else:
            # Too large to travel in the notification: from the store, after what was delivered
            # (or just the newest, whose gap each stream fills from the store itself).
            first = delivered + 1 if delivered else last
            events = await self.state.store.read_events(
                session_id, max(first, int(note["f"])), last
            )
        if events:
            hub.publish_events(session_id, events)

    def _on_bus(self, message: dict[str, Any]) -> None:
        kind = message.get("t")
        if message.get("from") == self.node_id:
            return  # PostgreSQL delivers a node its own notifications too
        state = self.state
        if kind == "acct":
            state.hub.publish_account(message["a"], message["e"], message["b"], forward=False)
        elif kind == "live":
            info = SessionInfo.model_validate(message["i"])
            if message["d"] not in state.live.local:
                state.live.sessions[info.session_id] = info
        elif kind == "link":
            device_id = message["d"]
            local = state.live.local.get(device_id)
            if local is not None:
                # The same Mac linked to another node: that link is the newer one.
                local.replaced = True
                local.fail_pending()
                self._spawn(
                    local.close(CLOSE_REPLACED, "replaced by a newer link from the same Mac")
                )
                state.live.detach(local)
            state.live.remote[device_id] = RemoteLink(
                device_id, message["a"], message.get("m") or device_id, message["n"], self
            )
        elif kind == "unlink":
            device_id = message["d"]
            remote = state.live.remote.get(device_id)
            if remote is not None and remote.node_id == message["n"]:
                self._drop_remote(device_id)
        elif kind == "resync":
            state.hub.resync_session(message["s"], message["r"], forward=False)
        elif kind == "revoke":
            state.hub.revoke(list(message["h"]), forward=False)
        elif kind == "nudge":
            handler = state.nudge_handlers.get(str(message.get("k")))
            if handler is not None:
                handler(str(message["s"]))

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` beside the loop that heard it, kept until done (cancelled on close)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._served.add(task)
        task.add_done_callback(self._served.discard)

    def _drop_remote(self, device_id: str) -> None:
        remote = self.state.live.remote.pop(device_id, None)
        if remote is not None:
            remote.closed = True

    def _broadcast(self, message: dict[str, Any]) -> None:
        if not self._closing:
            message["from"] = self.node_id
            self._outbox.put_nowait(json.dumps(message, separators=(",", ":"), default=str))

    async def _send(self) -> None:
        """Send bus messages in order, on a connection of their own (the listener only listens)."""
        import psycopg

        conn: Any = None
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

    async def _notify_bus(self, conn: Any, payload: str) -> None:
        if len(payload.encode()) > NOTIFY_LIMIT:
            # Too large for a notification: the message waits in a table, the notification
            # names it.
            cursor = await conn.execute(
                "INSERT INTO node_messages (created_at, body) VALUES (%s, %s) RETURNING id",
                (time.time(), payload),
            )
            row = await cursor.fetchone()
            payload = f"@{row[0]}"
        await conn.execute("SELECT pg_notify(%s, %s)", (BUS, payload))

    async def _resume(self) -> None:
        """Listening (again): read what the other nodes hold, catch the viewers up."""
        await self._refresh_links(load_live=True)
        hub = self.state.hub
        if self._resumed_once:
            for session_id in hub.viewed_sessions():
                sessions = await self._run(
                    "SELECT account_id FROM sessions WHERE id = ?", (session_id,)
                )
                if not sessions:
                    continue
                session = await self.state.store.get_session(str(sessions[0][0]), session_id)
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
