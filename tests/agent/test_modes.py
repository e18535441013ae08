"""A running session's mode and model (agent/modes.py): read from hooks, transcript lines and
the screen, the next press of Claude Code's mode key decided from what the screen showed, and
``/model``'s answer read from the line under it; the relay's PATCH in front of them."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from agent import modes
from agent.cards import read_screen
from agent.driver import SessionDriver, SessionHost
from agent.errors import CommandFailed
from agent.mux import Pane
from agent.registry import SessionRecord
from agent.screen import render
from agent.state import Computed
from agent.transcript import TranscriptFollower
from tests.support.agent_fakes import FakeMux
from tests.support.api import SMALL, error_of, new_id, push
from tests.support.paths import FIXTURES
from tests.support.relay import Account, RelayServer, mac
from wire import config
from wire.protocol import Command, CommandResult, SessionInfo


@pytest.mark.parametrize(
    ("target", "seen", "action"),
    [
        ("acceptEdits", ["manual"], "press"),
        ("acceptEdits", ["manual", "acceptEdits"], "done"),
        ("manual", ["manual"], "done"),
        ("default", ["manual"], "done"),  # hooks' name for manual
        ("auto", ["manual", "acceptEdits", "plan"], "press"),
        ("bypassPermissions", ["manual", "acceptEdits", "plan", "auto", "manual"], "give_up"),
        ("plan", [None], "give_up"),  # no mode line on that screen
        ("plan", ["manual", None], "give_up"),
    ],
)
def test_the_next_step_toward_a_mode(target: str, seen: list[str | None], action: str) -> None:
    assert modes.next_mode_step(target, seen).action == action


def test_a_mode_not_in_the_cycle_says_which_cycle_it_saw_and_why() -> None:
    step = modes.next_mode_step(
        "bypassPermissions", ["manual", "acceptEdits", "plan", "auto", "manual"]
    )
    assert step.reason == (
        "Bypass mode is not in this session's mode cycle (Manual → Accept edits → "
        "Plan → Auto → Manual) (claude offers it only when started allowing it: start the "
        "session in Bypass mode)"
    )


def test_a_cycle_that_never_comes_back_still_ends() -> None:
    seen = ["manual"] + ["plan", "auto"] * 5
    assert modes.next_mode_step("acceptEdits", seen).action == "give_up"


def test_the_mode_of_a_hook_and_the_model_of_a_hook_and_a_transcript_line() -> None:
    assert modes.mode_of_hook({"permission_mode": "default"}) == "manual"
    assert modes.mode_of_hook({"permission_mode": "acceptEdits"}) == "acceptEdits"
    assert modes.mode_of_hook({"permission_mode": "nonsense"}) is None
    assert modes.mode_of_hook({}) is None
    assert modes.model_of_hook({"model": "claude-opus-5-5"}) == "claude-opus-5-5"
    assert modes.model_of_hook({"source": "clear"}) is None
    line = {"type": "assistant", "message": {"model": "claude-sonnet-4-5", "content": []}}
    assert modes.model_of_line(json.dumps(line)) == "claude-sonnet-4-5"
    for other in (
        {**line, "isSidechain": True},  # a subagent's
        {"type": "assistant", "message": {"model": "<synthetic>"}},  # an API error's
        {"type": "user", "message": {"model": "x"}},
    ):
        assert modes.model_of_line(json.dumps(other)) is None
    assert modes.model_of_line('{"type": "assistant", "model": broken') is None
    newer = {"type": "assistant", "message": {"model": "claude-haiku-4-5"}}
    tail = [json.dumps(line), json.dumps(newer), '{"type": "user"}', ""]
    assert modes.latest_model(tail) == "claude-haiku-4-5"
    assert modes.latest_model(['{"type": "user"}']) is None


def test_patch_sends_mode_and_model_to_the_mac_and_says_why_not(
    relay: RelayServer, account: Account
) -> None:
    seen: list[Command] = []

    async def on_command(command: Command) -> CommandResult:
        seen.append(command)
        if command.name == "set_model" and command.args["model"] == "nonsense":
            return CommandResult(
                command_id="", ok=False, code="model_refused", error="Claude Code: no such model"
            )
        if command.name == "set_mode":
            return CommandResult(command_id="", ok=True, data={"permission_mode": "plan"})
        return CommandResult(command_id="", ok=True, data={"model": "sonnet"})

    session_id = new_id()
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    base = f"/api/sessions/{session_id}"

    async def go() -> None:
        async with (
            mac(relay, account.device_token, on_command=on_command) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)
            changed = await client.patch(
                base, json={"permission_mode": "plan", "model": "sonnet", "title": "t"}
            )
            assert changed.status_code == 200, changed.text
            body = changed.json()
            assert (body["permission_mode"], body["model"], body["title"]) == (
                "plan",
                "sonnet",
                "t",
            )
            assert [(c.name, c.args) for c in seen] == [
                ("set_mode", {"mode": "plan"}),
                ("set_model", {"model": "sonnet"}),
            ]
            refused = await client.patch(base, json={"model": "nonsense", "title": "never"})
            assert (
                error_of(refused, 409, "model_refused")["message"] == "Claude Code: no such model"
            )
            assert (await client.get(base)).json()["title"] == "t"  # nothing else changed
            count = len(seen)
            for bad in ({"permission_mode": "yolo"}, {"model": "sonnet; /exit"}, {"model": ""}):
                error_of(await client.patch(base, json=bad), 400, "bad_request")
            assert len(seen) == count  # the Mac was never asked

    asyncio.run(go())


# -- the driver on the captured screens of 2.1.332 ------------------------------------------------

SCREENS = FIXTURES / "modes" / "2.1.332"
CYCLE = sorted((SCREENS / "cycle").glob("*.screen_ansi.txt"))
MODEL = {p.name.split("_", 1)[0]: p for p in (SCREENS / "model").glob("*.screen_ansi.txt")}


def screen_lines(path: Path) -> tuple[str, ...]:
    return render(path.read_text(), 120, 40).lines


class ModeMux(FakeMux):
    """Claude Code's mode key on captured screens: each Shift+Tab shows the next one."""

    def __init__(self, cycle: list[Path]) -> None:
        super().__init__()
        self.cycle = [p.read_text() for p in cycle[:-1]]  # the last is the first again
        self.at = 0

    async def send_keys(self, name: str, groups: Sequence[Sequence[str]]) -> None:
        await super().send_keys(name, groups)
        if [list(g) for g in groups] == [["BTab"]]:
            self.at = (self.at + 1) % len(self.cycle)
            self.screens[name] = self.cycle[self.at]


