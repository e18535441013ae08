"""A Mac whose agent finds no Claude Code (agent/launch.py ``ClaudeBinary``): it links anyway and
its device record says so (``claude_found``, ``claude_standing``, ``claude_install_hint``); a new
session there is refused at once (``409 claude_missing``, with the install line); once Claude
Code is installed the record follows within seconds and a session starts. A claude with no login
stands ``logged_out`` (``claude auth status``). Real tmux, the fake Claude Code."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.bridge import FAKE, Bridge
from tests.support.journeys import start_session, wait_state
from tests.support.waits import wait_for


def _info(phone: httpx.Client, device_id: str) -> dict[str, Any]:
    devices = phone.get("/api/devices").json()["devices"]
    return dict(next(d for d in devices if d["id"] == device_id)["info"])


def test_a_mac_without_claude_says_so_and_refuses_a_new_session(fake: Bridge) -> None:
    missing = fake.root / "bin" / "claude"
    missing.parent.mkdir()
    fake.start_agent(claude=str(missing))
    device = fake.account.device_id
    cwd = fake.folder()
    with fake.phone() as phone:
        info = wait_for(lambda: (i := _info(phone, device)).get("claude_found") is False and i)
        assert info["claude_standing"] == "missing"
        assert "npm i -g @anthropic-ai/claude-code" in info["claude_install_hint"]
        refused = phone.post("/api/sessions", json={"device_id": device, "cwd": cwd})
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["code"] == "claude_missing"
        assert "not installed on the Mac 'e2e mac'" in error["message"]
        assert "npm i -g @anthropic-ai/claude-code" in error["message"]
        assert not phone.get("/api/sessions").json()["sessions"]  # nothing was kept

        # Installed now: the Mac says so by itself, and a session starts.
        missing.write_text(f'#!/bin/sh\nexec {FAKE} "$@"\n')
        missing.chmod(0o755)
        info = wait_for(lambda: (i := _info(phone, device)).get("claude_found") and i, 30)
        assert info["claude_standing"] == "ok" and info["claude_install_hint"] == ""
        assert info["claude_version"]
        session_id = start_session(phone, fake, cwd, permission_mode="manual")
        wait_state(phone, session_id, "idle")


def test_a_claude_without_login_stands_logged_out(fake: Bridge) -> None:
    env = {k: v for k, v in fake.env().items() if k != "ANTHROPIC_API_KEY"}
    fake.start_agent(env=env)
    with fake.phone() as phone:
        info = _info(phone, fake.account.device_id)
    assert info["claude_found"] is True and info["claude_standing"] == "logged_out"
