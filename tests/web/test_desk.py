"""Conversations begun at the desk on the page (web/js/desk.js) in Chromium at 390×844, against a
real relay and the agent with the fake Claude Code: Settings › Macs links to the Mac's
conversations, one is read, and "Continue here" opens it as a bridge session."""

from __future__ import annotations

import shutil

from playwright.sync_api import expect

from agent.transcript import project_slug
from tests.support.bridge import Bridge
from tests.support.transcripts import CLAUDE_332
from tests.support.web import Phone

DESK = CLAUDE_332 / "desk" / "life1"
CONVERSATION = "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"
CAPTURED_CWD = "/tmp/cap332/work/desk_repo.v2"


def test_a_desk_conversation_is_listed_read_and_continued(phone: Phone, fake: Bridge) -> None:
    cwd = fake.folder("desk")
    folder = fake.home / ".claude" / "projects" / project_slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    text = (DESK / f"{CONVERSATION}.jsonl").read_text(encoding="utf-8")
    (folder / f"{CONVERSATION}.jsonl").write_text(text.replace(CAPTURED_CWD, cwd))
    shutil.rmtree(fake.home / ".claude" / "sessions", ignore_errors=True)
    fake.start_agent()
    page = phone.login(fake.account).page
    page.goto("/#/settings")
    page.get_by_role("link", name="Conversations on this Mac").click()
    row = page.locator(f".desk-row[data-id='{CONVERSATION}']")
    expect(row).to_contain_text("Desk work on feature")
    expect(row).to_contain_text("feature/desk-work")
    phone.shot("desk-list-390x844")
    row.get_by_role("link").click()
    expect(page.locator(".desk-events")).to_contain_text("hello from the desk")
    phone.shot("desk-read-390x844")
    page.get_by_role("button", name="Continue here").click()
    dialog = page.locator("dialog .ro-form")
    expect(dialog.get_by_role("radio", name="Full conversation")).to_be_checked()
    dialog.get_by_role("button", name="Continue here").click()
    page.wait_for_url("**/#/s/*")
    expect(page.locator(".session-meta")).to_contain_text("desk")
