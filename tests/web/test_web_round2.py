"""The control page at phone size (390×844), round two (issue 14): nothing wider than the screen,
held messages that leave once typed, a session that opens at its newest message and follows it,
compact cards (permission, plan, question), and controls big enough for a finger.

A real relay under uvicorn, a scripted Mac over the real link, Debian's Chromium. Screenshots go to
``test-artifacts/screens/``.
"""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Any

from playwright.sync_api import Page, expect

from tests.support.journeys import events, snapshot, start_session, wait_card, wait_state
from tests.support.relay import Account
from tests.support.web import (
    PHONE,
    Phone,
    ScriptedMac,
    assistant_line,
    commands,
    held,
    new_sid,
    tool_result_line,
    tool_use_line,
    user_line,
    wait_for,
)
from wire.protocol import Card, CardOption

MIN_TARGET = 44  # px: the smallest control a finger can hit (Apple and Android guidance)


def no_overflow(page: Page) -> None:
    """Nothing on the screen is wider than the screen."""
    wide = page.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth, inner: window.innerWidth})"
    )
    assert wide["scroll"] <= wide["inner"], wide


def at_bottom(page: Page) -> bool:
    return bool(
        page.evaluate(
            "() => window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 4"
        )
    )


def small_targets(page: Page) -> list[dict[str, Any]]:
    """Every visible control under 44 × 44 px (a checkbox counts by the label row it sits in)."""
    found: list[dict[str, Any]] = page.evaluate(
        """(min) => {
          const out = [];
          const seen = new Set();
          for (const el of document.querySelectorAll('a[href], button, summary, select, input[type=checkbox]')) {
            const target = el.matches('input[type=checkbox]') ? (el.closest('label') || el) : el;
            if (seen.has(target)) continue;
            seen.add(target);
            const r = target.getBoundingClientRect();
            const style = getComputedStyle(target);
            if (!r.width || !r.height || style.visibility === 'hidden') continue;
            if (target.closest('[hidden], .sr, .toast')) continue;
            if (r.width < min || r.height < min) {
              out.push({tag: target.tagName, cls: target.className, text: (target.textContent || '').trim().slice(0, 40),
                        w: Math.round(r.width), h: Math.round(r.height)});
            }
          }
          return out;
        }""",
        MIN_TARGET,
    )
    return found


def busy_session(scripted: ScriptedMac, extra: int = 0) -> str:
    sid = new_sid()
    bodies: list[dict[str, Any]] = [user_line("tidy the checkout module", str(uuid.uuid4()))]
    for i in range(extra):
        bodies.append(
            tool_use_line(
                f"toolu_r{i}",
                "Read",
                {"file_path": f"/Users/ada/src/shop/m{i}.py"},
                str(uuid.uuid4()),
            )
        )
        bodies.append(
            tool_result_line(
                f"toolu_r{i}",
                "\n".join(f"{n:>6}\tline {n} of m{i}" for n in range(1, 30)),
                str(uuid.uuid4()),
            )
        )
        bodies.append(
            assistant_line(
                f"Step {i}: read m{i}.py.\n\n" + "A longer paragraph of text. " * 12,
                str(uuid.uuid4()),
            )
        )
    scripted.send_json_lines(sid, bodies)
    return sid


# -- 1. held messages ---------------------------------------------------------------------------


