"""The usage report on the page (web/js/report.js) in Chromium at 390×844, against a real relay
fed by a scripted Mac over the real link: a new session and a resumed one show as figures and as
bars of the SVG chart; a search on the overview whose result is opened (web/js/search.js tells
the relay) counts as a search that worked; per Mac and per project lists follow."""

from __future__ import annotations

from playwright.sync_api import Browser, expect

from tests.support.relay import Account, RelayServer
from tests.support.web import (
    Phone,
    ScriptedMac,
    assistant_line,
    new_sid,
    relay_client,
    user_line,
    wait_for,
)

SHOP = "/Users/ada/src/shop"


def test_the_report_page_draws_starts_resumes_and_search_success(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    old = new_sid()
    scripted.send_json_lines(old, [user_line("tune the invoice export", "u-old")], cwd=SHOP)
    scripted.update(old, state="ended")
    scripted.update(old, state="starting")  # reopened: a resume of the whole conversation
    first = assistant_line("Resumed: the export is tuned.", "a-old")
    first["message"]["usage"] = {"input_tokens": 500, "cache_read_input_tokens": 2000,
                                 "cache_creation_input_tokens": 100, "output_tokens": 20}  # fmt: skip
    with relay_client(phone.server, account) as client:
        made = client.post(
            "/api/sessions", json={"device_id": account.device_id, "cwd": SHOP, "prompt": "hi"}
        )
        assert made.status_code == 201, made.text
        fresh = made.json()["id"]
        scripted.update(fresh, state="starting")  # a new session's first start
        wait_for(
            lambda: (
                (t := client.get("/api/report").json()["totals"]["sessions"])["started"] == 1
                and t["resumed"]["full"] == 1
            ),
            what="the starts recorded",
        )
        scripted.send_json_lines(old, [first], cwd=SHOP)  # the resume's first answer
        wait_for(
            lambda: client.get("/api/report").json()["totals"]["tokens"]["full"]["reread"] == 2600,
            what="the tokens re-read on resume",
        )

    page = phone.login(account).open("/")
    page.locator("#search-q").fill("invoice")
    result = page.locator(f".found a.session-row[data-id='{old}']")
    expect(result).to_be_visible()
    result.click()
    expect(page).to_have_url(f"{phone.server.url}/#/s/{old}")
    with relay_client(phone.server, account) as client:
        wait_for(
            lambda: client.get("/api/report").json()["totals"]["search"]["followed"] == 1,
            what="the opened result recorded",
        )

    page.goto("/#/settings")
    page.locator("#set-report").click()
    report = page.locator(".page.report")
    expect(report.locator(".tile[data-figure='started'] .tile-big")).to_have_text("1")
    expect(report.locator(".tile[data-figure='resumed'] .tile-big")).to_have_text("1")
    expect(report.locator(".tile[data-figure='resumed'] .tile-small")).to_contain_text("50%")
    expect(report.locator(".tile[data-figure='resumed'] .tile-small")).to_contain_text(
        "reopened 1, revived 0, moved 0"
    )
    expect(report.locator(".tile[data-figure='search'] .tile-big")).to_have_text("100%")
    expect(report.locator(".tile[data-figure='reread'] .tile-big")).to_have_text("2.6K")
    expect(report.locator(".tokens-chart g[data-scope='full'] rect")).to_have_attribute(
        "width", "230"
    )
    bars = report.locator(".sessions-chart g.bar")
    expect(bars).to_have_count(30)
    today = bars.nth(29)
    expect(today).to_have_attribute("data-started", "1")
    expect(today).to_have_attribute("data-resumed", "1")
    expect(today.locator("rect")).to_have_count(2)
    expect(report.locator(".report-macs li")).to_contain_text(["Studio"])
    expect(report.locator(".report-projects li")).to_contain_text(["shop"])
    box = report.locator(".sessions-chart").bounding_box()
    assert box is not None and box["width"] <= 390
    phone.shot("report-390x844")
    report.locator(".segs button", has_text="7 days").click()
    expect(report.locator(".sessions-chart g.bar")).to_have_count(7)
    phone.shot("report-7-days-390x844", full=True)


def test_the_report_and_memory_pages_speak_korean(
    browser: Browser, relay: RelayServer, account: Account, scripted: ScriptedMac
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("결제 화면 고치기", "u-ko")], cwd=SHOP)
    korean = Phone(browser, relay, locale="ko-KR").login(account)
    try:
        page = korean.open("/#/settings")
        expect(page.locator("#set-report")).to_have_text("리포트")
        page.locator("#set-report").click()
        expect(page.locator(".tile[data-figure='search'] .tile-name")).to_have_text("검색 성공")
        expect(page.locator(".sessions-chart")).to_have_attribute("role", "img")
        korean.shot("report-ko-390x844")
        page.goto("/#/settings")
        page.locator("#set-memory").click()
        expect(page.locator(".page.memory .note")).to_contain_text("다음에 시작할 때부터")
    finally:
        korean.close()
