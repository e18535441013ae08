"""The link client: a Mac on the link, connecting with a device token and speaking the protocol.

The agent's link (agent/link.py) is built on ``MacLink``; ``claude-bridge replay`` uses it to push
transcripts (demo data, load tests) and the test suite uses it as a scripted Mac. It keeps the
numbered events the relay sends back (its archive), answers history requests from that archive,
and hands commands to a handler. Transcript lines are read by ``wire.transcript``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import websockets
from pydantic import ValidationError
from websockets.asyncio.client import ClientConnection

from wire.errors import LinkLost
from wire.errors import LinkRefused as LinkRefused
from wire.protocol import (
    Ack,
    Command,
    CommandResult,
    DecisionAck,
    DeviceInfo,
    Events,
    Hello,
    History,
    HistoryRequest,
    LineRecord,
    Lines,
    LinkError,
    NumberedEvent,
    Pong,
    SessionInfo,
    SessionPosition,
    SessionUpdate,
    Welcome,
    relay_message,
)
from wire.tasks import TaskSet

CommandHandler = Callable[[Command], Awaitable[CommandResult]]
DecisionAckHandler = Callable[[DecisionAck], None]

_log = logging.getLogger("wire.client")
LINK_TASKS = "mac link"  # the owner named in the link's task names and log lines


class Archive(Protocol):
    """Where a Mac keeps the numbered events the relay sends back."""

    def positions(self) -> list[SessionPosition]: ...
    def add(self, session_id: str, epoch: str, events: list[NumberedEvent]) -> None: ...
    def set_epoch(self, session_id: str, epoch: str) -> None: ...
    def read(self, session_id: str, first: int, last: int) -> list[NumberedEvent]: ...
    def last_seq(self, session_id: str) -> int: ...


class MemoryArchive(dict[str, dict[int, NumberedEvent]]):
    """An archive in memory (replays and tests): session id → seq → event, plus epochs."""

    def __init__(self) -> None:
        super().__init__()
        self.epochs: dict[str, str] = {}

    def positions(self) -> list[SessionPosition]:
        return [
            SessionPosition(
                session_id=sid, last_seq=max(events, default=0), epoch=self.epochs.get(sid)
            )
            for sid, events in self.items()
        ]

    def add(self, session_id: str, epoch: str, events: list[NumberedEvent]) -> None:
        self.epochs[session_id] = epoch
        store = self.setdefault(session_id, {})
        for event in events:
            store[event.seq] = event

    def set_epoch(self, session_id: str, epoch: str) -> None:
        self.epochs[session_id] = epoch

    def read(self, session_id: str, first: int, last: int) -> list[NumberedEvent]:
        events = self.get(session_id, {})
        return [events[s] for s in range(first, last + 1) if s in events]

    def last_seq(self, session_id: str) -> int:
        return max(self.get(session_id, {}), default=0)


@contextlib.contextmanager
def map_websockets_errors(*, opening: bool = False) -> Iterator[None]:
    """Translate websockets' errors into the package's own (wire/errors.py), in this one place.

    While the link is being opened (``opening``) a close from the relay is a refusal, with the
    close code read from the close frame; later it is a lost link.
    """
    try:
        yield
    except websockets.exceptions.InvalidStatus as exc:
        status = exc.response.status_code
        raise LinkRefused(f"the relay refused the link: HTTP {status}", status=status) from exc
    except websockets.exceptions.ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd else None
        if opening:
            reason = exc.rcvd.reason if exc.rcvd else str(exc)
            raise LinkRefused(f"the relay closed the link: {reason}", close_code=code) from exc
        raise LinkLost(str(exc), close_code=code) from exc
    except websockets.exceptions.WebSocketException as exc:
        raise LinkLost(str(exc)) from exc


def link_url(relay_url: str) -> str:
    base = relay_url.rstrip("/")
    if base.startswith("https://"):
        base = "wss://" + base[len("https://") :]
    elif base.startswith("http://"):
        base = "ws://" + base[len("http://") :]
    return base + "/api/agent/link"


def session_update_json(info: SessionInfo) -> str:
    """A session_update carrying only the fields that were set: absent means "unchanged"."""
    message = SessionUpdate(session=info)
    body = message.model_dump(mode="json")
    body["session"] = info.model_dump(mode="json", exclude_unset=True)
    body["session"]["session_id"] = info.session_id
    return json.dumps(body, separators=(",", ":"))


@dataclass
class MacLink:
    relay_url: str
    token: str
    device: DeviceInfo = field(default_factory=lambda: DeviceInfo(name="replay"))
    on_command: CommandHandler | None = None
    archive: Archive = field(default_factory=MemoryArchive)
    on_decision_ack: DecisionAckHandler | None = None
    errors: list[LinkError] = field(default_factory=list)
    welcome: Welcome | None = None
    _ws: ClientConnection | None = None
    _reader: asyncio.Task[None] | None = None
    _acks: dict[int, asyncio.Future[Ack]] = field(default_factory=dict)
    _batches: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    # The reader and the commands and history requests it hands on: closed with the link.
    _tasks: TaskSet = field(default_factory=lambda: TaskSet(LINK_TASKS, _log))
    _events_seen: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def connect(self, *, open_timeout: float = 10.0) -> Welcome:
        if self._tasks.closed:  # connected again after a close
            self._tasks = TaskSet(LINK_TASKS, _log)
        with map_websockets_errors(opening=True):
            self._ws = await websockets.connect(
                link_url(self.relay_url),
                additional_headers={"Authorization": f"Bearer {self.token}"},
                open_timeout=open_timeout,
                max_size=None,
            )
            await self._ws.send(
                Hello(device=self.device, sessions=self.archive.positions()).model_dump_json()
            )
            first = await asyncio.wait_for(self._ws.recv(), open_timeout)
        welcome = relay_message.validate_json(first)
        if not isinstance(welcome, Welcome):
            raise LinkRefused(f"expected welcome, got {first[:200]!r}")
        self.welcome = welcome
        for pos in welcome.sessions:
            if pos.epoch:
                self.archive.set_epoch(pos.session_id, pos.epoch)
        self._reader = self._tasks.start(self._read(), name="reader")
        return welcome

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        # Cancelled and awaited, so no command is left half-run behind a closed link (a command
        # that closes the link itself goes on to its end).
        await self._tasks.close()

    async def abort(self) -> None:
        """Drop the connection without a closing handshake (a crash or a cut network)."""
        if self._ws is not None:
            self._ws.transport.abort()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader

    @property
    def connected(self) -> bool:
        return self._reader is not None and not self._reader.done()

    async def wait_closed(self, timeout: float) -> bool:
        """Wait until the link closes, at most ``timeout`` seconds; answers whether it did."""
        if self._reader is None:
            return True
        done, _ = await asyncio.wait({self._reader}, timeout=timeout)
        return bool(done)

    async def send_lines(
        self,
        session_id: str,
        conversation_id: str,
        lines: list[LineRecord],
        *,
        cwd: str | None = None,
        timeout: float = 30.0,
    ) -> Ack:
        """Send one batch and wait until the relay says it is durably stored."""
        assert self._ws is not None, "connect() first"
        batch = next(self._batches)
        future: asyncio.Future[Ack] = asyncio.get_running_loop().create_future()
        self._acks[batch] = future
        message = Lines(
            batch=batch,
            session_id=session_id,
            conversation_id=conversation_id,
            lines=lines,
            cwd=cwd,
        )
        try:
            with map_websockets_errors():
                await self._ws.send(message.model_dump_json())
            return await asyncio.wait_for(future, timeout)
        finally:
            self._acks.pop(batch, None)

    async def update(self, info: SessionInfo) -> None:
        assert self._ws is not None, "connect() first"
        with map_websockets_errors():
            await self._ws.send(session_update_json(info))

    async def send_raw(self, text: str) -> None:
        assert self._ws is not None, "connect() first"
        with map_websockets_errors():
            await self._ws.send(text)

    async def wait_for_seq(self, session_id: str, seq: int, timeout: float = 10.0) -> None:
        """Wait until the archive holds every event of the session up to ``seq``."""
        async with self._events_seen:
            await asyncio.wait_for(
                self._events_seen.wait_for(lambda: self.archive.last_seq(session_id) >= seq),
                timeout,
            )

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for raw in self._ws:
                try:
                    message = relay_message.validate_json(raw)
                except ValidationError as exc:
                    # A message this Mac cannot read (a newer relay's, or a bug) is skipped:
                    # it must not end the link.
                    _log.warning("skipped a relay message it cannot read: %s", str(exc)[:300])
                    continue
                if isinstance(message, Ack):
                    self.archive.set_epoch(message.session_id, message.epoch)
                    future = self._acks.get(message.batch)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif isinstance(message, Events):
                    self.archive.add(message.session_id, message.epoch, message.events)
                    async with self._events_seen:
                        self._events_seen.notify_all()
                elif isinstance(message, Command):
                    # Named by the command's name only: its id is the relay's text, any length.
                    self._tasks.start(self._run_command(message), name=f"command {message.name}")
                elif isinstance(message, HistoryRequest):
                    self._tasks.start(self._answer_history(message), name="history request")
                elif isinstance(message, LinkError):
                    self.errors.append(message)
                    future = self._acks.get(message.batch) if message.batch is not None else None
                    if future is not None and not future.done():
                        future.set_exception(LinkRefused(f"{message.code}: {message.message}"))
                elif isinstance(message, DecisionAck):
                    if self.on_decision_ack is not None:
                        self.on_decision_ack(message)
                elif isinstance(message, Pong):
                    pass
        except websockets.exceptions.ConnectionClosed:
            pass
        finally:
            for future in self._acks.values():
                if not future.done():
                    future.set_exception(LinkLost("the link closed before the ack"))

    async def _run_command(self, command: Command) -> None:
        if self.on_command is None:
            result = CommandResult(
                command_id=command.command_id,
                ok=False,
                code="not_supported",
                error="this Mac (a replay) does not run commands",
            )
        else:
            result = await self.on_command(command)
            result.command_id = command.command_id
        assert self._ws is not None
        with contextlib.suppress(websockets.exceptions.ConnectionClosed):
            await self._ws.send(result.model_dump_json())

    async def _answer_history(self, request: HistoryRequest) -> None:
        wanted = self.archive.read(
            request.session_id, max(1, request.before - request.limit), request.before - 1
        )
        assert self._ws is not None
        with contextlib.suppress(websockets.exceptions.ConnectionClosed):
            await self._ws.send(
                History(request_id=request.request_id, events=wanted).model_dump_json()
            )
