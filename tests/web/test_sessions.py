"""The control page's session features (search, groups, costs, retention) in a real browser:
Debian's Chromium under Playwright, against a real relay fed by a scripted Mac over the real link, with the captured
transcripts of the real Claude Code (``tests/fixtures/transcripts``).

Search and browse (here / elsewhere, filters), summaries and cost in the lists, the cost in detail,
pin and unpin, the automatic title, the permission policy editor (``change_policy`` on the Mac, the
Mac offline), "always allow", one line per subagent and its paged history, the read-only view
(``X-CB-Read-Only: 1`` on every request, streams included), archived sessions, the retention
report. Screenshots at phone size go to ``test-artifacts/screens/``.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from playwright.sync_api import Browser, Request, expect

from tests.support.relay import TRANSCRIPTS, Account, RelayServer
from tests.support.web import (
    LoopThread,
    Phone,
    ScriptedMac,
    actions,
    assistant_line,
    commands,
    new_sid,
    permission_card,
    relay_client,
    tool_use_line,
    user_line,
    wait_for,
)
from wire.protocol import LineRecord
from wire.transcript import read_lines

MAIN = TRANSCRIPTS / "m_subagent__b9a49076-7ef0-4409-b3eb-ff11c5c634e6.jsonl"
SUB = TRANSCRIPTS / "m_subagent__subagent__agent-a0f2c7af82d1d7fd7.jsonl"
AGENT = "a0f2c7af82d1d7fd7"
DAY = 86400.0


def api(server: RelayServer, account: Account, path: str) -> dict[str, Any]:
    with relay_client(server, account) as client:
        response = client.get(path)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body


def usd(value: float) -> str:
    """The page's USD format (web/js/dom.js ``usd``)."""
    return "$0" if value == 0 else f"${value:.2f}" if value >= 1 else f"${value:.4f}"


def send_subagent(mac: ScriptedMac, sid: str, cwd: str = "/Users/ada/src/m") -> int:
    """The main transcript and the subagent's, as the agent sends them: two conversations."""
    mac.send_records(sid, MAIN.stem.split("__", 1)[1], list(read_lines(MAIN.read_bytes())), cwd)
    return mac.send_records(sid, f"agent-{AGENT}", list(read_lines(SUB.read_bytes())), cwd)


def more_subagent_lines(
    mac: ScriptedMac, sid: str, count: int, cwd: str = "/Users/ada/src/m"
) -> int:
    """More of the same subagent's transcript (sidechain lines after the captured file's bytes)."""
    offset = SUB.stat().st_size
    lines = []
    for i in range(count):
        body = user_line(f"subagent step {i}", str(uuid.uuid4()))
        body.update(isSidechain=True, agentId=AGENT)
        text = json.dumps(body)
        lines.append(LineRecord(offset=offset, text=text, uuid=body["uuid"]))
        offset += len(text.encode()) + 1
    return mac.send_records(sid, f"agent-{AGENT}", lines, cwd)


# -- search and lists ---------------------------------------------------------------------------


