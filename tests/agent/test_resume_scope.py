"""A stopped session started again by its resume scope, with real tmux and the fake Claude Code
(tests/fakeclaude): ``summary`` types Claude Code's ``/compact`` before the held message,
``fresh`` starts a new conversation whose first message is the handoff, with its marker line."""

from __future__ import annotations

from typing import Any

import httpx

from relay.recent_work import HANDOFF_OPENING
from tests.support.bridge import Bridge
from tests.support.journeys import events, snapshot, start_session, wait_event, wait_state


def user_texts(listed: list[dict[str, Any]]) -> list[str]:
    return [e["text"] for e in listed if e["kind"] == "user"]


def stopped_session(phone: httpx.Client, fake: Bridge) -> str:
    session_id = start_session(phone, fake, fake.folder(), prompt="hello there")
    wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
    wait_state(phone, session_id, "idle")
    assert phone.post(f"/api/sessions/{session_id}/end").status_code == 200
    wait_state(phone, session_id, "ended")
    return session_id


def test_a_summary_scope_compacts_before_the_held_message(fake: Bridge) -> None:
    fake.start_agent()
    with fake.phone() as phone:
        session_id = stopped_session(phone, fake)
        chosen = phone.put(f"/api/sessions/{session_id}/resume_scope", json={"scope": "summary"})
        assert chosen.json()["mac_told"] is True
        before = snapshot(phone, session_id)["conversation_id"]
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "after the summary"})
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "after the summary",
            "the held message",
        )
        listed = events(phone, session_id)
        assert snapshot(phone, session_id)["conversation_id"] == before
    texts = [e.get("text", "") for e in listed]
    marker = texts.index("resumed from a summary (Claude Code's /compact)")
    compact = next(
        i for i, e in enumerate(listed) if "/compact" in e.get("text", "") and i > marker
    )
    assert compact < texts.index("after the summary")


def test_a_fresh_scope_starts_a_new_conversation_with_the_handoff_first(fake: Bridge) -> None:
    fake.start_agent()
    with fake.phone() as phone:
        session_id = stopped_session(phone, fake)
        before = snapshot(phone, session_id)["conversation_id"]
        phone.put(f"/api/sessions/{session_id}/resume_scope", json={"scope": "fresh"})
        reopened = phone.post(f"/api/sessions/{session_id}/reopen")
        assert reopened.json()["scope"] == "fresh"
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"].startswith(HANDOFF_OPENING),
            "the handoff",
        )
        wait_state(phone, session_id, "idle")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "and now this"})
        wait_event(
            phone, session_id, lambda e: e["kind"] == "user" and e["text"] == "and now this", "it"
        )
        listed = events(phone, session_id)
        after = snapshot(phone, session_id)
    assert after["conversation_id"] != before
    texts = user_texts(listed)
    assert texts[0] == "hello there" and texts[-1] == "and now this"
    assert texts[1].startswith(HANDOFF_OPENING) and "hello there" in texts[1]
    markers = [e["text"] for e in listed if e.get("marker") == "resumed"]
    assert markers == ["resumed fresh from 0 decisions"]
    # seq goes on across the two conversations
    assert [e["seq"] for e in listed] == list(range(1, len(listed) + 1))


def test_a_revive_after_a_reboot_starts_by_the_sessions_scope(fake: Bridge) -> None:
    fake.start_agent()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, fake.folder(), prompt="hello there")
        wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
        wait_state(phone, session_id, "idle")
        phone.put(f"/api/sessions/{session_id}/resume_scope", json={"scope": "summary"})
        fake.stop_agent()
        fake.kill_tmux()  # the Mac rebooted
        fake.start_agent()
        wait_event(phone, session_id, lambda e: e.get("marker") == "revived", "the revive line")
        wait_event(
            phone,
            session_id,
            lambda e: "/compact" in e.get("text", "") and e.get("marker") == "local_command",
            "Claude Code's own compaction, typed by the agent",
        )
        listed = events(phone, session_id)
    markers = [e.get("marker") for e in listed]
    assert markers.index("revived") < markers.index("local_command")
    assert "resumed" in markers
