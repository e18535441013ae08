"""The audit log on the page (web/js/audit.js) in a real browser: Debian's Chromium under
Playwright, against a real relay fed by a scripted Mac over the real link. A card answered on the
page and a decision the Mac made by itself both show in the session menu's "Audit log", newest
first, with who answered (the phone, its token, its address) or which rule did; in Korean too."""

from __future__ import annotations

import secrets
import time

from playwright.sync_api import expect

from tests.support.relay import Account, RelayServer
from tests.support.web import (
    Phone,
    ScriptedMac,
    actions,
    commands,
    multi_question_card,
    new_sid,
    permission_card,
    relay_client,
    wait_for,
)
from wire.protocol import Decision, input_digest


def decision(session_id: str, rule: str) -> Decision:
    return Decision(
        id=f"dec_{secrets.token_hex(8)}",
        session_id=session_id,
        at=time.time(),
        source="policy",
        rule=rule,
        decision="allow",
        tool="Read",
        input_digest=input_digest({"file_path": "/Users/ada/src/shop/README.md"}),
        summary="README.md",
    )


def stored(relay: RelayServer, account: Account, count: int) -> None:
    with relay_client(relay, account) as client:
        wait_for(
            lambda: len(client.get("/api/audit?limit=200").json()["entries"]) >= count,
            what=f"{count} audit entries",
        )


def test_the_session_menu_shows_its_audit_log(
    phone: Phone, scripted: ScriptedMac, account: Account, relay: RelayServer
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    assert scripted.link is not None
    scripted.loop.run(
        scripted.link.send_raw(decision(sid, "category read: allow").model_dump_json())
    )
    scripted.update(sid, state="waiting", card=permission_card("card-au"))
    page = phone.login(account).open(f"/#/s/{sid}")
    page.locator(".card[data-card-id='card-au'] .option[data-key='1']").click()
    commands(scripted, "answer_card")
    stored(relay, account, 2)

    actions(page, "Audit log")
    dialog = page.locator("dialog")
    entries = dialog.locator("li.audit-entry")
    expect(entries).to_have_count(2)
    newest, oldest = entries.nth(0), entries.nth(1)
    expect(newest).to_have_attribute("data-source", "phone")
    expect(newest.locator(".row-title")).to_have_text("Bash · touch bash_made.txt && echo hi")
    expect(newest).to_contain_text("Yes [1]")
    token_id = relay.state.store.authenticate(account.phone_token).token_id
    expect(newest.locator(".audit-by")).to_have_text(
        f"By test phone · token {token_id} · from 127.0.0.1"
    )
    digest = input_digest(permission_card().tool_input)
    assert digest is not None
    expect(newest).to_contain_text("sha256 " + digest[:12])
    expect(oldest).to_have_attribute("data-source", "policy")
    expect(oldest.locator(".audit-by")).to_have_text("By the session's rule: category read: allow")
    expect(oldest).to_contain_text("Allowed")
    phone.shot("40-audit-log")
    dialog.get_by_role("button", name="Close").click()
    assert not phone.problems, phone.problems

    # Older entries a page at a time.
    for i in range(50):
        scripted.loop.run(scripted.link.send_raw(decision(sid, f"rule {i}").model_dump_json()))
    stored(relay, account, 52)
    actions(page, "Audit log")
    expect(entries).to_have_count(50)
    expect(entries.nth(0)).to_contain_text("rule 49")
    dialog.get_by_role("button", name="Older").click()
    expect(entries).to_have_count(52)
    expect(entries.nth(51)).to_contain_text("category read: allow")
    expect(dialog.get_by_role("button", name="Older")).to_be_hidden()
    dialog.get_by_role("button", name="Close").click()

    # The same list in Korean.
    page.evaluate("localStorage.setItem('cb-lang', 'ko')")
    page.reload()
    page.get_by_role("button", name="세션 조작").click()
    page.locator("dialog .sheet-item", has_text="감사 기록").click()
    expect(page.locator("dialog li.audit-entry")).to_have_count(50)
    page.locator("dialog").get_by_role("button", name="이전 기록").click()
    expect(page.locator("dialog li.audit-entry")).to_have_count(52)
    expect(page.locator("dialog li.audit-entry").nth(51)).to_contain_text(
        "세션 규칙: category read: allow"
    )


def test_a_card_a_message_closed_shows_as_closed_by_that_message(
    phone: Phone, scripted: ScriptedMac, account: Account, relay: RelayServer
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    question = multi_question_card("card-qm")
    scripted.update(sid, state="waiting", card=question)
    # As the agent answers a message sent while a question card is open: closed, then typed.
    scripted.answers["send"] = {"state": "typed"}
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(".card[data-card-id='card-qm']")).to_be_visible()
    with relay_client(relay, account) as client:
        sent = client.post(f"/api/sessions/{sid}/messages", json={"text": "olive oil only"})
        assert sent.status_code == 200, sent.text
    stored(relay, account, 1)

    actions(page, "Audit log")
    entry = page.locator("dialog li.audit-entry")
    expect(entry).to_have_count(1)
    expect(entry).to_contain_text("Closed by a message: “olive oil only”")
    expect(entry.locator(".row-title")).to_have_text("Toppings · Which toppings do you want?")
    expect(entry.locator(".audit-by")).to_contain_text("By test phone")
