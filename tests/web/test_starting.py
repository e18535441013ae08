"""A new session says "Starting" until what it was started with is typed, not "Idle" while its
first message still waits (issue 22, item 6). A real relay, a scripted Mac over the real link,
Debian's Chromium at 390×844."""

from __future__ import annotations

import uuid

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, commands, held, relay_client, user_line


def test_starting_until_the_first_message_is_typed(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    with relay_client(phone.server, account) as client:
        made = client.post(
            "/api/sessions",
            json={"device_id": account.device_id, "cwd": "/Users/ada/src/shop", "prompt": "fix it"},
        )
        assert made.status_code in (200, 201), made.text
    (create,) = commands(scripted, "create_session")
    sid = create.session_id
    # Claude Code's prompt is up (the Mac says idle), the first message not typed yet.
    scripted.update(sid, state="idle", held=[held("p1prompt", "fix it")])
    page = phone.login(account).open("/")
    row = page.locator(f".session-row[data-id='{sid}']")
    expect(row.locator(".badge").first).to_have_text("Starting")
    page.goto(f"/#/s/{sid}")
    expect(page.locator("#top-actions .badge").first).to_have_text("Starting")
    phone.shot("22-06-starting-until-typed")

    # typed: its line is in the history, and the session is what the Mac says
    scripted.update(sid, state="idle", held=[held("p1prompt", "fix it", state="typed")])
    scripted.send_json_lines(sid, [user_line("fix it", str(uuid.uuid4()))])
    scripted.update(sid, state="idle")
    expect(page.locator("#top-actions .badge").first).to_have_text("Idle")
    page.goto("/")
    expect(row.locator(".badge").first).to_have_text("Idle")
