"""The decisions ledger on the page (web/js/decisions.js) in Debian's Chromium at 390×844, against
a real relay fed by a scripted Mac with the captured Claude Code 2.1.332 question and plan runs:
the session menu's "Decisions" (each decision verbatim, its source message a tap away,
"Remember"), constraints pinned from a message, from a line of Claude's and typed, edited and
removed, open items, and a snapshot event drawn as one collapsed line."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.support.relay import Account, RelayServer
from tests.support.web import (
    Phone,
    ScriptedMac,
    actions,
    assistant_line,
    held,
    new_sid,
    relay_client,
    wait_for,
)

QUESTION = "Which colour should the widget be?"
ADVICE = "Here is what I suggest:\n\n- Use **pnpm**, not npm\n- Keep the tests green"


def ledger(relay: RelayServer, account: Account, sid: str) -> dict[str, object]:
    with relay_client(relay, account) as client:
        body: dict[str, object] = client.get(f"/api/sessions/{sid}/decisions").json()
        return body


def test_decisions_panel_pins_and_remembers(
    phone: Phone, scripted: ScriptedMac, account: Account, relay: RelayServer
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "f_ask_question")
    scripted.send_transcript(sid, "g_plan_approval")
    scripted.send_json_lines(sid, [assistant_line(ADVICE, "a0b1c2d3-0000-4000-8000-000000000001")])
    scripted.update(sid, state="idle", held=[held("h-1", "and add a changelog entry")])
    page = phone.login(account).open(f"/#/s/{sid}")

    # "Pin as constraint" on the person's own message: the whole message, verbatim.
    bubble = page.locator(".ev.user", has_text="MAKE_PLAN again")
    bubble.locator(".bubble").click()
    page.locator("dialog .sheet-item", has_text="Pin as constraint").click()
    expect(page.locator("#toast")).to_contain_text("Pinned as a constraint")
    # … and one line of Claude's: the line as Claude wrote it, without its list mark.
    page.locator(".ev.assistant li", has_text="not npm").click()
    page.locator("dialog .sheet-item", has_text="Pin this line as constraint").click()
    wait_for(lambda: len(ledger(relay, account, sid)["constraints"]) == 2, what="two pins")  # type: ignore[arg-type]
    texts = [c["text"] for c in ledger(relay, account, sid)["constraints"]]  # type: ignore[attr-defined]
    assert texts == ["MAKE_PLAN again", "Use **pnpm**, not npm"]

    actions(page, "Decisions")
    dialog = page.locator("dialog")
    answer = dialog.locator("li.dec[data-kind='answer']")
    expect(answer.locator(".dec-about")).to_have_text(QUESTION)
    expect(answer.locator(".dec-text")).to_have_text("Blue")
    expect(dialog.locator("li.dec[data-kind='plan_rejected'] .dec-text")).to_have_text(
        "MAKE_PLAN again"
    )
    # a mode by the name Claude Code shows, never the raw value
    expect(dialog.locator("li.dec[data-kind='mode'] .dec-text")).to_have_text("Plan")
    expect(dialog.locator("li.con")).to_have_count(2)
    expect(dialog.locator("li.open-item[data-kind='held']")).to_contain_text(
        "and add a changelog entry"
    )
    answer.get_by_role("button", name="☆ Remember").click()
    expect(answer.locator(".dec-remember")).to_have_attribute("aria-pressed", "true")

    # A typed constraint, edited, and the first pin removed.
    dialog.get_by_placeholder("A constraint Claude must keep").fill("Never deploy on a Friday")
    dialog.get_by_role("button", name="Pin", exact=True).click()
    expect(dialog.locator("li.con")).to_have_count(3)
    page.locator("dialog.modal").last.locator("li.con").nth(2).get_by_role(
        "button", name="Edit"
    ).click()
    prompt = page.locator("dialog.modal").last
    prompt.locator("input").fill("Never deploy on Fridays")
    prompt.get_by_role("button", name="Save").click()
    decisions = page.locator("dialog.modal", has=page.locator(".decisions"))
    expect(decisions.locator("li.con").nth(2)).to_contain_text("Never deploy on Fridays")
    decisions.locator("li.con").nth(0).get_by_role("button", name="Remove").click()
    expect(decisions.locator("li.con")).to_have_count(2)
    phone.shot("60-decisions")

    body = ledger(relay, account, sid)
    assert [c["text"] for c in body["constraints"]] == [  # type: ignore[attr-defined]
        "Use **pnpm**, not npm",
        "Never deploy on Fridays",
    ]
    remembered = [d["id"] for d in body["decisions"] if d["remembered"]]  # type: ignore[attr-defined]
    assert len(remembered) == 1

    # The answer's source: the panel closes and its message is brought into view.
    # (a tool's result, drawn inside its call: the AskUserQuestion call is shown).
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    answer.locator(".dec-source").click()
    expect(page.locator("dialog.modal")).to_have_count(0)
    asked = page.locator(".ev.flash")
    expect(asked).to_contain_text("AskUserQuestion")
    expect(asked).to_be_in_viewport()

    # A turn that carried a decision ends: the relay's snapshot shows as one collapsed line.
    scripted.update(sid, state="busy")
    scripted.update(sid, state="idle")

    def snapshot_stored() -> bool:
        with relay_client(relay, account) as client:
            events = client.get(f"/api/sessions/{sid}/events").json()["events"]
        return any(e["kind"] == "snapshot" for e in events)

    wait_for(snapshot_stored, what="the snapshot event")
    snapshot = page.locator("details.ev.snapshot")
    expect(snapshot).to_have_count(1)
    expect(snapshot.locator("summary")).to_contain_text("Snapshot at a decision")
    expect(snapshot.locator(".snap-list")).to_be_hidden()
    snapshot.locator("summary").click()
    expect(snapshot.locator(".snap-list")).to_contain_text("Never deploy on Fridays")
    snapshot.scroll_into_view_if_needed()
    phone.shot("61-snapshot-line")
    assert not phone.problems, phone.problems
    assert json.dumps(body)  # the ledger is plain JSON for the page


def test_read_only_view_shows_decisions_without_changes(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "f_ask_question")
    page = phone.login(account).open(f"/#/s/{sid}/read")
    page.locator(".ev.user", has_text="ASK_ME something").locator(".bubble").click()
    expect(page.locator("dialog.modal")).to_have_count(0)  # no pinning in a read-only view
    actions(page, "Decisions")
    dialog = page.locator("dialog")
    expect(dialog.locator("li.dec[data-kind='answer'] .dec-text")).to_have_text("Blue")
    expect(dialog.locator(".dec-remember")).to_have_count(0)
    expect(dialog.locator("form.con-add")).to_have_count(0)

    # In Korean.
    page.evaluate("localStorage.setItem('cb-lang', 'ko')")
    page.reload()
    page.get_by_role("button", name="세션 조작").click()
    page.locator("dialog .sheet-item", has_text="결정").click()
    expect(page.locator("dialog h2.sheet-title")).to_have_text("결정")
    expect(page.locator("dialog li.dec[data-kind='answer'] .dec-kind")).to_have_text("답함")