def test_search_by_title_and_by_touched_file_here_and_elsewhere(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    shop, api_sid, docs = new_sid(), new_sid(), new_sid()
    scripted.send_transcript(shop, "d_bash", cwd="/Users/ada/src/shop")
    scripted.send_json_lines(
        api_sid,
        [
            user_line("make the checkout faster", str(uuid.uuid4())),
            tool_use_line(
                "toolu_w1",
                "Write",
                {"file_path": "/Users/ada/src/api/billing/checkout_flow.py", "content": "x = 1\n"},
                str(uuid.uuid4()),
            ),
        ],
        cwd="/Users/ada/src/api",
    )
    scripted.send_transcript(docs, "b_idle", cwd="/Users/ada/src/docs")
    scripted.update(shop, state="idle")
    with relay_client(relay, account) as c:
        c.patch(f"/api/sessions/{docs}", json={"title": "Docs <b>rewrite</b>", "group": "Writing"})
    listed = {s["id"]: s for s in api(relay, account, "/api/sessions")["sessions"]}

    page = phone.login(account).open("/")
    mac = page.locator(f"section.mac[data-device='{account.device_id}']")
    expect(mac.locator(".session-row")).to_have_count(3)
    # the lists show each session's summary
    expect(mac.locator(f".session-row[data-id='{shop}'] .row-sum")).to_have_text(
        listed[shop]["summary"]
    )

    box = page.get_by_label("Search sessions")
    box.fill("RUN_BASH")
    found = page.locator(".found[data-part='all'] .session-row")
    expect(found.first).to_have_attribute("data-id", shop)
    expect(page.locator("section.mac")).to_be_hidden()  # the results stand in for the lists
    hit = found.first
    expect(hit.locator(".row-title")).to_have_text("RUN_BASH one")
    expect(hit.locator(".row-sum")).to_have_text(listed[shop]["summary"])
    meta = hit.locator(".row-meta").last
    expect(meta).to_contain_text("Studio · ~/src/shop · ")
    expect(meta).to_contain_text(usd(listed[shop]["cost"]["usd"]))
    expect(hit.locator(".badge").first).to_have_text("Idle")
    assert found.evaluate_all("els => els.map(e => e.dataset.id)").count(api_sid) == 0

    # a file touched by a tool is found too, and shown
    box.fill("checkout_flow")
    expect(found).to_have_count(1)
    expect(found.first).to_have_attribute("data-id", api_sid)
    expect(found.first.locator(".files")).to_have_text("checkout_flow.py")

    # a folder filter with no words browses, this folder apart from other places
    box.fill("")
    page.get_by_text("Filters").click()
    page.get_by_label("This folder").fill("/Users/ada/src/shop")
    here = page.locator(".found[data-part='here'] .session-row")
    elsewhere = page.locator(".found[data-part='elsewhere'] .session-row")
    expect(page.locator(".found[data-part='here'] h2")).to_have_text("This Mac / this folder")
    expect(page.locator(".found[data-part='elsewhere'] h2")).to_have_text("Other places")
    expect(here).to_have_count(1)
    expect(here.first).to_have_attribute("data-id", shop)
    expect(elsewhere).to_have_count(2)
    assert set(elsewhere.evaluate_all("els => els.map(e => e.dataset.id)")) == {api_sid, docs}
    phone.shot("20-search-here-elsewhere", full=True)

    # filters: state, then group; transcript text is text, never markup
    page.get_by_label("This folder").fill("")
    page.get_by_label("State").select_option("idle")
    expect(found).to_have_count(1)
    expect(found.first).to_have_attribute("data-id", shop)
    page.get_by_label("State").select_option("")
    page.get_by_label("Group").select_option("Writing")
    expect(found).to_have_count(1)
    expect(found.first.locator(".row-title")).to_have_text("Docs <b>rewrite</b>")
    assert found.first.locator(".row-title b").count() == 0

    page.get_by_role("button", name="Clear search").click()
    expect(page.locator(".found")).to_have_count(0)
    expect(mac.locator(".session-row")).to_have_count(3)


def test_the_lists_follow_new_summaries_and_pins_from_the_account_stream(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("count the herons", str(uuid.uuid4()))])
    scripted.update(sid, state="busy")
    page = phone.login(account).open("/")
    row = page.locator(f".session-row[data-id='{sid}']")
    expect(row).to_have_count(1)
    expect(row.locator(".badge").first).to_have_text("Working")
    lists: list[str] = []
    page.on("request", lambda r: lists.append(r.url) if r.url.endswith("/api/sessions") else None)
    # the turn ends: its summary snapshot reaches the list by the stream alone
    scripted.send_json_lines(
        sid,
        [
            assistant_line("Seven herons.", str(uuid.uuid4())),
            {"type": "system", "subtype": "turn_duration", "durationMs": 900,
             "uuid": str(uuid.uuid4())},
        ],
    )  # fmt: skip
    scripted.update(sid, state="idle")
    expect(row.locator(".row-sum")).to_have_text("Count the herons → Seven herons.")
    expect(row.locator(".badge").first).to_have_text("Idle")
    # pinned elsewhere (another phone, the CLI): this phone's list shows it too
    with relay_client(relay, account) as c:
        assert c.post(f"/api/sessions/{sid}/pin").status_code == 200
    expect(row.get_by_role("img", name="Pinned")).to_have_count(1)
    assert lists == [], lists  # no list was read again for it


