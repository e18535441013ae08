"""A person's steps on the phone's HTTP API in end-to-end journeys: start a session, read it, wait
for a state, a card or an event."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.bridge import Bridge
from tests.support.waits import wait_for


def start_session(phone: httpx.Client, bridge: Bridge, cwd: str, **body: Any) -> str:
    response = phone.post(
        "/api/sessions", json={"device_id": bridge.account.device_id, "cwd": cwd, **body}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def snapshot(phone: httpx.Client, session_id: str) -> dict[str, Any]:
    response = phone.get(f"/api/sessions/{session_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())


def events(phone: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    page = phone.get(f"/api/sessions/{session_id}/events", params={"after": 0}).json()
    return list(page["events"])


def wait_state(
    phone: httpx.Client, session_id: str, state: str, timeout: float = 30
) -> dict[str, Any]:
    return wait_for(
        lambda: (s := snapshot(phone, session_id))["state"] == state and s,
        timeout,
        f"state {state}",
    )


def wait_card(
    phone: httpx.Client, session_id: str, kind: str, timeout: float = 30
) -> dict[str, Any]:
    # a card may come before its dialog is drawn (not answerable yet): wait for the dialog
    snap = wait_for(
        lambda: (
            (s := snapshot(phone, session_id))["card"]
            and s["card"]["kind"] == kind
            and s["card"].get("answerable", True)
            and s
        ),
        timeout,
        f"a {kind} card",
    )
    return dict(snap["card"])


def wait_event(phone: httpx.Client, session_id: str, predicate: Any, what: str) -> dict[str, Any]:
    return wait_for(
        lambda: next((e for e in events(phone, session_id) if predicate(e)), None), 30, what
    )


def wait_answered(phone: httpx.Client, session_id: str) -> None:
    """The first answer arrived and the turn is over."""
    wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
    wait_state(phone, session_id, "idle")


def say_and_wait_answer(
    phone: httpx.Client, session_id: str, text: str, timeout: float, what: str
) -> None:
    """Send ``text`` to an idle session and wait until its answer is the newest event of the
    conversation (the relay's own snapshot of the ledger may follow it: it is no answer)."""
    phone.post(f"/api/sessions/{session_id}/messages", json={"text": text})
    seen: list[dict[str, Any]] = []

    def answered() -> bool:
        seen[:] = [e for e in events(phone, session_id) if e["kind"] != "snapshot"]
        asked = any(e["kind"] == "user" and e["text"] == text for e in seen)
        return asked and seen[-1]["kind"] == "assistant"

    try:
        wait_for(answered, timeout, what)
    except AssertionError as timed_out:
        tail = [(e["seq"], e["kind"], str(e.get("text", ""))[:40]) for e in seen[-6:]]
        raise AssertionError(f"{timed_out}; the newest events: {tail}") from None
