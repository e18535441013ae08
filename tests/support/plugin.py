"""The tests' pytest plug-in: every shared fixture, registered once by tests/conftest.py through
``pytest_plugins`` (as libtmux ships its ``pytest_plugin.py``), so no test module imports another's.

- a real relay: ``relay`` (one per run, tests isolated by ``account``), ``make_relay`` (private,
  with its own settings);
- a Mac: ``bridge`` (the real agent with the real Claude Code, against ``mock_api``, the fake
  Anthropic API; ``claude_bin``), ``fake`` (the real agent with the fake claude);
- a phone's browser: ``browser`` (Debian's Chromium), ``phone`` (logged-in page), ``loop`` (an event
  loop thread for Macs next to Playwright's sync API), ``scripted`` (a scripted Mac on that loop).

The helpers these fixtures hand out live in the importable modules next to this one.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.support.bridge import E2E, FAKE, Bridge, claude_binary, seed_home
from tests.support.relay import Account, RelayServer, free_port
from tests.support.web import CHROMIUM, CHROMIUM_ARGS, LoopThread, Phone, ScriptedMac

# -- the relay -----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def relay(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RelayServer]:
    """One relay shared by the tests that only need isolation by account."""
    server = RelayServer(tmp_path_factory.mktemp("relay")).start()
    yield server
    server.stop()


@pytest.fixture
def make_relay(tmp_path: Path) -> Iterator[Any]:
    """A private relay with its own settings, for tests that change limits."""
    servers: list[RelayServer] = []

    def make(**overrides: Any) -> RelayServer:
        server = RelayServer(tmp_path / f"relay{len(servers)}", **overrides).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture
def account(relay: RelayServer) -> Account:
    return relay.account()


# -- a Mac ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def claude_bin() -> str:
    return claude_binary()


@pytest.fixture(scope="session")
def mock_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("mockapi") / "requests.log"
    proc = subprocess.Popen(
        [sys.executable, str(E2E / "mockapi.py"), "--port", str(port), "--log", str(log),
         "--scenarios", str(E2E / "scenarios.json")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/v1/models", timeout=1).status_code == 200:
                break
        time.sleep(0.05)
    yield url
    proc.kill()
    proc.wait()


@pytest.fixture
def bridge(relay: RelayServer, claude_bin: str, mock_api: str, tmp_path: Path) -> Iterator[Bridge]:
    b = Bridge(relay, relay.account(), tmp_path, claude_bin, mock_api)
    seed_home(b.home, [])
    try:
        yield b
    finally:
        b.stop_agent()
        b.kill_tmux()


@pytest.fixture(name="fake")
def fake_bridge(
    relay: RelayServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Bridge]:
    b = Bridge(relay, relay.account(), tmp_path, FAKE, api_url="http://127.0.0.1:9")
    seed_home(b.home, [])
    original = b.env

    def env() -> dict[str, str]:
        return {**original(), "FAKECLAUDE_SLOW_SECONDS": "8", "FAKECLAUDE_DIALOG_DEAF": "0.05"}

    monkeypatch.setattr(b, "env", env)
    try:
        yield b
    finally:
        b.stop_agent()
        b.kill_tmux()


# -- a phone's browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/test-deps-web (Debian's chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def loop() -> Iterator[LoopThread]:
    thread = LoopThread()
    yield thread
    thread.stop()


@pytest.fixture
def phone(browser: Browser, relay: RelayServer) -> Iterator[Phone]:
    p = Phone(browser, relay)
    yield p
    p.close()


@pytest.fixture
def scripted(relay: RelayServer, account: Account, loop: LoopThread) -> Iterator[ScriptedMac]:
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    yield mac
    mac.close()
