"""A phone waking from sleep looks at its stream at once (web/js/live.js).

Asleep, a phone runs no timers: the page's keep-alive watchdog cannot notice that the network went
away meanwhile. Playwright's clock stops the page's timers (the phone asleep) while the proxy
passes no byte; time then jumps on without firing a timer, and the page comes back into view.
The page must say "Reconnecting…" on that wake alone, and catch up once the network is back.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, expect

from tests.support.proxy import FreezableProxy
from tests.support.relay import RelayServer
from tests.support.web import PHONE, LoopThread, ScriptedMac, new_sid, user_line

KEEPALIVE = 1.0


@pytest.fixture
def woken(
    make_relay: Any, browser: Browser, loop: LoopThread
) -> Iterator[tuple[ScriptedMac, FreezableProxy, BrowserContext, str]]:
    relay: RelayServer = make_relay(sse_keepalive=KEEPALIVE)
    account = relay.account()
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    proxy = FreezableProxy(relay.port)
    context = browser.new_context(viewport=PHONE, base_url=proxy.url)
    context.set_default_timeout(10_000)
    context.add_cookies(
        [{"name": "cb_login", "value": account.phone_token, "url": proxy.url, "httpOnly": True}]
    )
    sid = new_sid()
    mac.send_json_lines(sid, [user_line("before the sleep", str(uuid.uuid4()))])
    mac.update(sid, state="idle")
    try:
        yield mac, proxy, context, sid
    finally:
        context.close()
        proxy.close()
        mac.close()


def test_a_phone_waking_rechecks_its_stream_at_once(
    woken: tuple[ScriptedMac, FreezableProxy, BrowserContext, str],
) -> None:
    mac, proxy, context, sid = woken
    page = context.new_page()
    page.clock.install()
    page.goto(f"/#/s/{sid}")
    expect(page.locator(".convo")).to_contain_text("before the sleep")
    expect(page.locator("#live")).to_have_class("live on")

    # Asleep: no timer runs and no byte comes.
    page.clock.pause_at(page.evaluate("Date.now()") / 1000 + 0.05)  # seconds, as Python gives time
    proxy.freeze()
    page.evaluate(
        "Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true})"
    )
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    time.sleep(3 * KEEPALIVE)
    expect(page.locator("#band")).to_be_hidden()  # nothing noticed it: the watchdog slept too
    page.clock.set_system_time(page.evaluate("Date.now()") / 1000 + 10 * KEEPALIVE)
    expect(page.locator("#band")).to_be_hidden()

    # Awake: the page looks at once, no timer needed.
    started = time.monotonic()
    page.evaluate(
        "Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true})"
    )
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    expect(page.locator("#band")).to_have_attribute("data-kind", "reconnecting", timeout=2_000)
    print(f"\nwake: Reconnecting {time.monotonic() - started:.2f} s after the page came into view")
    expect(page.locator("#live")).not_to_have_class("live on")

    # The network is back: the stream opens again and brings what was written meanwhile.
    mac.send_json_lines(sid, [user_line("while asleep", str(uuid.uuid4()))])
    proxy.thaw()
    page.clock.resume()
    expect(page.locator("#band")).to_be_hidden(timeout=15_000)
    expect(page.locator("#live")).to_have_class("live on")
    expect(page.locator(".convo")).to_contain_text("while asleep")
