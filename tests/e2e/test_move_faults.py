"""A move cut by `kill -9` with the real Claude Code: the source agent, the target agent or the relay
killed while the folder is on its way, then started again. Whatever dies, the move ends in one of
the two states — the session on the target (done) or still on the source (failed, with the
reason) — never both and never neither, and its conversation goes on there with every event once.
Real processes, real signals: two agents and a relay, each its own process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.store import Store
from tests.support.bridge import Bridge, seed_home
from tests.support.journeys import (
    events,
    say_and_wait_answer,
    snapshot,
    start_session,
    wait_answered,
    wait_state,
)
from tests.support.macs import agent_process, git_folder, tmux_has, wait_online
from tests.support.relay import Account, free_port
from tests.support.waits import wait_for
from wire import config as configmod

pytestmark = pytest.mark.e2e

ROLE = {"a": "source agent", "b": "target agent", "relay": "relay"}
CHUNK = 64 * 1024  # small chunks: the transfer takes long enough to be cut in the middle
PAYLOAD = 24 * 1024 * 1024  # incompressible bytes in the folder: about 400 chunks


@dataclass
class World:
    url: str
    phone_token: str
    relay: subprocess.Popen[bytes]
    data: Path
    port: int
    a: Bridge
    b: Bridge
    agents: dict[str, subprocess.Popen[bytes]]

    def start_relay(self) -> None:
        self.relay = subprocess.Popen(
            [sys.executable, "-m", "cli", "relay", "--data", str(self.data), "--port",
             str(self.port), "--log-level", "warning"],
            env={**os.environ, "CB_MOVE_CHUNK_BYTES": str(CHUNK)},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_for(lambda: _healthy(self.url), 20, "the relay")

    def start_agent(self, side: str) -> None:
        mac = self.a if side == "a" else self.b
        self.agents[side] = agent_process(mac, self.url, mac.account.device_token)

    def kill(self, what: str) -> None:
        proc = self.relay if what == "relay" else self.agents[what]
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def phone(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.phone_token}"}, timeout=30
        )


def _healthy(url: str) -> bool:
    try:
        return httpx.get(url + "/api/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture
def world(tmp_path: Path, claude_bin: str, mock_api: str) -> Iterator[World]:
    data = tmp_path / "relay-data"
    store = Store(configmod.load({"data_dir": str(data)}, environ={}))
    account_id = store.ensure_account()
    phone_token, _, phone_id = store.create_token(account_id, "phone", "phone")
    macs = []
    for name in ("Studio", "Laptop"):
        token, _, device_id = store.create_token(account_id, "device", name)
        account = Account("p", account_id, phone_token, phone_id, token, device_id)
        mac = Bridge(
            relay=None,  # type: ignore[arg-type]  # the relay is a process of its own here
            account=account, root=tmp_path / name.lower(), claude=claude_bin, api_url=mock_api,
        )  # fmt: skip
        seed_home(mac.home, [])
        macs.append(mac)
    store.close()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    w = World(url, phone_token, None, data, port, macs[0], macs[1], {})  # type: ignore[arg-type]
    w.start_relay()
    try:
        w.start_agent("a")
        w.start_agent("b")
        yield w
    finally:
        for proc in [*w.agents.values(), w.relay]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for mac in macs:
            mac.kill_tmux()


def _trust(mac: Bridge, folder: str) -> None:
    """Claude Code there trusts the folder the session moves to (as a person would once)."""
    config = json.loads((mac.home / ".claude.json").read_text())
    config["projects"][folder] = {
        "hasTrustDialogAccepted": True,
        "hasCompletedProjectOnboarding": True,
    }
    (mac.home / ".claude.json").write_text(json.dumps(config))


@pytest.mark.parametrize("killed", ["a", "b", "relay"], ids=["source", "target", "relay"])
def test_a_move_cut_by_kill_9_ends_in_one_place_and_goes_on(world: World, killed: str) -> None:
    a, b = world.a, world.b
    source_cwd = a.folder("shop")
    git_folder(source_cwd)
    Path(source_cwd, "photo.bin").write_bytes(os.urandom(PAYLOAD))  # untracked, not ignored
    target_cwd = os.path.join(os.path.realpath(b.root), "shop-here")
    _trust(b, target_cwd)
    with world.phone() as phone:
        for mac in (a, b):
            wait_online(phone, mac.account.device_id)
        session_id = start_session(phone, a, source_cwd, prompt="hello from the studio")
        wait_answered(phone, session_id)
        begun = phone.post(
            f"/api/sessions/{session_id}/move",
            json={"device_id": b.account.device_id, "cwd": target_cwd},
        )
        assert begun.status_code == 202, begun.text

        # Cut it while the folder is on its way.
        deadline = time.monotonic() + 90
        seen = []
        while True:
            move = phone.get(f"/api/sessions/{session_id}/move").json()["move"]
            seen.append((round(time.monotonic(), 3), move["step"], move["bytes"], move["total"]))
            assert move["phase"] == "running", sorted(
                set((x[1], x[2]) for x in seen), key=lambda x: x[1]
            )  # not over before it could be cut
            if move["step"] == "sending" and move["bytes"] > 0:
                break
            assert time.monotonic() < deadline, move
            time.sleep(0.02)
    world.kill(killed)
    if killed == "relay":
        world.start_relay()
    else:
        world.start_agent(killed)
    with world.phone() as phone:

        def over() -> dict[str, Any] | None:
            try:
                move = phone.get(f"/api/sessions/{session_id}/move").json()["move"]
            except (httpx.HTTPError, KeyError):
                return None
            return move if move["phase"] in ("done", "failed") else None

        move = wait_for(over, 150, "the move over")
        print(f"\nkill -9 of the {ROLE[killed]} mid-transfer: the move ended {move['phase']}"
              + (f" ({move['error']['code']}: {move['error']['message']})" if move["error"] else ""))  # fmt: skip
        here, gone = (b, a) if move["phase"] == "done" else (a, b)
        snap = snapshot(phone, session_id)
        assert snap["device_id"] == here.account.device_id, (move, snap)
        assert snap["mark"] is None
        if move["phase"] == "failed":
            assert move["error"] and move["error"]["message"], move
            assert not Path(target_cwd).exists()  # what the target unpacked is gone
        # Exactly one Mac runs it: the other stopped its claude and forgot it.
        wait_for(lambda: not tmux_has(gone, session_id), 60, "the other Mac let it go")
        wait_for(lambda: tmux_has(here, session_id), 60, "its claude running where it is")
        for mac in (a, b):
            wait_online(phone, mac.account.device_id)
        snap = wait_state(phone, session_id, "idle", timeout=90)
        say_and_wait_answer(phone, session_id, "still there?", 90, "the conversation going on")
        history = events(phone, session_id)
    assert [e["seq"] for e in history] == list(range(1, len(history) + 1))
    users = [e["text"] for e in history if e["kind"] == "user"]
    assert users == ["hello from the studio", "still there?"], users
    moved_lines = [e for e in history if e.get("marker") == "moved"]
    assert len(moved_lines) == (1 if move["phase"] == "done" else 0)