def test_cost_in_the_list_and_in_detail(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    exact, estimated = new_sid(), new_sid()
    scripted.send_transcript(exact, "ij_clear_compact__5d", cwd="/Users/ada/src/ij")
    send_subagent(scripted, estimated)
    cost = api(relay, account, f"/api/sessions/{exact}/cost")
    assert cost["source"] == "cost-state"
    other = api(relay, account, f"/api/sessions/{estimated}/cost")
    assert other["source"] == "estimate" and other["by_agent"]
    listed = {s["id"]: s for s in api(relay, account, "/api/sessions")["sessions"]}

    page = phone.login(account).open("/")
    row_cost = page.locator(f".mac .session-row[data-id='{exact}'] .cost")
    expect(row_cost).to_have_text(re.compile("^" + re.escape(usd(cost["usd"])) + " · 32K tok$"))
    expect(row_cost).to_have_attribute("title", "Claude Code's own cost record")
    estimate = page.locator(f".mac .session-row[data-id='{estimated}'] .cost")
    expect(estimate).to_contain_text("≈" + usd(listed[estimated]["cost"]["usd"]))

    page.goto(f"/#/s/{exact}")
    head = page.locator(".session-head .cost")
    expect(head).to_have_text(re.compile("^" + re.escape(usd(cost["usd"]))))
    head.click()
    dialog = page.locator("dialog")
    expect(dialog.locator(".cost-total")).to_contain_text(usd(cost["usd"]))
    expect(dialog.locator(".cost-total")).to_contain_text("Claude Code's own cost record")
    rows = dialog.locator("table").first.locator("tr")
    figures = dict(
        zip(
            rows.locator("th").all_inner_texts(),
            rows.locator("td").all_inner_texts(),
            strict=True,
        )
    )
    total = sum(
        cost[k]
        for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    )
    assert figures == {
        "Input": f"{cost['input_tokens']:,}",
        "Output": f"{cost['output_tokens']:,}",
        "Cache read": f"{cost['cache_read_tokens']:,}",
        "Cache write": f"{cost['cache_write_tokens']:,}",
        "Total tokens": f"{total:,}",
    }
    (model,) = cost["by_model"]
    expect(dialog.locator("table").nth(1)).to_contain_text(model)
    phone.shot("21-cost-detail")
    dialog.get_by_role("button", name="Close").click()

    # the estimated one, with its subagent's part
    page.goto(f"/#/s/{estimated}")
    actions(page, "Cost and usage")
    expect(dialog.locator(".cost-total")).to_contain_text("Estimated from prices")
    share = other["by_agent"][AGENT]
    by_agent = dialog.locator("table").nth(2)
    expect(by_agent).to_contain_text("general-purpose · Inspect folder")
    expect(by_agent).to_contain_text(usd(share["usd"]))


def test_pin_unpin_and_the_automatic_title(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="idle")
    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator("#title")).to_have_text("RUN_BASH one")
    actions(page, "Pin (keep)")
    expect(page.locator("#toast")).to_have_text("Pinned: it is kept.")
    expect(page.locator(".session-head .pin")).to_be_visible()
    assert api(relay, account, f"/api/sessions/{sid}/retention")["pinned"] is True
    page.goto("/")
    expect(page.locator(f".mac .session-row[data-id='{sid}'] .pin")).to_be_visible()
    page.goto(f"/#/s/{sid}")
    actions(page, "Unpin")
    expect(page.locator(".session-head .pin")).to_be_hidden()
    wait_for(
        lambda: api(relay, account, f"/api/sessions/{sid}/retention")["pinned"] is False,
        what="unpinned",
    )

    # a person's title, then back to the automatic one (DELETE /title)
    actions(page, "Rename")
    page.get_by_label("New title").fill("My own name")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#title")).to_have_text("My own name")
    actions(page, "Use the automatic title")
    expect(page.locator("#title")).to_have_text("RUN_BASH one")
    assert api(relay, account, f"/api/sessions/{sid}")["title"] == "RUN_BASH one"


