"""Auto mode with the real Claude Code 2.1.332: its classifier (the fake API's, flagging every
attempt of the call) refuses a Bash call; the conversation shows the refusal as its own event,
the session needs the person (a ``denied`` card), and "allow once" lets that very call run
through Claude Code's PermissionDenied retry and a PreToolUse allow — while "keep it blocked"
lets the refusal stand (tests/fixtures/auto_mode/2.1.332)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.bridge import Bridge
from tests.support.journeys import events, snapshot, start_session, wait_card, wait_event
from tests.support.waits import wait_for

REASON = "Writing allowed_once.txt was not asked for by the user."


def _denials(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in items if e["kind"] == "denial"]


def test_a_refusal_is_shown_needs_the_person_and_can_be_allowed_once(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    made = Path(cwd) / "allowed_once.txt"
    with bridge.phone() as phone:
        sid = start_session(phone, bridge, cwd, prompt="AUTO_DENY please", permission_mode="auto")
        card = wait_card(phone, sid, "denied", timeout=60)
        snap = snapshot(phone, sid)
        assert snap["needs_you"] is True and snap["state"] == "waiting"
        assert card["text"] == REASON and card["tool"] == "Bash"
        assert card["tool_input"]["command"] == "touch allowed_once.txt && echo cleaned"
        assert not made.exists()
        answer = phone.post(f"/api/sessions/{sid}/cards/{card['id']}", json={"key": "allow_once"})
        assert answer.status_code == 200, answer.text
        assert answer.json()["allowed_once"] is True
        ran = wait_event(
            phone, sid, lambda e: e["kind"] == "tool_result" and e.get("text") == "cleaned",
            "the retried call's result",
        )  # fmt: skip
        assert made.exists()
        (denial,) = _denials(events(phone, sid))
        assert denial["text"] == f"⛔ Blocked by auto mode: {REASON}"
        assert denial["seq"] < ran["seq"]
        wait_for(lambda: snapshot(phone, sid)["state"] == "idle", 30, "idle")
        assert snapshot(phone, sid)["needs_you"] is False

        # "keep it blocked": the refusal stands, the call never runs
        made.unlink()
        sent = phone.post(f"/api/sessions/{sid}/messages", json={"text": "AUTO_DENY again"})
        assert sent.status_code == 200, sent.text
        card = wait_card(phone, sid, "denied", timeout=60)
        kept = phone.post(f"/api/sessions/{sid}/cards/{card['id']}", json={"key": "keep_blocked"})
        assert kept.status_code == 200, kept.text
        wait_for(lambda: len(_denials(events(phone, sid))) == 2, 30, "the second refusal")
        wait_for(lambda: snapshot(phone, sid)["state"] == "idle", 30, "idle again")
        assert not made.exists()
