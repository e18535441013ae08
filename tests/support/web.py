"""Helpers for the browser tests: Debian's Chromium under Playwright, and a scripted Mac that runs
on its own event loop thread (Playwright's sync API owns the test thread).

Never downloads a browser: Chromium comes from the Debian package (``scripts/test-deps-web``).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self, TypeVar

from playwright.sync_api import Browser, BrowserContext, Dialog, Page, ViewportSize

from tests.support.relay import Account, RelayServer, phone_client, transcript
from wire.client import MacLink, MemoryArchive
from wire.policy import Policy, PolicyError
from wire.protocol import (
    Card,
    CardOption,
    Command,
    CommandResult,
    DeviceInfo,
    HeldMessage,
    SessionInfo,
)
from wire.transcript import read_lines

T = TypeVar("T")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PHONE: ViewportSize = {"width": 390, "height": 844}
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


class LoopThread:
    """An asyncio loop in a daemon thread; ``run`` waits for a coroutine's result."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, work: Awaitable[T], timeout: float = 30.0) -> T:
        async def wait() -> T:
            return await work

        future: Future[T] = asyncio.run_coroutine_threadsafe(wait(), self.loop)
        return future.result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@dataclass
class ScriptedMac:
    """A Mac over the real link: sends transcripts and session updates, records commands.

    Commands are answered ``ok`` (with ``answers[name]`` as data when set), or with ``fail[name]``
    (a ``(code, message)`` pair) when set. ``set_policy`` and ``change_policy`` are answered as
    the agent does (agent/daemon.py): with the policy now held, or ``bad_args``.
    """

    server: RelayServer
    token: str
    loop: LoopThread
    name: str = "Studio"
    claude_version: str = "2.1.328"  # what its hello says it runs
    commands: list[Command] = field(default_factory=list)
    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    fail: dict[str, tuple[str, str]] = field(default_factory=dict)
    link: MacLink | None = None
    url: str = ""  # the relay's address, when it differs from ``server.url``
    archive: MemoryArchive = field(default_factory=MemoryArchive)
    offsets: dict[str, int] = field(default_factory=dict)
    policies: dict[str, Policy] = field(default_factory=dict)  # what the Mac holds, per session

    async def _on_command(self, command: Command) -> CommandResult:
        self.commands.append(command)
        if command.name in self.fail:
            code, message = self.fail[command.name]
            return CommandResult(command_id=command.command_id, ok=False, code=code, error=message)
        data = self.answers.get(command.name, {})
        if command.name in ("set_policy", "change_policy"):
            held = self.policies.get(command.session_id, Policy())
            try:
                if command.name == "set_policy":
                    policy = Policy.from_json(command.args.get("policy"))
                else:
                    policy = held.changed(command.args.get("changes"))
            except PolicyError as exc:
                return CommandResult(
                    command_id=command.command_id, ok=False, code="bad_args", error=f"policy: {exc}"
                )
            self.policies[command.session_id] = policy
            data = {"policy": policy.to_json()}
        return CommandResult(command_id=command.command_id, ok=True, data=data)

    def connect(self) -> Self:
        self.link = MacLink(
            self.url or self.server.url,
            self.token,
            DeviceInfo(name=self.name, agent_version="0.1.0", claude_version=self.claude_version),
            on_command=self._on_command,
            archive=self.archive,
        )
        self.loop.run(self.link.connect())
        return self

    def close(self) -> None:
        if self.link is not None:
            self.loop.run(self.link.close())

    def abort(self) -> None:
        if self.link is not None:
            self.loop.run(self.link.abort())

    def send_transcript(
        self, session_id: str, prefix: str, cwd: str = "/Users/ada/src/shop"
    ) -> int:
        path = transcript(prefix)
        lines = list(read_lines(path.read_bytes()))
        return self.send_records(session_id, path.stem, lines, cwd)

    def send_records(self, session_id: str, conversation: str, lines: list[Any], cwd: str) -> int:
        assert self.link is not None
        ack = self.loop.run(self.link.send_lines(session_id, conversation, lines, cwd=cwd))
        return ack.last_seq

    def send_json_lines(
        self, session_id: str, bodies: list[dict[str, Any]], cwd: str = "/Users/ada/src/shop"
    ) -> int:
        """Transcript lines made up by the test (a conversation of its own, offsets after the last)."""
        from wire.protocol import LineRecord

        offset = self.offsets.get(session_id, 0)
        lines = []
        for body in bodies:
            text = json.dumps(body)
            lines.append(LineRecord(offset=offset, text=text, uuid=body.get("uuid")))
            offset += len(text.encode()) + 1
        self.offsets[session_id] = offset
        return self.send_records(session_id, "conv-" + session_id[:8], lines, cwd)

    def update(self, session_id: str, **fields: Any) -> None:
        assert self.link is not None
        self.loop.run(self.link.update(SessionInfo(session_id=session_id, **fields)))

    def command_names(self) -> list[str]:
        return [c.name for c in self.commands]


def user_line(text: str, uuid: str, ts: str = "2026-11-29T21:33:53.764Z") -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "sessionId": "conv",
        "timestamp": ts,
        "message": {"role": "user", "content": text},
    }


