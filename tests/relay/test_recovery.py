"""`kill -9` of the relay in the middle of a 10,000-event replay, then a restart: the phone ends
with seq 1..N exactly once, in order, and the Mac's archive is complete."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.store import Store
from tests.support.relay import SSEReader, archived, free_port
from wire import config as configmod
from wire.client import MacLink
from wire.protocol import DeviceInfo, LineRecord, NumberedEvent

TOTAL_LINES = 10_000
BATCH = 100
KILL_AFTER_BATCHES = 45


def start_relay(data: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    data.mkdir(parents=True, exist_ok=True)  # on PostgreSQL the store makes no folder
    log = data / "relay.log"
    with log.open("ab") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "relay", "--data", str(data), "--port", str(port),
             "--log-level", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env=env,
        )  # fmt: skip
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(log.read_text())
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200:
                return proc
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("relay did not start")


def lines(count: int) -> list[LineRecord]:
    out = []
    for i in range(count):
        ident = str(uuid.uuid4())
        text = json.dumps(
            {
                "type": "user",
                "uuid": ident,
                "sessionId": "conv",
                "message": {"role": "user", "content": f"n{i}"},
            }
        )
        out.append(LineRecord(offset=i * 200, text=text, uuid=ident))
    return out


class Mac:
    """Pushes batches like the agent: a batch is forgotten only after its ack; on a broken link
    it reconnects (saying hello with its archive) and sends the unacked batch again."""

    def __init__(self, url: str, token: str) -> None:
        self.link = MacLink(url, token, DeviceInfo(name="mac"))
        self.reconnects = 0

    async def connect(self) -> None:
        deadline = time.monotonic() + 30
        while True:
            try:
                await self.link.connect(open_timeout=2)
                return
            except (OSError, Exception):
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)

    async def push(self, session_id: str, batch: list[LineRecord]) -> int:
        while True:
            try:
                ack = await self.link.send_lines(session_id, "conv", batch, timeout=5)
                return ack.last_seq
            except (ConnectionError, TimeoutError, OSError, Exception):
                self.reconnects += 1
                await self.link.abort()
                self.link = MacLink(self.link.relay_url, self.link.token, self.link.device,
                                    archive=self.link.archive)  # fmt: skip
                await self.connect()


async def phone(url: str, token: str, session_id: str, total: int, out: list[int]) -> int:
    """An SSE client that reconnects with Last-Event-ID, as a browser's EventSource does."""
    reconnects = 0
    headers = {"Authorization": f"Bearer {token}"}
    deadline = time.monotonic() + 120
    while (not out or out[-1] < total) and time.monotonic() < deadline:
        if out:
            headers["Last-Event-ID"] = str(out[-1])
        try:
            async with (
                httpx.AsyncClient(base_url=url, headers=headers, timeout=10) as c,
                c.stream("GET", f"/api/sessions/{session_id}/stream") as r,
            ):
                if r.status_code != 200:
                    await asyncio.sleep(0.1)
                    continue
                reader = SSEReader(r)
                while not out or out[-1] < total:
                    msg = await reader.next(timeout=10)
                    if msg.event == "event":
                        out.append(int(msg.id or 0))
        except (httpx.HTTPError, EOFError, TimeoutError, OSError):
            reconnects += 1
            await asyncio.sleep(0.1)
    return reconnects


@pytest.mark.slow
def test_kill_9_during_a_10000_event_replay_loses_and_doubles_nothing(
    tmp_path: Path, relay_overrides: Callable[[], dict[str, Any]]
) -> None:
    data = tmp_path / "relay"
    settings = {"events_kept": TOTAL_LINES, **relay_overrides()}
    cfg = configmod.load({"data_dir": str(data), **settings}, environ={})
    store = Store(cfg)
    account = store.ensure_account()
    device_token, _, _ = store.create_token(account, "device", "mac")
    phone_token, _, _ = store.create_token(account, "phone", "phone")
    store.close()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    # The relay's process reads the same settings from its environment (CB_EVENTS_KEPT, ...).
    env = {**os.environ, **{f"CB_{k.upper()}": str(v) for k, v in settings.items()}}
    proc = start_relay(data, port, env)
    session_id = str(uuid.uuid4())
    all_lines = lines(TOTAL_LINES)

    async def run() -> tuple[list[int], int, int, dict[int, NumberedEvent]]:
        nonlocal proc
        mac = Mac(url, device_token)
        await mac.connect()
        await mac.push(session_id, all_lines[:1])
        seen: list[int] = []
        viewer = asyncio.create_task(phone(url, phone_token, session_id, TOTAL_LINES, seen))
        for index, start in enumerate(range(1, TOTAL_LINES, BATCH)):
            if index == KILL_AFTER_BATCHES:
                # Kill while the Mac is mid-batch: the batch may or may not be committed.
                pending = asyncio.create_task(
                    mac.push(session_id, all_lines[start : start + BATCH])
                )
                await asyncio.sleep(0.005)
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                proc = start_relay(data, port, env)
                await pending
                continue
            await mac.push(session_id, all_lines[start : start + BATCH])
        phone_reconnects = await asyncio.wait_for(viewer, 120)
        await mac.link.wait_for_seq(session_id, TOTAL_LINES, timeout=30)
        archive = dict(archived(mac.link)[session_id])
        await mac.link.close()
        return seen, phone_reconnects, mac.reconnects, archive

    try:
        seen, phone_reconnects, mac_reconnects, archive = asyncio.run(run())
        page_seqs: list[int] = []
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {phone_token}"}) as c:
            after = 0
            while True:
                page = c.get(f"/api/sessions/{session_id}/events", params={"after": after}).json()
                page_seqs += [e["seq"] for e in page["events"]]
                if not page["has_more"]:
                    break
                after = page_seqs[-1]
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    assert mac_reconnects >= 1 and phone_reconnects >= 1  # the kill really cut both
    assert seen == list(range(1, TOTAL_LINES + 1))
    assert page_seqs == list(range(1, TOTAL_LINES + 1))
    assert sorted(archive) == list(range(1, TOTAL_LINES + 1))
