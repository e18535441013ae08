"""The agent under bad commands and failed launches, and the permission mode it remembers: the
real agent with the fake Claude Code (tests/fakeclaude) on a throw-away tmux server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shutil
import subprocess
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from agent.cards import read_screen
from agent.daemon import Agent
from agent.mux import Mux, MuxError
from agent.screen import render
from agent.state import HookFacts, apply_hook, current_mode, launch_mode
from tests.support import web
from tests.support.bridge import Bridge
from tests.support.journeys import (
    events,
    snapshot,
    start_session,
    wait_card,
    wait_event,
    wait_state,
)
from tests.support.paths import FIXTURES
from tests.support.relay import Account
from tests.support.waits import wait_for
from tests.support.web import ScriptedMac
from wire.protocol import Command, CommandResult


def _command(fake: Bridge, name: str, session_id: str, args: dict[str, Any]) -> CommandResult:
    """A command as the relay sends it, handled by the running agent in its own loop."""
    assert fake.agent is not None and fake.loop is not None
    command = Command(command_id=uuid.uuid4().hex, name=name, session_id=session_id, args=args)  # type: ignore[arg-type]
    return asyncio.run_coroutine_threadsafe(fake.agent.on_command(command), fake.loop).result(20)


def _recorded(fake: Bridge) -> list[str]:
    path = fake.data / "sessions.json"
    if not path.exists():
        return []
    return [r["id"] for r in json.loads(path.read_text())["sessions"]]


def _start_command(fake: Bridge, session_id: str) -> str:
    shown = subprocess.run(
        ["tmux", "-L", fake.socket, "display", "-p", "-t", f"cb-{session_id}",
         "#{pane_start_command}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return shown.strip().strip('"')


# -- 9: a command that fails answers at once, and nothing stays half-recorded ----------------


@pytest.mark.parametrize("bad_id", ["../../../x", "not-a-uuid", "", "0" * 36])
def test_a_create_session_with_a_bad_id_answers_at_once_and_records_nothing(
    fake: Bridge, bad_id: str
) -> None:
    agent = fake.start_agent()
    cwd = fake.folder()
    result = _command(fake, "create_session", bad_id, {"cwd": cwd, "prompt": "hello there"})
    assert not result.ok and result.code == "bad_session_id", result
    assert result.error and "UUID" in result.error
    assert bad_id not in agent.registry.sessions and bad_id not in agent.runtimes
    assert bad_id not in _recorded(fake)


def test_a_bad_session_id_through_the_relay_is_refused_without_a_trace(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        response = phone.post(
            "/api/sessions",
            json={"device_id": fake.account.device_id, "cwd": cwd, "session_id": "../../../x"},
        )
        # The relay refuses it itself (422) or passes the Mac's refusal on (409): never a 504.
        assert response.status_code in (409, 422), response.text
        assert "../../../x" not in [s["id"] for s in phone.get("/api/sessions").json()["sessions"]]
    assert "../../../x" not in _recorded(fake)


def test_a_launch_that_raises_answers_with_the_reason_and_is_undone(
    fake: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = fake.start_agent()

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the terminal server is shutting down")

    monkeypatch.setattr(agent.mux, "new_session", broken)
    session_id = str(uuid.uuid4())
    result = _command(fake, "create_session", session_id, {"cwd": fake.folder()})
    assert not result.ok and result.code == "mac_error", result
    assert result.error and "shutting down" in result.error
    assert session_id not in agent.registry.sessions and session_id not in agent.runtimes
    assert session_id not in _recorded(fake)
    assert session_id not in {p.session_id for p in agent.archive.positions()}
    # The agent goes on: a good session starts as usual.
    monkeypatch.undo()
    with fake.phone() as phone:
        good = start_session(phone, fake, fake.folder("good"), prompt="hello there")
        wait_event(phone, good, lambda e: e["kind"] == "assistant", "the answer")


# -- 12: reopen and revive come back in the mode the session was in ------------------------


def _screen_mode(name: str) -> str | None:
    path = FIXTURES / "screens" / f"{name}.screen_ansi.txt"
    width, height = (int(v) for v in name.rsplit("_", 1)[1].split("x"))
    return read_screen(render(path.read_text(encoding="utf-8"), width, height)).mode


def test_the_mode_line_names_the_mode_as_claude_takes_it() -> None:
    assert _screen_mode("g_plan_approval/01_idle_plan_mode_80x24") == "plan"
    assert _screen_mode("b_idle/01_idle_fresh_80x24") == "manual"
    assert _screen_mode("e_write_edit_permission/04_after_edit_2_80x24") == "acceptEdits"
    assert _screen_mode("l_model/08_after_switch_confirm_1_80x24") == "auto"
    assert launch_mode("plan") == "plan" and launch_mode("auto") == "auto"
    assert launch_mode("default") == "manual"  # hooks call manual "default"
    assert launch_mode("nonsense") is None and launch_mode(None) is None


def test_the_mode_from_the_captured_plan_approval_hooks() -> None:
    log = [json.loads(line) for line in (FIXTURES / "hooks" / "g_plan_approval.hooks.log")
           .read_text().splitlines()]  # fmt: skip
    facts = HookFacts()
    for entry in log[:6]:  # up to the plan's PermissionRequest
        facts = apply_hook(facts, entry["event"], entry["payload"], entry["ts"])
    assert current_mode(facts, None, None) == "plan"
    # Approved: the PostToolUse of ExitPlanMode already says "default".
    asked = log[5]
    approved = {**asked["payload"], "hook_event_name": "PostToolUse", "permission_mode": "default"}
    facts = apply_hook(facts, "PostToolUse", approved, asked["ts"] + 1)
    assert current_mode(facts, None, None) == "manual"
    # The newer of the two sources wins: a screen read after the last hook, and one before it.
    assert current_mode(facts, "acceptEdits", facts.last_hook_at + 1) == "acceptEdits"  # type: ignore[operator]
    assert current_mode(facts, "plan", facts.last_hook_at - 1) == "manual"  # type: ignore[operator]
    assert current_mode(HookFacts(), "auto", 5.0) == "auto"


def test_a_session_whose_plan_was_approved_reopens_in_manual_mode(fake: Bridge) -> None:
    agent = fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        sid = start_session(phone, fake, cwd, prompt="MAKE_PLAN for me", permission_mode="plan")
        card = wait_card(phone, sid, "plan")
        phone.post(f"/api/sessions/{sid}/cards/{card['id']}", json={"key": "1"})
        wait_event(phone, sid, lambda e: e["kind"] == "tool_result", "the approval")
        wait_for(lambda: agent.registry.sessions[sid].permission_mode == "manual", 20, "manual")
        assert phone.post(f"/api/sessions/{sid}/rest").status_code == 200
        wait_for(lambda: snapshot(phone, sid)["state"] == "ended", 20, "rested")
        assert phone.post(f"/api/sessions/{sid}/reopen").status_code == 200
        started = _start_command(fake, sid)
        assert started.endswith("--permission-mode manual"), started
        wait_for(lambda: snapshot(phone, sid)["state"] == "idle", 20, "reopened")
        assert snapshot(phone, sid)["permission_mode"] == "manual"
    fake.stop_agent()
    saved = {r["id"]: r for r in json.loads((fake.data / "sessions.json").read_text())["sessions"]}
    assert saved[sid]["permission_mode"] == "manual"


# -- 13: one session failing to revive does not stop the agent -------------------------------


def test_a_failed_revive_is_that_sessions_error_and_the_others_come_back(
    fake: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.start_agent()
    gone_folder = fake.folder("gone")
    with fake.phone() as phone:
        ok = start_session(phone, fake, fake.folder("ok"), prompt="hello ok")
        gone = start_session(phone, fake, gone_folder, prompt="hello gone")
        broken = start_session(phone, fake, fake.folder("broken"), prompt="hello broken")
        for sid in (ok, gone, broken):
            wait_event(phone, sid, lambda e: e["kind"] == "assistant", "the first answer")
        fake.stop_agent()
        fake.kill_tmux()  # the Mac rebooted
        shutil.rmtree(gone_folder)  # and a folder went away meanwhile
        real_new_session = Mux.new_session

        async def new_session(self: Mux, name: str, *args: Any) -> Any:
            if name == f"cb-{broken}":
                raise MuxError("tmux could not start the session: server exited unexpectedly")
            return await real_new_session(self, name, *args)

        monkeypatch.setattr(Mux, "new_session", new_session)
        agent: Agent = fake.start_agent()  # does not raise

        def revived(sid: str) -> Any:
            return next((e for e in events(phone, sid) if e.get("marker") == "revived"), None)

        wait_for(lambda: revived(ok), 30, "the good session revived")

        def error_of(sid: str) -> Any:
            return snapshot(phone, sid)["error"]

        shown = {
            sid: wait_for(partial(error_of, sid), 20, f"the error of {sid}")
            for sid in (gone, broken)
        }
        assert gone_folder in shown[gone] and "no longer exists" in shown[gone], shown
        assert "server exited" in shown[broken], shown
        assert snapshot(phone, ok)["error"] is None
        assert revived(gone) is None and revived(broken) is None
        assert agent.runtimes[ok].pane_alive
        # The agent runs on: a message to the good one is answered.
        phone.post(f"/api/sessions/{ok}/messages", json={"text": "still there?"})
        wait_event(phone, ok, lambda e: e.get("text") == "still there?", "the message typed")


def test_a_session_recorded_with_a_bad_id_by_an_older_agent_is_forgotten(fake: Bridge) -> None:
    # What an older agent left after `create_session` with "../../../x": a record that never ran.
    fake.start_agent()
    with fake.phone() as phone:
        good = start_session(phone, fake, fake.folder(), prompt="hello there")
        wait_event(phone, good, lambda e: e["kind"] == "assistant", "the answer")
    fake.stop_agent()
    fake.kill_tmux()
    registry = fake.data / "sessions.json"
    saved = json.loads(registry.read_text())
    orphan = {**saved["sessions"][0], "id": "../../../x", "conversation_id": None}
    saved["sessions"].append(orphan)
    registry.write_text(json.dumps(saved))
    agent = fake.start_agent()  # the orphan neither stops it nor is revived
    assert "../../../x" not in agent.registry.sessions
    assert _recorded(fake) == [good]
    with fake.phone() as phone:
        wait_for(lambda: snapshot(phone, good)["state"] == "idle", 30, "the good one revived")


def test_the_page_says_why_a_session_could_not_start(
    phone: web.Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = web.new_sid()
    scripted.send_transcript(sid, "b_idle")
    reason = "the folder /Users/ada/src/gone no longer exists on this Mac"
    scripted.update(sid, state="ended", error=reason)
    page = phone.login(account).open(f"/#/s/{sid}")
    shown = page.locator(".session-head .session-sum")  # in place of the summary, while it lasts
    expect(shown).to_have_text(reason)
    scripted.update(sid, state="idle", error=None)  # reopened: it runs again
    expect(shown).not_to_have_text(reason)


def test_a_session_whose_lines_the_relay_refuses_does_not_hold_up_the_others(
    fake: Bridge,
) -> None:
    """The relay answering one session's batch with an error is not a lost link: that session's
    lines wait and are sent again from the same place, and the other sessions go on."""
    fake.start_agent()
    store = fake.relay.state.store
    real_ingest = store.ingest
    refused: set[str] = set()

    async def refusing(account_id: str, device_id: str, session_id: str, *a: Any, **k: Any) -> Any:
        if session_id in refused:
            raise ZeroDivisionError("a bug in one batch's handling")
        return await real_ingest(account_id, device_id, session_id, *a, **k)

    store.ingest = refusing  # type: ignore[method-assign]
    try:
        with fake.phone() as phone:
            first = start_session(
                phone, fake, fake.folder("one"), prompt="hello one", permission_mode="manual"
            )
            wait_event(phone, first, lambda e: e["kind"] == "assistant", "the first answer")
            wait_state(phone, first, "idle")
            refused.add(first)
            phone.post(f"/api/sessions/{first}/messages", json={"text": "hello again"})
            second = start_session(
                phone, fake, fake.folder("two"), prompt="hello two", permission_mode="manual"
            )
            wait_event(phone, second, lambda e: e["kind"] == "assistant", "the second answer")
            assert not [e for e in events(phone, first) if e.get("text") == "hello again"]
            refused.clear()
            wait_event(
                phone,
                first,
                lambda e: e["kind"] == "user" and e["text"] == "hello again",
                "the refused lines, sent again",
            )
            texts = [e["text"] for e in events(phone, first) if e["kind"] == "user"]
            assert texts == ["hello one", "hello again"]
    finally:
        store.ingest = real_ingest  # type: ignore[method-assign]


@pytest.mark.parametrize("stubborn", [False, True], ids=["slow-to-exit", "ignores-hangup"])
def test_ending_a_terminal_returns_once_its_program_has_exited(
    tmp_path: Path, stubborn: bool
) -> None:
    """Claude Code writes the end of its transcript after tmux's hangup; a session reopened at
    once must not run beside it. A program that ignores the hangup is killed."""
    from agent import mux as muxmod

    socket = f"cbkill-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "done"
    on_hup = "" if stubborn else f"sleep 0.6; echo bye > {done}; exit 0"
    script = f"trap '{on_hup}' HUP; echo ready; while :; do sleep 0.1; done"

    async def go() -> None:
        mux = Mux("tmux", socket)
        try:
            pane = await mux.new_session("cb-k", tmp_path, ["sh", "-c", script], {}, 80, 24)
            await asyncio.to_thread(
                wait_for, lambda: "ready" in subprocess.run(
                    ["tmux", "-L", socket, "capture-pane", "-p", "-t", "cb-k"],
                    capture_output=True, text=True, check=False,
                ).stdout, 10, "the program up",
            )  # fmt: skip
            await mux.kill("cb-k")
            assert not muxmod._alive(pane.pid)
            assert done.exists() is not stubborn  # it finished what it was writing
        finally:
            await mux.close()
            subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)

    # A loop of its own in a thread: the page tests' sync Playwright keeps one in this thread.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, go()).result(60)


def test_an_agent_whose_link_hangs_on_close_still_stops_and_says_which_part(
    fake: Bridge, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A part that never finishes closing (a relay that never answers the close) is given its
    grace and left behind: the agent stops, the log names the part, the Mac goes offline."""
    from agent import daemon

    agent = fake.start_agent()
    monkeypatch.setattr(daemon, "STOP_STEP_GRACE", 0.5)

    async def never_closes() -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(agent.link, "stop", never_closes)
    caplog.set_level("WARNING", logger="agent")
    fake.stop_agent()  # raises if the agent's thread is still running after 30 s
    assert "the relay link did not close" in caplog.text
    wait_for(lambda: fake.relay.state.live.link(fake.account.device_id) is None, 30, "offline")
