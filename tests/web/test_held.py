"""The page's three ways to send (at a safe point, after this turn, now), a file attached with its
type shown, the ledger saying which kind each held message is, and the mode changed from the
session's menu. A real relay, a scripted Mac over the real link, Debian's Chromium at 390×844."""

from __future__ import annotations

import uuid
from pathlib import Path

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, new_sid, user_line, wait_for
from wire.protocol import AttachmentInfo, HeldMessage

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 40


def test_after_this_turn_with_an_attachment_and_the_mode_from_the_menu(
    phone: Phone, scripted: ScriptedMac, account: Account, tmp_path: Path
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("run the suite", str(uuid.uuid4()))])
    scripted.update(sid, state="busy", permission_mode="manual", model="claude-opus-5-5")
    saved = AttachmentInfo(id="a" + "4" * 24, name="shot.png", media_type="image/png", size=48)
    scripted.answers["save_attachment"] = saved.model_dump()
    scripted.answers["send"] = {"state": "held"}
    scripted.answers["set_mode"] = {"permission_mode": "acceptEdits"}
    page = phone.login(account).new_page()
    page.goto(f"/#/s/{sid}")
    for button in ("button.send", "button.send-after", "button.send-now"):
        expect(page.locator(button)).to_be_visible()  # a turn runs: the three choices
    expect(page.locator(".session-meta")).to_contain_text("claude-opus-5-5")

    shot = tmp_path / "shot.png"
    shot.write_bytes(PNG)
    page.locator("input.attach-input").set_input_files(str(shot))
    chip = page.locator(".attach-chip")
    expect(chip).to_contain_text("shot.png")
    expect(chip).to_contain_text("PNG image · 48 B")
    page.locator(".composer textarea").fill("what does this show?")
    page.locator("button.send-after").click()
    wait_for(lambda: "send" in scripted.command_names(), 15, "the message sent")
    upload, send = (c for c in scripted.commands if c.name in ("save_attachment", "send"))
    assert (upload.args["filename"], upload.args["media_type"]) == ("shot.png", "image/png")
    assert send.args["when"] == "after_turn" and send.args["attachments"] == [saved.id]
    assert send.args["text"] == "what does this show?" and not send.args["now"]
    expect(chip).to_have_count(0)

    # The Mac holds it: the ledger says it waits for the turn's end, and what is attached.
    held = HeldMessage(id="m1", text="what does this show?", when="after_turn", attachments=[saved])
    scripted.update(sid, held=[held])
    item = page.locator(".held-item")
    expect(item.locator(".held-when")).to_have_text("after this turn")
    expect(item.locator(".held-att")).to_contain_text("shot.png (PNG image)")

    page.get_by_role("button", name="Actions").click()
    page.get_by_role("button", name="Change mode", exact=True).click()
    page.get_by_role("button", name="Accept edits").click()
    wait_for(lambda: "set_mode" in scripted.command_names(), 15, "the mode changed")
    assert [c.args for c in scripted.commands if c.name == "set_mode"] == [{"mode": "acceptEdits"}]
    expect(page.locator(".toast")).to_contain_text("Mode: Accept edits")