class ModelMux(FakeMux):
    """``/model`` on captured screens: the paste shows in the box, Enter shows ``after``."""

    def __init__(self, after: Path, settings: Path | None = None) -> None:
        super().__init__()
        self.after = after.read_text()
        self.settings = settings  # written on Enter, as Claude Code saves the default

    async def paste(self, name: str, text: str, *, enter: bool = True) -> None:
        await super().paste(name, text, enter=enter)
        self.screens[name] = MODEL["01"].read_text()

    async def send_keys(self, name: str, groups: Sequence[Sequence[str]]) -> None:
        await super().send_keys(name, groups)
        if [list(g) for g in groups] == [["Enter"]]:
            self.screens[name] = self.after
            if self.settings is not None:
                data = json.loads(self.settings.read_text())
                self.settings.write_text(json.dumps({**data, "model": "claude-haiku-4-5"}))


def idle_driver(mux: FakeMux, tmp_path: Path, screen: str) -> SessionDriver:
    record = SessionRecord(id=str(uuid.uuid4()), cwd=str(tmp_path), created_at=time.time())
    host = SessionHost(
        update=_ignore, save=lambda: None, changed=lambda: None,
        add_marker=lambda record, kind, text: None, end_allow_all=lambda now, record: None,
        spawn=lambda coro: coro.close(),
    )  # fmt: skip
    driver = SessionDriver(
        record=record,
        follower=TranscriptFollower(record.acked),
        mux=mux,
        config=config.load(environ={}),
        claude_home=tmp_path / ".claude",
        host=host,
    )
    mux.panes_by_name[driver.name] = Pane(driver.name, 4242, False, 120, 40, (0, 0), "claude")
    mux.screens[driver.name] = screen
    driver.pane_alive = True
    driver.first_frame_at = time.time() - 5
    driver.computed = Computed("idle", None, (), False)
    return driver


async def _ignore(info: SessionInfo) -> None:
    return None


def test_the_captured_mode_lines_read_as_the_cycle_goes() -> None:
    assert [read_screen(render(p.read_text(), 120, 40)).mode for p in CYCLE] == [
        "manual", "acceptEdits", "plan", "auto", "manual",
    ]  # fmt: skip


@pytest.mark.parametrize(("target", "presses"), [("acceptEdits", 1), ("auto", 3), ("manual", 0)])
def test_set_mode_presses_shift_tab_until_the_mode_line_shows_it(
    tmp_path: Path, target: str, presses: int
) -> None:
    async def body() -> None:
        mux = ModeMux(CYCLE)
        driver = idle_driver(mux, tmp_path, CYCLE[0].read_text())
        assert await driver.set_mode(target) == {"permission_mode": target, "presses": presses}
        assert [k for _, k in mux.keys] == [[["BTab"]]] * presses
        assert driver.record.permission_mode == target  # for reopen and revive

    asyncio.run(asyncio.wait_for(body(), 30))


