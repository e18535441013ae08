"""How the real Claude Code 2.1.332 decides to trust the folder it starts in, against the agent's
reading of it (agent/projecttrust.py ``trusted_by``): for each case, a throw-away HOME whose
``~/.claude.json`` trusts some folders, the real claude started in a folder in its own tmux
server, and what it does — draw its trust dialog, or start without asking."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.cards import read_screen
from agent.projecttrust import git_root_of, read_config, trusted_by
from agent.screen import render
from tests.support.bridge import API_KEY, seed_home
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e

WIDTH, HEIGHT = 100, 30


def repository(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def gitfile(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / ".git").write_text("gitdir: /nowhere\n")


def symlinked(root: Path) -> None:
    (root / "real").mkdir()
    (root / "link").symlink_to(root / "real")


# name: (folders to make, a setup, the folder claude starts in, trusted folders, environment)
Case = tuple[list[str], Callable[[Path], None] | None, str, list[str], dict[str, str]]
CASES: dict[str, Case] = {
    "itself": (["x"], None, "x", ["x"], {}),
    "nothing": (["x"], None, "x", [], {}),
    "a folder above": (["x/a/b"], None, "x/a/b", ["x"], {}),
    "the repository's top": ([], lambda r: repository(r / "repo" / "sub"), "repo/sub", ["repo"], {}),
    "above the repository": ([], lambda r: repository(r / "p" / "repo"), "p/repo", ["p"], {}),
    "below the repository's top": (
        ["repo/a/b"], lambda r: repository(r / "repo"), "repo/a/b", ["repo/a"], {}
    ),
    "a folder below": (["repo/sub"], lambda r: repository(r / "repo"), "repo", ["repo/sub"], {}),
    "above a .git file": (["p/repo/sub"], lambda r: gitfile(r / "p" / "repo"), "p/repo/sub", ["p"], {}),
    "a symlink to a trusted folder": ([], symlinked, "link", ["real"], {}),
    "a trusted symlink": ([], symlinked, "link", ["link"], {}),
    "sandboxed": (["x"], None, "x", [], {"CLAUDE_CODE_SANDBOXED": "1"}),
}  # fmt: skip


def started(socket: str) -> bool | None:
    """What claude shows: its trust dialog (False), its prompt (True), or not yet (None)."""
    out = subprocess.run(
        ["tmux", "-L", socket, "capture-pane", "-p", "-e"], capture_output=True, text=True
    ).stdout
    facts = read_screen(render(out, WIDTH, HEIGHT))
    if facts.card is not None and "trust" in (facts.card.title + facts.card.text).lower():
        return False
    return True if facts.prompt_visible else None


@pytest.mark.parametrize("case", list(CASES))
def test_the_agent_reads_trust_as_the_real_claude_decides_it(
    case: str, claude_bin: str, mock_api: str, tmp_path: Path
) -> None:
    folders, setup, start, trusted, extra = CASES[case]
    root = Path(os.path.realpath(tmp_path))
    home = root / "home"
    seed_home(home, [])
    for folder in folders:
        (root / folder).mkdir(parents=True, exist_ok=True)
    if setup is not None:
        setup(root)
    config = json.loads((home / ".claude.json").read_text())
    config["projects"] = {str(root / t): {"hasTrustDialogAccepted": True} for t in trusted}
    (home / ".claude.json").write_text(json.dumps(config))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TERM": "xterm-256color",
        "LANG": "C.UTF-8", "ANTHROPIC_BASE_URL": mock_api, "ANTHROPIC_API_KEY": API_KEY,
        "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", **extra,
    }  # fmt: skip
    folder = os.path.realpath(root / start)
    expected = trusted_by(read_config(home / ".claude"), folder, git_root_of(folder), env)
    socket = f"cbtrust-{uuid.uuid4().hex[:8]}"
    pairs = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    subprocess.run(
        ["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-x", str(WIDTH), "-y",
         str(HEIGHT), "-c", str(root / start), *pairs, claude_bin, "--permission-mode", "manual"],
        check=True, env=env,
    )  # fmt: skip
    try:
        (seen,) = wait_for(lambda: (s := started(socket)) is not None and (s,), 30, "claude up")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    assert seen is (expected is not None), f"{case}: claude {'started' if seen else 'asked'}"
