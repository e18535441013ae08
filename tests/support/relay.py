"""The real relay under uvicorn on 127.0.0.1, its accounts and tokens, a Mac link, SSE reading."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from relay.app import create_app, server_options
from relay.state import RelayState
from wire import config as configmod
from wire.client import MacLink, MemoryArchive
from wire.protocol import DeviceInfo

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRANSCRIPTS = FIXTURES / "transcripts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Account:
    name: str
    account_id: str
    phone_token: str
    phone_id: str
    device_token: str
    device_id: str


class RelayServer:
    """A real relay: uvicorn serving the app in a background thread on its own event loop."""

    def __init__(self, data_dir: Path, **overrides: Any) -> None:
        self.port = free_port()
        self.config = configmod.load(
            {"data_dir": str(data_dir), "port": self.port, **overrides}, environ={}
        )
        self.app = create_app(self.config)
        self.server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                host="127.0.0.1",
                port=self.port,
                log_level="warning",
                timeout_graceful_shutdown=1,
                **server_options(self.config),  # as `claude-bridge relay` starts it (cli/common.py)
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def state(self) -> RelayState:
        state: RelayState = self.app.state.relay
        return state

    def start(self) -> RelayServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the relay did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def account(self, name: str | None = None) -> Account:
        """A fresh account with one phone and one Mac: tests stay isolated on a shared relay."""
        store = self.state.store
        name = name or f"acct-{secrets.token_hex(4)}"
        account_id = store.ensure_account(name)
        phone_token, _, phone_id = store.create_token(account_id, "phone", "test phone")
        device_token, _, device_id = store.create_token(account_id, "device", "test mac")
        return Account(name, account_id, phone_token, phone_id, device_token, device_id)


def agent_link(url: str, token: str) -> Any:
    """The agent's own relay link (agent/link.py: reconnects, keeps what is unacknowledged),
    with no command expected and nothing to do on linking; ``start()`` it, ``stop()`` it."""
    from agent.link import RelayLink
    from wire.client import MemoryArchive
    from wire.protocol import Command, CommandResult, Welcome

    async def on_command(_: Command) -> CommandResult:
        raise AssertionError("no command expected")

    async def on_linked(_: Welcome) -> None:
        return None

    return RelayLink(url, token, DeviceInfo(name="agent"), MemoryArchive(), on_command, on_linked)


def fail_first_ingest(server: RelayServer) -> None:
    """The relay's first ingest raises a bug of its own (as a line nobody foresaw would); the
    ones after it work."""
    store = server.state.store
    real_ingest = store.ingest
    calls = 0

    async def flaky(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise ZeroDivisionError("a bug in one message's handling")
        return await real_ingest(*args, **kwargs)

    store.ingest = flaky  # type: ignore[method-assign]


def phone_client(server: RelayServer, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=15)


def archived(link: MacLink) -> MemoryArchive:
    """The events a test's Mac kept: its archive is in memory (session id → seq → event)."""
    assert isinstance(link.archive, MemoryArchive), type(link.archive)
    return link.archive


@contextlib.asynccontextmanager
async def mac(server: RelayServer, token: str, **kwargs: Any) -> AsyncIterator[MacLink]:
    link = MacLink(server.url, token, DeviceInfo(name=kwargs.pop("name", "test mac")), **kwargs)
    await link.connect()
    try:
        yield link
    finally:
        await link.close()


@dataclass
class SSEMessage:
    event: str
    data: str
    id: str | None


class SSEReader:
    """A plain SSE client over httpx: one frame at a time, keep-alives counted and skipped (the
    ``heartbeat`` events of relay/sse.py in ``heartbeats``, and with comments in ``comments``)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._lines = response.aiter_lines()
        self.comments = 0
        self.heartbeats = 0

    async def next(self, timeout: float = 10.0) -> SSEMessage:
        return await asyncio.wait_for(self._next(), timeout)

    async def _next(self) -> SSEMessage:
        event, ident = "message", None
        data: list[str] = []
        async for line in self._lines:
            if line == "":
                if data and event == "heartbeat":
                    self.heartbeats += 1
                    self.comments += 1
                    event, ident, data = "message", None, []
                elif data:
                    return SSEMessage(event, "\n".join(data), ident)
                continue
            if line.startswith(":"):
                self.comments += 1
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                event = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                ident = value
        raise EOFError("the stream ended")


def transcript(name_prefix: str) -> Path:
    matches = sorted(TRANSCRIPTS.glob(f"{name_prefix}*.jsonl"))
    assert matches, f"no fixture transcript {name_prefix}"
    return matches[0]
