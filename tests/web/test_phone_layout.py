"""The control page laid out for a phone (390×844): nothing wider than the screen, held messages
that leave once typed, a session that opens at its newest message and follows it, one line per tool
call, the overview's rows, the not-paired page, Korean kept in whole words, the theme colour, and
controls big enough for a finger.

A real relay under uvicorn, a scripted Mac over the real link, Debian's Chromium. Screenshots go to
``test-artifacts/screens/``.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from playwright.sync_api import expect

from tests.support.fit import (
    at_bottom,
    busy_session,
    long_bash_card,
    no_overflow,
    small_targets,
)
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
            lambda: page.evaluate(
                "() => document.querySelector('meta[name=theme-color]').content === "
                "getComputedStyle(document.documentElement).getPropertyValue('--bg').trim()"
            ),
            what=f"theme-color in {scheme}",
        )
        colours[scheme] = page.evaluate(
            "() => document.querySelector('meta[name=theme-color]').content"
        )
    assert colours["light"] != colours["dark"], colours


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
