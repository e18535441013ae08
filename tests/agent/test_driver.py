"""One session's driver (agent/driver.py) alone, on the in-memory multiplexer
(tests/support/agent_fakes.py) and captured screens and hooks of the real Claude Code: no agent, tmux or
relay, so each test takes well under a second."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

import pytest

from agent import held as heldrules
from agent.cards import keys_for
from agent.driver import SessionDriver, SessionHost
from agent.errors import CommandFailed
from agent.mux import Pane
from agent.registry import SessionRecord
from agent.transcript import TranscriptFollower
from tests.support.agent_fakes import FakeMux
from tests.support.paths import FIXTURES
from wire import config
from wire.protocol import AnswerCardArgs, MarkerKind, SessionInfo

BASH_DIALOG = FIXTURES / "screens" / "d_bash_permission" / "01_bash_dialog_80x24.screen_ansi.txt"
IDLE = FIXTURES / "screens" / "b_idle" / "01_idle_fresh_80x24.screen_ansi.txt"


def hooks_of(scenario: str) -> list[tuple[str, dict[str, Any]]]:
    lines = (FIXTURES / "hooks" / f"{scenario}.hooks.log").read_text().splitlines()
    found = [json.loads(line) for line in lines if line.strip()]
    return [(f["event"], f["payload"]) for f in found]


class ClosingMux(FakeMux):
    """A terminal whose dialog closes (the screen becomes ``after``) once a key is sent."""

    def __init__(self, after: str) -> None:
        super().__init__()
        self.after = after

    async def send_keys(self, name: str, groups: Sequence[Sequence[str]]) -> None:
        await super().send_keys(name, groups)
        self.screens[name] = self.after


class Host:
    """What the driver reaches outside the session, recorded."""

    def __init__(self) -> None:
        self.updates: list[SessionInfo] = []
        self.markers: list[tuple[MarkerKind, str]] = []
        self.saves = 0
        self.tasks: set[asyncio.Task[None]] = set()

    async def update(self, info: SessionInfo) -> None:
        self.updates.append(info)

    def save(self) -> None:
        self.saves += 1

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def seams(self) -> SessionHost:
        return SessionHost(
            update=self.update,
            save=self.save,
            changed=lambda: None,
            add_marker=lambda record, kind, text: self.markers.append((kind, text)),
            end_allow_all=lambda now, record: None,
            spawn=self.spawn,
        )


def driver_on(mux: FakeMux, host: Host, tmp_path: Path, screen: Path) -> SessionDriver:
    record = SessionRecord(id=str(uuid.uuid4()), cwd=str(tmp_path), created_at=time.time())
    record.launched_at = time.time() - 5
    driver = SessionDriver(
        record=record,
        follower=TranscriptFollower(record.acked),
        mux=mux,
        config=config.load(environ={}),
        claude_home=tmp_path / "claude-home",
        host=host.seams(),
    )
    mux.panes_by_name[driver.name] = Pane(driver.name, 4242, False, 80, 24, (0, 0), "claude")
    mux.screens[driver.name] = screen.read_text()
    driver.pane_alive = True
    driver.first_frame_at = time.time() - 5  # past the first frame's quiet time
    return driver


async def read(driver: SessionDriver, mux: FakeMux) -> None:
    await driver.read(True, time.time(), mux.panes_by_name[driver.name])


def run(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 30))


async def up_to_the_request(driver: SessionDriver) -> None:
    """The hooks of a Bash request, up to its PermissionRequest, as the policy leaves it to ask."""
    for event, payload in hooks_of("d_bash_permission"):
        now = time.time()
        driver.note_hook(event, payload, now)
        if event == "PermissionRequest":
            driver.ask_card(payload["tool_name"], payload, now)
            return


def test_a_permission_card_from_its_request_is_answered_with_the_dialogs_keys(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        mux, host = ClosingMux(after=IDLE.read_text()), Host()
        driver = driver_on(mux, host, tmp_path, BASH_DIALOG)
        await up_to_the_request(driver)
        await read(driver, mux)
        card = driver.card
        assert driver.state == "waiting" and card is not None and driver.card_id is not None
        assert card.kind == "permission" and card.source == "hook" and card.answerable
        assert card.tool == "Bash" and card.tool_use_id is not None
        assert host.updates and host.updates[-1].card is not None  # the phone has it
        done = await driver.answer_card(AnswerCardArgs(card_id=driver.card_id, key="1"), _no_send)
        assert done == {"closed": True}
        assert mux.keys == [(driver.name, group) for group in ([g] for g in keys_for(card, "1"))]
        assert mux.pasted == []

    run(body)


def test_an_answer_for_a_dialog_that_changed_presses_nothing(tmp_path: Path) -> None:
    async def body() -> None:
        mux, host = FakeMux(), Host()
        driver = driver_on(mux, host, tmp_path, BASH_DIALOG)
        await up_to_the_request(driver)
        await read(driver, mux)
        assert driver.card_id is not None
        mux.screens[driver.name] = IDLE.read_text()  # answered at the Mac meanwhile
        with pytest.raises(CommandFailed) as refused:
            await driver.answer_card(AnswerCardArgs(card_id=driver.card_id, key="1"), _no_send)
        assert refused.value.code == "card_changed"
        assert mux.keys == [] and mux.pasted == []

    run(body)


def test_a_held_message_is_not_typed_while_a_permission_dialog_is_on_the_screen(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        mux, host = FakeMux(), Host()
        driver = driver_on(mux, host, tmp_path, IDLE)
        await read(driver, mux)
        assert driver.state == "idle" and driver.card is None  # as last read: safe to type
        # A dialog is drawn after that read: the fresh read before any key sees it.
        mux.screens[driver.name] = BASH_DIALOG.read_text()
        message = heldrules.new_message("hello from the phone")
        driver.record.held.append(message)
        await driver.send_now(message, now_requested=False)
        assert mux.pasted == [] and mux.keys == []  # not a key went into the dialog
        assert [m.state for m in driver.record.held] == ["held"]
        assert host.updates and host.updates[-1].held is not None
        assert [m.id for m in host.updates[-1].held] == [message.id]

    run(body)


async def _no_send(text: str) -> None:
    raise AssertionError(f"a permission card's answer sent a message: {text!r}")


def test_an_interrupted_turn_is_over_so_its_after_turn_message_is_typed(tmp_path: Path) -> None:
    """Esc ends a turn without a Stop hook: its "Interrupted" notice is the turn's end, so a
    message for the turn's end is typed then (a tool ending mid-turn does not release it)."""
    screens = FIXTURES / "screens" / "h_interrupt"

    async def body() -> None:
        mux, host = FakeMux(), Host()
        driver = driver_on(
            mux, host, tmp_path, screens / "01_busy_before_esc_80x24.screen_ansi.txt"
        )
        await read(driver, mux)
        assert driver.state == "busy"
        driver.record.held.append(
            heldrules.new_message("then this", message_id="after1", when="after_turn")
        )
        await driver.deliver_held(reason="PostToolUse")  # a tool ended: the turn goes on
        assert mux.pasted == []
        mux.screens[driver.name] = (screens / "02_after_esc_80x24.screen_ansi.txt").read_text()
        await read(driver, mux)
        assert driver.card is not None and driver.card.kind == "stuck"
        assert [text for _, text, _ in mux.pasted][:1] == ["then this"]

    run(body)
