"""Faults with the real Claude Code: the agent killed with -9, the link cut while Claude works,
the relay killed with -9 mid-stream. Real processes, real signals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from relay.store import Store
from tests.support.bridge import Bridge, seed_home
from tests.support.journeys import events, snapshot, start_session, wait_event, wait_state
from tests.support.macs import agent_process, wait_online
from tests.support.relay import SSEReader, free_port
from tests.support.waits import wait_for
from wire import config as configmod

pytestmark = pytest.mark.e2e


def test_agent_kill_9_mid_turn_loses_nothing_and_keeps_held_messages(bridge: Bridge) -> None:
    proc = agent_process(bridge, bridge.relay.url, bridge.account.device_token)
    try:
        cwd = bridge.folder()
        with bridge.phone() as phone:
            wait_online(phone, bridge.account.device_id)
            session_id = start_session(phone, bridge, cwd, prompt="BRIEF_SLOW please")
            wait_state(phone, session_id, "busy")
            held = phone.post(
                f"/api/sessions/{session_id}/messages", json={"text": "after the crash"}
            )
            assert held.json()["state"] == "held"
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            wait_online(phone, bridge.account.device_id, online=False)
            proc = agent_process(bridge, bridge.relay.url, bridge.account.device_token)
            wait_event(
                phone,
                session_id,
                lambda e: e["kind"] == "user" and e["text"] == "after the crash",
                "the held message",
            )
            wait_for(
                lambda: sum(e["kind"] == "assistant" for e in events(phone, session_id)) >= 2,
                40,
                "both answers",
            )
            listed = events(phone, session_id)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert [e["seq"] for e in listed] == list(range(1, len(listed) + 1))
    users = [e["text"] for e in listed if e["kind"] == "user"]
    assert users == ["BRIEF_SLOW please", "after the crash"]


class Cuttable:
    """A TCP proxy in front of the relay whose connections can be cut and refused for a while."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.refusing = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.writers: set[asyncio.StreamWriter] = set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.ready = threading.Event()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", self.port)
        )
        self.ready.set()
        self.loop.run_forever()
        server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.refusing.is_set():
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self.writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def start(self) -> Cuttable:
        self.thread.start()
        self.ready.wait(5)
        return self

    def cut(self) -> None:
        """Drop every connection at once and refuse new ones (a network that went away)."""
        self.refusing.set()

        def drop() -> None:
            for w in list(self.writers):
                w.transport.abort()
            self.writers.clear()

        self.loop.call_soon_threadsafe(drop)

    def heal(self) -> None:
        self.refusing.clear()


# The link stays cut until Claude has written its answer on the Mac, and at least this long
# (CB_TEST_LINK_CUT=30: a longer cut, the agent's reconnects backing off further).
LINK_CUT_SECONDS = float(os.environ.get("CB_TEST_LINK_CUT", "0"))
OFFLINE_ANSWER = "until it is finally done"  # the end of brief_slow's answer (scenarios.json)


