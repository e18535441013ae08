"""In-memory fakes of the agent's three seams (agent/seams.py): tmux, the relay link and the hook
server. With them the daemon's own logic (commands, launches, what it tells the relay) runs in
milliseconds, without tmux, a relay or a socket; the real parts keep their own tests."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.daemon import Agent, AgentOptions
from agent.errors import MuxError, PaneGone
from agent.hookserver import HookAnswer, OnHook, SecretFor
from agent.mux import Capture, LastScreen, Pane
from agent.seams import OnLinked, OnUnlinked
from wire import config
from wire.client import Archive, CommandHandler
from wire.protocol import (
    Ack,
    Command,
    CommandName,
    CommandResult,
    DeviceInfo,
    LineRecord,
    SessionInfo,
    Welcome,
)


class FakeMux:
    """tmux in a dict: panes by name, the screen text each one shows, the keys typed into it."""

    def __init__(self) -> None:
        self.panes_by_name: dict[str, Pane] = {}
        self.started: list[tuple[str, str, list[str], dict[str, str]]] = []
        self.screens: dict[str, str] = {}
        self.keys: list[tuple[str, list[list[str]]]] = []
        self.pasted: list[tuple[str, str, bool]] = []
        self.killed: list[str] = []
        self.fail_launch: str | None = None  # a MuxError message for the next new_session
        self.dead_status: dict[str, str] = {}  # a dead pane's exit status, as tmux gives it

    async def new_session(
        self,
        name: str,
        cwd: str | Path,
        argv: Sequence[str],
        env: Mapping[str, str],
        width: int,
        height: int,
    ) -> Pane:
        if self.fail_launch is not None:
            raise MuxError(self.fail_launch)
        pane = Pane(name, 4242, False, width, height, (0, 0), Path(argv[0]).name)
        self.panes_by_name[name] = pane
        self.started.append((name, str(cwd), list(argv), dict(env)))
        return pane

    async def panes(self) -> dict[str, Pane]:
        return dict(self.panes_by_name)

    async def capture(self, name: str, pane: Pane | None = None) -> Capture:
        found = pane or self.panes_by_name.get(name)
        if found is None:
            raise PaneGone(f"no pane {name}")
        return Capture(self.screens.get(name, ""), found.width, found.height, found.cursor)

    async def last_screen(self, name: str) -> LastScreen:
        found = self.panes_by_name.get(name)
        if found is None:
            raise PaneGone(f"no pane {name}")
        screen = self.screens.get(name, "")
        return LastScreen(screen, screen, self.dead_status.get(name, ""), found.width)

    async def send_keys(self, name: str, groups: Sequence[Sequence[str]]) -> None:
        self.keys.append((name, [list(g) for g in groups]))

    async def paste(self, name: str, text: str, *, enter: bool = True) -> None:
        self.pasted.append((name, text, enter))

    async def kill(self, name: str) -> None:
        self.killed.append(name)
        self.panes_by_name.pop(name, None)

    async def close(self) -> None:
        pass


class FakeLink:
    """The relay link in memory: records what the agent sends; ``command`` plays the relay."""

    def __init__(
        self,
        archive: Archive,
        on_command: CommandHandler,
        on_linked: OnLinked,
        on_unlinked: OnUnlinked,
    ) -> None:
        self.archive = archive
        self.on_command = on_command
        self.on_linked = on_linked
        self.on_unlinked = on_unlinked
        self.device = DeviceInfo()
        self.linked = asyncio.Event()
        self.on_decision_ack: Any = None
        self.updates: list[SessionInfo] = []
        self.sent: list[BaseModel] = []
        self.batches: list[tuple[str, str, list[LineRecord]]] = []
        self._ids = itertools.count(1)

    def start(self) -> None:
        self.linked.set()

    async def stop(self) -> None:
        self.linked.clear()

    async def send_lines(
        self, session_id: str, conversation_id: str, lines: list[LineRecord], cwd: str | None
    ) -> Ack:
        self.batches.append((session_id, conversation_id, lines))
        through = max((line.offset for line in lines), default=-1)
        return Ack(
            batch=len(self.batches),
            session_id=session_id,
            conversation_id=conversation_id,
            through_offset=through,
            last_seq=0,
            epoch="e1",
        )

    async def send(self, message: BaseModel) -> None:
        self.sent.append(message)

    async def update(self, info: SessionInfo) -> None:
        self.updates.append(info)

    async def command(self, name: CommandName, session_id: str, **args: Any) -> CommandResult:
        """Send the agent one command, as the relay would, and return its result."""
        command = Command(
            command_id=f"c{next(self._ids)}", name=name, session_id=session_id, args=args
        )
        return await self.on_command(command)

    async def welcome(self) -> None:
        await self.on_linked(Welcome(device_id="mac-1", sessions=[]))


class FakeHooks:
    """The hook server without a socket: ``report`` plays a session's hook script."""

    def __init__(self, secret_for: SecretFor, on_hook: OnHook) -> None:
        self.secret_for = secret_for
        self.on_hook = on_hook
        self.started = False

    @property
    def port(self) -> int:
        return 49999

    async def start(self) -> None:
        self.started = True

    async def close(self) -> None:
        self.started = False

    async def report(self, session_id: str, event: str, payload: dict[str, Any]) -> HookAnswer:
        if self.secret_for(session_id) is None:
            return None  # the real server refuses it (403) before the agent sees it
        return await self.on_hook(session_id, event, payload)


# -- an agent on these fakes ---------------------------------------------------------------------


class Parts:
    """An agent and the fakes it was built on, for a test's body."""

    def __init__(self, agent: Agent, mux: FakeMux, link: FakeLink, hooks: FakeHooks) -> None:
        self.agent, self.mux, self.link, self.hooks = agent, mux, link, hooks


def fake_options(tmp_path: Path) -> AgentOptions:
    """An agent's options with its data and Claude home in ``tmp_path``; nothing is revived."""
    return AgentOptions(
        data_dir=tmp_path / "agent",
        relay_url="http://relay.invalid",
        token="cbd_test",
        claude="/opt/claude/bin/claude",
        mux_program="tmux",
        claude_home=tmp_path / "claude-home",
        revive=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )


def with_agent(tmp_path: Path, body: Callable[[Parts], Awaitable[None]], **settings: Any) -> None:
    """Run ``body`` on an agent whose multiplexer, link and hook server are the fakes above
    (``settings``: the agent's settings that differ from the defaults)."""
    built: dict[str, Any] = {}

    def make_link(*args: Any) -> FakeLink:
        built["link"] = FakeLink(*args)
        return built["link"]

    def make_hooks(secret_for: SecretFor, on_hook: OnHook) -> FakeHooks:
        built["hooks"] = FakeHooks(secret_for, on_hook)
        return built["hooks"]

    mux = FakeMux()

    async def go() -> None:
        agent = Agent(
            fake_options(tmp_path), config.load(settings, environ={}), mux=mux, link=make_link,
            hooks=make_hooks,
        )  # fmt: skip
        await body(Parts(agent, mux, built["link"], built["hooks"]))

    asyncio.run(go())
