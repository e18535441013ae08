"""``doctor``'s and ``up``'s Claude Code login check (cli/checkup.py ``check_claude_login``) with
the real Claude Code 2.1.332: ``claude auth status`` in a fresh HOME with no login fails with what
to do; with an API key Claude Code was told to use (the tests' fake API) it is ok; and ``doctor``
itself prints it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli import checkup
from tests.support.bridge import API_KEY, claude_binary, seed_home
from tests.support.paths import REPO

pytestmark = pytest.mark.e2e


def _environ(home: Path, **more: str) -> dict[str, str]:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith(("CB_", "ANTHROPIC_", "CLAUDE_"))
    }
    return {**base, "HOME": str(home), "DISABLE_AUTOUPDATER": "1", **more}


def test_a_fresh_home_is_not_logged_in_and_says_how_to_log_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = checkup.check_claude_login(claude_binary(), _environ(home))
    assert result.name == "login" and result.status == "fail", result
    assert "not logged in" in result.detail.lower()
    assert "run `claude` once in a terminal and log in" in result.fix


def test_an_api_key_claude_code_uses_is_logged_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seed_home(home, [])
    result = checkup.check_claude_login(
        claude_binary(),
        _environ(home, ANTHROPIC_API_KEY=API_KEY, ANTHROPIC_BASE_URL="http://127.0.0.1:9"),
    )
    assert result.status == "ok", result
    assert "ANTHROPIC_API_KEY" in result.detail
    # The same key in a HOME where Claude Code was never set up: its first start would ask.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    first = checkup.check_claude_login(claude_binary(), _environ(fresh, ANTHROPIC_API_KEY=API_KEY))
    assert first.status == "warn" and "never set up" in first.detail


def test_doctor_prints_the_login_check(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "cli", "doctor", "--json", "--claude", claude_binary(),
         "--agent-data", str(tmp_path / "agent"), "--data", str(tmp_path / "relay"),
         "--relay", "http://127.0.0.1:9"],
        capture_output=True, text=True, env=_environ(home), cwd=REPO, timeout=120,
    )  # fmt: skip
    login = next(c for c in json.loads(done.stdout) if c["name"] == "login")
    assert login["status"] == "fail" and "log in" in login["fix"], login
    assert done.returncode == 1
