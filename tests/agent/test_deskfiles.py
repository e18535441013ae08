"""Conversations started at the desk, read from a Claude Code home on disk (agent/deskfiles.py):
the captured desk conversation (2.1.332) is listed with its title and folder, live while a
status file names it with a running pid, and a conversation the bridge started is marked so;
and through a real relay: ``GET /api/devices/{id}/conversations``."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from agent.deskfiles import scan
from tests.support.bridge import Bridge
from tests.support.transcripts import CLAUDE_332

DESK = CLAUDE_332 / "desk" / "life1"
CONVERSATION = "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"
SLUG = "-tmp-cap332-work-desk-repo-v2"
DEAD_PID = 2**22 + 17  # above Linux's pid_max: never a running process


def claude_home(root: Path, *, live_pid: int | None = None) -> Path:
    home = root / ".claude"
    folder = home / "projects" / SLUG
    folder.mkdir(parents=True)
    shutil.copy(DESK / f"{CONVERSATION}.jsonl", folder / f"{CONVERSATION}.jsonl")
    if live_pid is not None:
        (home / "sessions").mkdir()
        status = {"pid": live_pid, "sessionId": CONVERSATION, "status": "idle"}
        (home / "sessions" / f"{live_pid}.json").write_text(json.dumps(status))
    return home


def test_the_desk_conversation_is_listed_with_its_title_and_folder(tmp_path: Path) -> None:
    listing = scan(claude_home(tmp_path), set(), 50)
    (folder,) = listing.folders
    (found,) = folder.conversations
    assert folder.cwd == "/tmp/cap332/work/desk_repo.v2"
    assert (found.id, found.title, found.title_source) == (
        CONVERSATION,
        "Desk work on feature",
        "custom",
    )
    assert found.git_branch == "feature/desk-work" and not found.live and not found.by_bridge


def test_live_only_while_its_claude_runs_and_the_bridges_own_are_marked(tmp_path: Path) -> None:
    live = scan(claude_home(tmp_path / "a", live_pid=os.getpid()), set(), 50)
    assert live.folders[0].conversations[0].live
    gone = scan(claude_home(tmp_path / "b", live_pid=DEAD_PID), {CONVERSATION}, 50)
    found = gone.folders[0].conversations[0]
    assert not found.live and found.by_bridge


def test_a_macs_conversations_through_the_relay(fake: Bridge) -> None:
    home = fake.home / ".claude"
    folder = home / "projects" / SLUG
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(DESK / f"{CONVERSATION}.jsonl", folder / f"{CONVERSATION}.jsonl")
    fake.start_agent()
    device = fake.account.device_id
    with fake.phone() as phone:
        listed = phone.get(f"/api/devices/{device}/conversations").json()
        unknown = phone.get("/api/devices/mac_nope/conversations")
    assert listed["device_id"] == device and listed["found"] == 1
    assert listed["folders"][0]["conversations"][0]["title"] == "Desk work on feature"
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_device"
