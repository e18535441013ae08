"""A session moved between two Macs with the real Claude Code against the fake API: two agents on
one machine, each with its own HOME, data folder and tmux socket. Moved when idle and moved now,
a git folder with uncommitted and untracked files, the conversation going on on the other Mac;
the refusals (too big, the folder differs, the other Mac offline)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.bridge import Bridge, seed_home
from tests.support.journeys import (
    events,
    say_and_wait_answer,
    snapshot,
    start_session,
    wait_answered,
    wait_card,
    wait_state,
)
from tests.support.macs import git, git_folder, tmux_has
from tests.support.relay import RelayServer
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def macs(
    relay: RelayServer, claude_bin: str, mock_api: str, tmp_path: Path
) -> Iterator[tuple[Bridge, Bridge]]:
    """Two Macs of one account, a and b."""
    account = relay.account()
    token, _, device_id = relay.state.store.create_token(account.account_id, "device", "Laptop")
    other = replace(account, device_token=token, device_id=device_id)
    a = Bridge(relay, account, tmp_path / "a", claude_bin, mock_api)
    b = Bridge(relay, other, tmp_path / "b", claude_bin, mock_api)
    for mac in (a, b):
        seed_home(mac.home, [])
    try:
        yield a, b
    finally:
        for mac in (a, b):
            mac.stop_agent()
            mac.kill_tmux()


def move(phone: httpx.Client, session_id: str, **body: Any) -> dict[str, Any]:
    response = phone.post(f"/api/sessions/{session_id}/move", json=body)
    assert response.status_code == 202, response.text
    return dict(response.json()["move"])


def moved(phone: httpx.Client, session_id: str, timeout: float = 90) -> dict[str, Any]:
    """The session's latest move once it is over (both Macs told)."""
    return wait_for(
        lambda: (
            (m := phone.get(f"/api/sessions/{session_id}/move").json()["move"])["phase"]
            in ("done", "failed")
            and m
        ),
        timeout,
        "the move over",
    )


def test_a_session_moves_when_idle_with_its_folder_held_message_and_conversation(
    macs: tuple[Bridge, Bridge],
) -> None:
    a, b = macs
    a.start_agent()
    b.start_agent()
    source_cwd = a.folder("shop")
    head = git_folder(source_cwd)
    target_cwd = str(Path(b.folder("shop-here")))  # empty: the folder is made there
    with a.phone() as phone:
        session_id = start_session(phone, a, source_cwd, prompt="hello from the studio")
        wait_answered(phone, session_id)
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "BRIEF_SLOW please"})
        wait_state(phone, session_id, "busy")
        held = phone.post(
            f"/api/sessions/{session_id}/messages", json={"text": "typed on the laptop"}
        )
        assert held.json()["state"] == "held"
        before = snapshot(phone, session_id)
        started = move(phone, session_id, device_id=b.account.device_id, cwd=target_cwd)
        assert started["when"] == "idle"
        listed = {s["id"]: s for s in phone.get("/api/sessions").json()["sessions"]}
        assert listed[session_id]["mark"] == "moving"
        assert (done := moved(phone, session_id))["phase"] == "done", done["error"]
        after = snapshot(phone, session_id)
        assert after["device_id"] == b.account.device_id
        assert (after["id"], after["title"], after["epoch"]) == (
            before["id"], before["title"], before["epoch"]
        )  # fmt: skip
        assert after["cwd"] == target_cwd and after["mark"] is None
        assert after["conversation_id"] == before["conversation_id"]
        # the held message travelled and was typed there; the answer comes from the laptop
        wait_for(
            lambda: [
                e for e in events(phone, session_id)
                if e["kind"] == "user" and e["text"] == "typed on the laptop"
            ],
            60,
            "the held message typed on the laptop",
        )  # fmt: skip
        wait_state(phone, session_id, "idle", timeout=60)
        say_and_wait_answer(
            phone, session_id, "still there?", 60, "the conversation going on on the laptop"
        )
        history = events(phone, session_id)
    assert [e["seq"] for e in history] == list(range(1, len(history) + 1))
    marker = [e for e in history if e.get("marker") == "moved"]
    assert len(marker) == 1 and marker[0]["text"].startswith("🚚 Moved from ")
    users = [e["text"] for e in history if e["kind"] == "user"]
    assert users == [
        "hello from the studio", "BRIEF_SLOW please", "typed on the laptop", "still there?"
    ]  # fmt: skip
    # the folder: same branch and HEAD, the change and the untracked file, nothing ignored
    assert git(target_cwd, "rev-parse", "HEAD") == head
    assert git(target_cwd, "branch", "--show-current") == "main"
    assert Path(target_cwd, "app.py").read_text() == "print('two')\n"
    assert Path(target_cwd, "notes.md").read_text() == "untracked, not ignored\n"
    assert not Path(target_cwd, "debug.log").exists()
    assert not Path(target_cwd, "node_modules").exists()
    # the studio stopped its claude and forgot the session; the laptop runs it
    assert not tmux_has(a, session_id) and tmux_has(b, session_id)
    assert a.agent is not None and session_id not in a.agent.registry.sessions
    assert b.agent is not None and session_id in b.agent.registry.sessions


