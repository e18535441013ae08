"""The session menu is grouped (issue 22, item 10): everyday first, then information, then
arranging, and the ending ones last and apart with one line on Rest and End. A real relay, a
scripted Mac over the real link, Debian's Chromium at 390×844."""

from __future__ import annotations

import uuid

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, commands, new_sid, user_line


def test_the_menu_is_grouped_with_ending_last_and_apart(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("hello", str(uuid.uuid4()))])
    scripted.update(sid, state="idle", permission_mode="manual")
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(".convo [data-seq='1']")).to_be_visible()
    page.get_by_role("button", name="Actions").click()
    sheet = page.locator("dialog .sheet")
    expect(sheet).to_be_visible()
    parts = sheet.evaluate(
        """el => [...el.children].map(c => c.classList.contains('sheet-group') ? '# ' + c.textContent
            : c.classList.contains('sheet-note') ? 'note' : c.textContent)"""
    )
    headings = [p for p in parts if p.startswith("# ")]
    assert headings == ["# Work", "# Information", "# Arrange", "# Stop or remove"], parts

    def group(name: str) -> list[str]:
        start = parts.index("# " + name) + 1
        end = next((i for i in range(start, len(parts)) if parts[i].startswith("# ")), len(parts))
        return parts[start:end]

    assert group("Work")[:2] == ["Change mode", "Change model"], parts
    assert {"Files", "Changes", "Decisions", "Fork"} <= set(group("Work")), parts
    assert group("Information")[0] == "Cost and usage" and len(group("Information")) == 4, parts
    assert group("Arrange")[0] == "Rename" and "Lock" in group("Arrange"), parts
    assert group("Stop or remove") == ["note", "Rest", "End", "Delete"], parts
    note = page.locator("dialog .sheet-note")
    expect(note).to_contain_text("Rest stops the terminal; your next message reopens it.")
    expect(note).to_contain_text("End stops Claude Code")
    phone.shot("22-10-session-menu", full=True)
    page.locator("dialog .sheet-group", has_text="Stop or remove").scroll_into_view_if_needed()
    phone.shot("22-10-session-menu-ending")

    # the entries still do what they did
    page.get_by_role("button", name="Rest", exact=True).click()
    page.locator("dialog").get_by_role("button", name="Rest", exact=True).click()
    commands(scripted, "rest")
