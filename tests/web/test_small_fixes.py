"""The smaller things seen at 390×844 (issue 22, item 16): the header cuts with "…", the
composer's placeholder keeps to one line, toasts stay clear of the composer, a tool row cuts the
folder and keeps the file's name, one "×" in search, one date format, check boxes of 24 px or
more, the question card's own button is "Answer" (not a third "Send"), and "Claude is
writing…" goes with the turn. A real relay, a scripted Mac over the real link, Chromium."""

from __future__ import annotations

import re
import uuid
from typing import Any

from playwright.sync_api import Page, expect

from tests.support.relay import Account
from tests.support.web import (
    PHONE,
    Phone,
    ScriptedMac,
    multi_question_card,
    new_sid,
    tool_use_line,
    user_line,
)
from wire.protocol import Card, CardOption

LONG_DIR = "/Users/ada/src/a-rather-long-project-name/packages/checkout/src/components/forms"


def box(page: Page, selector: str) -> dict[str, Any]:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, selector
    return dict(found)


def test_header_composer_toast_and_tool_row_at_phone_size(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(
        sid,
        [
            user_line("a title long enough to need cutting in the header " * 2, str(uuid.uuid4())),
            tool_use_line(
                "toolu_1",
                "Write",
                {"file_path": f"{LONG_DIR}/PaymentForm.tsx", "content": "export {}\n"},
                str(uuid.uuid4()),
            ),
        ],
    )
    scripted.update(sid, state="ended")
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(".convo [data-seq='2']")).to_be_attached()
    # nothing wider than the screen; the title and the state cut with an ellipsis
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    for selector in ("#title", "#top-actions .badge"):
        style = page.eval_on_selector(
            selector, "e => [getComputedStyle(e).textOverflow, getComputedStyle(e).whiteSpace]"
        )
        assert style == ["ellipsis", "nowrap"], (selector, style)
    # the placeholder of a stopped session on one line: the box is one line high
    area = page.locator(".composer textarea")
    expect(area).to_have_attribute("placeholder", "A message reopens it…")
    assert box(page, ".composer textarea")["height"] < 60
    # the tool row keeps the file's name whole; the folder gives way
    name = page.locator(".ev.tool .path-name").first
    expect(name).to_have_text("PaymentForm.tsx")
    assert name.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    assert page.locator(".ev.tool .path-dir").first.evaluate("e => e.scrollWidth > e.clientWidth")
    # a toast never covers the composer
    page.evaluate(
        "() => { const t = document.getElementById('toast'); t.textContent = 'Saved'; t.className = 'toast show'; }"
    )
    page.wait_for_timeout(300)
    toast, composer = box(page, "#toast"), box(page, ".composer")
    assert (
        toast["y"] + toast["height"] <= composer["y"]
        or toast["y"] >= composer["y"] + composer["height"]
    )
    phone.shot("22-16-session-header-tool-row")


def test_search_cards_dates_and_writing_at_phone_size(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("pick toppings", str(uuid.uuid4()))])
    scripted.update(sid, state="waiting", card=multi_question_card())
    page = phone.login(account).open("/")
    # one clear button in search: the page's own
    page.fill("#search-q", "toppings")
    expect(page.get_by_role("button", name=re.compile("Clear"))).to_be_visible()
    # the box is a plain text box (a search box adds the browser's own "×")
    assert page.get_by_role("searchbox").get_attribute("type") == "text"
    # one date format: a day in words ("5 Dec" / "Dec 5"), never 12/5/2026
    meta = page.locator(".found .session-row .row-meta").first
    expect(meta).to_be_visible()
    assert not re.search(r"\d+/\d+/\d+", meta.inner_text()), meta.inner_text()
    phone.shot("22-16-search-one-clear")

    page.goto(f"/#/s/{sid}")
    checkbox = page.locator(".card input[type=checkbox]").first
    expect(checkbox).to_be_visible()
    size = checkbox.bounding_box()
    assert size is not None and size["width"] >= 24 and size["height"] >= 24, size
    phone.shot("22-16-question-card")

    # a single-choice question with its own text field answers, it does not "Send"
    scripted.update(
        sid,
        card=Card(
            id="card-single",
            kind="question",
            title="Which one?",
            text="Which one?",
            options=[
                CardOption(key="1", label="Red"),
                CardOption(key="2", label="Type something."),
            ],
        ),
    )
    expect(page.locator(".card .free button")).to_have_text("Answer")

    # "Claude is writing…" goes when the turn does
    scripted.update(sid, state="busy", clear_card=True, preview="Writing the answer")
    expect(page.locator(".preview")).to_be_visible()
    scripted.update(sid, state="idle")
    expect(page.locator(".preview")).to_be_hidden()
