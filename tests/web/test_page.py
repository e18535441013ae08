"""The control page in a real browser: Debian's Chromium (headless) driven by Playwright, against a
real relay under uvicorn fed by a scripted Mac over the real link.

Each test opens its own browser context (its own cookies, IndexedDB and service worker) on its own
account. Screenshots of the main screens at phone size (390×844) go to ``test-artifacts/``.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, Route, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from relay.app import WEB_DIR
from relay.static import load
from tests.support.relay import Account, RelayServer, free_port
from tests.support.web import (
    LoopThread,
    Phone,
    PortRelay,
    ScriptedMac,
    assistant_line,
    commands,
    held,
    multi_question_card,
    new_sid,
    permission_card,
    relay_client,
    tool_result_line,
    tool_use_line,
    user_line,
    wait_for,
)

# README figures: the control page weight goal as the relay sends it (gzip, relay/static.py):
# what a phone downloads on its first open — index.html, the script, the manifest and the
# service worker — icons left out.
WEIGHT_LIMIT = 80 * 1024


def conversation_seqs(page: Page) -> list[int]:
    return [
        int(s)
        for s in page.eval_on_selector_all(
            ".convo [data-seq]", "els => els.map(e => e.dataset.seq)"
        )
    ]


def test_page_weight_and_no_inline_code() -> None:
    served = load(WEB_DIR)
    names = [n for n in served.cold_open() if not n.startswith("icons/")]
    assert {"index.html", "app.js", "sw.js", "manifest.webmanifest"} <= set(names)
    raw, weight = served.weight(names)
    print(f"\npage weight (without icons): {weight:,} bytes gzip, {raw:,} raw: {', '.join(names)}")
    assert weight <= WEIGHT_LIMIT, f"{weight} bytes > {WEIGHT_LIMIT}"
    # The pairing page, opened before the first open of the page, within the same goal.
    pairing = ["pair.html", "pair.js"]
    assert served.weight(pairing)[1] <= WEIGHT_LIMIT
    for html in WEB_DIR.glob("*.html"):
        text = html.read_text()
        assert "style=" not in text and "<style" not in text, html
        assert not re.search(r"<script(?![^>]*\bsrc=)", text), f"inline script in {html}"
        assert not re.search(r"<[^>]*\son\w+=", text), f"inline handler in {html}"
    for js in WEB_DIR.rglob("*.js"):
        text = js.read_text()
        assert "innerHTML" not in text and "outerHTML" not in text, js
        assert "insertAdjacentHTML" not in text and "document.write" not in text, js
        assert "eval(" not in text and "new Function" not in text, js


def test_pairing_link_logs_the_phone_in(
    browser: Browser, relay: RelayServer, account: Account
) -> None:
    code = relay.state.store.create_pair_code(account.account_id, "phone", "phone")
    p = Phone(browser, relay)
    try:
        page = p.open(f"/pair.html#{code}")
        expect(page.locator("#live")).to_have_text("Live")
        assert (
            page.url.rstrip("/").endswith(str(relay.port))
            or page.url.endswith("/#/")
            or page.url.endswith("/")
        )
        assert code not in page.url
        cookies = {c["name"]: c for c in p.context.cookies()}
        assert cookies["cb_login"]["httpOnly"] and cookies["cb_login"]["sameSite"] == "Strict"
        expect(page.locator("#needs-count")).to_have_text("Nothing needs you")
        # the code is spent: the same link again says so, clearly
        page.goto(f"/pair.html#{code}")
        expect(page.locator("#status")).to_contain_text("unknown, used or expired")
    finally:
        p.close()


def test_not_paired_page_explains_how_to_pair(phone: Phone) -> None:
    page = phone.open("/")
    expect(page.locator("main")).to_contain_text("not paired")
    expect(page.locator("a[href='pair.html']")).to_be_visible()


def test_overview_lists_macs_sessions_and_states(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    busy, waiting, idle, grouped = new_sid(), new_sid(), new_sid(), new_sid()
    scripted.send_transcript(busy, "e_write_edit_permission__17", cwd="/Users/ada/src/shop")
    scripted.send_transcript(waiting, "d_bash", cwd="/Users/ada/src/api")
    scripted.send_transcript(idle, "b_idle", cwd="/Users/ada/src/docs")
    scripted.send_transcript(grouped, "f_ask", cwd="/Users/ada/src/site")
    scripted.update(busy, state="busy", activity="coding")
    scripted.update(waiting, state="waiting", card=permission_card())
    scripted.update(idle, state="idle")
    with relay_client(relay, account) as c:
        assert (
            c.patch(f"/api/sessions/{grouped}", json={"group": "Side projects"}).status_code == 200
        )
        assert c.patch(f"/api/sessions/{idle}", json={"title": "Docs rewrite"}).status_code == 200

    page = phone.login(account).open("/")
    expect(page.locator("#needs-count")).to_have_text("1 session needs you")
    needs = page.locator(".needs .session-row")
    expect(needs).to_have_count(1)
    expect(needs.locator(".badge").first).to_have_text("Permission")
    mac = page.locator(f"section.mac[data-device='{account.device_id}']")
    expect(mac.locator(".conn")).to_have_text("online")
    expect(mac.locator("h2")).to_have_text("Studio")
    # the waiting one is listed once, in "needs you", with its Mac's name
    expect(needs.first.locator(".row-meta").last).to_contain_text("Studio · ~/src/api")
    expect(page.locator(f".session-row[data-id='{waiting}']")).to_have_count(1)
    rows = mac.locator(".session-row")
    expect(rows).to_have_count(3)
    badges = {busy: "Coding", idle: "Idle", grouped: "Stopped"}
    for sid, badge in badges.items():  # each as soon as its live state has arrived
        expect(mac.locator(f".session-row[data-id='{sid}'] .badge").first).to_have_text(badge)
    expect(mac.locator(f".session-row[data-id='{idle}'] .row-title")).to_have_text("Docs rewrite")
    expect(mac.locator("h3.group")).to_have_text("Side projects")
    # list order within the Mac: ungrouped first, in position order, then the group
    order = mac.locator(".session-row").evaluate_all("els => els.map(e => e.dataset.id)")
    assert order == [busy, idle, grouped]
    phone.shot("01-overview")

    # the Mac goes away: honest offline state and last seen; the waiting card is still listed
    scripted.abort()
    expect(mac.locator(".conn")).to_contain_text("offline · last seen")
    expect(page.locator("#needs-count")).to_have_text("1 session needs you")
    expect(mac.locator(f".session-row[data-id='{busy}'] .badge.mark")).to_have_text("Mac offline")
    expect(mac.locator(f".session-row[data-id='{busy}'] .badge").first).to_contain_text(
        "State unknown since"
    )


def test_korean_labels_from_the_browser_language(
    browser: Browser, relay: RelayServer, account: Account, scripted: ScriptedMac
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "b_idle")
    scripted.update(sid, state="waiting", card=permission_card())
    p = Phone(browser, relay, locale="ko-KR").login(account)
    try:
        page = p.open("/")
        expect(page.locator("#needs-count")).to_have_text("응답을 기다리는 세션 1개")
        expect(page.locator(".needs .badge").first).to_have_text("권한 요청")
        expect(page.locator("#live")).to_have_text("연결됨")
        p.shot("07-overview-ko")
        # switch to English in settings; the choice is remembered
        page.goto("/#/settings")
        page.select_option("#set-lang", "en")
        page.goto("/")
        expect(page.locator("#needs-count")).to_have_text("1 session needs you")
    finally:
        p.close()


# -- cards ------------------------------------------------------------------------------------


def test_answer_a_permission_card(phone: Phone, scripted: ScriptedMac, account: Account) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="waiting", card=permission_card("card-7"))
    page = phone.login(account).open(f"/#/s/{sid}")
    card = page.locator(".card[data-card-id='card-7']")
    expect(card).to_be_visible()
    expect(card.locator(".card-input pre")).to_have_text("touch bash_made.txt && echo hi")
    expect(card.locator(".option")).to_have_count(3)
    phone.shot("02-permission-card")

    card.locator(".option[data-key='1']").click()
    (answer,) = commands(scripted, "answer_card")
    assert answer.session_id == sid
    assert answer.args == {"key": "1", "always": False, "card_id": "card-7"}
    # answered, but the card stays until the Mac confirms the dialog closed
    expect(card.locator(".card-status")).to_contain_text("waiting for the Mac")
    expect(card).to_have_class(re.compile("answered"))
    time.sleep(0.5)
    expect(card).to_be_visible()
    scripted.update(sid, state="busy", clear_card=True)
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator("#top-actions .badge")).to_have_text("Working")


def test_a_card_closed_meanwhile_says_so(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "b_idle")
    scripted.update(sid, state="waiting", card=permission_card("card-gone"))
    scripted.fail["answer_card"] = ("card_closed", "this card is already closed")
    page = phone.login(account).open(f"/#/s/{sid}")
    card = page.locator(".card[data-card-id='card-gone']")
    card.locator(".option[data-key='3']").click()
    expect(card.locator(".card-status")).to_have_text("This card already closed on the Mac.")
    expect(card).to_have_class(re.compile("failed"))
    expect(card.locator(".option").first).to_be_enabled()


def test_answer_a_multi_select_question(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "f_ask")
    scripted.update(sid, state="waiting", card=multi_question_card("card-q1"))
    page = phone.login(account).open(f"/#/s/{sid}")
    card = page.locator(".card[data-card-id='card-q1']")
    expect(card.locator("input[type=checkbox]")).to_have_count(3)
    expect(card.locator("input[type=text]")).to_have_attribute("placeholder", "Type something")
    card.get_by_label("Cheese").check()
    card.get_by_label("Basil").check()
    phone.shot("03-question-card")
    card.get_by_role("button", name="Submit").click()
    (answer,) = commands(scripted, "answer_card")
    assert answer.args == {"keys": ["1", "3"], "always": False, "card_id": "card-q1"}
    expect(card.locator(".card-status")).to_contain_text("waiting for the Mac")
    scripted.update(sid, state="busy", clear_card=True)
    expect(page.locator(".card")).to_have_count(0)


# -- messages ----------------------------------------------------------------------------------


def test_held_message_is_shown_held_then_typed(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "e_write_edit_permission__17")
    scripted.update(sid, state="busy", activity="coding")
    scripted.answers["send"] = {"message_id": "m-1", "state": "held"}
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(".send-now")).to_be_visible()
    page.get_by_label("Message Claude…").fill("then run the unit tests")
    page.locator("button.send").click()
    (send,) = commands(scripted, "send")
    assert re.fullmatch(r"[A-Za-z0-9_-]{8,64}", send.args.pop("message_id"))  # the page's own id
    assert send.args == {"text": "then run the unit tests", "now": False}
    expect(page.get_by_label("Message Claude…")).to_have_value("")
    scripted.update(sid, held=[held("m-1", "then run the unit tests")])
    item = page.locator(".held-item[data-id='m-1']")
    expect(item).to_have_attribute("data-state", "held")
    expect(item.locator(".held-state")).to_have_text("Held")
    phone.shot("04-held-message")
    # typed, it leaves the held list: it is the person's message in the conversation now
    scripted.update(sid, held=[held("m-1", "then run the unit tests", "typed")])
    expect(item).to_have_count(0)
    scripted.update(sid, state="idle", held=[])
    expect(page.locator(".held")).to_be_hidden()


def test_send_now_and_interrupt(phone: Phone, scripted: ScriptedMac, account: Account) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "c_busy")
    scripted.update(sid, state="busy")
    page = phone.login(account).open(f"/#/s/{sid}")
    page.get_by_label("Message Claude…").fill("stop, run only the unit tests")
    page.get_by_role("button", name="Send now").click()
    (send,) = commands(scripted, "send")
    assert {**send.args, "message_id": "-"} == {
        "text": "stop, run only the unit tests",
        "now": True,
        "message_id": "-",
    }
    page.get_by_role("button", name="Interrupt").click()
    commands(scripted, "interrupt")


def test_a_refused_message_stays_in_the_box(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "b_idle")
    scripted.update(sid, state="idle")
    scripted.fail["send"] = ("empty_message", "the Mac could not take it")
    page = phone.login(account).open(f"/#/s/{sid}")
    box = page.get_by_label("Message Claude…")
    box.fill("hello")
    page.locator("button.send").click()
    expect(page.locator("#toast")).to_have_text("The Mac could not take it")
    expect(box).to_have_value("hello")


def test_a_send_retried_after_a_lost_answer_keeps_its_id(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "b_idle")
    scripted.update(sid, state="idle")
    page = phone.login(account).open(f"/#/s/{sid}")
    calls: list[Route] = []

    def lose_the_first_answer(route: Route) -> None:
        calls.append(route)
        if len(calls) == 1:
            route.fetch()  # the relay and the Mac get it…
            route.abort("connectionreset")  # …and the answer is lost on its way back
        else:
            route.continue_()

    page.route("**/api/sessions/*/messages", lose_the_first_answer)
    box = page.get_by_label("Message Claude…")
    box.fill("deploy to staging")
    page.locator("button.send").click()
    expect(box).to_have_value("deploy to staging")  # given back, to try again
    page.locator("button.send").click()
    expect(box).to_have_value("")
    box.fill("and then to production")
    page.locator("button.send").click()
    first, retry, other = commands(scripted, "send", 3)
    assert first.args["text"] == retry.args["text"] == "deploy to staging"
    assert first.args["message_id"] == retry.args["message_id"]  # the Mac keeps one
    assert other.args["message_id"] != first.args["message_id"]


def test_sending_to_a_stopped_session_reopens_it(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "k_resume")
    scripted.update(sid, state="ended")
    scripted.answers["send"] = {"message_id": "m-9", "state": "held", "reopened": True}
    page = phone.login(account).open(f"/#/s/{sid}")
    box = page.get_by_placeholder("A message reopens it…")
    box.fill("carry on")
    page.locator("button.send").click()
    expect(page.locator("#toast")).to_have_text("Reopening the session on its Mac…")
    assert commands(scripted, "send")[0].args["text"] == "carry on"


def test_new_session_rename_and_end(phone: Phone, scripted: ScriptedMac, account: Account) -> None:
    page = phone.login(account).open("/")
    page.get_by_role("link", name="+ New session").click()
    expect(page.locator("#ns-mac")).to_have_value(account.device_id)
    page.fill("#ns-cwd", "/Users/ada/src/new-thing")
    page.select_option("#ns-mode", "acceptEdits")
    page.fill("#ns-prompt", "write the README")
    phone.shot("08-new-session")
    page.get_by_role("button", name="Start").click()
    (create,) = commands(scripted, "create_session")
    assert create.args == {
        "cwd": "/Users/ada/src/new-thing",
        "prompt": "write the README",
        "permission_mode": "acceptEdits",
    }
    expect(page).to_have_url(re.compile(f"#/s/{create.session_id}$"))
    # rename through the actions sheet
    page.get_by_role("button", name="Session actions").click()
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("New title").fill("README pass")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#title")).to_have_text("README pass")
    # end it (confirmed first)
    page.get_by_role("button", name="Session actions").click()
    page.get_by_role("button", name="End", exact=True).click()
    page.locator("dialog").get_by_role("button", name="End", exact=True).click()
    commands(scripted, "end")


# -- connection and history ---------------------------------------------------------------------


def test_mac_disconnect_shows_the_band_and_the_cached_conversation(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    last = scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="idle")
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(".convo [data-seq]").last).to_have_attribute("data-seq", str(last))
    expect(page.locator("#band")).to_be_hidden()
    scripted.abort()
    band = page.locator("#band")
    expect(band).to_be_visible()
    expect(band).to_have_attribute("data-kind", "mac-offline")
    expect(band).to_contain_text("Mac offline — Studio")
    expect(page.locator(".convo")).to_contain_text("RUN_BASH one")
    phone.shot("05-mac-offline")
    # a reload with the Mac still away shows the same conversation
    page.reload()
    expect(page.locator("#band")).to_contain_text("Mac offline")
    expect(page.locator(".convo")).to_contain_text("RUN_BASH one")
    # the Mac is back: the band goes
    scripted.connect()
    expect(page.locator("#band")).to_be_hidden()


def test_relay_restart_catches_up_without_duplicates(
    browser: Browser, tmp_path: Path, loop: LoopThread
) -> None:
    port = free_port()
    data = tmp_path / "relay"
    server: RelayServer = PortRelay(data, port).start()
    acct = server.account()
    mac = ScriptedMac(server, acct.device_token, loop).connect()
    sid = new_sid()
    bodies = [user_line(f"message {i}", str(uuid.uuid4())) for i in range(30)]
    mac.send_json_lines(sid, bodies)
    mac.update(sid, state="idle")
    p = Phone(browser, server).login(acct)
    page = p.open(f"/#/s/{sid}")
    try:
        expect(page.locator(".convo [data-seq='30']")).to_be_visible()
        page.wait_for_function(
            "() => navigator.serviceWorker && navigator.serviceWorker.controller"
        )

        server.stop()
        band = page.locator("#band")
        expect(band).to_have_text(re.compile("Reconnecting…|Relay unreachable"))
        expect(band).to_have_attribute("data-kind", "unreachable", timeout=15_000)
        # the page opens from the phone alone: the app shell from the service worker, the
        # conversation from IndexedDB
        page.reload()
        expect(page.locator(".convo [data-seq='30']")).to_be_attached()
        expect(page.locator("#band")).to_have_attribute("data-kind", "unreachable")
        p.shot("06-relay-unreachable")

        server = PortRelay(data, port).start()
        mac.url = server.url
        mac.server = server
        mac.connect()
        more = [user_line(f"after restart {i}", str(uuid.uuid4())) for i in range(12)]
        assert mac.send_json_lines(sid, more) == 42
        expect(page.locator(".convo [data-seq='42']")).to_be_attached(timeout=20_000)
        expect(page.locator("#band")).to_be_hidden(timeout=15_000)
        time.sleep(0.5)
        seqs = conversation_seqs(page)
        assert seqs == list(range(1, 43)), seqs
        # live after the catch-up, still exactly once each
        mac.send_json_lines(sid, [assistant_line("all caught up", str(uuid.uuid4()))])
        expect(page.locator(".convo [data-seq='43']")).to_contain_text("all caught up")
        assert conversation_seqs(page) == list(range(1, 44))
        stored_seqs = """async (sid) => {
                const db = await new Promise((ok) => { const r = indexedDB.open('claude-bridge'); r.onsuccess = () => ok(r.result); });
                const tx = db.transaction('events');
                const all = await new Promise((ok) => { const q = tx.objectStore('events').getAll(); q.onsuccess = () => ok(q.result); });
                return all.filter((e) => e.session_id === sid).map((e) => e.seq);
            }"""
        wait_for(
            lambda: sorted(page.evaluate(stored_seqs, sid)) == list(range(1, 44)),
            what="the phone's cache to hold seq 1..43 once each",
        )
    finally:
        mac.close()
        p.close()
        server.stop()


def test_transcript_text_is_never_markup(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    tool_id = "toolu_" + uuid.uuid4().hex[:12]
    scripted.send_json_lines(
        sid,
        [
            user_line("<img src=x onerror=alert(1)> hello", str(uuid.uuid4())),
            assistant_line(
                "Look: <script>alert(2)</script> **bold** [click](javascript:alert(3)) "
                "[site](https://example.com) `<b>code</b>`",
                str(uuid.uuid4()),
            ),
            tool_use_line(tool_id, "Bash", {"command": "cat x.html"}, str(uuid.uuid4())),
            tool_result_line(
                tool_id,
                "<script>alert(4)</script><iframe src=javascript:alert(5)>",
                str(uuid.uuid4()),
            ),
        ],
    )
    scripted.update(
        sid,
        state="waiting",
        card=permission_card("card-x").model_copy(
            update={
                "text": "<img src=y onerror=alert(6)>",
                "tool_input": {"command": "<script>alert(7)</script>"},
            }
        ),
    )
    page = phone.login(account).open(f"/#/s/{sid}")
    convo = page.locator(".convo")
    expect(convo).to_contain_text("<img src=x onerror=alert(1)> hello")
    expect(convo).to_contain_text("<script>alert(2)</script>")
    expect(convo).to_contain_text("<script>alert(4)</script><iframe src=javascript:alert(5)>")
    expect(page.locator(".card")).to_contain_text("<img src=y onerror=alert(6)>")
    assert page.locator("main img, main script, main iframe").count() == 0
    expect(convo.locator("strong")).to_have_text("bold")
    expect(convo.locator("code").first).to_have_text("<b>code</b>")
    links = convo.locator("a").evaluate_all("els => els.map(a => [a.textContent, a.href, a.rel])")
    assert links == [["site", "https://example.com/", "noopener noreferrer nofollow"]]
    time.sleep(0.3)
    assert phone.dialogs == []


def test_first_render_of_a_1000_event_session(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    bodies: list[dict[str, Any]] = []
    for i in range(500):
        bodies.append(user_line(f"question {i}: what does `f({i})` return?", str(uuid.uuid4())))
        bodies.append(
            assistant_line(
                f"It returns **{i * 2}**.\n\n- first, it doubles\n- then it returns\n\n```py\nf({i}) == {i * 2}\n```",
                str(uuid.uuid4()),
            )
        )
    assert scripted.send_json_lines(sid, bodies) == 1000
    scripted.update(sid, state="idle")
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(".convo [data-seq='1000']")).to_be_attached()
    cold = page.evaluate("() => window.__cbRender.filter(r => r.source === 'network').pop()")
    # page back to the start: two more pages of history. Scrolling the button into view may
    # itself load the older page (the page loads on scroll), and the button then goes away
    # under the click: that is not a failure, the next round sees the new state.
    deadline = time.monotonic() + 30
    while not page.locator(".convo [data-seq='1']").count() and time.monotonic() < deadline:
        earlier = page.locator(".earlier")
        if earlier.is_visible():
            with contextlib.suppress(PlaywrightTimeoutError):
                earlier.click(timeout=2000)
        page.wait_for_function(
            "() => !document.querySelector('.earlier') || !document.querySelector('.earlier').disabled"
        )
    expect(page.locator(".convo [data-seq='1']")).to_be_attached()
    assert conversation_seqs(page) == list(range(1, 1001))
    time.sleep(0.6)  # let the cache write finish
    page.goto("/")
    page.goto(f"/#/s/{sid}")
    expect(page.locator(".convo [data-seq='1000']")).to_be_attached()
    warm = page.evaluate("() => window.__cbRender.filter(r => r.source === 'cache').pop()")
    print(
        f"\nfirst render, from the relay: {cold['events']} newest events drawn in {cold['ms']:.0f} ms "
        f"(painted {cold.get('painted', 0):.0f} ms; {cold['at']:.0f} ms after navigation)"
        f"\nfirst render, from the phone's cache: {warm['events']} events drawn in {warm['ms']:.0f} ms "
        f"(painted {warm.get('painted', 0):.0f} ms; {warm['at']:.0f} ms after navigation)"
    )
    assert warm["events"] == 1000


def test_settings_phones_and_logout(browser: Browser, relay: RelayServer, account: Account) -> None:
    relay.state.store.create_token(account.account_id, "phone", "old iPad")
    p = Phone(browser, relay).login(account)
    try:
        page = p.open("/#/settings")
        phones = page.locator("#phones li")
        expect(phones).to_have_count(2)
        expect(page.locator("#phones")).to_contain_text("test phone (this phone)")
        p.shot("09-settings")
        page.locator("#phones li", has_text="old iPad").get_by_role("button", name="Revoke").click()
        page.locator("dialog").get_by_role("button", name="Revoke").click()
        expect(page.locator("#phones li", has_text="old iPad").get_by_role("button")).to_have_text(
            "revoked"
        )
        page.get_by_role("button", name="Log out").click()
        page.locator("dialog").get_by_role("button", name="Log out").click()
        expect(page.locator("main")).to_contain_text("not paired")
    finally:
        p.close()


def test_read_only_view_sends_nothing(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "g_plan")
    scripted.update(sid, state="waiting", card=permission_card("card-ro"))
    page = phone.login(account).open(f"/#/s/{sid}/read")
    expect(page.locator(".read-only-note")).to_be_visible()
    expect(page.locator(".composer")).to_have_count(0)
    expect(page.locator(".card .option")).to_have_count(0)
    expect(page.locator(".card")).to_contain_text("Open the session normally to answer.")
    expect(page.locator(".convo")).to_contain_text("MAKE_PLAN for me")
    page.get_by_role("link", name="Open normally").click()
    expect(page.locator(".card .option")).to_have_count(3)


def test_resync_reloads_the_session(
    phone: Phone, scripted: ScriptedMac, account: Account, relay: RelayServer
) -> None:
    sid = new_sid()
    last = scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="idle")
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(f".convo [data-seq='{last}']")).to_be_attached()
    hub = relay.state.hub
    assert hub._loop is not None
    hub._loop.call_soon_threadsafe(hub.resync_session, sid, "too_slow")
    time.sleep(0.5)
    more = scripted.send_json_lines(sid, [user_line("after the resync", str(uuid.uuid4()))])
    expect(page.locator(f".convo [data-seq='{more}']")).to_contain_text("after the resync")
    assert conversation_seqs(page) == list(range(1, more + 1))


def test_large_text_and_desktop_fit(
    browser: Browser, relay: RelayServer, account: Account, scripted: ScriptedMac
) -> None:
    sid = new_sid()
    scripted.send_transcript(
        sid,
        "e_write_edit_permission__17",
        cwd="/Users/ada/src/a-rather-long-folder-name/with/deep/nesting",
    )
    scripted.update(sid, state="waiting", card=permission_card("card-big"))
    p = Phone(browser, relay).login(account)
    try:
        page = p.open("/")
        expect(page.locator(".needs .session-row")).to_have_count(1)  # waiting: listed once, there
        for path in ("/", f"/#/s/{sid}"):
            page.goto(path)
            page.wait_for_selector(".session-row, .card")
            page.evaluate("() => { document.documentElement.style.fontSize = '200%'; }")
            overflow = page.evaluate(
                "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 0, f"{path}: {overflow}px wider than the phone at 200% text"
        page.keyboard.press("Tab")
        outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none"
        page.set_viewport_size({"width": 1280, "height": 800})
        page.evaluate("() => { document.documentElement.style.fontSize = ''; }")
        page.goto("/")
        expect(page.locator(".needs .session-row")).to_have_count(1)
        p.shot("10-desktop-overview")
    finally:
        p.close()
