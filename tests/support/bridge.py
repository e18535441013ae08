"""One Mac for end-to-end tests: a real agent running sessions in a throw-away tmux server with a
throw-away HOME, driving the real Claude Code (against the project's fake Anthropic API) or the fake
claude (tests/fakeclaude)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent.daemon import Agent, AgentOptions
from tests.support.relay import Account, RelayServer
from tests.support.waits import wait_for
from wire import config as configmod

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
E2E = TESTS / "e2e"  # the fake Anthropic API (mockapi.py) and its scenarios
FAKE = str(TESTS / "fakeclaude" / "claude")  # the fake Claude Code
API_KEY = "sk-ant-api03-mockmockmockmockmockmockmockmockmockmockmock-AAAAAAAA"


@contextlib.contextmanager
def fake_api(log: Path, dump_dir: Path | None = None) -> Iterator[str]:
    """The tests' fake Anthropic API (tests/e2e/mockapi.py) on a free port, its requests in
    ``log`` (and each request's whole body in ``dump_dir``, when given): yields its URL once it
    answers."""
    from tests.support.relay import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(E2E / "mockapi.py"), "--port", str(port), "--log", str(log),
         "--scenarios", str(E2E / "scenarios.json"),
         *(["--dump-dir", str(dump_dir)] if dump_dir is not None else [])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                    break
            time.sleep(0.05)
        yield url
    finally:
        proc.kill()
        proc.wait()


def claude_binary() -> str:
    """The real Claude Code, as `scripts/test` installs it (or CB_TEST_CLAUDE)."""
    explicit = os.environ.get("CB_TEST_CLAUDE")
    candidates = [explicit] if explicit else []
    candidates.append(str(REPO / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"))
    for candidate in candidates:
        if candidate and Path(candidate).exists():
            return candidate
    pytest.fail(
        "the real Claude Code binary is missing: run scripts/test (it installs "
        "@anthropic-ai/claude-code into .cache/claude-code) or set CB_TEST_CLAUDE"
    )


def seed_home(home: Path, trusted: list[str]) -> None:
    """A HOME where Claude Code starts with no onboarding, login or API-key question."""
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    projects = {
        p: {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True} for p in trusted
    }
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "lastOnboardingVersion": "2.1.328",
                "theme": "dark",
                "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
                "autoUpdates": False,
                "bypassPermissionsModeAccepted": True,
                "projects": projects,
            }
        )
    )
    (home / ".claude" / "settings.json").write_text('{"autoUpdates": false}')


@dataclass
class Bridge:
    """One Mac: an agent in its own thread and loop, its tmux server, HOME and folders."""

    relay: RelayServer
    account: Account
    root: Path
    claude: str
    api_url: str
    socket: str = field(default_factory=lambda: f"cbe2e-{uuid.uuid4().hex[:8]}")
    agent: Agent | None = None
    loop: asyncio.AbstractEventLoop | None = None
    thread: threading.Thread | None = None

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def data(self) -> Path:
        return self.root / "agent"

    def folder(self, name: str = "work", trusted: bool = True) -> str:
        path = self.root / name
        path.mkdir(parents=True, exist_ok=True)
        real = os.path.realpath(path)
        if trusted:
            config = json.loads((self.home / ".claude.json").read_text())
            config["projects"][real] = {
                "hasTrustDialogAccepted": True,
                "hasCompletedProjectOnboarding": True,
            }
            (self.home / ".claude.json").write_text(json.dumps(config))
        return real

    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": self.api_url,
            "ANTHROPIC_API_KEY": API_KEY,
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        }

    def start_agent(self, **overrides: Any) -> Agent:
        given: dict[str, Any] = {
            "data_dir": self.data,
            "relay_url": self.relay.url,
            "token": self.account.device_token,
            "claude": self.claude,
            "mux_program": shutil.which("tmux") or "tmux",
            "mux_socket": self.socket,
            "claude_home": self.home / ".claude",
            "device_name": "e2e mac",
            "env": self.env(),
        }
        options = AgentOptions(**{**given, **overrides})
        config = configmod.load(environ={})
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self.loop = loop
            agent = Agent(options, config)
            self.agent = agent
            try:
                loop.run_until_complete(agent.start())
            except BaseException as exc:  # surfaced to the test
                errors.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            try:
                loop.run_until_complete(agent.stop())
            finally:
                _finish(loop)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        ready.wait(60)
        if errors:
            raise errors[0]
        assert self.agent is not None
        # Linked, as a person sees it on the phone before starting a session there (the link
        # opens in the background: a session asked for before it would find the Mac offline).
        wait_for(
            lambda: self.relay.state.live.link(self.account.device_id) is not None,
            30,
            "the Mac online",
        )
        return self.agent

    def stop_agent(self) -> None:
        """Stop the agent as a crash or an update would: the tmux server stays."""
        if self.loop is not None and self.thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(30)
            if self.thread.is_alive():
                raise AssertionError(
                    "the agent did not stop in 30 s; where it is:\n"
                    + _where_stuck(self.loop, self.thread)
                )
        self.agent = None
        self.loop = None
        self.thread = None

    def kill_tmux(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)

    def screen(self, session_id: str) -> str:
        out = subprocess.run(
            ["tmux", "-L", self.socket, "capture-pane", "-p", "-t", f"cb-{session_id}"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return out.stdout

    def phone(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.relay.url,
            headers={"Authorization": f"Bearer {self.account.phone_token}"},
            timeout=30,
        )


def _where_stuck(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> str:
    """The stack of the agent's thread and of each task still on its loop."""
    frame = sys._current_frames().get(thread.ident or 0)
    parts = ["".join(traceback.format_stack(frame)) if frame is not None else "(no frame)"]
    for task in list(asyncio.all_tasks(loop)):
        out = io.StringIO()
        task.print_stack(file=out)
        parts.append(out.getvalue())
    return "\n".join(parts)


def _finish(loop: asyncio.AbstractEventLoop) -> None:
    """Close an agent's loop the way ``asyncio.run`` does: whatever the agent left running (a
    command in flight when it was stopped as a crash would stop it) is cancelled and awaited
    here, not destroyed later in another test."""
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
