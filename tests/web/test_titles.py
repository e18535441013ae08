"""Titles by convention on the page, in Debian's Chromium at 390×844: the session menu's
"Regenerate title" takes Claude Code's newest ai-title; over a person's title it says to reset
the title first."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, actions, new_sid


def test_regenerate_title_from_the_session_menu(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "b_idle")
    scripted.send_json_lines(sid, [{"type": "ai-title", "aiTitle": "Widget colours"}])
    page = phone.login(account).open(f"/#/s/{sid}")
    actions(page, "Regenerate title")
    expect(page.locator("#toast")).to_contain_text("Title: Widget colours")
    expect(page.locator("header")).to_contain_text("Widget colours")

    actions(page, "Rename")
    page.locator("dialog input").fill("Mine")
    page.locator("dialog").get_by_role("button", name="Save").click()
    expect(page.locator("header")).to_contain_text("Mine")
    actions(page, "Regenerate title")
    expect(page.locator("#toast")).to_contain_text("reset the title first")
    phone.shot("62-regenerate-title-refused")
    expect(page.locator("header")).to_contain_text("Mine")
    assert not phone.problems, phone.problems
