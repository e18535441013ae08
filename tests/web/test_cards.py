"""Cards on the phone (web/js/cards.js) at 390×844: a permission card is a compact sheet that
shows what will run, a plan card shows the plan and keeps planning with feedback, a question card
numbers its questions and keeps the chat apart; and the real agent's cards (the fake claude)
answered from the page.

A real relay under uvicorn, a scripted Mac over the real link, Debian's Chromium. Screenshots go to
``test-artifacts/screens/``.
"""

from __future__ import annotations

import itertools
from typing import Any

from playwright.sync_api import expect

from tests.support.fit import (
    MIN_TARGET,
    busy_session,
    dock_share,
    long_bash_card,
    no_overflow,
    small_targets,
)
from tests.support.journeys import events, snapshot, start_session, wait_card, wait_state
from tests.support.relay import Account
from tests.support.web import (
    PHONE,
    Phone,
    ScriptedMac,
    commands,
    held,
    wait_for,
)
from wire.protocol import Card, CardOption


def test_a_permission_card_is_a_compact_sheet(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = busy_session(scripted, extra=8)
    card = long_bash_card()
    scripted.update(sid, state="waiting", card=card, held=[held("m-1", "then the changelog")])
    page = phone.login(account).open(f"/#/s/{sid}")
    el = page.locator(".card[data-card-id='card-b']")
    expect(el).to_be_visible()
    page.wait_for_timeout(300)
    share = dock_share(page)
    phone.shot("43-permission-card-compact")
    # at least a third of the screen is left to the conversation
    assert share["dockTop"] - share["topBottom"] >= PHONE["height"] / 3, share
    assert share["cardTop"] >= share["topBottom"], share  # the header is not under the top bar
    assert share["cardScroll"] <= 1, share  # no scrolling inside the card
    no_overflow(page)
    phone.shot("43-permission-card-compact")

    text = el.inner_text()
    assert text.count("Run the unit tests with coverage") == 1, text
    assert text.count("echo finished") <= 1, text
    assert "Do you want to proceed?" in text
    assert "(esc)" not in text
    assert el.locator(".option[data-key='3']").inner_text().endswith("what to do differently")
    # option rows, the "always" row: none overlaps another
    boxes = [
        b
        for b in el.locator(".option, label.check").evaluate_all(
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.top, r.bottom]; })"
        )
    ]
    for (_, bottom_a), (top_b, _) in itertools.pairwise(boxes):
        assert bottom_a <= top_b + 0.5, boxes
    # what "Send now" does while the card waits, in plain words, once there is something to send
    expect(el.locator(".card-send-note")).to_be_hidden()
    page.get_by_label("Message Claude…").fill("and the changelog")
    expect(el.locator(".card-send-note")).to_have_text("Messages sent now wait for this answer.")
    # the whole command, one tap away
    pre = el.locator("pre.cmd")
    assert pre.evaluate("e => e.scrollHeight > e.clientHeight + 1")
    el.get_by_role("button", name="Show all").click()
    assert pre.evaluate("e => e.scrollHeight <= e.clientHeight + 1")
    expect(pre).to_have_text(card.tool_input["command"])  # type: ignore[index]
    phone.shot("44-permission-card-expanded")
    assert not small_targets(page), small_targets(page)

    el.get_by_label("Always allow this kind of tool in this session").check()
    el.locator(".option[data-key='1']").click()
    (answer,) = commands(scripted, "answer_card")
    assert answer.args == {"key": "1", "always": True, "card_id": "card-b"}


PLAN = """# Plan: faster checkout

1. Cache the **price table** in memory
2. Batch the tax look-ups
3. Add a benchmark under `bench/`

<script>alert(1)</script>
"""


def plan_card() -> Card:
    return Card(
        id="card-p",
        kind="plan",
        title="Exit plan mode?",
        text="Claude wants to exit plan mode",
        options=[
            CardOption(key="1", label="Yes, and auto-accept edits (shift+tab)"),
            CardOption(key="2", label="Yes, and manually approve edits"),
            CardOption(key="3", label="No, keep planning"),
        ],
        tool="ExitPlanMode",
        tool_input={"plan": PLAN},
        source="hook",
    )


