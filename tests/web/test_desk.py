"""Conversations begun at the desk on the page (web/js/desk.js) in Chromium at 390×844, against a
real relay and the agent with the fake Claude Code: Settings › Macs links to the Mac's
conversations, one is read with the session's own renderer (tool uses, results folded, diffs;
earlier pages on request), and "Continue as a session…" opens it as a bridge session."""

from __future__ import annotations

import shutil

from playwright.sync_api import expect

from agent.transcript import project_slug
from tests.support.bridge import Bridge
from tests.support.transcripts import (
    CLAUDE_332,
    assistant_line,
    prompt_line,
    tool_result_line,
    tool_use_line,
)
from tests.support.web import Phone

DESK = CLAUDE_332 / "desk" / "life1"
CONVERSATION = "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e"
CAPTURED_CWD = "/tmp/cap332/work/desk_repo.v2"
EARLIER_PROMPTS = 120  # more than a page (100 events), so the first ones come on request


def later_work(cwd: str) -> str:
    """Lines in Claude Code's shapes after the captured ones: an edit, a read and their results."""
    lines = [
        prompt_line("fix the greeting"),
        tool_use_line(
            "Edit",
            {
                "file_path": f"{cwd}/hello.py",
                "old_string": "print('hi')",
                "new_string": "print('hello')",
            },
            "toolu_edit1",
        ),
        tool_result_line("toolu_edit1", "The file hello.py has been updated."),
        tool_use_line("Read", {"file_path": f"{cwd}/hello.py"}, "toolu_read1"),
        tool_result_line("toolu_read1", "\n".join(f"{n}\tline {n}" for n in range(1, 40))),
        assistant_line("The greeting now says **hello**."),
    ]
    return "\n".join(lines).replace('"c-1"', f'"{CONVERSATION}"') + "\n"


def earlier_work() -> str:
    lines = [prompt_line(f"earlier question {n}") for n in range(EARLIER_PROMPTS)]
    return "\n".join(lines).replace('"c-1"', f'"{CONVERSATION}"') + "\n"


def test_a_desk_conversation_is_listed_read_and_continued(phone: Phone, fake: Bridge) -> None:
    cwd = fake.folder("desk")
    folder = fake.home / ".claude" / "projects" / project_slug(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    text = (DESK / f"{CONVERSATION}.jsonl").read_text(encoding="utf-8")
    text = earlier_work() + text.replace(CAPTURED_CWD, cwd) + later_work(cwd)
    (folder / f"{CONVERSATION}.jsonl").write_text(text)
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
    log = page.get_by_role("log", name="Conversation")
    expect(log).to_contain_text("hello from the desk")
    expect(log.locator(".ev.tool").first).to_contain_text("Edit")
    expect(log.locator(".diff").first).to_contain_text("print('hello')")
    expect(log.locator(".ev.assistant").last).to_contain_text("The greeting now says hello.")
    expect(log.locator("strong", has_text="hello")).to_have_count(1)
    expect(page.locator(".read-only-note")).to_contain_text("Read only")
    phone.shot("desk-read-390x844")
    expect(log).not_to_contain_text("earlier question 0")
    page.get_by_role("button", name="Show earlier messages").click()
    expect(log).to_contain_text("earlier question 0")
    expect(page.get_by_text("Start of the conversation")).to_be_visible()
    expect(log.locator(".ev.user").first).to_have_text("earlier question 0")
    page.evaluate("window.scrollTo(0, 0)")
    phone.shot("desk-read-start-390x844")
    page.get_by_role("button", name="Continue as a session…").click()
    dialog = page.locator("dialog .ro-form")
    expect(dialog.get_by_role("radio", name="Full conversation")).to_be_checked()
    dialog.get_by_role("button", name="Continue here").click()
    page.wait_for_url("**/#/s/*")
    expect(page.locator(".session-meta")).to_contain_text("desk")
