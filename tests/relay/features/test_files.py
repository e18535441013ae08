"""A session's folder and git changes through the real relay, the real link and the real agent."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx

from tests.support.api import error_of
from tests.support.bridge import Bridge
from tests.support.journeys import start_session, wait_state
from tests.support.waits import wait_for


def make_repo(root: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)

    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("def main():\n    return 1\n")
    git("init", "-q", "-b", "main")
    git("add", ".")
    git("commit", "-q", "-m", "first")
    (root / "src" / "main.py").write_text("def main():\n    return 2\n")
    (root / "added.txt").write_text("new\n")
    (root / "escape").symlink_to(root.parent)


def test_files_and_changes_of_a_session_come_from_its_mac(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder("repo")
    make_repo(Path(cwd))
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="hello", permission_mode="manual")
        wait_state(phone, session_id, "idle")
        base = f"/api/sessions/{session_id}"

        top = phone.get(base + "/files").json()
        assert [(e["name"], e["kind"]) for e in top["entries"]] == [
            ("src", "dir"), ("added.txt", "file"), ("escape", "outside")
        ]  # fmt: skip
        inner = phone.get(base + "/files", params={"path": "src"}).json()
        assert inner["entries"][0]["path"] == "src/main.py"
        text = phone.get(base + "/files/read", params={"path": "src/main.py"}).json()
        assert text["text"] == "def main():\n    return 2\n" and text["binary"] is False

        error_of(phone.get(base + "/files/read", params={"path": "../secret"}), 409, "bad_path")
        error_of(phone.get(base + "/files/read", params={"path": "/etc/passwd"}), 409, "bad_path")
        error_of(phone.get(base + "/files", params={"path": "escape"}), 409, "outside_folder")
        error_of(phone.get(base + "/files/read", params={"path": "nope"}), 409, "not_found")
        error_of(phone.get(base + "/files/read"), 400, "bad_request")

        status = phone.get(base + "/git/status").json()
        assert status["branch"] == "main"
        assert {e["path"]: e["unstaged"] for e in status["entries"]} == {
            "src/main.py": "modified", "added.txt": "untracked", "escape": "untracked"
        }  # fmt: skip
        diff = phone.get(base + "/git/diff", params={"path": "src/main.py"}).json()
        assert "-    return 1\n+    return 2" in diff["unstaged"] and diff["staged"] == ""

        # Only the session's own account may read it; no login, no read.
        stranger = fake.relay.account()
        with httpx.Client(
            base_url=fake.relay.url, headers={"Authorization": f"Bearer {stranger.phone_token}"}
        ) as other:
            error_of(other.get(base + "/files"), 404, "unknown_session")
        with httpx.Client(base_url=fake.relay.url) as anonymous:
            assert anonymous.get(base + "/git/status").status_code == 401

        # A Mac offline is a clear 409, not a wait.
        fake.stop_agent()
        wait_for(
            lambda: fake.relay.state.live.link(fake.account.device_id) is None, 15, "Mac offline"
        )
        gone = error_of(phone.get(base + "/files"), 409, "device_offline")
        assert "offline" in gone["message"]


def test_a_folder_outside_git_says_so(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder("plain")
    Path(cwd, "notes.txt").write_bytes(b"\x00\x01binary")
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="hello", permission_mode="manual")
        base = f"/api/sessions/{session_id}"
        error_of(phone.get(base + "/git/status"), 409, "not_a_repo")
        binary = phone.get(base + "/files/read", params={"path": "notes.txt"}).json()
        assert binary["binary"] is True and binary["text"] is None and binary["size"] == 8
    # A restarted agent says hello again, now with this session's folder first.
    fake.stop_agent()
    fake.start_agent()
    with fake.phone() as phone:
        info = phone.get("/api/devices").json()["devices"][0]["info"]
        assert info["recent_folders"][0] == cwd
