"""The page tells the truth about its connection (issue 14), in Chromium at phone size.

The page reaches a real relay through a proxy the test can freeze (no byte either way, sockets
left open: a phone that lost its network without a word). With the keep-alive at 1 s, "● Live"
must turn to "Reconnecting…" within two intervals (plus a margin for a loaded machine), come back
once the network does, and show what was written meanwhile exactly once (catch-up by seq).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.support.proxy import FreezableProxy
from tests.support.relay import RelayServer
from tests.support.web import (
    PHONE,
    LoopThread,
    ScriptedMac,
    held,
    multi_question_card,
    new_sid,
    user_line,
    wait_for,
)

KEEPALIVE = 1.0
MARGIN = 2.5  # seconds: a shared, busy test machine


@pytest.fixture
def setup(
    make_relay: Any, browser: Browser, loop: LoopThread
) -> Iterator[tuple[RelayServer, ScriptedMac, FreezableProxy, BrowserContext, str]]:
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
    mac.send_json_lines(sid, [user_line("first words", str(uuid.uuid4()))])
    mac.update(sid, state="idle")
    try:
        yield relay, mac, proxy, context, sid
    finally:
        context.close()
        proxy.close()
        mac.close()


def seqs(page: Page) -> list[int]:
    return [
        int(s)
        for s in page.eval_on_selector_all(
            ".convo [data-seq]", "els => els.map(e => e.dataset.seq)"
        )
    ]


def test_session_says_reconnecting_within_two_keepalives_and_catches_up(
    setup: tuple[RelayServer, ScriptedMac, FreezableProxy, BrowserContext, str],
) -> None:
    _, mac, proxy, context, sid = setup
    page = context.new_page()
    page.goto(f"/#/s/{sid}")
    expect(page.locator(".convo")).to_contain_text("first words")
    expect(page.locator("#live")).to_have_class("live on")
    expect(page.locator("#band")).to_be_hidden()
    time.sleep(2 * KEEPALIVE + 0.5)  # a quiet session alone is no reason to doubt the link
    expect(page.locator("#band")).to_be_hidden()

    started = time.monotonic()
    proxy.freeze()
    expect(page.locator("#band")).to_have_attribute(
        "data-kind", "reconnecting", timeout=(2 * KEEPALIVE + MARGIN) * 1000
    )
    elapsed = time.monotonic() - started
    expect(page.locator("#live")).not_to_have_class("live on")
    print(f"\nsession: Reconnecting {elapsed:.2f} s after a silent cut (keep-alive {KEEPALIVE} s)")
    assert elapsed <= 2 * KEEPALIVE + MARGIN

    # written while the phone hears nothing
    for i in range(3):
        mac.send_json_lines(sid, [user_line(f"while away {i}", str(uuid.uuid4()))])
    proxy.thaw()
    expect(page.locator("#band")).to_be_hidden(timeout=15_000)
    expect(page.locator("#live")).to_have_class("live on")
    for i in range(3):
        expect(page.locator(".convo")).to_contain_text(f"while away {i}")
    got = seqs(page)
    assert got == sorted(set(got)), got  # nothing twice, in order
    assert got == list(range(got[0], got[0] + len(got))), got  # nothing missed


def test_overview_says_reconnecting_and_offline_event_is_at_once(
    setup: tuple[RelayServer, ScriptedMac, FreezableProxy, BrowserContext, str],
) -> None:
    _, mac, proxy, context, sid = setup
    page = context.new_page()
    page.goto("/")
    expect(page.locator(f".session-row[data-id='{sid}']")).to_be_visible()
    expect(page.locator("#live")).to_have_class("live on")

    started = time.monotonic()
    proxy.freeze()
    expect(page.locator("#band")).to_have_attribute(
        "data-kind", "reconnecting", timeout=(2 * KEEPALIVE + MARGIN) * 1000
    )
    elapsed = time.monotonic() - started
    print(f"\noverview: Reconnecting {elapsed:.2f} s after a silent cut")
    assert elapsed <= 2 * KEEPALIVE + MARGIN
    mac.update(sid, state="busy", activity="coding")
    proxy.thaw()
    expect(page.locator("#band")).to_be_hidden(timeout=15_000)
    expect(page.locator(f".session-row[data-id='{sid}'] .badge").first).to_have_text("Coding")

    # the browser saying it is offline is believed at once (no waiting for the keep-alive)
    context.set_offline(True)
    started = time.monotonic()
    expect(page.locator("#band")).to_be_visible(timeout=1500)
    assert time.monotonic() - started < 1.5
    context.set_offline(False)
    expect(page.locator("#band")).to_be_hidden(timeout=15_000)
    expect(page.locator("#live")).to_have_class("live on")


def test_sessions_of_an_offline_mac_keep_what_was_last_known(
    setup: tuple[RelayServer, ScriptedMac, FreezableProxy, BrowserContext, str],
    browser: Browser,
) -> None:
    _, mac, proxy, context, idle = setup
    waiting = new_sid()
    mac.send_json_lines(waiting, [user_line("may I?", str(uuid.uuid4()))])
    mac.update(waiting, state="waiting", card=multi_question_card())
    page = context.new_page()
    page.goto("/")
    expect(page.locator("#needs-count")).to_have_text("1 session needs you")

    mac.abort()
    seen = re.compile(r"State unknown since \d\d:\d\d \(Mac offline\)")
    row = page.locator(f".session-row[data-id='{idle}']")
    expect(row.locator(".badge").first).to_have_text(seen)
    expect(page.locator(".session-row", has_text="Stopped")).to_have_count(0)
    # the waiting question stays listed as needing you, marked as on an offline Mac
    expect(page.locator("#needs-count")).to_have_text("1 session needs you")
    needs = page.locator(f".needs .session-row[data-id='{waiting}']")
    expect(needs.locator(".badge.mark")).to_have_text("Mac offline")
    page.goto(f"/#/s/{idle}")
    expect(page.locator(".badge").first).to_have_text(seen)

    ko = browser.new_context(viewport=PHONE, base_url=proxy.url, locale="ko-KR")
    try:
        # the cookies one context keeps are what another takes (Playwright types them apart)
        ko.add_cookies(context.cookies())  # type: ignore[arg-type]
        kpage = ko.new_page()
        kpage.goto("/")
        expect(kpage.locator(f".session-row[data-id='{idle}'] .badge").first).to_have_text(
            re.compile(r"\d\d:\d\d부터 상태 모름 \(맥 연결 끊김\)")
        )
    finally:
        ko.close()


def test_a_message_to_an_offline_mac_is_queued_on_the_relay_then_held(
    setup: tuple[RelayServer, ScriptedMac, FreezableProxy, BrowserContext, str],
) -> None:
    _, mac, _, context, sid = setup
    page = context.new_page()
    page.goto(f"/#/s/{sid}")
    expect(page.locator(".convo")).to_contain_text("first words")
    mac.abort()
    expect(page.locator("#band")).to_have_attribute("data-kind", "mac-offline")

    page.locator(".composer textarea").fill("run the tests when you are back")
    page.locator("button.send").click()
    dialog = page.locator("dialog")
    expect(dialog).to_contain_text("The Mac is offline. Queue this message on the relay?")
    dialog.get_by_role("button", name="Queue until the Mac is back").click()
    item = page.locator(".held-item", has_text="run the tests when you are back")
    expect(item.locator(".held-state")).to_have_text("Queued on the relay")
    expect(page.locator(".composer textarea")).to_have_value("")
    message_id = item.get_attribute("data-id")
    assert message_id

    mac.connect()
    mac.update(sid, state="idle")  # the Mac reports its sessions as it links
    sent = wait_for(
        lambda: [c for c in mac.commands if c.name == "send"], what="the queued message sent"
    )
    assert [(c.args["message_id"], c.args["text"]) for c in sent] == [
        (message_id, "run the tests when you are back")
    ]
    mac.update(sid, state="busy", held=[held(message_id, "run the tests when you are back")])
    expect(item.locator(".held-state")).to_have_text("Held")
    expect(page.locator(".held-item")).to_have_count(1)  # queued no more, held once


def test_a_long_queued_message_shows_its_preview_and_reads_whole_on_request(
    setup: tuple[RelayServer, ScriptedMac, FreezableProxy, BrowserContext, str],
) -> None:
    relay, mac, proxy, context, sid = setup
    mac.abort()
    wait_for(lambda: not relay.state.live.links, what="the Mac offline")
    long = "".join(f"step {i}: check the build, then the tests\n" for i in range(300))
    page = context.new_page()
    page.goto(f"/#/s/{sid}")
    expect(page.locator(".convo")).to_contain_text("first words")
    for text, message_id in ((long, "phone-long-1"), ("and then stop", "phone-short")):
        queued = page.request.post(
            f"/api/sessions/{sid}/outbox",
            data={"text": text, "id": message_id},
            headers={"Origin": proxy.url},  # as the page's own requests carry it
        )
        assert queued.status == 201, queued.text()
    long_item = page.locator(".held-item[data-id='phone-long-1']")
    short_item = page.locator(".held-item[data-id='phone-short']")
    expect(long_item.locator(".held-text")).to_have_text(long[:200] + "…")
    expect(short_item.locator(".held-text")).to_have_text("and then stop")
    expect(short_item.locator("button.queued-whole")).to_have_count(0)
    whole = long_item.locator("button.queued-whole")
    expect(whole).to_have_text(f"Show all ({len(long)} characters)")
    whole.click()
    expect(long_item.locator(".held-text")).to_have_text(long)
    expect(long_item.locator("button.queued-whole")).to_have_count(0)
    expect(long_item.locator(".held-state")).to_have_text("Queued on the relay")
