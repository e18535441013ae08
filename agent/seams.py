"""The agent's three seams to the outside, as interfaces (the way httpx injects its transport).

``Agent`` talks to tmux through a ``Multiplexer`` (agent/mux.py's ``Mux``), to the relay through
an ``AgentLink`` (agent/link.py's ``RelayLink``) and hears Claude Code's hooks through a
``HookEndpoint`` (agent/hookserver.py's ``HookServer``). Each is passed in, or built by default;
tests/support/agent_fakes.py has an in-memory fake of each, so the daemon's logic runs without tmux, a
relay or a socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel

from agent.hookserver import OnHook, SecretFor
from agent.mux import Capture, LastScreen, Pane
from wire.client import Archive, CommandHandler, DecisionAckHandler
from wire.protocol import Ack, DeviceInfo, LineRecord, SessionInfo, Welcome


class Multiplexer(Protocol):
    """The terminal multiplexer the sessions run in (tmux)."""

    async def new_session(
        self,
        name: str,
        cwd: str | Path,
        argv: Sequence[str],
        env: Mapping[str, str],
        width: int,
        height: int,
    ) -> Pane: ...
    async def panes(self) -> dict[str, Pane]: ...
    async def capture(self, name: str, pane: Pane | None = None) -> Capture: ...
    async def last_screen(self, name: str) -> LastScreen: ...
    async def send_keys(self, name: str, groups: Sequence[Sequence[str]]) -> None: ...
    async def paste(self, name: str, text: str, *, enter: bool = True) -> None: ...
    async def kill(self, name: str) -> None: ...
    async def close(self) -> None: ...


class AgentLink(Protocol):
    """The link to the relay: sends raise agent.errors.NotLinked while it is down."""

    device: DeviceInfo
    linked: asyncio.Event
    on_decision_ack: DecisionAckHandler | None

    def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def send_lines(
        self, session_id: str, conversation_id: str, lines: list[LineRecord], cwd: str | None
    ) -> Ack: ...
    async def send(self, message: BaseModel) -> None: ...
    async def update(self, info: SessionInfo) -> None: ...


class HookEndpoint(Protocol):
    """Where the sessions' hooks report (a loopback HTTP server)."""

    @property
    def port(self) -> int: ...
    async def start(self) -> None: ...
    async def close(self) -> None: ...


OnLinked = Callable[[Welcome], Awaitable[None]]
OnUnlinked = Callable[[], None]
# Builders, called by the agent with its own handlers: the link's and the hooks' callbacks.
LinkFactory = Callable[[Archive, CommandHandler, OnLinked, OnUnlinked], AgentLink]
HookFactory = Callable[[SecretFor, OnHook], HookEndpoint]
