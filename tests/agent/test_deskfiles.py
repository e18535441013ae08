"""Conversations started at the desk, read from a Claude Code home on disk (agent/deskfiles.py):
the captured desk conversation (2.1.332) is listed with its title and folder, live while a
status file names it with a running pid, and a conversation the bridge started is marked so;
and through a real relay: ``GET /api/devices/{id}/conversations``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from agent.deskfiles import scan
from agent.transcript import project_slug
from relay.recent_work import HANDOFF_OPENING
from tests.support.bridge import Bridge
from tests.support.journeys import snapshot, wait_event
from tests.support.transcripts import CLAUDE_332
from tests.support.waits import wait_for

DESK = CLAUDE_332 / "desk" / "life1"
CONVERSATION = "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"
SLUG = "-tmp-cap332-work-desk-repo-v2"
CAPTURED_CWD = "/tmp/cap332/work/desk_repo.v2"
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


def desk_conversation(fake: Bridge, *, live: bool = False) -> str:
    """The captured desk conversation, moved into a folder of this test (as if begun there)."""
    cwd = fake.folder("desk")
    text = (DESK / f"{CONVERSATION}.jsonl").read_text(encoding="utf-8")
    folder = fake.home / ".claude" / "projects" / project_slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{CONVERSATION}.jsonl").write_text(text.replace(CAPTURED_CWD, cwd))
    if live:
        sessions = fake.home / ".claude" / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        status = {"pid": os.getpid(), "sessionId": CONVERSATION, "status": "idle", "cwd": cwd}
        (sessions / f"{os.getpid()}.json").write_text(json.dumps(status))
    return cwd


def test_a_desk_conversation_is_read_then_continued_as_a_bridge_session(fake: Bridge) -> None:
    cwd = desk_conversation(fake)
    fake.start_agent()
    base = f"/api/devices/{fake.account.device_id}/conversations/{CONVERSATION}"
    with fake.phone() as phone:
        read = phone.get(base).json()
        assert read["live"] is False and not read["cut"]
        said = [e["text"] for e in read["events"] if e["kind"] == "user"]
        assert "hello from the desk" in said
        assert phone.get(base[: -len(CONVERSATION)] + "not-an-id").status_code == 404

        went_on = phone.post(f"{base}/continue", json={"scope": "full"})
        assert went_on.status_code == 201, went_on.text
        session_id = went_on.json()["id"]
        assert went_on.json()["session"]["cwd"] == cwd
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "hello from the desk",
            "the desk's history in the session",
        )
        # Up in the desk's conversation, whose last turn was interrupted there (its notice shows).
        up = wait_for(
            lambda: (s := snapshot(phone, session_id))["state"] in ("idle", "waiting") and s,
            30,
            "the session up",
        )
        assert up["conversation_id"] == CONVERSATION and up["resume_scope"] is None


def test_a_live_desk_conversation_continues_only_as_a_fork(fake: Bridge) -> None:
    desk_conversation(fake, live=True)
    fake.start_agent()
    base = f"/api/devices/{fake.account.device_id}/conversations/{CONVERSATION}"
    with fake.phone() as phone:
        assert phone.get(base).json()["live"] is True
        refused = phone.post(f"{base}/continue", json={"scope": "full"})
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "conversation_live"
        assert "corrupt" in refused.json()["error"]["message"]
        forked = phone.post(f"{base}/continue", json={"fork": True})
        assert forked.status_code == 201, forked.text
        session_id = forked.json()["id"]
        wait_for(
            lambda: snapshot(phone, session_id)["state"] in ("idle", "waiting"), 30, "the fork up"
        )
    shown = subprocess.run(
        ["tmux", "-L", fake.socket, "display", "-p", "-t", f"cb-{session_id}",
         "#{pane_start_command}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # The fake Claude Code does not fork; the real one writes a new conversation under that id.
    assert f"--resume {CONVERSATION} --fork-session --session-id {session_id}" in shown


def test_a_live_desk_conversation_continues_fresh_from_its_handoff(fake: Bridge) -> None:
    desk_conversation(fake, live=True)
    fake.start_agent()
    base = f"/api/devices/{fake.account.device_id}/conversations/{CONVERSATION}"
    with fake.phone() as phone:
        went_on = phone.post(f"{base}/continue", json={"scope": "fresh"})
        assert went_on.status_code == 201, went_on.text
        session_id = went_on.json()["id"]
        handoff = wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"].startswith(HANDOFF_OPENING),
            "the handoff",
        )
        up = snapshot(phone, session_id)
    # A new conversation: the desk's claude keeps its own untouched.
    assert up["conversation_id"] not in (CONVERSATION, None)
    assert "SLOW please" in handoff["text"]  # its last exchange
