"""A running session obeys the phone, with the real Claude Code against the fake API: its mode and
model changed (seen on the screen, in the snapshot and in what reaches the API), a message "after
this turn" typed only once the turn ended while a held one goes in after the tool, an image
attachment reaching the API as an image, and a reopen coming back in the mode it had."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import httpx
import pytest

from tests.support.bridge import Bridge
from tests.support.journeys import events, snapshot, start_session, wait_answered, wait_state
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e


def red_square() -> bytes:
    """An 8x8 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(kind + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)

    rows = b"".join(b"\0" + b"\xff\x00\x00" * 8 for _ in range(8))
    header = struct.pack(">IIBBBBB", 8, 8, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def api_requests(bridge: Bridge) -> list[dict[str, Any]]:
    """What the fake API was sent (its own log of each request)."""
    return list(httpx.get(bridge.api_url + "/__mock/requests", timeout=5).json())


def held_states(phone: httpx.Client, session_id: str) -> dict[str, tuple[str, str]]:
    return {h["text"]: (h["state"], h["when"]) for h in snapshot(phone, session_id)["held"]}


def test_mode_model_follow_up_and_an_image_on_a_running_session(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        sid = start_session(phone, bridge, cwd, prompt="hello there", permission_mode="manual")
        wait_answered(phone, sid)
        base = f"/api/sessions/{sid}"
        first = snapshot(phone, sid)
        assert first["permission_mode"] == "manual"
        assert first["model"]  # from its hooks and transcript, never null once it answered

        # -- the mode, with Claude Code's own Shift+Tab
        changed = phone.patch(base, json={"permission_mode": "acceptEdits"})
        assert changed.status_code == 200, changed.text
        assert changed.json()["permission_mode"] == "acceptEdits"
        assert "accept edits on" in bridge.screen(sid)
        wait_for(
            lambda: snapshot(phone, sid)["permission_mode"] == "acceptEdits", 10, "the new mode"
        )
        refused = phone.patch(base, json={"permission_mode": "bypassPermissions"})
        assert refused.status_code == 409, refused.text
        assert refused.json()["error"]["code"] == "mode_unavailable"
        assert "not in this session's mode cycle" in refused.json()["error"]["message"]
        assert "accept edits on" in bridge.screen(sid)  # back where it was

        # -- the model, with /model
        model = phone.patch(base, json={"model": "claude-haiku-4-5"})
        assert model.status_code == 200, model.text
        assert model.json()["model"] == "claude-haiku-4-5"
        assert "Set model to Haiku 4.5" in bridge.screen(sid)
        # Claude Code saved it as the default for new sessions; the person's file is as it was
        settings = json.loads((bridge.home / ".claude" / "settings.json").read_text())
        assert "model" not in settings
        unknown = phone.patch(base, json={"model": "no-such-model-x"})
        assert unknown.status_code == 409, unknown.text
        assert unknown.json()["error"] == {
            "code": "model_refused",
            "message": "Claude Code: Model 'no-such-model-x' not found",
        }
        assert snapshot(phone, sid)["model"] == "claude-haiku-4-5"

        # -- a held message goes in after the tool; the follow-up only once the turn ended
        phone.post(f"{base}/messages", json={"text": "TOOL_THEN_SLOW now"})
        wait_for(
            lambda: any(e["kind"] == "tool_use" for e in events(phone, sid)[-3:]), 30, "the tool"
        )
        later = phone.post(f"{base}/messages", json={"text": "LATER one", "when": "after_turn"})
        held = phone.post(f"{base}/messages", json={"text": "BRIEF_SLOW held one"})
        assert later.json()["state"] == held.json()["state"] == "held"
        wait_for(
            lambda: held_states(phone, sid).get("BRIEF_SLOW held one", ("",))[0] == "typed",
            30,
            "the held message typed after the tool",
        )
        assert held_states(phone, sid)["LATER one"] == ("held", "after_turn")
        assert snapshot(phone, sid)["state"] == "busy"
        wait_for(
            lambda: held_states(phone, sid).get("LATER one", ("",))[0] == "typed",
            60,
            "the follow-up typed after the turn",
        )
        wait_state(phone, sid, "idle", 60)
        seen = api_requests(bridge)
        prompts = [r for r in seen if "LATER one" in (r.get("prompt_head") or "")]
        assert prompts and prompts[0]["model"] == "claude-haiku-4-5"  # the new model answers
        hooks = bridge.agent.runtimes[sid].hooks if bridge.agent else None
        assert hooks is not None and hooks.permission_mode == "acceptEdits"

        # -- an image attachment reaches the API as an image
        up = phone.post(
            f"{base}/attachments",
            params={"name": "square.png"},
            content=red_square(),
            headers={"Content-Type": "image/png"},
        )
        assert up.status_code == 201, up.text
        attachment = up.json()
        assert (attachment["name"], attachment["media_type"]) == ("square.png", "image/png")
        saved = bridge.data / "attachments" / sid / f"{attachment['id']}.png"
        assert (
            saved.read_bytes() == red_square() and not (bridge.root / "work" / saved.name).exists()
        )
        sent = phone.post(
            f"{base}/messages",
            json={"text": "LOOK_AT_IMAGE what is it?", "attachments": [attachment["id"]]},
        )
        assert sent.status_code == 200, sent.text
        looked = wait_for(
            lambda: next(
                (
                    r
                    for r in api_requests(bridge)
                    if "LOOK_AT_IMAGE" in (r.get("prompt_head") or "")
                ),
                None,
            ),
            30,
            "the image's request",
        )
        assert looked["user_images"] == ["image/png"], looked
        wait_state(phone, sid, "idle", 30)

        # -- an agent started again (an update) carries on: the snapshot still knows the model
        bridge.stop_agent()
        bridge.start_agent()
        wait_for(lambda: snapshot(phone, sid)["state"] == "idle", 30, "the session carried on")
        again_known = snapshot(phone, sid)
        assert (again_known["permission_mode"], again_known["model"]) == (
            "acceptEdits",
            "claude-haiku-4-5",
        )

        # -- reopened by a message, it comes back in the mode and model it had
        assert phone.post(f"{base}/end").status_code == 200
        wait_state(phone, sid, "ended")
        again = phone.post(f"{base}/messages", json={"text": "back again"})
        body = again.json()
        assert body["reopened"] is True
        assert (body["permission_mode"], body["model"]) == ("acceptEdits", "claude-haiku-4-5")
        wait_for(lambda: "accept edits on" in bridge.screen(sid), 30, "the mode after reopen")
        back = wait_for(
            lambda: next(
                (r for r in api_requests(bridge) if "back again" in (r.get("prompt_head") or "")),
                None,
            ),
            30,
            "the reopened session's request",
        )
        assert back["model"] == "claude-haiku-4-5"  # started again with --model
