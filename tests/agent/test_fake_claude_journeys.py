"""The agent with real tmux and the fake Claude Code (tests/fakeclaude), which replays the
captured screens, transcripts, hooks and status file: fast checks of the agent's own logic,
including the dropped-key behaviour of the real program."""

from __future__ import annotations

import asyncio
import json
import subprocess
from datetime import datetime
from functools import partial
from typing import Any

import pytest

from tests.support.bridge import Bridge
from tests.support.journeys import (
    events,
    snapshot,
    start_session,
    wait_card,
    wait_event,
    wait_state,
)
from tests.support.waits import wait_for
from wire.protocol import SessionInfo


def test_trust_is_passed_and_the_first_prompt_waits_for_the_prompt_box(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder("fresh", trusted=False)
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="hello there", permission_mode="manual")
        wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
        listed = events(phone, session_id)
    assert listed[0].get("marker") == "auto_passed"
    assert [e["text"] for e in listed if e["kind"] == "user"] == ["hello there"]
    # The agent notes which Mac it is at its relay, for `search --here` and `open` run here.
    assert (fake.data / "device-id").read_text().strip() == fake.account.device_id


def test_permission_yes_then_no_leaves_a_stuck_card(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(
            phone, fake, cwd, prompt="RUN_BASH one", permission_mode="manual"
        )
        card = wait_card(phone, session_id, "permission")
        assert card["tool"] == "Bash" and "touch bash_made.txt" in card["text"]
        phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1"})
        wait_event(phone, session_id, lambda e: e["kind"] == "tool_result", "the result")
        wait_state(phone, session_id, "idle")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH two"})
        second = wait_card(phone, session_id, "permission")
        phone.post(f"/api/sessions/{session_id}/cards/{second['id']}", json={"key": "4"})
        wait_card(phone, session_id, "stuck")
        # No Stop hook came: the state is still 'waiting' on the stuck card, not a stale 'busy'.
        assert snapshot(phone, session_id)["state"] == "waiting"


def test_held_messages_wait_for_the_turn_and_send_now_interrupts(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="SLOW please", permission_mode="manual")
        wait_state(phone, session_id, "busy")
        preview = wait_for(lambda: snapshot(phone, session_id)["preview"], 10, "a preview")
        assert "slow" in preview.lower()
        held = phone.post(f"/api/sessions/{session_id}/messages", json={"text": "after the turn"})
        assert held.json()["state"] == "held"
        typed = wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "after the turn",
            "held message",
        )
        # Its turn is over only once its answer came: the prompt's line may reach the phone
        # before the state that says its turn started, so "idle" alone may be the one before.
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "assistant" and e["seq"] > typed["seq"],
            "the held message's answer",
        )
        wait_state(phone, session_id, "idle")
        again = phone.post(f"/api/sessions/{session_id}/messages", json={"text": "SLOW again"})
        assert again.json()["state"] == "typed"  # at once: the session was idle
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "SLOW again",
            "the second slow prompt",
        )
        wait_for(
            lambda: (
                (s := snapshot(phone, session_id))["state"] == "busy"
                and "slow" in (s["preview"] or "").lower()
            ),
            10,
            "the second slow answer streaming",
        )
        now = phone.post(
            f"/api/sessions/{session_id}/messages", json={"text": "now please", "now": True}
        )
        assert now.json()["state"] == "typed"
        wait_event(
            phone, session_id, lambda e: e.get("marker") == "interrupted", "the interruption"
        )
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "now please",
            "send now",
        )


def test_multi_select_question_answered_with_two_choices(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(
            phone, fake, cwd, prompt="ASK_TWO things", permission_mode="manual"
        )
        first = wait_card(phone, session_id, "question")
        phone.post(f"/api/sessions/{session_id}/cards/{first['id']}", json={"key": "1"})
        second = wait_for(
            lambda: (c := snapshot(phone, session_id)["card"]) and c["multi_select"] and c,
            20,
            "multi",
        )
        phone.post(f"/api/sessions/{session_id}/cards/{second['id']}", json={"keys": ["1", "3"]})
        result = wait_event(phone, session_id, lambda e: e["kind"] == "tool_result", "the answers")
        assert "Cheese, Basil" in result["text"]


def test_agent_restart_keeps_the_session_and_its_held_messages(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="SLOW please", permission_mode="manual")
        wait_state(phone, session_id, "busy")
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "held across restart"})
        fake.stop_agent()
        fake.start_agent()
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "held across restart",
            "held",
        )
        listed = events(phone, session_id)
    assert [e["seq"] for e in listed] == list(range(1, len(listed) + 1))


def test_a_session_being_launched_is_never_reported_ended(fake: Bridge) -> None:
    # The screen reader may look for a session's pane while it is still being made, or get a
    # list of panes asked for before it existed: neither may report the new session as ended.
    agent = fake.start_agent()
    real_panes, real_new_session, real_update = (
        agent.mux.panes,
        agent.mux.new_session,
        agent.link.update,
    )
    sent: list[str | None] = []

    async def slow_panes() -> Any:
        listed = await real_panes()
        for _ in range(40):  # delivered only once the launches under way have finished
            if all(rt.pane_alive for rt in agent.runtimes.values()):
                break
            await asyncio.sleep(0.05)
        return listed

    async def slow_new_session(*args: Any) -> Any:
        await asyncio.sleep(0.3)  # a busy Mac: the screen reader gets turns meanwhile
        return await real_new_session(*args)

    async def recorded_update(info: SessionInfo) -> None:
        if info.state is not None:
            sent.append(info.state)
        await real_update(info)

    agent.mux.panes = slow_panes  # type: ignore[method-assign]
    agent.mux.new_session = slow_new_session  # type: ignore[method-assign, assignment]
    agent.link.update = recorded_update  # type: ignore[method-assign]
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="hello there", permission_mode="manual")
        wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
    assert sent and sent[0] == "starting" and "ended" not in sent, sent


