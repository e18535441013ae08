""" "Send now" while the Mac is offline offers the relay's queue, as a normal send does (issue 14):
the message is queued, shown as queued, and delivered once as a normal message (no interrupt)
when the Mac is back. A real relay, a scripted Mac over the real link, Debian's Chromium at
390×844.
"""

from __future__ import annotations

import uuid

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import (
    Phone,
    ScriptedMac,
    new_sid,
    permission_card,
    relay_client,
    user_line,
    wait_for,
)
from wire.protocol import Command


def test_send_now_to_an_offline_mac_offers_the_relay_queue(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("clean the build folder", str(uuid.uuid4()))])
    scripted.update(sid, state="waiting", card=permission_card())
    page = phone.login(account).new_page()
    # The page keeps what it was shown: no live stream tells it the Mac went away, as on a phone
    # whose stream had not yet heard it when the person tapped.
    page.route("**/stream*", lambda route: route.abort())
    page.goto(f"/#/s/{sid}")
    now = page.locator("button.send-now")
    expect(now).to_be_visible()
    page.wait_for_load_state("networkidle")  # no snapshot read still on its way

    # From here the phone's network drops what would tell it the news (the snapshot, the lists):
    # it still shows the waiting card and "Send now" when the person taps it.
    for stale in (
        f"**/api/sessions/{sid}",
        "**/api/sessions",
        "**/api/sessions?*",
        "**/api/devices*",
    ):
        page.route(
            stale,
            lambda route: route.abort() if route.request.method == "GET" else route.fallback(),
        )
    scripted.abort()
    wait_for(lambda: phone.server.state.live.link(account.device_id) is None, 10, "Mac offline")
    page.locator(".composer textarea").fill("stop, use the other folder")
    now.click()
    dialog = page.locator("dialog")
    expect(dialog).to_contain_text("nothing can be interrupted now")
    expect(dialog).to_contain_text("as a normal message (no interrupt)")
    dialog.get_by_role("button", name="Queue until the Mac is back").click()
    expect(page.locator(".toast")).to_contain_text("Queued: sent when the Mac is back")
    expect(page.locator(".composer textarea")).to_have_value("")

    with relay_client(phone.server, account) as client:
        queued = client.get(f"/api/sessions/{sid}/outbox").json()["queued"]
    assert [m["preview"] for m in queued] == ["stop, use the other folder"]

    # Back online: delivered once, as a normal send (never an interrupt).
    scripted.commands.clear()
    scripted.connect()

    def sends() -> list[Command]:
        return [c for c in scripted.commands if c.name == "send"]

    wait_for(sends, 15, "the queued message delivered")
    (sent,) = sends()
    assert sent.args["text"] == "stop, use the other folder"
    assert not sent.args.get("now")
    assert "interrupt" not in [c.name for c in scripted.commands]
