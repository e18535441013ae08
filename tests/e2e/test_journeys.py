"""Journeys with the real Claude Code 2.1.328: phone (HTTP API) → relay → agent → tmux → claude."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.bridge import Bridge
from tests.support.journeys import (
    events,
    snapshot,
    start_session,
    wait_answered,
    wait_card,
    wait_event,
    wait_state,
)
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e


def test_new_session_on_an_untrusted_folder(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder("fresh", trusted=False)
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="hello there", permission_mode="manual"
        )
        assert snapshot(phone, session_id)["state"] == "starting"
        wait_answered(phone, session_id)
        listed = events(phone, session_id)
    kinds = [(e["kind"], e.get("marker")) for e in listed]
    assert kinds[0] == ("marker", "auto_passed")  # the trust dialog, passed with a line
    assert ("user", None) in kinds and ("assistant", None) in kinds
    assert [e["seq"] for e in listed] == list(range(1, len(listed) + 1))
    assert any(e["kind"] == "user" and e["text"] == "hello there" for e in listed)


def test_bash_permission_card_answered_yes_then_no(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="RUN_BASH one", permission_mode="manual"
        )
        card = wait_card(phone, session_id, "permission")
        assert card["title"] == "Bash command" and card["tool"] == "Bash"
        assert "touch bash_made.txt" in card["text"]
        assert [o["key"] for o in card["options"]] == ["1", "2", "3", "4"]
        assert snapshot(phone, session_id)["state"] == "waiting"
        answer = phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
        assert answer.status_code == 200, answer.text
        result = wait_event(phone, session_id, lambda e: e["kind"] == "tool_result", "the result")
        assert result["text"] == "hi" and not result["is_error"]
        again = phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "card_closed"
        wait_state(phone, session_id, "idle")

        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH two"})
        second = wait_card(phone, session_id, "permission")
        assert second["id"] != card["id"]
        phone.post(f"/api/sessions/{session_id}/cards/{second['id']}", json={"key": "4"})
        stuck = wait_card(phone, session_id, "stuck")
        assert "Interrupted" in stuck["title"] + stuck["text"]
    assert (bridge.root / "work" / "bash_made.txt").exists()


def test_held_message_is_typed_after_the_turn_and_send_now_interrupts(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="BRIEF_SLOW please")
        wait_state(phone, session_id, "busy")
        held = phone.post(f"/api/sessions/{session_id}/messages", json={"text": "after the turn"})
        assert held.json()["state"] == "held"
        assert [
            h["state"] for h in snapshot(phone, session_id)["held"] if h["text"] == "after the turn"
        ] == ["held"]
        typed_held = wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "after the turn",
            "the held message",
        )
        # Its turn is over only once its answer came: the prompt's line may reach the phone
        # before the state that says its turn started, so "idle" alone may be the one before.
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "assistant" and e["seq"] > typed_held["seq"],
            "the held message's answer",
        )
        wait_state(phone, session_id, "idle")
        again = phone.post(
            f"/api/sessions/{session_id}/messages", json={"text": "BRIEF_SLOW again"}
        )
        assert again.json()["state"] == "typed"  # at once: the session was idle
        wait_state(phone, session_id, "busy")
        now = phone.post(
            f"/api/sessions/{session_id}/messages", json={"text": "right now", "now": True}
        )
        assert now.json()["state"] == "typed"
        wait_event(
            phone, session_id, lambda e: e.get("marker") == "interrupted", "the interruption"
        )
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "right now",
            "send now",
        )
        typed = [e["text"] for e in events(phone, session_id) if e["kind"] == "user"]
    assert typed.count("after the turn") == 1 and typed.count("right now") == 1


def test_allow_all_session_draws_no_permission_dialog(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="RUN_BASH via hook", permission_mode="manual", allow_all=True
        )
        wait_event(
            phone, session_id, lambda e: e.get("marker") == "hook_allowed", "the hook's allow"
        )
        wait_event(phone, session_id, lambda e: e["kind"] == "tool_result", "the result")
        wait_state(phone, session_id, "idle")


def test_question_card_single_select(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="ASK_ME something", permission_mode="manual"
        )
        card = wait_card(phone, session_id, "question")
        assert "colour" in card["text"].lower()
        blue = next(o["key"] for o in card["options"] if o["label"].startswith("Blue"))
        phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": blue})
        result = wait_event(phone, session_id, lambda e: e["kind"] == "tool_result", "the answer")
        assert '"Blue"' in result["text"]


def test_plan_card_approved_leaves_plan_mode(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="MAKE_PLAN for me", permission_mode="plan"
        )
        card = wait_card(phone, session_id, "plan")
        phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
        result = wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "tool_result" and "approved" in e["text"],
            "approval",
        )
        assert not result["is_error"]
        wait_for(
            lambda: snapshot(phone, session_id)["permission_mode"] != "plan", 20, "plan mode left"
        )


def test_clear_keeps_the_session_and_starts_a_new_conversation(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="hello one")
        wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the first answer")
        wait_state(phone, session_id, "idle")
        first = snapshot(phone, session_id)["conversation_id"]
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "/clear"})
        wait_event(phone, session_id, lambda e: e.get("marker") == "cleared", "the /clear marker")
        second = wait_for(
            lambda: (c := snapshot(phone, session_id)["conversation_id"]) != first and c,
            20,
            "new conversation",
        )
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "hello after clear"})
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "hello after clear",
            "the next prompt",
        )
        assert second != first
        assert snapshot(phone, session_id)["id"] == session_id


def test_model_switch_from_the_phone_is_confirmed_without_a_card(bridge: Bridge) -> None:
    # Mid-conversation, 2.1.328 asks "Switch model?" (the history is cached for the old model);
    # the phone asked for the change, so the agent confirms it and says so in the conversation.
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="hello there")
        wait_answered(phone, session_id)
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "/model sonnet"})
        cards: list[Any] = []

        def switched() -> Any:
            cards.append(snapshot(phone, session_id)["card"])
            return next(
                (
                    e
                    for e in events(phone, session_id)
                    if "Set model to `Sonnet" in e.get("text", "")
                ),
                None,
            )

        done = wait_for(switched, 30, "the model switch")
        assert done["kind"] == "marker" and done["marker"] == "local_command"
        # The line is added once the agent has seen the dialog close: it may follow a moment later.
        passed = wait_for(
            lambda: [e for e in events(phone, session_id) if e.get("marker") == "auto_passed"],
            10,
            "the switch line",
        )
        assert [e["text"] for e in passed] == [
            "🔀 Model switch confirmed: Yes, switch to Sonnet 5.5"
        ]
        assert not [c for c in cards if c], cards  # never a card on the phone
        wait_state(phone, session_id, "idle")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "hello on sonnet"})
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "assistant" and e["seq"] > done["seq"],
            "an answer on the new model",
        )


def test_agent_restart_reattaches_without_losing_or_doubling(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="hello one")
        wait_answered(phone, session_id)
        bridge.stop_agent()  # the tmux server and claude keep running
        bridge.start_agent()
        wait_state(phone, session_id, "idle")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "hello two"})
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "hello two",
            "hello two",
        )
        wait_for(
            lambda: sum(e["kind"] == "assistant" for e in events(phone, session_id)) == 2,
            30,
            "second answer",
        )
        listed = events(phone, session_id)
    assert [e["seq"] for e in listed] == list(range(1, len(listed) + 1))
    assert [e["text"] for e in listed if e["kind"] == "user"] == ["hello one", "hello two"]


def test_reboot_revives_the_session_in_the_same_conversation(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="hello first life")
        wait_answered(phone, session_id)
        conversation = snapshot(phone, session_id)["conversation_id"]
        bridge.stop_agent()
        bridge.kill_tmux()  # the Mac rebooted: every terminal is gone
        bridge.start_agent()
        wait_event(phone, session_id, lambda e: e.get("marker") == "revived", "the revive line")
        wait_state(phone, session_id, "idle", timeout=40)
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "hello second life"})
        wait_for(
            lambda: sum(e["kind"] == "assistant" for e in events(phone, session_id)) == 2,
            30,
            "second answer",
        )
        assert snapshot(phone, session_id)["conversation_id"] == conversation


def test_write_and_edit_cards_and_accept_edits(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="WRITE_FILE please", permission_mode="manual"
        )
        card = wait_card(phone, session_id, "permission")
        assert card["title"] == "Create file" and card["tool"] == "Write"
        assert "hello.txt" in card["text"] + str(card["tool_input"])
        phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "tool_result" and "created" in e["text"],
            "the write",
        )
        wait_state(phone, session_id, "idle")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "EDIT_FILE please"})
        edit = wait_card(phone, session_id, "permission")
        assert edit["title"] == "Edit file"
        switch = next(o["key"] for o in edit["options"] if "accept edits" in o["label"].lower())
        answer = phone.post(f"/api/sessions/{session_id}/cards/{edit['id']}", json={"key": switch})
        assert answer.status_code == 200, answer.text
        try:
            wait_for(
                lambda: snapshot(phone, session_id)["permission_mode"] == "acceptEdits",
                20,
                "accept edits on",
            )
        except AssertionError as exc:
            seen = snapshot(phone, session_id)
            raise AssertionError(
                f"{exc}; state {seen['state']}, mode {seen['permission_mode']}, "
                f"screen:\n{bridge.screen(session_id)}"
            ) from exc
        tool_use = wait_event(
            phone, session_id, lambda e: e["kind"] == "tool_use" and e["tool"] == "Edit", "the edit"
        )
        assert (
            "old_string" in tool_use["input"] and "new_string" in tool_use["input"]
        )  # the page draws a diff


def test_question_with_a_multi_select_second_question(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="ASK_TWO things", permission_mode="manual"
        )
        first = wait_card(phone, session_id, "question")
        red = next(o["key"] for o in first["options"] if o["label"].startswith("Red"))
        phone.post(f"/api/sessions/{session_id}/cards/{first['id']}", json={"key": red})
        second = wait_for(
            lambda: (
                (c := snapshot(phone, session_id)["card"])
                and c["id"] != first["id"]
                and c["multi_select"]
                and c
            ),
            20,
            "the multi-select question",
        )
        keys = [
            o["key"] for o in second["options"] if o["label"].split(" —")[0] in ("Cheese", "Basil")
        ]
        assert len(keys) == 2
        answer = phone.post(f"/api/sessions/{session_id}/cards/{second['id']}", json={"keys": keys})
        assert answer.status_code == 200, answer.text
        result = wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "tool_result" and "answered" in e["text"],
            "the answers",
        )
        assert '"Red"' in result["text"] and "Cheese, Basil" in result["text"]


def test_plan_card_rejected_stays_in_plan_mode(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="MAKE_PLAN for me", permission_mode="plan"
        )
        card = wait_card(phone, session_id, "plan")
        phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "2"})
        wait_event(phone, session_id, lambda e: e.get("marker") == "rejected", "the rejection")
        wait_for(
            lambda: (
                not snapshot(phone, session_id)["card"]
                or snapshot(phone, session_id)["card"]["kind"] != "plan"
            ),
            20,
            "plan card gone",
        )
        assert snapshot(phone, session_id)["permission_mode"] == "plan"


def test_compact_keeps_the_conversation_with_a_marker(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="hello one")
        wait_answered(phone, session_id)
        conversation = snapshot(phone, session_id)["conversation_id"]
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "/compact"})
        wait_event(
            phone, session_id, lambda e: e.get("marker") == "compacted", "the compaction marker"
        )
        assert snapshot(phone, session_id)["conversation_id"] == conversation


def test_background_subagent_is_linked_and_its_turn_shown(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(
            phone, bridge, cwd, prompt="SUBAGENT please", permission_mode="manual"
        )
        sub = wait_event(phone, session_id, lambda e: e.get("agent_id"), "a subagent's event")
        assert sub["conversation_id"].startswith("agent-")
        notice = wait_event(
            phone,
            session_id,
            lambda e: e.get("marker") == "task_notification",
            "the subagent's turn",
        )
        assert notice["seq"] > sub["seq"] or notice["seq"] > 0
        assert snapshot(phone, session_id)["conversation_id"] == session_id


def test_a_message_to_an_ended_session_reopens_the_same_conversation(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        session_id = start_session(phone, bridge, cwd, prompt="hello one")
        wait_answered(phone, session_id)
        conversation = snapshot(phone, session_id)["conversation_id"]
        assert phone.post(f"/api/sessions/{session_id}/end").status_code == 200
        ended = wait_state(phone, session_id, "ended")
        assert ended["mark"] == "ended"
        sent = phone.post(f"/api/sessions/{session_id}/messages", json={"text": "hello again"})
        assert sent.status_code == 200 and sent.json()["reopened"] is True
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "hello again",
            "the message",
        )
        wait_for(
            lambda: sum(e["kind"] == "assistant" for e in events(phone, session_id)) == 2,
            30,
            "second answer",
        )
        assert snapshot(phone, session_id)["conversation_id"] == conversation
