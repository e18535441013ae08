"""One vocabulary for permission modes (issue 22, item 9): Claude Code's own names (Manual,
Accept edits, Plan, Auto, Bypass) in the new-session form, the session's header and the mode
menu; never a raw value; the form says which mode a new session starts in. A real relay, a
scripted Mac over the real link, Debian's Chromium at 390×844."""

from __future__ import annotations

import re
import uuid

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, commands, new_sid, user_line

NAMES = ["Manual", "Accept edits", "Plan", "Auto", "Bypass"]


def test_the_form_says_the_mode_a_session_starts_in(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    page = phone.login(account).open("/#/new")
    page.wait_for_selector("#ns-mode option", state="attached")  # the form's chunk, loaded lazily
    options = page.eval_on_selector_all("#ns-mode option", "os => os.map(o => o.textContent)")
    assert options == ["Claude Code's default (Auto)", *NAMES]
    hint = page.locator("#ns-mode-hint")
    expect(hint).to_contain_text("Claude Code's own default on the Mac: Auto")
    page.select_option("#ns-mode", "plan")
    expect(hint).to_have_text("Starts in Plan: plans first and changes nothing until you approve.")
    phone.shot("22-09-form-mode")
    # No choice is no flag: the Mac's Claude Code picks, as `claude-bridge claude` does.
    page.select_option("#ns-mode", "")
    page.fill("#ns-cwd", "/Users/ada/src/shop")
    page.get_by_role("button", name="Start").click()
    (create,) = commands(scripted, "create_session")
    assert "permission_mode" not in create.args, create.args


def test_header_and_menu_use_the_names_never_raw_values(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("hello", str(uuid.uuid4()))])
    scripted.update(sid, state="idle", permission_mode="acceptEdits")
    page = phone.login(account).open(f"/#/s/{sid}")
    meta = page.locator(".session-meta")
    expect(meta).to_contain_text("Accept edits")
    assert "acceptEdits" not in meta.inner_text()

    scripted.update(sid, permission_mode="default")  # what Claude Code shows as manual mode
    expect(meta).to_contain_text("Manual")
    assert "default" not in meta.inner_text()
    page.get_by_role("button", name="Actions").click()
    page.get_by_role("button", name="Change mode", exact=True).click()
    entries = page.locator("dialog .sheet-item")
    expect(entries).to_have_count(len(NAMES))
    labels = entries.all_inner_texts()
    assert labels[: len(NAMES)] == ["Manual ✓", *NAMES[1:]], labels
    assert not any(re.search(r"acceptEdits|bypassPermissions", label) for label in labels)
    phone.shot("22-09-mode-menu")
