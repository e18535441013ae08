"""The key journeys through the phone's page in Debian's Chromium, driving the real Claude Code:
a permission card answered with a tap, a message held during a turn and then typed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from tests.support.bridge import Bridge
from tests.support.journeys import events, start_session, wait_event, wait_state
from tests.support.web import CHROMIUM, CHROMIUM_ARGS, Phone

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/test-deps-web (Debian's chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def test_permission_card_answered_from_the_page(bridge: Bridge, browser: Browser) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    phone = Phone(browser, bridge.relay).login(bridge.account)
    try:
        with bridge.phone() as api:
            session_id = start_session(
                api, bridge, cwd, prompt="RUN_BASH one", permission_mode="manual"
            )
            page = phone.open(f"/#/s/{session_id}")
            card = page.locator(".card")
            expect(card).to_be_visible(timeout=30_000)
            expect(card).to_contain_text("touch bash_made.txt && echo hi")
            phone.shot("e2e-permission-card")
            card.locator(".option[data-key='1']").click()
            expect(page.locator(".card")).to_have_count(0, timeout=20_000)
            wait_event(api, session_id, lambda e: e["kind"] == "tool_result", "the result")
            expect(page.locator(".convo")).to_contain_text(
                "Done. Tool result was: hi", timeout=20_000
            )
    finally:
        phone.close()
    assert (Path(cwd) / "bash_made.txt").exists()


def test_message_held_during_a_turn_then_typed_from_the_page(
    bridge: Bridge, browser: Browser
) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    phone = Phone(browser, bridge.relay).login(bridge.account)
    try:
        with bridge.phone() as api:
            session_id = start_session(api, bridge, cwd, prompt="BRIEF_SLOW please")
            wait_state(api, session_id, "busy")
            page = phone.open(f"/#/s/{session_id}")
            page.get_by_label("Message Claude…").fill("typed after the turn")
            page.locator("button.send").click()
            held = page.locator(".held-item", has_text="typed after the turn")
            expect(held).to_have_attribute("data-state", "held", timeout=10_000)
            # typed, it leaves the held list: it is in the conversation now
            expect(held).to_have_count(0, timeout=40_000)
            wait_event(
                api,
                session_id,
                lambda e: e["kind"] == "user" and e["text"] == "typed after the turn",
                "typed",
            )
            expect(page.locator(".convo")).to_contain_text("typed after the turn")
            users = [e["text"] for e in events(api, session_id) if e["kind"] == "user"]
    finally:
        phone.close()
    assert users.count("typed after the turn") == 1
