"""Two Macs on one machine, as the end-to-end move and fault tests drive them: an agent as its
own process (so it can be killed with -9), a Mac online or not as the phone sees it, a git folder
with every kind of change, and whether a Mac's tmux runs a session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.bridge import Bridge
from tests.support.waits import wait_for

REPO = Path(__file__).resolve().parents[2]


def agent_process(bridge: Bridge, relay_url: str, token: str) -> subprocess.Popen[bytes]:
    bridge.root.mkdir(parents=True, exist_ok=True)
    with (bridge.root / "agent.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "cli", "agent", "--relay", relay_url, "--token", token,
             "--data", str(bridge.data), "--claude", bridge.claude, "--mux", "tmux",
             "--socket", bridge.socket],
            env={**bridge.env(), "PYTHONPATH": str(REPO)},
            stdout=log, stderr=log,
        )  # fmt: skip


def wait_online(phone: httpx.Client, device_id: str, online: bool = True) -> None:
    wait_for(
        lambda: any(
            d["id"] == device_id and d["online"] is online
            for d in phone.get("/api/devices").json()["devices"]
        ),
        30,
        f"the Mac {'online' if online else 'offline'}",
    )


def git(folder: str, *args: str) -> str:
    out = subprocess.run(
        ["git", "-C", folder, *args], capture_output=True, text=True, check=True,
        env={"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com",
             "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com",
             "HOME": folder, "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    return out.stdout.strip()


def git_folder(folder: str) -> str:
    """A repository with a commit, an uncommitted change, an untracked file and ignored ones."""
    git(folder, "init", "-q", "-b", "main")
    Path(folder, "app.py").write_text("print('one')\n")
    Path(folder, ".gitignore").write_text("*.log\n")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "first")
    Path(folder, "app.py").write_text("print('two')\n")  # uncommitted
    Path(folder, "notes.md").write_text("untracked, not ignored\n")
    Path(folder, "debug.log").write_text("ignored\n")
    Path(folder, "node_modules", "pkg").mkdir(parents=True)
    Path(folder, "node_modules", "pkg", "index.js").write_text("huge\n")
    return git(folder, "rev-parse", "HEAD")


def tmux_has(mac: Bridge, session_id: str) -> bool:
    found = subprocess.run(
        ["tmux", "-L", mac.socket, "has-session", "-t", f"cb-{session_id}"],
        capture_output=True, check=False,
    )  # fmt: skip
    return found.returncode == 0
