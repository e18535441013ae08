"""More ways in and out, with the real Claude Code 2.1.332 against the fake API: a session in a
git worktree of its own, kept on reopen; a fork that shows its parent's history and continues
apart; delete on the relay and the Mac; ``claude-bridge claude`` started at the desk, seen on the
relay, its terminal attached (a pane of the test's own tmux server) and detached."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.transcript import transcript_path
from tests.support.bridge import REPO, Bridge
from tests.support.journeys import events, snapshot, start_session, wait_state
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e


def git(folder: str | Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def said(phone: httpx.Client, session_id: str) -> list[str]:
    return [e["text"] for e in events(phone, session_id) if e["kind"] == "user"]


def answered(phone: httpx.Client, session_id: str, text: str) -> None:
    """``text`` is in the conversation with an answer after it, and the turn is over."""

    def done() -> bool:
        listed = events(phone, session_id)
        at = next(
            (i for i, e in enumerate(listed) if e["kind"] == "user" and e["text"] == text), None
        )
        return at is not None and any(e["kind"] == "assistant" for e in listed[at + 1 :])

    wait_for(done, 45, f"the answer to {text!r}")
    wait_state(phone, session_id, "idle")


def test_worktree_session_fork_and_delete(bridge: Bridge) -> None:
    agent = bridge.start_agent()
    repo = bridge.folder("repo")
    git(repo, "init", "-q", "-b", "main")
    Path(repo, "README").write_text("hi\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    tree = os.path.join(repo, ".claude", "worktrees", "feat-ways")
    with bridge.phone() as phone:
        parent = start_session(
            phone,
            bridge,
            repo,
            prompt="hello parent",
            permission_mode="manual",
            worktree="feat/ways",
        )
        shown = snapshot(phone, parent)
        assert (shown["branch"], shown["cwd"]) == ("feat/ways", tree)
        assert git(tree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feat/ways"
        answered(phone, parent, "hello parent")
        listed = {s["id"]: s for s in phone.get("/api/sessions").json()["sessions"]}
        assert listed[parent]["branch"] == "feat/ways"

        # A fork: a new id, the parent's history, its own turns from then on.
        forked = phone.post(f"/api/sessions/{parent}/fork", json={"prompt": "hello fork"})
        assert forked.status_code == 201, forked.text
        fork = forked.json()["id"]
        snap = snapshot(phone, fork)
        assert fork != parent and snap["parent_id"] == parent
        assert (snap["cwd"], snap["branch"]) == (tree, "feat/ways")
        answered(phone, fork, "hello fork")
        assert said(phone, fork) == ["hello parent", "hello fork"]  # each line once
        assert snapshot(phone, fork)["conversation_id"] == fork
        phone.post(f"/api/sessions/{parent}/messages", json={"text": "parent again"})
        answered(phone, parent, "parent again")
        assert said(phone, parent) == ["hello parent", "parent again"]
        assert "parent again" not in said(phone, fork)

        # Reopen keeps the worktree (Claude Code's own --worktree would go with its process).
        assert phone.post(f"/api/sessions/{parent}/end").status_code == 200
        wait_for(lambda: snapshot(phone, parent)["state"] == "ended", 20, "the parent ended")
        assert phone.post(f"/api/sessions/{parent}/reopen").status_code == 200
        wait_state(phone, parent, "idle", 45)
        assert snapshot(phone, parent)["cwd"] == tree and Path(tree, "README").exists()
        assert f"{tree} " in git(repo, "worktree", "list")

        # Delete the fork: its claude stops, its events go on the relay and on the Mac.
        home = bridge.home / ".claude"
        theirs = transcript_path(home, tree, fork)
        assert theirs.exists()
        done = phone.delete(f"/api/sessions/{fork}")
        assert done.status_code == 200 and done.json()["mac"] == "deleted", done.text
        assert phone.get(f"/api/sessions/{fork}").status_code == 404
        assert phone.get(f"/api/sessions/{fork}/events").status_code == 404
        assert agent.registry.get(fork) is None
        assert not (bridge.data / "events" / f"{fork}.jsonl").exists()
        assert not (bridge.data / "transcripts" / fork).exists()
        wait_for(lambda: not bridge.screen(fork), 10, "the fork's terminal gone")
        assert theirs.exists()  # Claude Code's own transcript is the person's
        assert snapshot(phone, parent)["state"] == "idle"  # the parent runs on


@pytest.fixture
def desk() -> Iterator[str]:
    """The person's terminal: a tmux server of the test's own."""
    socket = f"cbt-desk-{uuid.uuid4().hex[:6]}"
    yield socket
    subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def term(socket: str, *args: str) -> str:
    return subprocess.run(
        ["tmux", "-L", socket, "-f", "/dev/null", *args],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def test_claude_started_at_the_desk_is_on_the_phone_and_attached(bridge: Bridge, desk: str) -> None:
    bridge.start_agent()
    folder = bridge.folder("desk")
    wait_for(lambda: (bridge.data / "device-id").exists(), 20, "the agent's device id")
    env = {
        "CB_TOKEN": bridge.account.phone_token,
        "CB_RELAY": bridge.relay.url,
        "CB_AGENT_DIR": str(bridge.data),
        "PYTHONPATH": str(REPO),
    }
    command = " ".join(
        [
            f"cd {shlex.quote(folder)} &&",
            *(f"{k}={shlex.quote(v)}" for k, v in env.items()),
            shlex.join([sys.executable, "-m", "cli", "claude", "--permission-mode", "manual",
                        "hello from the desk"]),
        ]
    )  # fmt: skip
    term(desk, "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", "sh")
    term(desk, "send-keys", "-t", "t", command, "Enter")
    with bridge.phone() as phone:

        def started() -> str | None:
            for s in phone.get("/api/sessions").json()["sessions"]:
                if s["cwd"] == folder and s["device_id"] == bridge.account.device_id:
                    return str(s["id"])
            return None

        session_id = wait_for(started, 30, "the desk's session on the relay")
        answered(phone, session_id, "hello from the desk")

        def screen() -> str:
            return term(desk, "capture-pane", "-p", "-J", "-t", "t")

        wait_for(lambda: "This is the mock API" in screen(), 20, "claude in the desk's terminal")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "and from the phone"})
        wait_for(lambda: "and from the phone" in screen(), 20, "the phone's message at the desk")
        answered(phone, session_id, "and from the phone")
        term(desk, "send-keys", "-t", "t", "C-b", "d")
        wait_for(lambda: "detached; session" in screen(), 20, "the terminal detached")
        assert snapshot(phone, session_id)["state"] == "idle"  # it runs on, on the phone

        # `claude --continue` at the desk comes back to this folder's latest session.
        again = command.replace(
            shlex.join(["--permission-mode", "manual", "hello from the desk"]), "-c"
        )
        term(desk, "send-keys", "-t", "t", "clear; " + again, "Enter")

        def clients() -> str:
            return subprocess.run(
                ["tmux", "-L", bridge.socket, "list-clients", "-t", f"cb-{session_id}"],
                capture_output=True, text=True, check=False,
            ).stdout  # fmt: skip

        wait_for(clients, 20, "the desk attached again")
        term(desk, "send-keys", "-t", "t", "C-b", "d")
        wait_for(lambda: not clients() and "detached; session" in screen(), 20, "detached again")
        assert [s["id"] for s in phone.get("/api/sessions").json()["sessions"]
                if s["cwd"] == folder] == [session_id]  # fmt: skip
