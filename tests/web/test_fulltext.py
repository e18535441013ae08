""" "Show all" on a tool result the relay cut reads the whole text from the Mac (390×844).

A real relay under uvicorn, a scripted Mac over the real link that answers ``transcript_line``
with the raw line (as agent/daemon.py does; tests/relay/features/test_fulltext.py drives the real agent),
Debian's Chromium.
"""

from __future__ import annotations

import json
import re
import uuid

from playwright.sync_api import expect

from tests.support.relay import Account
from tests.support.web import (
    Phone,
    ScriptedMac,
    new_sid,
    tool_result_line,
    tool_use_line,
    user_line,
)


def test_show_all_on_a_cut_result_shows_the_whole_text(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    text = "".join(f"{n:05d} <b>step</b> of the build\n" for n in range(2_000))
    result = tool_result_line("toolu_log", text, str(uuid.uuid4()))
    scripted.send_json_lines(
        sid,
        [
            user_line("build it", str(uuid.uuid4())),
            tool_use_line("toolu_log", "Bash", {"command": "make"}, str(uuid.uuid4())),
            result,
        ],
    )
    scripted.update(sid, state="idle")
    scripted.answers["transcript_line"] = {"line": json.dumps(result)}
    page = phone.login(account).open(f"/#/s/{sid}")
    bash = page.locator("details.ev.tool", has=page.locator(".tool-name", has_text="Bash"))
    bash.locator("summary").click()
    box = bash.locator(".result")
    expect(box.locator(".note")).to_contain_text(f"cut by the relay at 4000 of {len(text)}")

    box.get_by_role("button", name=re.compile("Show all")).click()
    pre = box.locator("pre")
    expect(pre).to_have_class(re.compile("whole"))
    assert pre.evaluate("e => e.textContent") == text
    assert pre.evaluate("e => e.querySelector('b')") is None  # text, never markup
    expect(box.locator(".note")).to_contain_text(f"the whole text ({len(text)} characters)")
    # A big text scrolls inside its own block, not the page sideways.
    height, inner = pre.evaluate("e => [e.clientHeight, e.scrollHeight]")
    assert height < inner and height <= 844 * 0.7 + 1, (height, inner)
    wide = page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert wide
    sent = [c for c in scripted.commands if c.name == "transcript_line"]
    assert sent and sent[-1].args == {"uuid": result["uuid"]}
    phone.shot("71-show-all-whole")

    box.get_by_role("button", name="Show less").click()
    assert len(pre.evaluate("e => e.textContent")) < 2_000


def test_show_all_says_why_when_the_mac_cannot_give_the_text(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    text = "x" * 9_000
    scripted.send_json_lines(
        sid,
        [
            tool_use_line("toolu_big", "Bash", {"command": "cat big"}, str(uuid.uuid4())),
            tool_result_line("toolu_big", text, str(uuid.uuid4())),
        ],
    )
    scripted.update(sid, state="idle")
    scripted.fail["transcript_line"] = ("line_not_found", "no transcript line of this session")
    page = phone.login(account).open(f"/#/s/{sid}")
    bash = page.locator("details.ev.tool", has=page.locator(".tool-name", has_text="Bash"))
    bash.locator("summary").click()
    box = bash.locator(".result")
    box.get_by_role("button", name=re.compile("Show all")).click()
    expect(box.locator(".note.err")).to_contain_text("The whole text could not be read")
    expect(box.locator(".note.err")).to_contain_text("No transcript line")
    expect(box.get_by_role("button", name=re.compile("Show all"))).to_be_enabled()