# -- permissions ---------------------------------------------------------------------------------


def test_policy_editor_sends_only_its_changes_and_says_when_the_mac_is_offline(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="idle")
    page = phone.login(account).open(f"/#/s/{sid}")
    actions(page, "Permissions")
    dialog = page.locator("dialog")
    expect(dialog).to_contain_text("Not reported by the Mac yet")
    expect(dialog).to_contain_text("A tool's rule beats its category's")
    # No stray value in the text: "allow all" is off, so its end is simply not shown.
    assert "false" not in dialog.inner_text()
    dialog.get_by_label("Allow all tools (no dialogs)").check()
    dialog.get_by_label("Execute").select_option("deny")
    dialog.get_by_label("Read", exact=True).select_option("allow")
    dialog.get_by_label("Tool name", exact=True).fill("Bash")
    dialog.get_by_role("button", name="Add").click()
    dialog.locator(".pol-row[data-tool='Bash'] select").select_option("allow")
    dialog.get_by_label("Tool name", exact=True).fill("WebFetch")
    dialog.get_by_role("button", name="Add").click()
    dialog.get_by_role("button", name="Remove WebFetch").click()
    phone.shot("22-policy-editor", full=True)
    dialog.get_by_role("button", name="Save").click()
    (command,) = commands(scripted, "change_policy")
    assert command.session_id == sid
    assert command.args == {  # only what was changed (WebFetch was added and removed)
        "changes": {
            "allow_all": True,
            "allow_all_for": 3600.0,  # no duration chosen: the relay's default
            "categories": {"read": "allow", "execute": "deny"},
            "tools": {"Bash": "allow"},
        }
    }
    expect(page.locator("#toast")).to_have_text("Saved on the Mac.")
    expect(page.locator("dialog")).to_have_count(0)
    held = {
        "allow_all": True,
        "categories": {"read": "allow", "execute": "deny"},
        "tools": {"Bash": "allow"},
    }
    shown = api(relay, account, f"/api/sessions/{sid}/policy")["policy"]
    assert shown.pop("allow_all_until") > time.time() and shown == held

    # opened again: the relay's copy of what the Mac holds
    actions(page, "Permissions")
    expect(dialog.get_by_label("Execute")).to_have_value("deny")
    expect(dialog.get_by_label("Allow all tools (no dialogs)")).to_be_checked()
    expect(dialog.locator(".pol-row[data-tool='Bash'] select")).to_have_value("allow")
    dialog.get_by_role("button", name="Cancel").click()

    # A rule the Mac gained while the editor was open (a card's "always") is kept; a rule
    # removed here is dropped, one left alone is not sent.
    actions(page, "Permissions")
    scripted.policies[sid] = scripted.policies[sid].always_allow("WebFetch")
    dialog.get_by_role("button", name="Remove Bash").click()
    dialog.get_by_label("Edit", exact=True).select_option("ask")
    dialog.get_by_role("button", name="Save").click()
    expect(page.locator("dialog")).to_have_count(0)  # closed once the Mac answered
    # ("allow all", on and left alone, is not sent: it keeps the end it has)
    assert commands(scripted, "change_policy", 2)[-1].args == {
        "changes": {"categories": {"edit": "ask"}, "tools": {"Bash": None}}
    }
    shown = api(relay, account, f"/api/sessions/{sid}/policy")["policy"]
    assert shown.pop("allow_all_until") > time.time() and shown == {
        "allow_all": True,
        "categories": {"read": "allow", "edit": "ask", "execute": "deny", "web": "allow"},
        "tools": {},
    }

    # the Mac goes offline: the page says so, before and after trying
    scripted.abort()
    expect(page.locator("#band")).to_have_attribute("data-kind", "mac-offline")
    actions(page, "Permissions")
    expect(dialog.locator(".note").first).to_have_text(
        "The Mac is offline: permissions change only when it is back."
    )
    dialog.get_by_label("Web", exact=True).select_option("deny")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.locator(".pol-status")).to_have_text(
        "The Mac is offline: permissions change only when it is back."
    )
    assert len([c for c in scripted.commands if c.name == "change_policy"]) == 2