def test_moved_now_interrupts_and_refusals_leave_the_session_running_where_it_was(
    macs: tuple[Bridge, Bridge],
) -> None:
    a, b = macs
    a.start_agent()
    source_cwd = a.folder("plain")
    Path(source_cwd, "README.md").write_text("a plain folder\n")
    differs = b.folder("taken")
    Path(differs, "other.txt").write_text("something else\n")
    with a.phone() as phone:
        session_id = start_session(phone, a, source_cwd, prompt="hello")
        wait_answered(phone, session_id)
        offline = phone.post(
            f"/api/sessions/{session_id}/move", json={"device_id": b.account.device_id}
        )
        assert (offline.status_code, offline.json()["error"]["code"]) == (409, "device_offline")
        b.start_agent()

        def refused(cwd: str, code: str) -> None:
            move(phone, session_id, device_id=b.account.device_id, cwd=cwd)
            failed = moved(phone, session_id)
            assert failed["phase"] == "failed" and failed["error"]["code"] == code, failed
            snap = wait_state(phone, session_id, "idle")
            assert snap["device_id"] == a.account.device_id and snap["mark"] is None
            assert snap["move"]["error"]["code"] == code
            assert tmux_has(a, session_id) and not tmux_has(b, session_id)

        refused(differs, "folder_differs")
        assert Path(differs, "other.txt").read_text() == "something else\n"  # untouched
        assert a.agent is not None
        a.agent.config = a.agent.config.replace(move_max_bytes=1)
        refused(str(Path(b.root, "new-place")), "too_big")
        a.agent.config = a.agent.config.replace(move_max_bytes=2**30)
        assert not Path(b.root, "new-place").exists()
        # now: the running turn is interrupted, the session moves at once
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "BRIEF_SLOW please"})
        wait_state(phone, session_id, "busy")
        target_cwd = b.folder("plain-here")  # empty, and trusted by the laptop's Claude Code
        move(phone, session_id, device_id=b.account.device_id, cwd=target_cwd, when="now")
        assert (done := moved(phone, session_id))["phase"] == "done", done["error"]
        assert snapshot(phone, session_id)["device_id"] == b.account.device_id
        assert Path(target_cwd, "README.md").read_text() == "a plain folder\n"
        # the turn the move interrupted: resumed there, its notice waits for the next message
        wait_card(phone, session_id, "stuck", 60)
        text = f"after the move {uuid.uuid4().hex[:6]}"
        say_and_wait_answer(phone, session_id, text, 60, "an answer on the laptop")
        history = events(phone, session_id)
    assert [e["seq"] for e in history] == list(range(1, len(history) + 1))
    assert not tmux_has(a, session_id) and tmux_has(b, session_id)
