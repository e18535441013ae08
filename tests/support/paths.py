"""Where the tests' files are: the checkout, the captures of the real Claude Code
(``tests/fixtures``), the stand-in programs (``tests/fakes``, ``tests/fakeclaude``) and the fake
API (``tests/e2e``). Test modules take their paths from here, so a test file moved to another
folder still finds them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
SCREENS = FIXTURES / "screens"  # tmux captures of each tested Claude Code, by scenario
FAKES = TESTS / "fakes"  # stand-in `systemctl` and `tailscale`
FAKECLAUDE = TESTS / "fakeclaude"  # the fake Claude Code (its program is FAKECLAUDE / "claude")
E2E = TESTS / "e2e"  # the fake Anthropic API (mockapi.py) and its scenarios
