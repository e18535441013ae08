"""The reopen card, the session's resume scope and the account's default (web/js/reopen.js) in
Chromium at 390×844, against a real relay and a scripted Mac: Reopen on an ended session shows
the three scopes with their estimated tokens, and the one picked is what reaches the Mac."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.support.relay import Account, RelayServer
from tests.support.web import Phone, ScriptedMac, actions, new_sid, wait_for
from wire.protocol import Card, CardOption


def test_the_reopen_card_shows_each_scope_and_reopens_with_the_one_picked(
    phone: Phone, scripted: ScriptedMac, relay: RelayServer, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "g_plan")  # a plan approved: one decision
    scripted.update(sid, state="ended")
    page = phone.login(account).page
    page.goto(f"/#/s/{sid}")
    expect(page.locator(".session-meta")).to_contain_text("shop")

    actions(page, "Reopen")
    card = page.locator("dialog .ro-form")
    expect(card).to_be_visible()
    for scope, name in (("full", "Full conversation"), ("summary", "From a summary")):
        row = card.locator(f".ro-scope[data-scope={scope}]")
        expect(row).to_contain_text(name)
        expect(row.locator(".ro-tokens")).to_have_text(re.compile(r"tokens"))
    fresh = card.locator(".ro-scope[data-scope=fresh]")
    expect(fresh).to_contain_text("decisions (1) and constraints (0) verbatim")
    expect(card.get_by_role("radio", name=re.compile("Full conversation"))).to_be_checked()
    phone.shot("ro-reopen-card-390x844")
    card.get_by_role("radio", name=re.compile("Fresh, from the decisions")).check()
    card.get_by_role("checkbox", name="Use this for this session from now on").check()
    card.get_by_role("button", name="Reopen").click()
    expect(page.locator("dialog .ro-form")).to_have_count(0)

    reopen = wait_for(lambda: [c for c in scripted.commands if c.name == "reopen"], what="reopen")
    assert reopen[-1].args["scope"] == "fresh" and "## Decisions" in reopen[-1].args["handoff"]
    told = [c for c in scripted.commands if c.name == "set_resume"]
    assert told and told[-1].args["scope"] == "fresh"

    # The session menu shows and changes the session's own scope.
    actions(page, "Resume scope…")
    menu = page.locator("dialog .ro-form")
    expect(menu.get_by_role("radio", name=re.compile("^Fresh"))).to_be_checked()
    menu.get_by_role("radio", name=re.compile("^Your default")).check()
    phone.shot("ro-session-scope-390x844")
    menu.get_by_role("button", name="Save").click()
    wait_for(
        lambda: (
            [c for c in scripted.commands if c.name == "set_resume"][-1].args.get("scope") is None
        ),
        what="the scope cleared",
    )

    # Settings: the account's default.
    page.goto("/#/settings")
    pick = page.locator("#set-resume-scope")
    expect(pick).to_be_enabled()
    expect(pick).to_have_value("full")
    pick.select_option("summary")
    expect(page.locator(".toast").last).to_contain_text("Resume scope: From a summary")
    pick.scroll_into_view_if_needed()
    phone.shot("ro-settings-390x844")


def test_claude_codes_own_resume_chooser_is_a_card_for_the_person(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_transcript(sid, "b_idle")
    options = [
        CardOption(key="1", label="Resume from summary (instant, recommended)"),
        CardOption(key="2", label="Resume full session as-is"),
        CardOption(key="3", label="Don't ask again"),
    ]
    card = Card(
        id="card-r",
        kind="resume",
        title="This session is 3d old and 121.5k tokens.",
        text="Resuming the full session uses a lot of your usage limits. Resuming from a summary "
        "uses less.",
        options=options,
    )
    scripted.update(sid, state="waiting", card=card)
    page = phone.login(account).open(f"/#/s/{sid}")
    el = page.locator(".card[data-card-id='card-r']")
    expect(el).to_contain_text("How to resume")
    expect(el).to_contain_text("This session is 3d old and 121.5k tokens.")
    expect(el.locator(".option[data-key='2']")).to_contain_text("Resume full session as-is")
    phone.shot("ro-resume-chooser-card-390x844")
    el.locator(".option[data-key='2']").click()
    answered = wait_for(
        lambda: [c for c in scripted.commands if c.name == "answer_card"], what="the answer"
    )
    assert answered[-1].args["key"] == "2"
