"""When the page cannot hear the relay it says so, and says it cannot know the Macs (issue 22,
item 5), in Chromium at 390×844.

A frozen relay (sockets open, nothing sent: here a proxy that stops passing bytes) stops being
"Live" within 10 s of its last heartbeat, whatever the keep-alive; a relay that is gone paints
every Mac and session "unknown since <time>" with its last known state greyed, never "Mac
offline"; the session view says the same in words.
"""

from __future__ import annotations

import re
import time
import uuid
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, expect

from tests.support.proxy import FreezableProxy
from tests.support.relay import RelayServer, free_port
from tests.support.web import (
    PHONE,
    SCREENSHOTS,
    LoopThread,
    Phone,
    PortRelay,
    ScriptedMac,
    new_sid,
    user_line,
)

LIVE_WINDOW = 10.0  # seconds: web/js/connection.js LIVE_WINDOW_MS
HEARTBEAT = 8.0  # longer than usual, so the keep-alive watchdog (two intervals) comes after 10 s
MARGIN = 3.0  # a shared, busy test machine


def no_mac_offline(page: Page) -> None:
    text = page.locator("main").inner_text()
    assert "Mac offline" not in text and "offline ·" not in text, text


def test_a_frozen_relay_is_not_live_after_10_s_and_macs_are_unknown(
    make_relay: Any, browser: Browser, loop: LoopThread
) -> None:
    relay: RelayServer = make_relay(stream_heartbeat_interval=HEARTBEAT, sse_keepalive=30.0)
    account = relay.account()
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    proxy = FreezableProxy(relay.port)
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, base_url=proxy.url)
    context.set_default_timeout(10_000)
    context.add_cookies(
        [{"name": "cb_login", "value": account.phone_token, "url": proxy.url, "httpOnly": True}]
    )
    sid = new_sid()
    mac.send_json_lines(sid, [user_line("first words", str(uuid.uuid4()))])
    mac.update(sid, state="idle")
    try:
        page = context.new_page()
        page.goto("/")
        row = page.locator(f".session-row[data-id='{sid}']")
        expect(row.locator(".badge").first).to_have_text("Idle")
        expect(page.locator("#live")).to_have_text("Live")
        expect(page.locator(".mac-head .conn")).to_have_text("online")

        page.wait_for_function("() => document.querySelector('#live').textContent === 'Live'")
        proxy.freeze()
        started = time.monotonic()
        expect(page.locator("#live")).not_to_have_text(
            "Live", timeout=(LIVE_WINDOW + HEARTBEAT + MARGIN) * 1000
        )
        elapsed = time.monotonic() - started
        print(f"\nfrozen relay: not Live {elapsed:.1f} s after the freeze")
        assert elapsed <= LIVE_WINDOW + HEARTBEAT + MARGIN
        expect(page.locator("#live")).to_have_text(
            re.compile(r"No word since \d\d:\d\d|Reconnecting…")
        )
        expect(page.locator("#band")).to_contain_text(re.compile(r"since \d\d:\d\d|Reconnecting"))
        # every Mac and session: unknown since the last word, the last state greyed
        expect(page.locator(".mac-head .conn")).to_have_text(re.compile(r"unknown since \d\d:\d\d"))
        expect(row.locator(".badge.stale")).to_have_text("Idle")
        expect(row.locator(".badge.mk-unknown")).to_have_text(
            re.compile(r"Unknown since \d\d:\d\d")
        )
        no_mac_offline(page)
        page.screenshot(path=str(SCREENSHOTS / "22-05-frozen-relay-overview.png"))

        proxy.thaw()
        expect(page.locator("#live")).to_have_text("Live", timeout=20_000)
        expect(row.locator(".badge.stale")).to_have_count(0)
        expect(page.locator(".mac-head .conn")).to_have_text("online")
    finally:
        context.close()
        proxy.close()
        mac.close()


def test_a_relay_gone_shows_unknown_since_in_the_overview_and_the_session(
    browser: Browser, tmp_path: Path, loop: LoopThread
) -> None:
    port = free_port()
    data = tmp_path / "relay"
    server: RelayServer = PortRelay(data, port).start()
    acct = server.account()
    mac = ScriptedMac(server, acct.device_token, loop).connect()
    sid = new_sid()
    mac.send_json_lines(sid, [user_line("hello there", str(uuid.uuid4()))])
    mac.update(sid, state="busy", activity="coding")
    phone = Phone(browser, server).login(acct)
    page = phone.open(f"/#/s/{sid}")
    try:
        expect(page.locator(".convo [data-seq='1']")).to_be_visible()
        # the session view says the connection in words, as the overview does
        expect(page.locator("#live")).to_have_text("Live")
        expect(page.locator("#top-actions .badge").first).to_have_text("Coding")
        phone.shot("22-05-session-live")

        server.stop()
        expect(page.locator("#live")).to_have_text(
            re.compile("Unreachable|Reconnecting…|No word since"), timeout=15_000
        )
        expect(page.locator("#band")).to_have_attribute("data-kind", "unreachable", timeout=20_000)
        expect(page.locator("#band")).to_contain_text(
            re.compile(r"Relay unreachable since \d\d:\d\d")
        )
        expect(page.locator("#top-actions .badge.stale")).to_have_text("Coding")
        marks = page.locator(".session-head .badge.mk-unknown")
        expect(marks).to_have_text(re.compile(r"Unknown since \d\d:\d\d"))
        assert "Mac offline" not in page.locator("body").inner_text()
        phone.shot("22-05-session-relay-gone")

        page.goto("/#/")
        row = page.locator(f".session-row[data-id='{sid}']")
        expect(row.locator(".badge.stale")).to_have_text("Coding")
        expect(page.locator(".mac-head .conn")).to_have_text(re.compile(r"unknown since \d\d:\d\d"))
        no_mac_offline(page)
        phone.shot("22-05-overview-relay-gone")
    finally:
        mac.close()
        phone.problems.clear()  # the relay going away logs failed fetches, which is the point
        phone.close()
        server.stop()
