"""What an offline Mac last said of its sessions survives a relay restart (issue 14): a question
waiting on a Mac that is offline is still listed as needing you after the relay comes back."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.support.relay import RelayServer
from tests.support.waits import wait_for
from tests.support.web import LoopThread, ScriptedMac, multi_question_card, new_sid, user_line


def sessions(server: RelayServer, token: str) -> dict[str, dict[str, Any]]:
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {token}"}) as phone:
        body = phone.get("/api/sessions")
        assert body.status_code == 200, body.text
        return {s["id"]: s for s in body.json()["sessions"]}


def test_last_known_state_of_an_offline_mac_survives_a_relay_restart(
    tmp_path: Path, loop: LoopThread, relay_overrides: Callable[[], dict[str, Any]]
) -> None:
    data = tmp_path / "relay"
    store = relay_overrides()  # one store, kept across the restart
    first = RelayServer(data, **store).start()
    try:
        account = first.account()
        mac = ScriptedMac(first, account.device_token, loop).connect()
        waiting, working = new_sid(), new_sid()
        mac.send_json_lines(waiting, [user_line("may I?", str(uuid.uuid4()))])
        mac.send_json_lines(working, [user_line("build it", str(uuid.uuid4()))])
        mac.update(waiting, state="waiting", card=multi_question_card())
        mac.update(working, state="busy", activity="Running make")
        mac.update(working, activity="Running make test")  # an activity line alone: not stored
        wait_for(lambda: len(first.state.last_known) == 2, 10, "both states kept")
        mac.abort()
        wait_for(lambda: first.state.live.link(account.device_id) is None, 10, "Mac offline")
        before = sessions(first, account.phone_token)
        assert before[waiting]["last_known"]["needs_you"] is True
    finally:
        first.stop()

    # The relay restarts while the Mac stays offline.
    second = RelayServer(data, **store).start()
    try:
        after = sessions(second, account.phone_token)
        assert after[waiting]["mark"] == "offline"
        assert after[waiting]["needs_you"] is False  # nothing live: the Mac is offline
        assert after[waiting]["last_known"] == {
            "state": "waiting",
            "activity": None,
            "needs_you": True,
            "card_kind": multi_question_card().kind,
        }
        assert after[working]["last_known"]["state"] == "busy"
        assert after[working]["last_known"]["needs_you"] is False
        assert after[working]["last_known"]["activity"] == "Running make"

        # Back online, the Mac's word replaces what was kept, and it is kept again.
        back = ScriptedMac(second, account.device_token, loop).connect()
        back.update(waiting, state="idle")
        wait_for(
            lambda: sessions(second, account.phone_token)[waiting]["state"] == "idle", 10, "idle"
        )
        now = sessions(second, account.phone_token)[waiting]
        assert now["last_known"] is None and now["needs_you"] is False
        assert second.state.last_known[waiting]["needs_you"] is False
        back.close()
    finally:
        second.stop()


def test_why_a_session_could_not_start_is_kept_while_its_mac_is_offline(
    tmp_path: Path, loop: LoopThread, relay_overrides: Callable[[], dict[str, Any]]
) -> None:
    from wire.protocol import StartFailureInfo

    data = tmp_path / "relay"
    store = relay_overrides()
    failure = StartFailureInfo(
        code="claude_not_logged_in",
        reason="Not logged in · Please run /login",
        action="Run `claude` once in a terminal on Studio and log in (/login).",
        last_lines=["Not logged in · Please run /login"],
        status=1,
    )
    first = RelayServer(data, **store).start()
    try:
        account = first.account()
        mac = ScriptedMac(first, account.device_token, loop).connect()
        failed = new_sid()
        mac.send_json_lines(failed, [user_line("hello", str(uuid.uuid4()))])
        mac.update(failed, state="ended", error="Claude Code stopped", failure=failure)
        live = wait_for(lambda: sessions(first, account.phone_token)[failed]["failure"], 10)
        assert live == failure.model_dump()
        mac.abort()
        wait_for(lambda: first.state.live.link(account.device_id) is None, 10, "Mac offline")
        assert sessions(first, account.phone_token)[failed]["failure"] == failure.model_dump()
    finally:
        first.stop()
    second = RelayServer(data, **store).start()
    try:
        after = sessions(second, account.phone_token)[failed]
        assert after["failure"]["code"] == "claude_not_logged_in"
        assert after["last_known"]["failure"]["reason"] == "Not logged in · Please run /login"
    finally:
        second.stop()
