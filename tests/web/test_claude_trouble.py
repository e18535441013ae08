"""What keeps a session from running is said, with what to do (issue 22, items 1 and 4): a Mac
without Claude Code, no Mac online, a claude that ended before its session was live. A real
relay, a scripted Mac over the real link, Debian's Chromium at 390×844."""

from __future__ import annotations

import re
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from playwright.sync_api import expect

from agent.launch import INSTALL_HINT
from tests.support.relay import Account
from tests.support.web import PHONE, Phone, ScriptedMac, held, new_sid, user_line, wait_for
from wire.protocol import StartFailureInfo

INSTALL = "npm install -g @anthropic-ai/claude-code"
MIN_HELD_TEXT_PX = 60  # enough of a held message to tell which it is


def report_device(mac: ScriptedMac, account: Account, **info: Any) -> None:
    """What the Mac's agent reports of itself (DeviceInfo), kept by the relay as its hello is."""
    base = {"name": "Studio", "agent_version": "0.1.0", "claude_version": ""}
    mac.loop.run(mac.server.state.store.device_seen(account.device_id, {**base, **info}))


def test_a_mac_without_claude_says_so_and_start_explains(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    report_device(
        scripted,
        account,
        claude_found=False,
        claude_standing="missing",
        claude_install_hint=INSTALL,
    )
    page = phone.login(account).open("/")
    note = page.locator(".mac .claude-trouble")
    expect(note).to_contain_text("Claude Code is not installed on Studio.")
    expect(note.locator(".install-line")).to_have_text(INSTALL)
    phone.shot("22-04-overview-no-claude")

    page.get_by_role("link", name="+ New session").click()
    form = page.locator("form")
    expect(form.locator(".claude-trouble")).to_contain_text(
        "Claude Code is not installed on Studio."
    )
    expect(page.locator("#ns-why")).to_have_text(
        "Start is off: Claude Code is not installed on Studio."
    )
    expect(page.get_by_role("button", name="Start")).to_be_disabled()
    phone.shot("22-04-new-session-no-claude")
    assert "create_session" not in scripted.command_names()


def test_a_mac_logged_out_says_how_to_log_in(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    report_device(scripted, account, claude_found=True, claude_standing="logged_out")
    page = phone.login(account).open("/")
    note = page.locator(".mac .claude-trouble")
    expect(note).to_contain_text(
        "Claude Code on Studio is not logged in. Run claude once in a terminal on that Mac"
    )
    # the command reads as one: in a <code>, no backticks shown
    expect(note.locator("code")).to_have_text("claude")
    assert "`" not in note.inner_text()
    phone.shot("22-03-overview-logged-out")


def test_with_no_mac_online_start_is_off_with_the_reason(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    scripted.close()
    wait_for(lambda: phone.server.state.live.link(account.device_id) is None, 10, "Mac offline")
    page = phone.login(account).open("/#/new")
    expect(page.locator("#ns-why")).to_contain_text("No Mac is online")
    expect(page.get_by_role("button", name="Start")).to_be_disabled()
    phone.shot("22-04-new-session-no-mac")


def test_a_start_failure_shows_on_the_session_and_in_the_list(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("earlier words", str(uuid.uuid4()))])
    failure = StartFailureInfo(
        code="claude_not_logged_in",
        reason="Invalid API key · Please run /login",
        action="Run `claude` once in a terminal on Studio and log in, then send again.",
        last_lines=["╭────╮", "Invalid API key · Please run /login", "╰────╯"],
        status=1,
    )
    scripted.update(
        sid,
        state="ended",
        error="claude ended at start: Invalid API key · Please run /login",
        failure=failure,
        held=[held("m1fixit", "fix the login page")],
    )
    page = phone.login(account).open("/")
    row = page.locator(f".session-row[data-id='{sid}']")
    expect(row.locator(".row-failure")).to_have_text(
        "Did not start: Invalid API key · Please run /login"
    )
    phone.shot("22-01-list-start-failure")

    # The pill says it did not start: "Stopped" would say somebody stopped it.
    expect(row.get_by_text("Did not start", exact=True)).to_be_visible()
    row.click()
    expect(page.locator("span.badge", has_text="Did not start").first).to_be_visible()
    box = page.locator(".failure")
    expect(box.locator(".failure-reason")).to_have_text("Invalid API key · Please run /login")
    action = box.locator(".failure-action")
    expect(action).to_have_text(
        "Run claude once in a terminal on Studio and log in, then send again."
    )
    expect(action.locator("code")).to_have_text("claude")
    box.locator("summary").click()
    expect(box.locator("pre")).to_contain_text("Invalid API key")
    # said once: not again as the session's one-line error
    expect(page.locator(".session-sum")).not_to_contain_text("claude ended at start")
    item = page.locator(".held-item[data-id='m1fixit']")
    expect(item.locator(".held-state")).to_have_text(re.compile("Not delivered"))

    # the long state wraps: the message stays readable and nothing leaves the screen
    def laid_out() -> bool:
        text, state = (item.locator(p).bounding_box() for p in (".held-text", ".held-state"))
        return (
            text is not None
            and state is not None
            and text["width"] >= MIN_HELD_TEXT_PX
            and max(b["x"] + b["width"] for b in (text, state)) <= PHONE["width"]
        )

    wait_for(laid_out, 5, "the held message and its state within the screen")
    phone.shot("22-01-session-start-failure")


def test_the_agents_long_install_hint_never_widens_the_form(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    """The hint a real agent sends is a sentence, longer than the screen: its line scrolls inside
    its box, and the form (the Folder field, the Start button) stays within 390 px."""
    report_device(
        scripted,
        account,
        claude_found=False,
        claude_standing="missing",
        claude_install_hint=INSTALL_HINT,
    )
    page = phone.login(account).open("/#/new")
    line = page.locator("form .install-line")
    expect(line).to_have_text(INSTALL_HINT)
    for part in (line, page.locator("#ns-cwd"), page.get_by_role("button", name="Start")):
        box = part.bounding_box()
        assert box is not None and box["x"] + box["width"] <= PHONE["width"], box
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    phone.shot("22-04-new-session-long-install-hint")


TEXTS = st.text(alphabet=st.sampled_from("ab `<>&\n"), max_size=30)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts=st.lists(TEXTS, min_size=1, max_size=8))
def test_commands_in_backticks_read_as_code_and_all_else_stays_text(
    phone: Phone, texts: list[str]
) -> None:
    """withCode (web/js/dom.js): each `command` becomes a <code> without its backticks; text
    with none, or with an odd one out, stays exactly as it was; nothing becomes markup."""
    page = phone.page
    if not page.url.endswith("/pair.html"):
        page.goto("/pair.html")
    got = page.evaluate(
        """async (texts) => {
          const dom = await import('/js/dom.js');
          return texts.map((text) => {
            const box = document.createElement('p');
            box.append(...dom.withCode(text).map((p) => (typeof p === 'string' ? document.createTextNode(p) : p)));
            return { text: box.textContent, tags: [...box.querySelectorAll('*')].map((e) => e.tagName),
                     codes: [...box.querySelectorAll('code')].map((e) => e.textContent) };
          });
        }""",
        texts,
    )
    for text, seen in zip(texts, got, strict=True):
        parts = text.split("`")
        if len(parts) >= 3 and len(parts) % 2 == 1:
            assert seen["text"] == text.replace("`", "")
            assert seen["codes"] == [p for p in parts[1::2] if p]
        else:
            assert seen["text"] == text and seen["codes"] == []
        assert set(seen["tags"]) <= {"CODE"}
