"""The agent driven with the fake Claude Code (tests/fakeclaude) on real tmux: a fixture shared by
the tests that need a fast, faithful Mac."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RelayServer
from tests.e2e.conftest import Bridge, seed_home

FAKE = str(Path(__file__).parent / "fakeclaude" / "claude")


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
