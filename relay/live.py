"""What the relay knows only while Macs are connected: their links and sessions' live side.

Session states, cards, held messages and previews are computed by the agent and never stored;
the relay keeps the latest it was told, per session, and forgets it when the Mac goes away.
Commands to a Mac go through its :class:`DeviceLink` and wait for the Mac's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from relay.errors import Conflict, GatewayTimeout
from wire.protocol import (
    Command,
    CommandArgs,
    CommandResult,
    History,
    HistoryRequest,
    SessionInfo,
)

SendText = Callable[[str], Awaitable[None]]
CloseSocket = Callable[[int, str], Awaitable[None]]


@dataclass(eq=False)
class DeviceLink:
    device_id: str
    account_id: str
    name: str
    send_text: SendText
    close_socket: CloseSocket | None = None
    pending: dict[str, asyncio.Future[Any]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closed: bool = False
    replaced: bool = False  # a newer link of the same Mac took over
    # Set once ``welcome`` is sent: the link is listed before that (so a newer link can replace
    # it), but a command or request sent earlier would reach a Mac still waiting for welcome.
    welcomed: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, text: str) -> None:
        # One sender at a time: commands from HTTP handlers interleave with acks.
        async with self.lock:
            await self.send_text(text)

    async def _request(self, request_id: str, text: str, timeout: float) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        try:
            async with asyncio.timeout(timeout):
                await self.welcomed.wait()
            if future.done():  # the link failed before its welcome
                return await future
            await self.send(text)
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise GatewayTimeout(
                f"the Mac '{self.name}' did not answer within {timeout:g} s; try again",
                code="device_timeout",
            ) from None
        finally:
            self.pending.pop(request_id, None)

    async def command(self, session_id: str, args: CommandArgs, timeout: float) -> CommandResult:
        """Send the command ``args`` belong to and wait for the Mac's result."""
        command_id = secrets.token_hex(8)
        message = Command.of(command_id, session_id, args)
        result: CommandResult = await self._request(command_id, message.model_dump_json(), timeout)
        return result

    async def history(self, session_id: str, before: int, limit: int, timeout: float) -> History:
        request_id = secrets.token_hex(8)
        message = HistoryRequest(
            request_id=request_id, session_id=session_id, before=before, limit=limit
        )
        result: History = await self._request(request_id, message.model_dump_json(), timeout)
        return result

    async def close(self, code: int, reason: str) -> None:
        """Close the socket; one that is already closed or broken is fine (it is what we want)."""
        if self.close_socket is not None:
            with contextlib.suppress(Exception):
                await self.close_socket(code, reason)

    def resolve(self, request_id: str, value: Any) -> bool:
        future = self.pending.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(value)
        return True

    def fail_pending(self) -> None:
        self.closed = True
        self.welcomed.set()  # wake requests waiting for a welcome that will not come
        for future in self.pending.values():
            if not future.done():
                future.set_exception(
                    Conflict(f"the Mac '{self.name}' went offline", code="device_offline")
                )


class Link(Protocol):
    """A Mac's link as callers use it: this node's own (DeviceLink) or another node's
    (relay/cluster.py RemoteLink), with the same methods, timeouts and errors."""

    device_id: str
    account_id: str
    name: str
    closed: bool

    async def command(
        self, session_id: str, args: CommandArgs, timeout: float
    ) -> CommandResult: ...

    async def history(
        self, session_id: str, before: int, limit: int, timeout: float
    ) -> History: ...

    async def close(self, code: int, reason: str) -> None: ...

    def fail_pending(self) -> None: ...


class NodeLink(Link, Protocol):
    """A Mac linked to another relay node (relay/cluster.py ``RemoteLink``): which node."""

    node_id: str


class Live:
    def __init__(self) -> None:
        self.local: dict[str, DeviceLink] = {}  # the Macs linked to this node
        # Macs linked to another relay node of the cluster (relay/cluster.py), by device id.
        self.remote: dict[str, NodeLink] = {}
        self.sessions: dict[str, SessionInfo] = {}

    @property
    def links(self) -> dict[str, Link]:
        """Every linked Mac, here or on another node."""
        if not self.remote:
            return dict(self.local)
        return {**self.remote, **self.local}

    def link(self, device_id: str) -> Link | None:
        return self.local.get(device_id) or self.remote.get(device_id)

    def require_link(self, device_id: str, device_name: str = "") -> Link:
        link = self.link(device_id)
        if link is None or link.closed:
            label = f"'{device_name}'" if device_name else device_id
            raise Conflict(
                f"the Mac {label} is offline; start its agent or wait for it to reconnect",
                code="device_offline",
                device_id=device_id,
            )
        return link

    def attach(self, link: DeviceLink) -> DeviceLink | None:
        """Register a link; return the one it replaces (the newest connection wins)."""
        old = self.local.get(link.device_id)
        self.local[link.device_id] = link
        return old

    def detach(self, link: DeviceLink) -> bool:
        if self.local.get(link.device_id) is link:
            del self.local[link.device_id]
            return True
        return False

    def update(self, info: SessionInfo) -> SessionInfo:
        """Merge a Mac's report into what is known of the session's live side."""
        current = self.sessions.get(info.session_id)
        if current is None:
            merged = info.model_copy()
        else:
            # Merge the values themselves (not dumped dicts): a card stays a Card.
            changes = {k: getattr(info, k) for k in info.model_fields_set if k != "clear_card"}
            merged = current.model_copy(update=changes)
        if info.clear_card:
            merged.card = None
        merged.clear_card = False
        self.sessions[info.session_id] = merged
        return merged

    def forget_device_sessions(self, session_ids: list[str]) -> None:
        for session_id in session_ids:
            self.sessions.pop(session_id, None)