def test_a_slow_cold_start_is_starting_not_stopped(
    fake: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first run after an install: the screen stays blank for seconds before claude draws.
    original = fake.env
    monkeypatch.setattr(fake, "env", lambda: {**original(), "FAKECLAUDE_LOAD_SECONDS": "4"})
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="hello there", permission_mode="manual")
        seen: list[str] = []

        def answered() -> bool:
            seen.append(snapshot(phone, session_id)["state"])
            return any(e["kind"] == "assistant" for e in events(phone, session_id))

        wait_for(answered, 30, "the answer")
    assert seen[0] == "starting" and "ended" not in seen, seen
    assert seen.count("starting") >= 10  # polled through the blank seconds


def test_a_reboot_revives_the_five_newest_and_types_held_messages_later(
    fake: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SLOW turn that cannot end before the reboot: the held message must still be held then.
    original = fake.env
    monkeypatch.setattr(fake, "env", lambda: {**original(), "FAKECLAUDE_SLOW_SECONDS": "120"})
    fake.start_agent()
    with fake.phone() as phone:
        ids = []
        for i in range(6):
            ids.append(start_session(phone, fake, fake.folder(f"w{i}"), prompt=f"hello {i}"))
        for sid in ids:
            wait_event(phone, sid, lambda e: e["kind"] == "assistant", "the first answer")
        newest = ids[-1]
        wait_state(phone, newest, "idle")
        phone.post(f"/api/sessions/{newest}/messages", json={"text": "SLOW please"})
        wait_state(phone, newest, "busy")
        held = phone.post(f"/api/sessions/{newest}/messages", json={"text": "held over the reboot"})
        assert held.json()["state"] == "held"
        fake.stop_agent()
        assert fake.data.joinpath("sessions.json").read_text().count('"state": "held"') == 1
        fake.kill_tmux()  # the Mac rebooted
        # All six were alive until then: as the registry saves them every few seconds, they were
        # last seen alive at the same moment (newest first then means the newest created).
        registry = fake.data / "sessions.json"
        saved = json.loads(registry.read_text())
        last = max(r["last_alive_at"] for r in saved["sessions"])
        for record in saved["sessions"]:
            record["last_alive_at"] = last
        registry.write_text(json.dumps(saved))
        fake.start_agent()

        def revived(sid: str) -> Any:
            return next((e for e in events(phone, sid) if e.get("marker") == "revived"), None)

        lines = {sid: wait_for(partial(revived, sid), 30, "a revive line") for sid in ids[1:]}
        typed = wait_event(
            phone,
            newest,
            lambda e: e["kind"] == "user" and e["text"] == "held over the reboot",
            "the held message",
        )
        oldest = snapshot(phone, ids[0])
        assert oldest["state"] == "ended" and revived(ids[0]) is None  # the sixth waits
    assert fake.agent is not None
    launched = [fake.agent.registry.sessions[sid].launched_at for sid in ids[1:]]
    assert launched == sorted(launched, reverse=True)  # newest first
    assert not fake.agent.registry.sessions[ids[0]].alive
    after = datetime.fromisoformat(typed["timestamp"]) - datetime.fromisoformat(
        lines[newest]["timestamp"]
    )
    assert after.total_seconds() >= 2.3, after  # held messages wait 2.5 s after a revive


def test_a_message_sent_again_with_its_id_is_typed_once(fake: Bridge) -> None:
    # The phone's answer was lost (a cut link, a timeout) and it sends the message again.
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="SLOW please", permission_mode="manual")
        wait_state(phone, session_id, "busy")
        url = f"/api/sessions/{session_id}/messages"
        body = {"text": "only once please", "id": "m1730000000000abcd"}
        first = phone.post(url, json=body).json()
        again = phone.post(url, json=body).json()
        assert first["state"] == "held" and "duplicate" not in first
        assert again == {"ok": True, "message_id": body["id"], "state": "held", "duplicate": True}
        held = snapshot(phone, session_id)["held"]
        mine = [(m["id"], m["state"]) for m in held if m["text"] == body["text"]]
        assert mine == [(body["id"], "held")]
        wait_event(phone, session_id, lambda e: e["text"] == "only once please", "the held message")
        later = wait_for(  # even after it was typed
            lambda: (a := phone.post(url, json=body).json())["state"] == "typed" and a, 10, "typed"
        )
        assert later["duplicate"] is True
        wait_state(phone, session_id, "idle")
        bad = phone.post(url, json={"text": "x", "id": "no spaces allowed"})
        assert bad.status_code == 400, bad.text
        typed = [e for e in events(phone, session_id) if e.get("text") == "only once please"]
    assert len(typed) == 1


def test_every_session_starts_with_the_persons_extra_claude_arguments(fake: Bridge) -> None:
    shared = fake.folder("shared")
    fake.start_agent(claude_args=("--add-dir", shared, "--chrome"))
    with fake.phone() as phone:
        session_id = start_session(phone, fake, fake.folder(), prompt="hello there")
        wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
    shown = subprocess.run(
        ["tmux", "-L", fake.socket, "display", "-p", "-t", f"cb-{session_id}",
         "#{pane_start_command}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert shown.strip().strip('"').endswith(f"--add-dir {shared} --chrome"), shown