def assistant_line(text: str, uuid: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "sessionId": "conv",
        "timestamp": "2026-11-29T21:33:54.000Z",
        "message": {
            "id": "msg_" + uuid[:8],
            "role": "assistant",
            "model": "claude-opus-5-5",
            "content": [{"type": "text", "text": text}],
        },
    }


def tool_result_line(tool_use_id: str, text: str, uuid: str) -> dict[str, Any]:
    return {
        "type": "user",
        "uuid": uuid,
        "sessionId": "conv",
        "timestamp": "2026-11-29T21:33:55.000Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use_id, "content": text}],
        },
    }


def tool_use_line(tool_use_id: str, name: str, inp: dict[str, Any], uuid: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": uuid,
        "sessionId": "conv",
        "timestamp": "2026-11-29T21:33:54.500Z",
        "message": {
            "id": "msg_" + uuid[:8],
            "role": "assistant",
            "model": "claude-opus-5-5",
            "content": [{"type": "tool_use", "id": tool_use_id, "name": name, "input": inp}],
        },
    }


def permission_card(card_id: str = "card-1") -> Card:
    return Card(
        id=card_id,
        kind="permission",
        title="Bash command",
        text="Do you want to proceed?",
        options=[
            CardOption(key="1", label="Yes"),
            CardOption(key="2", label="Yes, and don't ask again for touch commands"),
            CardOption(key="3", label="No"),
        ],
        tool="Bash",
        tool_input={"command": "touch bash_made.txt && echo hi", "description": "Create a file"},
    )


def multi_question_card(card_id: str = "card-q") -> Card:
    return Card(
        id=card_id,
        kind="question",
        title="Toppings",
        text="Which toppings do you want?",
        options=[
            CardOption(key="1", label="Cheese"),
            CardOption(key="2", label="Olives"),
            CardOption(key="3", label="Basil"),
            CardOption(key="4", label="Type something."),
        ],
        multi_select=True,
    )


def held(message_id: str, text: str, state: str = "held") -> HeldMessage:
    return HeldMessage(id=message_id, text=text, state=state, created_at=1_764_000_000.0)  # type: ignore[arg-type]


class PortRelay(RelayServer):
    """A relay on a chosen port and data folder: stop it and start another in its place."""

    def __init__(self, data_dir: Path, port: int, **overrides: Any) -> None:
        import uvicorn

        from relay.app import create_app
        from wire import config as configmod

        self.port = port
        self.config = configmod.load(
            {"data_dir": str(data_dir), "port": port, **overrides}, environ={}
        )
        self.app = create_app(self.config)
        self.server = uvicorn.Server(
            uvicorn.Config(
                self.app,
                host="127.0.0.1",
                port=port,
                log_level="warning",
                ws_max_size=self.config.int("max_link_message_bytes"),
                timeout_graceful_shutdown=1,
            )
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)


SCREENSHOTS = ARTIFACTS / "screens"


class Phone:
    """A browser context logged in as an account, watching for dialogs and CSP violations."""

    def __init__(self, browser: Browser, server: RelayServer, locale: str = "en-US") -> None:
        self.server = server
        self.context: BrowserContext = browser.new_context(
            viewport=PHONE, device_scale_factor=2, locale=locale, base_url=server.url
        )
        self.context.set_default_timeout(10_000)
        self.dialogs: list[str] = []
        self.problems: list[str] = []
        self.page: Page = self.new_page()

    def _dismiss(self, dialog: Dialog) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def new_page(self) -> Page:
        page = self.context.new_page()
        page.on("dialog", self._dismiss)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on(
            "console",
            lambda m: (
                self.problems.append(m.text)
                if "Content Security Policy" in m.text or "Refused to" in m.text
                else None
            ),
        )
        return page

    def login(self, account: Account) -> Phone:
        self.context.add_cookies(
            [
                {
                    "name": "cb_login",
                    "value": account.phone_token,
                    "url": self.server.url,
                    "httpOnly": True,
                    "sameSite": "Strict",
                }
            ]
        )
        return self

    def open(self, path: str = "/") -> Page:
        self.page.goto(path)
        return self.page

    def shot(self, name: str, full: bool = False) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full)

    def close(self) -> None:
        self.context.close()
        assert not self.problems, self.problems


def new_sid() -> str:
    return str(uuid.uuid4())


def wait_for(check: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def commands(mac: ScriptedMac, name: str, count: int = 1) -> list[Any]:
    return wait_for(
        lambda: (
            [c for c in mac.commands if c.name == name][:count]
            if len([c for c in mac.commands if c.name == name]) >= count
            else None
        ),
        what=f"{count} {name} command(s)",
    )


# -- the page itself ------------------------------------------------------------------------------


def relay_client(server: RelayServer, account: Account) -> Any:
    return phone_client(server, account.phone_token)


def actions(page: Page, name: str) -> None:
    page.get_by_role("button", name="Session actions").click()
    page.locator("dialog .sheet-item", has_text=re.compile(f"^{re.escape(name)}$")).click()