def test_a_plan_card_shows_the_plan_and_keeps_planning_with_feedback(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = busy_session(scripted)
    scripted.update(sid, state="waiting", card=plan_card())
    page = phone.login(account).open(f"/#/s/{sid}")
    el = page.locator(".card[data-card-id='card-p']")
    expect(el.locator(".plan-body .md-h")).to_have_count(1)
    expect(el.locator(".plan-body")).to_contain_text("Cache the price table in memory")
    expect(el.locator(".plan-body strong")).to_have_text("price table")
    assert el.locator("script").count() == 0
    expect(el.locator(".plan-body")).to_contain_text("<script>alert(1)</script>")
    text = el.inner_text()
    assert "shift+tab" not in text, text
    # "No" is "Keep planning", with a field for what should change
    expect(el.locator(".option")).to_have_count(2)
    page.get_by_label("Message Claude…").fill("x")
    expect(el.locator(".card-send-note")).to_have_text(
        "A message sent now closes this card and goes to Claude."
    )
    page.get_by_label("Message Claude…").fill("")
    no_overflow(page)
    phone.shot("45-plan-card")
    el.get_by_label("What should change in the plan? (optional)").fill("also cache the coupons")
    el.get_by_role("button", name="Keep planning").click()
    # the feedback goes as a message: on the plan dialog it closes it (Esc = No) and is typed
    (send,) = commands(scripted, "send")
    assert send.args["text"] == "also cache the coupons" and send.args["now"] is False
    assert "answer_card" not in scripted.command_names()
    assert not small_targets(page), small_targets(page)


def test_keep_planning_without_feedback_answers_no(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = busy_session(scripted)
    scripted.update(sid, state="waiting", card=plan_card())
    page = phone.login(account).open(f"/#/s/{sid}")
    page.get_by_role("button", name="Keep planning").click()
    (answer,) = commands(scripted, "answer_card")
    assert answer.args["key"] == "3"


def test_a_question_card_numbers_its_questions_and_keeps_chat_apart(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = busy_session(scripted)
    questions = [
        {"header": "Colour", "question": "Which colour?", "multiSelect": False,
         "options": [{"label": "Red"}, {"label": "Blue"}]},
        {"header": "Toppings", "question": "Which toppings do you want?", "multiSelect": True,
         "options": [{"label": "Cheese"}, {"label": "Olives"}, {"label": "Basil"}]},
    ]  # fmt: skip
    card = Card(
        id="card-q",
        kind="question",
        title="Toppings",
        text="Which toppings do you want?",
        options=[
            CardOption(key="1", label="[ ] Cheese"),
            CardOption(key="2", label="[ ] Olives"),
            CardOption(key="3", label="[ ] Basil"),
            CardOption(key="4", label="[ ] Type something"),
            CardOption(key="5", label="Chat about this"),
        ],
        multi_select=True,
        tool="AskUserQuestion",
        tool_input={"questions": questions},
        source="hook",
    )
    scripted.update(sid, state="waiting", card=card)
    page = phone.login(account).open(f"/#/s/{sid}")
    el = page.locator(".card[data-card-id='card-q']")
    expect(el.locator(".card-step")).to_have_text("question 2 of 2")
    expect(el.locator("input[type=checkbox]")).to_have_count(3)  # "Chat about this" is not one
    chat = el.get_by_role("button", name="Chat about this")
    expect(chat).to_be_visible()
    rows = el.locator("label.check").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().height)"
    )
    assert rows and min(rows) >= MIN_TARGET, rows
    no_overflow(page)
    phone.shot("46-question-card")
    assert not small_targets(page), small_targets(page)
    chat.click()
    (answer,) = commands(scripted, "answer_card")
    assert answer.args["key"] == "5"


def test_real_agent_cards_on_the_phone_bash_then_a_plan_kept_in_planning(
    browser: Any, fake: Any
) -> None:
    """The agent's own cards (from the hooks and the screen of the fake claude): the Bash card
    fits the phone, and "keep planning" with feedback reaches Claude Code as the next prompt."""
    fake.start_agent()
    p = Phone(browser, fake.relay).login(fake.account)
    try:
        with fake.phone() as api:
            sid = start_session(
                api, fake, fake.folder(), prompt="RUN_BASH one", permission_mode="manual"
            )
            wait_card(api, sid, "permission")
            page = p.open(f"/#/s/{sid}")
            card = page.locator(".card")
            expect(card.locator(".option").first).to_be_visible()
            page.wait_for_timeout(300)
            share = dock_share(page)
            assert share["dockTop"] - share["topBottom"] >= PHONE["height"] / 3, share
            assert share["cardTop"] >= share["topBottom"], share
            no_overflow(page)
            assert not small_targets(page), small_targets(page)
            text = card.inner_text()
            assert "(shift+tab)" not in text and "(esc)" not in text, text
            command = snapshot(api, sid)["card"]["tool_input"]["command"]
            assert text.count(command.splitlines()[0]) == 1, text
            p.shot("54-real-bash-card")
            card.locator(".option[data-key='1']").click()
            wait_state(api, sid, "idle")

            api.post(f"/api/sessions/{sid}/messages", json={"text": "MAKE_PLAN for me"})
            wait_card(api, sid, "plan")
            plan = page.locator(".card.card-plan")
            expect(plan.get_by_role("button", name="Keep planning")).to_be_visible()
            no_overflow(page)
            assert not small_targets(page), small_targets(page)
            p.shot("55-real-plan-card")
            plan.get_by_label("What should change in the plan? (optional)").fill(
                "also cover the coupons"
            )
            plan.get_by_role("button", name="Keep planning").click()
            # the plan was turned down and the feedback typed: Claude Code got it as a prompt
            wait_for(
                lambda: any(
                    e.get("kind") == "user" and "also cover the coupons" in e.get("text", "")
                    for e in events(api, sid)
                ),
                30,
                "the feedback in the conversation",
            )
            expect(
                page.locator(".convo .ev.user", has_text="also cover the coupons")
            ).to_have_count(1)
            no_overflow(page)
    finally:
        p.close()
