"""The page's "Move to another Mac…" (web/js/move.js) in a real browser against a real relay: the
dialog lists the account's other Macs (offline ones cannot be picked), sends the move, and the
session's screen shows the move's step while it runs and the Mac's reason when it fails — the
session staying where it was. Two scripted Macs over the real link stand in for the agents (the
move itself, with the real claude, is tests/e2e/test_move.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Request, expect

from tests.support.relay import Account, RelayServer
from tests.support.web import LoopThread, Phone, ScriptedMac, actions, new_sid, wait_for


@pytest.fixture
def laptop(
    relay: RelayServer, account: Account, loop: LoopThread
) -> Iterator[tuple[ScriptedMac, str]]:
    """A second Mac of the account, online, and its id."""
    token, _, device_id = relay.state.store.create_token(account.account_id, "device", "Laptop")
    mac = ScriptedMac(relay, token, loop, name="Laptop").connect()
    yield mac, device_id
    mac.close()


def test_move_dialog_sends_the_move_and_the_band_shows_its_step_then_why_it_failed(
    phone: Phone,
    scripted: ScriptedMac,
    laptop: tuple[ScriptedMac, str],
    relay: RelayServer,
    account: Account,
) -> None:
    target, target_id = laptop
    relay.state.store.create_token(account.account_id, "device", "Old iMac")  # never linked
    sid = new_sid()
    scripted.send_transcript(sid, "g_plan")
    scripted.update(sid, state="busy")
    # The source answers "still packing" until told otherwise: the move waits there.
    scripted.answers["move_export"] = {"status": "packing"}
    target.answers["move_probe"] = {"have": []}
    sent: list[Request] = []
    page = phone.login(account).page
    page.on("request", lambda r: sent.append(r) if r.url.endswith("/move") else None)
    page.goto(f"/#/s/{sid}")
    expect(page.locator(".session-meta")).to_contain_text("shop")

    actions(page, "Move to another Mac…")
    dialog = page.locator("dialog .mv-form")
    expect(dialog).to_be_visible()
    expect(dialog.get_by_role("radio", name="Laptop")).to_be_checked()
    expect(dialog.get_by_role("radio", name=re.compile("Old iMac"))).to_be_disabled()
    expect(dialog).to_contain_text("offline")
    expect(dialog.get_by_role("textbox", name="Folder on that Mac")).to_have_value(
        "/Users/ada/src/shop"
    )
    phone.shot("45-move-dialog")
    dialog.get_by_role("textbox", name="Folder on that Mac").fill("/Users/ada/work/shop")
    dialog.get_by_role("radio", name="Now (interrupt the turn)").check()
    dialog.get_by_role("button", name="Move").click()
    expect(page.locator("dialog .mv-form")).to_have_count(0)

    posted = wait_for(lambda: [r for r in sent if r.method == "POST"], what="the move sent")
    body = json.loads(posted[0].post_data or "{}")
    assert body == {"device_id": target_id, "when": "now", "cwd": "/Users/ada/work/shop"}
    band = page.locator(".move-band")
    expect(band).to_contain_text("Moving to Laptop")
    expect(band).to_contain_text("packing the folder")
    expect(page.locator(".badge.mark")).to_have_text("Moving")
    phone.shot("46-move-progress")
    page.goto("/#/")  # the lists mark it too
    row = page.locator(f".session-row[data-id='{sid}']").first
    expect(row.locator(".badge.mark")).to_have_text("Moving")
    expect(row.locator(".row-meta.moving")).to_have_text("Moving to Laptop")
    page.goto(f"/#/s/{sid}")
    expect(band).to_contain_text("packing the folder")
    # Another move cannot begin while this one runs: the menu does not offer it.
    page.get_by_role("button", name="Session actions").click()
    assert "Move to another Mac…" not in page.locator("dialog .sheet-item").all_inner_texts()
    page.locator("dialog .sheet-cancel").click()

    scripted.fail["move_export"] = ("disk_full", "the disk of Studio is full (2 MB free)")
    expect(band).to_contain_text("Not moved to Laptop; it goes on here.")
    expect(band).to_contain_text("The disk of Studio is full (2 MB free)")
    expect(band).to_have_class(re.compile("failed"))
    expect(page.locator(".badge.mark")).to_be_hidden()
    phone.shot("47-move-failed")
    finished = [c for c in scripted.commands if c.name == "move_finish"]
    assert finished and finished[-1].args["outcome"] == "abort", finished
