"""Held messages are never stuck (issue 22, item 7): each one can be removed or sent now on its
own, "Send now" with nothing typed sends what is held, and a removed one shows "Cancelled".
A real relay, a scripted Mac over the real link, Debian's Chromium at 390×844."""

from __future__ import annotations

import uuid

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, held, new_sid, relay_client, user_line, wait_for


def names_after(mac: ScriptedMac, start: int) -> list[tuple[str, dict[str, object]]]:
    return [(c.name, c.args) for c in mac.commands[start:]]


def test_remove_one_send_one_now_and_send_now_with_an_empty_box(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("run the suite", str(uuid.uuid4()))])
    scripted.update(
        sid,
        state="busy",
        held=[held("m1first", "first thought"), held("m2second", "second thought")],
    )
    page = phone.login(account).open(f"/#/s/{sid}")
    first = page.locator(".held-item[data-id='m1first']")
    second = page.locator(".held-item[data-id='m2second']")
    menu = "What to do with this message"
    expect(first.get_by_role("button", name=menu)).to_be_visible()
    phone.shot("22-07-held-ledger")
    second.get_by_role("button", name=menu).click()
    sheet = page.locator("dialog .sheet")
    expect(sheet.get_by_role("button")).to_have_text(["Send now", "Remove"])
    phone.shot("22-07-held-actions")
    page.locator("dialog .sheet-cancel").click()

    # Remove the first: the Mac takes it back, and the ledger says Cancelled.
    start = len(scripted.commands)
    first.get_by_role("button", name=menu).click()
    page.locator("dialog .sheet").get_by_role("button", name="Remove").click()
    wait_for(lambda: names_after(scripted, start), 15, "the cancel")
    assert names_after(scripted, start)[0] == ("cancel_held", {"message_id": "m1first"})
    scripted.update(
        sid,
        held=[
            held("m1first", "first thought", state="cancelled"),
            held("m2second", "second thought"),
        ],
    )
    expect(first).to_have_attribute("data-state", "cancelled")
    expect(first.locator(".held-state")).to_have_text("Cancelled")
    expect(first.get_by_role("button")).to_have_count(0)  # nothing more to do with it
    phone.shot("22-07-held-cancelled")

    # Send the second now, on its own request: taken back, sent again as "Send now".
    start = len(scripted.commands)
    second.get_by_role("button", name=menu).click()
    page.locator("dialog .sheet").get_by_role("button", name="Send now").click()
    wait_for(lambda: len(names_after(scripted, start)) >= 2, 15, "cancel then send now")
    cancel, send = names_after(scripted, start)[:2]
    assert cancel == ("cancel_held", {"message_id": "m2second"})
    assert send[0] == "send"
    assert send[1]["text"] == "second thought" and send[1]["now"] is True
    assert send[1]["message_id"] == "m2second-now"
    expect(page.locator(".toast")).to_contain_text("Sent now")

    # "Send now" with an empty box sends what is held (the newest carries the older ones).
    scripted.update(sid, held=[held("m3third", "third"), held("m4fourth", "fourth")])
    expect(page.locator(".held-item[data-id='m4fourth']")).to_be_visible()
    start = len(scripted.commands)
    assert page.locator(".composer textarea").input_value() == ""
    page.locator("button.send-now").click()
    wait_for(lambda: len(names_after(scripted, start)) >= 2, 15, "the held messages sent now")
    cancel, send = names_after(scripted, start)[:2]
    assert cancel == ("cancel_held", {"message_id": "m4fourth"})
    assert send[0] == "send" and send[1]["text"] == "fourth" and send[1]["now"] is True
    expect(page.locator(".toast")).to_contain_text("with 1 other held messages as one block")


def test_a_message_no_longer_held_is_refused_with_a_reason(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("hello", str(uuid.uuid4()))])
    scripted.update(sid, state="busy", held=[held("m5typed", "done already", state="typed")])
    with relay_client(phone.server, account) as client:
        answer = client.post(f"/api/sessions/{sid}/held/m5typed/now")
        assert answer.status_code == 409, answer.text
        assert answer.json()["error"]["code"] == "message_gone"
        assert client.post(f"/api/sessions/{sid}/held/bad%20id/now").status_code == 404
    assert "send" not in scripted.command_names()
