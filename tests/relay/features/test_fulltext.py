"""The whole text of a cut tool result, read again from the Mac through the real link."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.transcript import LineTooLarge, find_line, transcript_path
from tests.support.api import error_of
from tests.support.bridge import Bridge
from tests.support.journeys import start_session, wait_state
from tests.support.waits import wait_for


def long_result_line(conversation_id: str, cwd: str, line_uuid: str, text: str) -> dict[str, Any]:
    # A user line as Claude Code 2.1.328 writes a tool's result.
    return {
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": cwd,
        "sessionId": conversation_id, "version": "2.1.328", "type": "user",
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_long", "content": text}
        ]},
        "uuid": line_uuid, "timestamp": "2026-12-02T04:00:00.000Z",
    }  # fmt: skip


def events_of(phone: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = phone.get(f"/api/sessions/{session_id}/events").json()["events"]
    return events


def test_show_all_reads_the_whole_result_from_the_mac(fake: Bridge) -> None:
    agent = fake.start_agent()
    cwd = fake.folder("work")
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="hello", permission_mode="manual")
        wait_state(phone, session_id, "idle")
        record = agent.registry.sessions[session_id]
        assert record.conversation_id is not None
        path = Path(record.transcript_path or transcript_path(
            fake.home / ".claude", cwd, record.conversation_id))  # fmt: skip
        wait_for(lambda: any(e["kind"] == "assistant" for e in events_of(phone, session_id)),
                 20, "the answer to the first prompt")  # fmt: skip
        assert path.is_file()
        text = "".join(f"{n:05d} a line of a long build log\n" for n in range(3_000))
        line_uuid = str(uuid.uuid4())
        line = long_result_line(record.conversation_id, cwd, line_uuid, text)
        with path.open("a") as f:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")

        def cut_event() -> dict[str, Any] | None:
            found = [e for e in events_of(phone, session_id) if e.get("uuid") == line_uuid]
            return found[0] if found else None

        event = wait_for(cut_event, 20, "the long result stored")
        assert event["truncated"] is True and event["full_length"] == len(text)
        assert len(event["text"]) < len(text)

        whole = phone.get(f"/api/sessions/{session_id}/events/{event['seq']}/full")
        assert whole.status_code == 200, whole.text
        assert whole.json()["text"] == text and whole.json()["full_length"] == len(text)

        # Clear errors: an unknown seq, a line the Mac no longer has.
        error_of(
            phone.get(f"/api/sessions/{session_id}/events/999999/full"), 404, "event_not_found"
        )
        path.write_text(path.read_text().replace(line_uuid, str(uuid.uuid4())))
        gone = phone.get(f"/api/sessions/{session_id}/events/{event['seq']}/full")
        error_of(gone, 404, "line_not_found")

        # Only with a login, only for the session's account.
        with httpx.Client(base_url=fake.relay.url) as anonymous:
            assert anonymous.get(f"/api/sessions/{session_id}/events/1/full").status_code == 401

        fake.stop_agent()
        wait_for(
            lambda: fake.relay.state.live.link(fake.account.device_id) is None, 15, "Mac offline"
        )
        error_of(phone.get(f"/api/sessions/{session_id}/events/{event['seq']}/full"), 409,
                 "device_offline")  # fmt: skip


def test_a_line_over_the_limit_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    wanted = str(uuid.uuid4())
    other = str(uuid.uuid4())
    path = tmp_path / "c.jsonl"
    small = json.dumps({"type": "user", "uuid": other, "parentUuid": wanted}, separators=(",", ":"))
    big = json.dumps({"type": "user", "pad": "x" * 5_000, "uuid": wanted}, separators=(",", ":"))
    path.write_text(small + "\n" + big + "\n")
    # parentUuid naming the line is not the line.
    assert find_line([path], other, 10_000) == small.encode()
    assert find_line([path], wanted, 10_000) == big.encode()
    with pytest.raises(LineTooLarge):
        find_line([path], wanted, 1_000)
    assert find_line([path, tmp_path / "missing.jsonl"], str(uuid.uuid4()), 10_000) is None
