"""The decisions ledger from the real Claude Code 2.1.332 against the project's fake API:
phone (HTTP API) → relay → agent → tmux → claude. A question and a plan are answered on the
phone; the session's ledger holds them word for word, with the events they came from, and the
turn that carried them is snapshotted."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.bridge import Bridge
from tests.support.journeys import (
    events,
    start_session,
    wait_answered,
    wait_card,
    wait_event,
    wait_state,
)
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e

QUESTION = "Which colour should the widget be?"
PLAN = "# Plan\n\n1. Create hello.txt\n2. Run echo hi\n3. Report back"  # tests/e2e/mockapi.py


def ledger(phone: Any, session_id: str) -> dict[str, Any]:
    response = phone.get(f"/api/sessions/{session_id}/decisions")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def test_a_question_and_a_plan_answered_on_the_phone_are_in_the_ledger_verbatim(
    bridge: Bridge,
) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="ASK_ME something", permission_mode="plan"
        )
        card = wait_card(phone, session_id, "question")
        blue = next(o["key"] for o in card["options"] if o["label"].startswith("Blue"))
        phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": blue})
        wait_answered(phone, session_id)

        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "MAKE_PLAN for me"})
        plan = wait_card(phone, session_id, "plan")
        phone.post(f"/api/sessions/{session_id}/cards/{plan['id']}", json={"key": "1"})
        approval = wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "tool_result" and "approved" in e["text"],
            "the approval",
        )
        wait_state(phone, session_id, "idle")

        body = wait_for(
            lambda: (
                (found := ledger(phone, session_id))
                and any(d["kind"] == "plan_approved" for d in found["decisions"])
                and found
            ),
            30,
            "the plan approval in the ledger",
        )
        answer = next(d for d in body["decisions"] if d["kind"] == "answer")
        assert (answer["text"], answer["context"]) == ("Blue", QUESTION)
        approved = next(d for d in body["decisions"] if d["kind"] == "plan_approved")
        assert approved["text"] == PLAN  # the plan as approved, word for word
        assert approved["source"]["seq"] <= approval["seq"] and approved["source"]["at"]
        by_seq = {e["seq"]: e for e in events(phone, session_id)}
        assert by_seq[answer["source"]["seq"]]["kind"] == "tool_result"
        assert '"Blue"' in by_seq[answer["source"]["seq"]]["text"]

        # The turns that carried them ended: snapshot events hold the ledger as it stood.
        snaps = wait_for(
            lambda: [e for e in events(phone, session_id) if e["kind"] == "snapshot"] or None,
            30,
            "a snapshot event",
        )
        last = snaps[-1]["input"]
        assert "decision" in last["reasons"]
        texts = [d["text"] for d in last["ledger"]["decisions"]]
        assert "Blue" in texts

        # A pin joins the ledger and the search index.
        pinned = phone.post(
            f"/api/sessions/{session_id}/constraints", json={"text": "Keep the widget blue"}
        )
        assert pinned.status_code == 200, pinned.text
        assert [c["text"] for c in ledger(phone, session_id)["constraints"]] == [
            "Keep the widget blue"
        ]
        found = wait_for(
            lambda: (
                (r := phone.get("/api/search", params={"q": "constraint:widget"}).json())["here"]
                + r["elsewhere"]
            ),
            10,
            "the constraint searched",
        )
        assert session_id in [s["id"] for s in found]