def test_a_mode_not_in_the_cycle_is_refused_back_where_it_began(tmp_path: Path) -> None:
    async def body() -> None:
        mux = ModeMux(CYCLE)
        driver = idle_driver(mux, tmp_path, CYCLE[0].read_text())
        with pytest.raises(CommandFailed) as refused:
            await driver.set_mode("bypassPermissions")
        assert refused.value.code == "mode_unavailable"
        assert "Manual → Accept edits → Plan → Auto → Manual" in refused.value.message
        assert mux.at == 0 and driver.record.permission_mode is None  # as it was

    asyncio.run(asyncio.wait_for(body(), 30))


def test_mode_and_model_wait_for_an_idle_prompt_or_the_next_start(tmp_path: Path) -> None:
    async def body() -> None:
        mux = ModeMux(CYCLE)
        driver = idle_driver(mux, tmp_path, CYCLE[0].read_text())
        driver.computed = Computed("busy", None, (), False)
        for change in (driver.set_mode("plan"), driver.set_model("sonnet")):
            with pytest.raises(CommandFailed) as refused:
                await change
            assert refused.value.code == "session_busy"
        assert mux.keys == [] and mux.pasted == []
        # A stopped session keeps them for its next start (--permission-mode, --model).
        driver.pane_alive = False
        assert await driver.set_mode("default") == {
            "permission_mode": "manual",
            "applies": "on_reopen",
        }
        assert await driver.set_model("sonnet") == {"model": "sonnet", "applies": "on_reopen"}
        assert (driver.record.permission_mode, driver.record.model) == ("manual", "sonnet")
        assert mux.keys == [] and mux.pasted == []

    asyncio.run(asyncio.wait_for(body(), 30))


def test_model_outcomes_read_from_the_captured_screens() -> None:
    set_fresh = modes.model_outcome(screen_lines(MODEL["02"]), "claude-haiku-4-5")
    assert set_fresh == modes.ModelOutcome(
        True, "Set model to Haiku 4.5 and saved as your default for new sessions", "Haiku 4.5"
    )
    assert modes.model_outcome(screen_lines(MODEL["03"]), "sonnet") is None  # its dialog is up
    assert modes.model_outcome(screen_lines(MODEL["04"]), "sonnet") == modes.ModelOutcome(
        True, "Set model to Sonnet 5.5 and saved as your default for new sessions", "Sonnet 5.5"
    )
    missing = modes.model_outcome(screen_lines(MODEL["05"]), "no-such-model-x")
    assert missing == modes.ModelOutcome(False, "Model 'no-such-model-x' not found")
    declined = modes.model_outcome(screen_lines(MODEL["06"]), "sonnet")
    assert declined == modes.ModelOutcome(False, "Kept model as Opus 5.5 (default)")
    assert modes.model_outcome(screen_lines(MODEL["01"]), "claude-haiku-4-5") is None  # typed only


def test_set_model_types_it_reads_the_answer_and_keeps_the_persons_default(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        settings = tmp_path / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text(json.dumps({"theme": "dark"}))
        mux = ModelMux(MODEL["02"], settings)
        driver = idle_driver(mux, tmp_path, CYCLE[0].read_text())
        done = await driver.set_model("claude-haiku-4-5")
        assert done == {
            "model": "claude-haiku-4-5",
            "shown": "Haiku 4.5",
            "line": "Set model to Haiku 4.5 and saved as your default for new sessions",
        }
        assert [text for _, text, _ in mux.pasted] == ["/model claude-haiku-4-5"]
        assert driver.record.model == "claude-haiku-4-5" and driver.model_now == "claude-haiku-4-5"
        # Claude Code saved the name as the default for new sessions: put back as it was.
        assert json.loads(settings.read_text()) == {"theme": "dark"}

    asyncio.run(asyncio.wait_for(body(), 30))


def test_an_unknown_model_is_refused_with_claude_codes_words(tmp_path: Path) -> None:
    async def body() -> None:
        mux = ModelMux(MODEL["05"])
        driver = idle_driver(mux, tmp_path, CYCLE[0].read_text())
        with pytest.raises(CommandFailed) as refused:
            await driver.set_model("no-such-model-x")
        assert refused.value.code == "model_refused"
        assert refused.value.message == "Claude Code: Model 'no-such-model-x' not found"
        assert driver.record.model is None

    asyncio.run(asyncio.wait_for(body(), 30))


def test_the_persons_default_model_is_put_back() -> None:
    before = {"model": "opus", "theme": "dark"}
    assert modes.settings_restored({**before, "model": "haiku"}, "opus") == before
    assert modes.settings_restored({"model": "haiku"}, modes.MISSING) == {}
    assert modes.settings_restored(before, "opus") is None  # nothing to do
    assert modes.settings_restored(["not", "an", "object"], "opus") is None
