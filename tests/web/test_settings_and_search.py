"""Settings says when each phone was last used and how many sessions are active; a search that
finds nothing offers the conversations' own words in one tap (issue 22, item 14). A real relay,
a scripted Mac over the real link, Debian's Chromium at 390×844."""

from __future__ import annotations

import uuid

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, assistant_line, new_sid, user_line


def test_settings_says_when_this_phone_was_last_used_and_counts_active_sessions(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    for words in ("first", "second"):
        sid = new_sid()
        scripted.send_json_lines(sid, [user_line(words, str(uuid.uuid4()))])
        scripted.update(sid, state="idle")
    page = phone.login(account).open("/")
    expect(page.locator(".session-row")).to_have_count(2)
    page.goto("/#/settings")
    mine = page.locator("#phones li", has_text="(this phone)")
    expect(mine.locator(".row-meta")).to_contain_text("last used just now")
    expect(mine.locator(".row-meta")).not_to_contain_text("never")
    expect(page.locator("#retention .ret-counts")).to_have_text("2 active · 0 archived · 0 pinned")
    phone.shot("22-14-settings")


def test_an_empty_search_offers_the_conversations_in_one_tap(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(
        sid,
        [
            user_line("the deploy script is slow", str(uuid.uuid4())),
            assistant_line(
                "It waits on a zeppelin lock for 30 s; I removed it.", str(uuid.uuid4())
            ),
        ],
    )
    scripted.update(sid, state="idle")
    page = phone.login(account).open("/")
    page.fill("#search-q", "zeppelin")
    offer = page.get_by_role("button", name="Search in conversations for “zeppelin”")
    expect(offer).to_be_visible()
    phone.shot("22-14-search-offer")
    offer.click()
    found = page.locator(".in-convo .session-row")
    expect(found).to_have_count(1)
    expect(found.locator(".in-convo-hit")).to_contain_text("waits on a zeppelin lock")
    expect(page.locator(".in-convo")).not_to_contain_text("null")
    phone.shot("22-14-search-in-conversations")
    found.click()
    expect(page.locator(".convo")).to_contain_text("zeppelin")

    page.goto("/")
    page.fill("#search-q", "nowhere-to-be-found")
    page.get_by_role("button", name="Search in conversations for “nowhere-to-be-found”").click()
    expect(page.locator(".in-convo")).to_contain_text("Not found in any conversation either.")