def test_held_messages_fit_the_phone_and_leave_once_typed(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = busy_session(scripted)
    scripted.update(sid, state="busy", activity="coding")
    long = "then run the whole unit test suite with coverage and " * 4
    scripted.update(sid, held=[held("m-1", long), held("m-2", "and update the changelog")])
    page = phone.login(account).open(f"/#/s/{sid}")
    items = page.locator(".held-item")
    expect(items).to_have_count(2)
    no_overflow(page)
    # each state is on the screen, not pushed off its right edge
    page.wait_for_function(
        """(width) => { const r = [...document.querySelectorAll('.held-state')].map(e => e.getBoundingClientRect().right);
                        return r.length === 2 && r.every(x => x > 0 && x <= width); }""",
        arg=PHONE["width"],
    )
    phone.shot("40-held-fits")

    # "Send now" types the held ones with this one, as one block: the page says so
    scripted.answers["send"] = {"state": "typed"}
    page.get_by_label("Message Claude…").fill("and skip the slow ones")
    page.get_by_role("button", name="Send now").click()
    (send,) = commands(scripted, "send")
    assert send.args["now"] is True
    expect(page.locator("#toast")).to_have_text("3 messages sent as one")

    # typed (even the first prompt) leaves "Held messages": it is in the conversation now
    scripted.update(sid, held=[held("m-1", long, "typed"), held("m-2", "and update", "held")])
    expect(page.locator(".held-item[data-id='m-1']")).to_have_count(0)
    expect(page.locator(".held-item[data-id='m-2']")).to_have_count(1)
    scripted.update(sid, state="idle", held=[held("m-2", "and update", "typed")])
    expect(page.locator(".held")).to_be_hidden()
    no_overflow(page)


# -- 2. opening at the newest message -----------------------------------------------------------


def test_a_session_opens_at_its_newest_message_and_follows_it(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = busy_session(scripted, extra=60)
    scripted.update(sid, state="busy")
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(".convo [data-seq='181']")).to_be_attached()
    wait_for(lambda: at_bottom(page), what="the session opened at its end")
    page.wait_for_timeout(400)
    assert at_bottom(page), page.evaluate(
        "() => [window.scrollY, document.documentElement.scrollHeight]"
    )
    no_overflow(page)
    phone.shot("41-opens-at-end")

    # new events keep the end in view
    scripted.send_json_lines(sid, [assistant_line("Done with the reads. " * 20, str(uuid.uuid4()))])
    expect(page.locator(".convo [data-seq='182']")).to_be_attached()
    wait_for(lambda: at_bottom(page), what="the end kept in view")

    # the person scrolled up: the page stays, a chip says there is more, and jumps to the end
    page.mouse.wheel(0, -3000)
    wait_for(lambda: not at_bottom(page), what="scrolled up")
    page.wait_for_timeout(200)
    top = page.evaluate("() => window.scrollY")
    scripted.send_json_lines(sid, [assistant_line("One more thing.", str(uuid.uuid4()))])
    expect(page.locator(".convo [data-seq='183']")).to_be_attached()
    chip = page.get_by_role("button", name="New messages ↓")
    expect(chip).to_be_visible()
    assert abs(page.evaluate("() => window.scrollY") - top) < 40
    phone.shot("42-new-messages-chip")
    chip.click()
    wait_for(lambda: at_bottom(page), what="jumped to the end")
    expect(chip).to_be_hidden()


# -- 3. cards -----------------------------------------------------------------------------------


def long_bash_card(card_id: str = "card-b") -> Card:
    command = "\n".join(
        [
            "cd /Users/ada/src/shop && python -m pytest tests/unit -q --maxfail=1 \\",
            "  --cov=shop --cov-report=term-missing \\",
            "  -k 'not slow and not network' \\",
            "  -p no:cacheprovider",
            "echo finished",
        ]
    )
    description = "Run the unit tests with coverage"
    return Card(
        id=card_id,
        kind="permission",
        title="Bash command",
        # the screen's text repeats the description and the command before the question
        text=f"{description}\n{command}\nDo you want to proceed?",
        options=[
            CardOption(key="1", label="Yes"),
            CardOption(
                key="2",
                label="Yes, and don't ask again for python -m pytest commands in /Users/ada/src/shop",
            ),
            CardOption(key="3", label="No, and tell Claude what to do differently (esc)"),
        ],
        tool="Bash",
        tool_input={"command": command, "description": description},
        source="hook",
    )


def dock_share(page: Page) -> dict[str, float]:
    share: dict[str, float] = page.evaluate(
        """() => {
          const top = document.querySelector('.top').getBoundingClientRect();
          const dock = document.querySelector('.dock').getBoundingClientRect();
          const card = document.querySelector('.card').getBoundingClientRect();
          return {topBottom: top.bottom, dockTop: dock.top, dock: dock.height, cardTop: card.top,
                  cardScroll: document.querySelector('.card').scrollHeight - document.querySelector('.card').clientHeight};
        }"""
    )
    return share


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


# -- 8. touch targets -----------------------------------------------------------------------------


def test_every_control_is_big_enough_to_touch(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = busy_session(scripted, extra=3)
    scripted.send_json_lines(
        sid,
        [
            {"type": "assistant", "uuid": str(uuid.uuid4()), "sessionId": "conv",
             "timestamp": "2026-11-29T21:33:54.000Z",
             "message": {"id": "msg_t", "role": "assistant", "model": "claude-opus-5-5",
                         "content": [{"type": "thinking", "thinking": "Let me think.", "signature": ""}]}},
            tool_use_line("toolu_g", "Grep", {"pattern": "price", "path": "src"}, str(uuid.uuid4())),
            tool_result_line("toolu_g", "\n".join(f"src/m{i}.py: price" for i in range(40)),
                             str(uuid.uuid4())),
        ],
    )  # fmt: skip
    scripted.update(sid, state="idle")
    page = phone.login(account).open("/")
    expect(page.locator(f".session-row[data-id='{sid}']")).to_have_count(1)
    no_overflow(page)
    assert not small_targets(page), small_targets(page)
    page.get_by_text("Filters").click()
    assert not small_targets(page), small_targets(page)

    page.goto(f"/#/s/{sid}")
    expect(page.locator(".convo .ev.tool").first).to_be_visible()
    page.wait_for_timeout(300)
    page.evaluate("() => window.scrollTo(0, 0)")
    no_overflow(page)
    bad = small_targets(page)
    assert not bad, bad
    page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
    assert not small_targets(page), small_targets(page)
    phone.shot("47-touch-session")

    page.goto("/#/settings")
    expect(page.locator("main")).to_contain_text(re.compile("Phones|phones"))
    no_overflow(page)
    assert not small_targets(page), small_targets(page)


def test_theme_color_follows_light_and_dark(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    page = phone.login(account).open("/")
    colours = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        wait_for(
            lambda s=scheme: page.evaluate(
                "() => document.querySelector('meta[name=theme-color]').content === "
                "getComputedStyle(document.documentElement).getPropertyValue('--bg').trim()"
            ),
            what=f"theme-color in {scheme}",
        )
        colours[scheme] = page.evaluate(
            "() => document.querySelector('meta[name=theme-color]').content"
        )
    assert colours["light"] != colours["dark"], colours


# -- 4. overview ----------------------------------------------------------------------------------


def test_the_overview_lists_a_waiting_session_once_and_the_new_button_hides_no_row(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    waiting = new_sid()
    others = [new_sid() for _ in range(9)]
    scripted.send_json_lines(waiting, [user_line("deploy the shop", str(uuid.uuid4()))])
    for i, sid in enumerate(others):
        scripted.send_json_lines(
            sid, [user_line(f"task {i}: a long title for a row " * 3, str(uuid.uuid4()))]
        )
        scripted.update(sid, state="idle")
    scripted.update(waiting, state="waiting", card=long_bash_card("card-o"))
    page = phone.login(account).open("/")
    expect(page.locator("#needs-count")).to_have_text("1 session needs you")
    expect(page.locator(f".session-row[data-id='{waiting}']")).to_have_count(1)
    expect(
        page.locator(f".needs .session-row[data-id='{waiting}'] .row-meta").last
    ).to_contain_text("Studio · ~/src/shop")
    mac = page.locator(f"section.mac[data-device='{account.device_id}']")
    expect(mac.locator(".session-row")).to_have_count(9)
    no_overflow(page)
    assert not small_targets(page), small_targets(page)
    # "+ New session" is a bar across the screen; at the end of the list no row is under it
    page.evaluate("() => window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_timeout(200)
    fab = page.locator("a.fab").evaluate(
        "e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top]; }"
    )
    assert fab[0] <= 0 and fab[1] >= PHONE["width"], fab
    last = page.locator(".session-row").last.evaluate("e => e.getBoundingClientRect().bottom")
    assert last <= fab[2], (last, fab)
    phone.shot("48-overview-once")


# -- 5. not paired ---------------------------------------------------------------------------------


def test_the_not_paired_page_says_only_what_to_do(phone: Phone) -> None:
    page = phone.open("/")
    expect(page.locator("main")).to_contain_text("not paired")
    page.wait_for_timeout(300)
    for hidden in ("#live", "#band", "#settings-link"):
        assert not page.locator(hidden).is_visible(), hidden
    text = page.locator("body").inner_text()
    assert "`" not in text and "Connecting" not in text and "Reconnecting" not in text, text
    no_overflow(page)
    phone.shot("49-not-paired")
    page.goto("/pair.html#NOPE-NOPE")
    expect(page.locator("#status")).to_have_class("error")
    status = page.locator("#status").inner_text()
    assert status[:1].isupper(), status
    assert "`" not in page.locator("body").inner_text()


def test_two_phones_of_the_same_name_can_be_told_apart(
    phone: Phone, relay: Any, account: Account
) -> None:
    relay.state.store.create_token(account.account_id, "phone", "iPhone")
    relay.state.store.create_token(account.account_id, "phone", "iPhone")
    page = phone.login(account).open("/#/settings")
    rows = page.locator("#phones li", has_text="iPhone")
    expect(rows).to_have_count(2)
    titles = rows.locator(".row-title").all_inner_texts()
    assert len(set(titles)) == 2, titles
    for meta in rows.locator(".row-meta").all_inner_texts():
        assert "paired " in meta and "last used" in meta, meta
    no_overflow(page)
    assert not small_targets(page), small_targets(page)
    phone.shot("50-phones-twins")


# -- 6. conversation -------------------------------------------------------------------------------


def test_tool_calls_are_one_line_that_opens_and_read_has_a_gutter(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    source = "\n".join(f"{n:>6}\t{'    ' * (n % 3)}line {n}" for n in range(1, 21))
    edit = {
        "file_path": "/Users/ada/src/shop/cart.py",
        "old_string": "def total(cart):\n    return sum(cart)",
        "new_string": "def total(cart):\n        return sum(item.price * item.count for item in cart.items if item.visible)",
    }
    scripted.send_json_lines(
        sid,
        [
            user_line("fix the cart total", str(uuid.uuid4())),
            tool_use_line("toolu_read", "Read", {"file_path": "/Users/ada/src/shop/cart.py"}, str(uuid.uuid4())),
            tool_result_line("toolu_read", source, str(uuid.uuid4())),
            tool_use_line("toolu_bash", "Bash", {"command": "pytest -q", "description": "Run the tests"}, str(uuid.uuid4())),
            tool_result_line("toolu_bash", "3 passed", str(uuid.uuid4())),
            tool_use_line("toolu_edit", "Edit", edit, str(uuid.uuid4())),
        ],
    )  # fmt: skip
    scripted.update(sid, state="idle")
    page = phone.login(account).open(f"/#/s/{sid}")
    read = page.locator("details.ev.tool", has=page.locator(".tool-name", has_text="Read"))
    expect(read).to_have_count(1)
    head = read.locator("summary.tool-head")
    expect(head).to_contain_text("/Users/ada/src/shop/cart.py")
    expect(head.locator(".tool-out")).to_have_text("20 lines")
    assert head.evaluate("e => e.getBoundingClientRect().height") < 60  # one line
    expect(read.locator(".result")).to_be_hidden()
    bash = page.locator("details.ev.tool", has=page.locator(".tool-name", has_text="Bash"))
    expect(bash.locator("summary .tool-out")).to_have_text("1 line")
    no_overflow(page)
    phone.shot("51-tools-collapsed")

    head.click()
    expect(read.locator(".result")).to_be_visible()
    gutter = read.locator(".numbered .ln")
    expect(gutter.first).to_have_text("1")
    assert "\t" not in read.locator(".result").inner_text()
    read.get_by_role("button", name=re.compile("Show all")).click()
    expect(gutter).to_have_count(20)
    expect(read.locator(".numbered .lt").nth(1)).to_have_text("        line 2")

    # a wrapped diff line keeps its indent: the text column starts right of the sign
    edit_tool = page.locator("details.ev.tool", has=page.locator(".tool-name", has_text="Edit"))
    edit_tool.locator("summary").click()
    added = edit_tool.locator(".dl.add").last
    sign_right, text_left, height = added.evaluate(
        "e => [e.querySelector('.sign').getBoundingClientRect().right,"
        " e.querySelector('.dt, .sign + *') ? e.querySelector('.dt, .sign + *').getBoundingClientRect().left : -1,"
        " e.getBoundingClientRect().height]"
    )
    assert height > 30, height  # it wrapped
    assert text_left >= sign_right - 0.5, (sign_right, text_left)
    no_overflow(page)
    phone.shot("52-tools-open")
    assert not small_targets(page), small_targets(page)


# -- 7. Korean -------------------------------------------------------------------------------------


def test_korean_keeps_words_whole_and_draws_markers_in_korean(
    browser: Any, relay: Any, account: Account, scripted: ScriptedMac
) -> None:
    sid = new_sid()
    scripted.send_json_lines(
        sid,
        [
            user_line("장바구니 합계를 고쳐 주세요", str(uuid.uuid4())),
            {"type": "system", "subtype": "compact_boundary", "uuid": str(uuid.uuid4()),
             "timestamp": "2026-11-29T21:33:56.000Z", "content": "Conversation compacted"},
        ],
    )  # fmt: skip
    scripted.update(sid, state="idle")
    p = Phone(browser, relay, locale="ko-KR").login(account)
    try:
        page = p.open(f"/#/s/{sid}")
        expect(page.locator(".convo .ev.user")).to_have_count(1)
        assert page.evaluate("() => getComputedStyle(document.body).wordBreak") == "keep-all"
        expect(page.locator(".convo .ev.marker")).to_have_text("📦 맥락을 압축했어요")
        # no stray space before a particle
        expect(page.get_by_label("Claude에게 보낼 글…")).to_be_visible()
        no_overflow(page)
        p.shot("53-korean-session")
    finally:
        p.close()


# -- with the real agent and the fake claude -------------------------------------------------------


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