def answer_written(home: Path, words: str) -> bool:
    """The Mac's claude wrote an assistant line holding ``words`` into one of its transcripts."""
    for path in (home / ".claude" / "projects").glob("*/*.jsonl"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                if words in line and json.loads(line).get("type") == "assistant":
                    return True
    return False


def test_link_cut_while_claude_works_loses_nothing(bridge: Bridge) -> None:
    proxy = Cuttable(bridge.relay.port).start()
    proc = agent_process(bridge, f"http://127.0.0.1:{proxy.port}", bridge.account.device_token)
    try:
        cwd = bridge.folder()
        with bridge.phone() as phone:
            wait_online(phone, bridge.account.device_id)
            session_id = start_session(phone, bridge, cwd, prompt="BRIEF_SLOW please")
            wait_state(phone, session_id, "busy")
            proxy.cut()
            wait_online(phone, bridge.account.device_id, online=False)
            cut_at = time.monotonic()
            # Claude finishes its answer while the Mac is cut off.
            wait_for(
                lambda: answer_written(bridge.home, OFFLINE_ANSWER), 60, "the answer on the Mac"
            )
            time.sleep(max(0.0, LINK_CUT_SECONDS - (time.monotonic() - cut_at)))
            assert snapshot(phone, session_id)["mark"] == "offline"
            proxy.heal()
            wait_online(phone, bridge.account.device_id)
            answer = wait_event(
                phone, session_id, lambda e: e["kind"] == "assistant", "the answer written offline"
            )
            assert "word after word" in answer["text"]
            listed = events(phone, session_id)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert [e["seq"] for e in listed] == list(range(1, len(listed) + 1))
    assert len({e.get("uuid") for e in listed if e["kind"] != "marker"}) == len(
        [e for e in listed if e["kind"] != "marker"]
    )


@pytest.fixture
def relay_process(tmp_path: Path) -> Iterator[dict[str, object]]:
    data = tmp_path / "relay-data"
    cfg = configmod.load({"data_dir": str(data)}, environ={})
    store = Store(cfg)
    account = store.ensure_account()
    device_token, _, device_id = store.create_token(account, "device", "mac")
    phone_token, _, _ = store.create_token(account, "phone", "phone")
    store.close()
    port = free_port()
    holder: dict[str, object] = {"port": port, "device_token": device_token, "device_id": device_id,
                                 "phone_token": phone_token, "data": data}  # fmt: skip

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "relay", "--data", str(data), "--port", str(port),
             "--log-level", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(
            lambda: httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200,
            20,
            "relay",
        )
        holder["proc"] = proc
        return proc

    holder["start"] = start
    start()
    yield holder
    proc = holder["proc"]
    assert isinstance(proc, subprocess.Popen)
    proc.kill()
    proc.wait()


def test_relay_kill_9_mid_stream_phone_sees_every_event_once(
    relay_process: dict[str, object], claude_bin: str, mock_api: str, tmp_path: Path
) -> None:
    from tests.support.relay import Account

    port = relay_process["port"]
    url = f"http://127.0.0.1:{port}"
    account = Account(
        "p",
        "",
        str(relay_process["phone_token"]),
        "",
        str(relay_process["device_token"]),
        str(relay_process["device_id"]),
    )
    bridge = Bridge(
        relay=None,  # type: ignore[arg-type]
        account=account,
        root=tmp_path / "mac",
        claude=claude_bin,
        api_url=mock_api,
    )
    seed_home(bridge.home, [])
    proc = agent_process(bridge, url, account.device_token)
    seen: list[int] = []
    stop = threading.Event()

    def phone_stream(session_id: str) -> None:
        """An EventSource-like reader: reconnects with Last-Event-ID after the relay dies."""

        async def run() -> None:
            headers = {"Authorization": f"Bearer {account.phone_token}"}
            while not stop.is_set():
                if seen:
                    headers["Last-Event-ID"] = str(seen[-1])
                try:
                    async with (
                        httpx.AsyncClient(base_url=url, headers=headers, timeout=5) as c,
                        c.stream("GET", f"/api/sessions/{session_id}/stream") as r,
                    ):
                        reader = SSEReader(r)
                        while not stop.is_set():
                            msg = await reader.next(timeout=2)
                            if msg.event == "event":
                                seen.append(int(msg.id or 0))
                except (httpx.HTTPError, EOFError, TimeoutError, OSError):
                    await asyncio.sleep(0.2)

        asyncio.run(run())

    try:
        cwd = os.path.realpath(tmp_path)
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {account.phone_token}"}, timeout=30
        ) as phone:
            wait_online(phone, account.device_id)
            bridge_cwd = str(tmp_path / "work")
            Path(bridge_cwd).mkdir()
            session_id = start_session(
                phone, bridge, os.path.realpath(bridge_cwd), prompt="hello one"
            )
            reader = threading.Thread(target=phone_stream, args=(session_id,), daemon=True)
            reader.start()
            wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "first answer")
            phone.post(f"/api/sessions/{session_id}/messages", json={"text": "BRIEF_SLOW please"})
            wait_state(phone, session_id, "busy")
        relay = relay_process["proc"]
        assert isinstance(relay, subprocess.Popen)
        relay.send_signal(signal.SIGKILL)
        relay.wait()
        time.sleep(1.0)
        start = relay_process["start"]
        assert callable(start)
        start()
        with httpx.Client(
            base_url=url, headers={"Authorization": f"Bearer {account.phone_token}"}, timeout=30
        ) as phone:
            wait_for(
                lambda: sum(e["kind"] == "assistant" for e in events(phone, session_id)) >= 2,
                60,
                "second answer",
            )
            last = snapshot(phone, session_id)["last_seq"]
            wait_for(lambda: seen and seen[-1] >= last, 30, "the phone caught up")
    finally:
        stop.set()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        subprocess.run(
            ["tmux", "-L", bridge.socket, "kill-server"], capture_output=True, check=False
        )
    assert seen == list(range(1, len(seen) + 1))
    assert cwd