def test_permission_card_always_allow_this_kind(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="waiting", card=permission_card("card-al"))
    page = phone.login(account).open(f"/#/s/{sid}")
    card = page.locator(".card[data-card-id='card-al']")
    card.get_by_label("Always allow this kind of tool in this session").check()
    card.locator(".option[data-key='1']").click()
    (answer,) = commands(scripted, "answer_card")
    assert answer.args == {"key": "1", "always": True, "card_id": "card-al"}


# -- subagents -------------------------------------------------------------------------------------


def test_one_line_per_subagent_and_its_paged_history(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    sid = new_sid()
    last = send_subagent(scripted, sid)
    (agent,) = api(relay, account, f"/api/sessions/{sid}/subagents")["subagents"]
    assert agent["agent_id"] == AGENT

    page = phone.login(account).open(f"/#/s/{sid}")
    expect(page.locator(f".convo [data-seq='{last}']")).to_be_attached()
    line = page.locator(".convo .subline")
    expect(line).to_have_count(1)
    expect(line).to_have_attribute("data-agent", AGENT)
    expect(line.locator(".sub-what")).to_have_text("general-purpose · Inspect folder")
    expect(line.locator(".sub-status")).to_have_text("finished")
    expect(line.locator(".sub-out")).to_have_text(agent["outcome"])
    expect(line.locator(".sub-cost")).to_have_text(usd(agent["cost"]["usd"]))
    # the subagent's own events are not drawn in the session; the session's are
    for seq in range(agent["first_seq"], agent["last_seq"] + 1):
        expect(page.locator(f".convo [data-seq='{seq}']")).to_be_hidden()
    expect(page.locator(".convo")).to_contain_text("SUBAGENT please")
    expect(page.locator(".convo")).not_to_contain_text("SUBTASK_PROMPT")
    phone.shot("23-subagent-line")

    line.click()
    expect(page).to_have_url(re.compile(f"#/s/{sid}/agent/{AGENT}$"))
    history = page.locator(".subagent .convo")
    expect(history).to_contain_text("SUBTASK_PROMPT: please list the folder with LS_SUB")
    expect(history.locator(".tool-name")).to_have_text("Bash")
    expect(history).to_contain_text("Subagent report: the folder was listed.")
    expect(page.locator(".subagent .note")).to_have_text("Start of the conversation")
    expect(page.locator(".sub-head")).to_contain_text("general-purpose · Inspect folder")
    phone.shot("24-subagent-history")
    page.locator("#back").click()
    expect(page).to_have_url(re.compile(f"#/s/{sid}$"))
    expect(page.locator(".convo .subline")).to_have_count(1)

    # a longer subagent: its history comes a page at a time, newest first, then earlier
    newest = more_subagent_lines(scripted, sid, 150)
    expect(page.locator(f".convo [data-seq='{newest}']")).to_be_attached()
    expect(line.locator(".sub-out")).to_have_text(agent["outcome"])  # the last assistant text
    pages: list[str] = []
    page.on(
        "request",
        lambda r: pages.append(r.url) if f"/subagents/{AGENT}/events" in r.url else None,
    )
    line.click()
    drawn = page.locator(".subagent .convo [data-seq]")
    expect(page.locator(f".subagent .convo [data-seq='{newest}']")).to_be_attached()
    expect(drawn).to_have_count(100)
    expect(page.locator(".subagent .earlier")).to_be_visible()
    page.locator(".subagent .earlier").click()
    expect(drawn).to_have_count(154)
    expect(page.locator(".subagent .earlier")).to_be_hidden()
    seqs = [int(s) for s in drawn.evaluate_all("els => els.map(e => e.dataset.seq)")]
    assert seqs == sorted(seqs) and seqs[0] == agent["first_seq"] and seqs[-1] == newest
    assert len(pages) == 2 and all("before=" in u for u in pages), pages


# -- read-only and archived ------------------------------------------------------------------------


def test_read_only_view_marks_every_request_and_cannot_send(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "g_plan")
    scripted.update(sid, state="waiting", card=permission_card("card-ro2"))
    seen: list[Request] = []
    page = phone.login(account).page
    page.on("request", lambda r: seen.append(r) if "/api/" in r.url else None)
    page.goto(f"/#/s/{sid}/read")
    expect(page.locator(".read-only-note")).to_be_visible()
    expect(page.locator(".composer")).to_have_count(0)
    expect(page.locator(".card .option")).to_have_count(0)
    expect(page.locator("#live")).to_have_text("Live")
    # live over the marked stream too
    more = scripted.send_json_lines(sid, [user_line("while reading", str(uuid.uuid4()))])
    expect(page.locator(f".convo [data-seq='{more}']")).to_contain_text("while reading")
    actions(page, "Cost and usage")
    expect(page.locator("dialog .cost-total")).to_be_visible()
    page.locator("dialog").get_by_role("button", name="Close").click()
    actions(page, "Permissions")
    expect(page.locator("dialog")).to_contain_text("Open the session normally to change them.")
    expect(page.locator("dialog").get_by_role("button", name="Save")).to_be_hidden()
    page.locator("dialog").get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Session actions").click()
    sheet = page.locator("dialog .sheet-item").all_inner_texts()
    assert sheet == ["Decisions", "Cost and usage", "Permissions", "Audit log", "Open normally"], (
        sheet
    )
    page.locator("dialog .sheet-cancel").click()
    phone.shot("25-read-only")

    paths = {r.url.split("?")[0].split("/api/", 1)[1] for r in seen}
    # (no /api/me: the page came with the account's snapshot, so the login is known)
    assert {"stream", f"sessions/{sid}", f"sessions/{sid}/stream"} <= paths, paths
    assert {f"sessions/{sid}/cost", f"sessions/{sid}/policy"} <= paths, paths
    unmarked = [r.url for r in seen if r.headers.get("x-cb-read-only") != "1"]
    assert not unmarked, unmarked
    assert not [r for r in seen if r.method != "GET"]
    assert not [c for c in scripted.commands if c.name in ("send", "answer_card")]

    # leaving the read-only view: requests are no longer marked, and the composer is back
    count = len(seen)
    with page.expect_request(lambda r: f"/api/sessions/{sid}" in r.url) as reopened:
        page.get_by_role("link", name="Open normally").click()
    expect(page.locator(".composer")).to_be_visible()
    assert reopened.value.headers.get("x-cb-read-only") is None
    later = seen[count:]
    assert later and all(r.headers.get("x-cb-read-only") is None for r in later)


def test_archived_session_opens_read_only_and_the_retention_report(
    browser: Browser, make_relay: Callable[..., RelayServer], loop: LoopThread
) -> None:
    server = make_relay()
    acct = server.account()
    mac = ScriptedMac(server, acct.device_token, loop).connect()
    old, other, fresh = new_sid(), new_sid(), new_sid()
    mac.send_transcript(old, "d_bash", cwd="/Users/ada/src/old")
    mac.send_transcript(other, "k_resume", cwd="/Users/ada/src/other")
    mac.send_transcript(fresh, "b_idle", cwd="/Users/ada/src/fresh")
    retention = server.app.state.retention
    p = Phone(browser, server).login(acct)
    try:
        page = p.open(f"/#/s/{other}")
        expect(page.locator(".composer")).to_be_visible()
        # 31 days on, the relay archives the idle sessions it holds (all three)
        later = time.time() + 31 * DAY
        retention.clock = lambda: later
        with httpx.Client(base_url=server.url, timeout=15) as client:
            client.headers["Authorization"] = f"Bearer {acct.phone_token}"
            report = client.post("/api/retention/run").json()["report"]
        assert sorted(a["session_id"] for a in report["archived"]) == sorted([old, other, fresh])
        # the open one learns it at once (session_stage on the account stream)
        note = page.locator(".archived-note")
        expect(note).to_contain_text("It is archived, so it is read-only.")
        expect(page.locator(".composer")).to_have_count(0)

        page.goto(f"/#/s/{old}")
        expect(note).to_be_visible()
        expect(note).to_contain_text("Pin it to keep it and make it active again.")
        expect(page.locator(".composer")).to_have_count(0)
        note.scroll_into_view_if_needed()
        p.shot("26-archived-session")
        note.get_by_role("button", name="Pin (keep)").click()
        expect(page.locator(".composer")).to_be_visible()
        expect(note).to_have_count(0)
        page.get_by_label("Message Claude…").fill("back to work")
        page.locator("button.send").click()
        assert commands(mac, "send")[0].session_id == old

        # the lists mark what is archived and what is pinned; search filters by stage
        page.goto("/")
        row = page.locator(f".mac .session-row[data-id='{fresh}']")
        expect(row.locator(".archived")).to_have_text("Archived")
        expect(page.locator(f".mac .session-row[data-id='{old}'] .pin")).to_be_visible()
        page.get_by_text("Filters").click()
        page.get_by_label("Stage").select_option("archived")
        found = page.locator(".found .session-row")
        expect(found).to_have_count(2)
        assert set(found.evaluate_all("els => els.map(e => e.dataset.id)")) == {other, fresh}

        # settings: the last run, and run now
        page.goto("/#/settings")
        section = page.locator("#retention")
        expect(section).to_contain_text("Archived after 30 days idle, deleted 180 days later")
        expect(section.locator(".ret-last")).to_contain_text(
            "on request: archived 3, made active 0, deleted 0"
        )
        expect(section.locator("li")).to_have_count(3)
        expect(section).to_contain_text("RUN_BASH one")
        runs: list[str] = []
        page.on(
            "request", lambda r: runs.append(r.method) if "/api/retention/run" in r.url else None
        )
        page.get_by_role("button", name="Run now").click()
        expect(section.locator(".ret-last")).to_contain_text(
            "on request: archived 0, made active 0, deleted 0"
        )
        assert runs == ["POST"]
        expect(section).to_contain_text("1 active · 2 archived · 1 pinned")
        p.shot("27-retention", full=True)
    finally:
        mac.close()
        p.close()


def test_korean_labels_for_the_new_features(
    browser: Browser, relay: RelayServer, account: Account, scripted: ScriptedMac
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "ij_clear_compact__5d")
    p = Phone(browser, relay, locale="ko-KR").login(account)
    try:
        page = p.open("/")
        expect(page.get_by_label("세션 찾기")).to_be_visible()
        page.goto(f"/#/s/{sid}")
        page.get_by_role("button", name="세션 조작").click()
        page.locator("dialog .sheet-item", has_text="사용량과 비용").click()
        expect(page.locator("dialog .cost-total")).to_contain_text("Claude Code의 비용 기록")
        expect(page.locator("dialog table").first).to_contain_text("캐시 읽기")
    finally:
        p.close()
