"""The real Claude Code 2.1.332 refusing to start, as a new user meets it: a fresh HOME where it
was never set up and no login. Its claude exits at once; the session says why, in Claude Code's
words, and what to do; the first message stays held. Once Claude Code is set up (a login: here
an API key against the fake API) the next message starts the conversation afresh under the
session's id (``--session-id``: it was never saved, so ``--resume`` would fail) and what was
held is delivered."""

from __future__ import annotations

import shutil

import pytest

from tests.support.bridge import Bridge, seed_home
from tests.support.journeys import snapshot, start_session, wait_event
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e


def test_a_fresh_home_without_login_says_why_and_the_message_waits(bridge: Bridge) -> None:
    shutil.rmtree(bridge.home)
    bridge.home.mkdir()
    env = {k: v for k, v in bridge.env().items() if k != "ANTHROPIC_API_KEY"}
    cwd = bridge.folder(trusted=False)
    bridge.start_agent(env=env)
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="hello there")
        failed = wait_for(
            lambda: (s := snapshot(phone, session_id))["failure"] and s, 60, "the failure"
        )
        failure = failed["failure"]
        # No route to Anthropic from here: the first start's check fails (FINDINGS §2).
        assert failure["code"] == "claude_offline", failure
        assert failure["reason"] == "Unable to connect to Anthropic services"
        assert "e2e mac" in failure["action"]
        assert failed["state"] == "ended" and failed["error"]
        assert [(h["text"], h["state"]) for h in failed["held"]] == [("hello there", "held")]

        # Claude Code set up on the Mac (the agent restarted with a key): the next message.
        bridge.stop_agent()
        seed_home(bridge.home, [cwd])
        bridge.start_agent()
        sent = phone.post(f"/api/sessions/{session_id}/messages", json={"text": "and this"})
        assert sent.status_code < 300, sent.text
        typed = wait_event(phone, session_id, lambda e: e["kind"] == "user", "the messages")
        assert typed["text"] == "hello there\n\nand this"
        wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
        assert snapshot(phone, session_id)["failure"] is None
