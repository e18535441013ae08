"""Text from the phone reaches the real Claude Code as text, never as keys: a message holding the
bracketed paste's own end, Shift+Tab and Ctrl-C twice is typed as its visible characters (the
mode stays, claude keeps running), and a typed answer holding Esc and Ctrl-C answers the question
instead of declining it and interrupting the turn."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.support.bridge import Bridge
from tests.support.journeys import (
    snapshot,
    start_session,
    wait_answered,
    wait_card,
    wait_event,
    wait_state,
)
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e

PASTE_END = "\x1b[201~"
SHIFT_TAB = "\x1b[Z"
CTRL_C = "\x03"


def prompts(bridge: Bridge, marker: str) -> list[str]:
    """The prompts holding ``marker`` the fake API was sent (its own log of each request)."""
    seen: list[dict[str, Any]] = httpx.get(bridge.api_url + "/__mock/requests", timeout=5).json()
    return [r["prompt_head"] for r in seen if marker in (r.get("prompt_head") or "")]


def test_a_message_holding_the_paste_end_shift_tab_and_ctrl_c_is_typed_as_text(
    bridge: Bridge,
) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        sid = start_session(phone, bridge, cwd, prompt="hello there", permission_mode="manual")
        wait_answered(phone, sid)
        assert "manual mode on" in bridge.screen(sid)
        text = f"ESCAPE_TRY first{PASTE_END}{SHIFT_TAB}{CTRL_C}{CTRL_C} second"
        sent = phone.post(f"/api/sessions/{sid}/messages", json={"text": text})
        assert sent.status_code == 200, sent.text
        got = wait_for(lambda: prompts(bridge, "ESCAPE_TRY"), 30, "the prompt at the API")
        assert got == ["ESCAPE_TRY first[201~[Z second"]  # one prompt: the whole text, no key
        wait_answered(phone, sid)
        after = snapshot(phone, sid)
        assert after["state"] == "idle" and after["permission_mode"] == "manual"
        screen = bridge.screen(sid)
        assert "manual mode on" in screen and "accept edits on" not in screen


def test_a_typed_answer_holding_esc_and_ctrl_c_answers_the_question(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        sid = start_session(phone, bridge, cwd, prompt="ASK_ME something", permission_mode="manual")
        card = wait_card(phone, sid, "question")
        answer = f"Purple{CTRL_C}\x1b please{PASTE_END}{CTRL_C}"
        answered = phone.post(f"/api/sessions/{sid}/cards/{card['id']}", json={"text": answer})
        assert answered.status_code == 200, answered.text
        result = wait_event(phone, sid, lambda e: e["kind"] == "tool_result", "the answer")
        assert not result["is_error"], result["text"]
        assert '"Purple please[201~"' in result["text"]
        wait_state(phone, sid, "idle")
        assert "manual mode on" in bridge.screen(sid)
