"""The page's rarely opened features as lazy chunks (relay/bundle.py, relay/static.py), in
Chromium at 390×844 against a real relay: the first load fetches no chunk; opening each feature
fetches its chunk once — a hashed name, the relay's version, cached ``immutable``, allowed by the
CSP (the phone fixture fails on any CSP report or page error) — and draws the feature.
Screenshots in test-artifacts/screens/lazy-*.png."""

from __future__ import annotations

import re

from playwright.sync_api import Response, expect

from tests.support.relay import Account
from tests.support.web import (
    Phone,
    ScriptedMac,
    actions,
    assistant_line,
    new_sid,
    user_line,
)

SHOP = "/Users/ada/src/shop"
CHUNK_ADDRESS = re.compile(r"/chunks/[a-z]+-[0-9a-f]{10}\.js\?v=[0-9a-f]{12}$")


def test_each_lazily_loaded_feature_opens_from_its_chunk(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(
        sid,
        [user_line("tune the invoice export", "u-1"), assistant_line("Tuned.", "a-1")],
        cwd=SHOP,
    )
    scripted.update(sid, state="ended")
    page = phone.login(account).page
    fetched: list[Response] = []
    page.on("response", lambda r: fetched.append(r) if "/chunks/" in r.url else None)

    def chunks() -> list[str]:
        return [r.url.rsplit("/", 1)[1].split("-")[0] for r in fetched]

    page.goto("/")
    expect(page.locator(f".session-row[data-id='{sid}']")).to_be_visible()
    assert chunks() == []  # the first load needs none of them
    phone.shot("lazy-overview-390x844")

    opened: list[tuple[str, set[str]]] = []

    def opens(name: str, wanted: set[str]) -> None:
        phone.shot(f"lazy-{name}-390x844")
        opened.append((name, wanted))
        assert wanted <= set(chunks()), (name, chunks())

    page.goto("/#/settings")
    expect(page.locator("#set-report")).to_be_visible()
    opens("settings", {"forms", "memory", "report", "reopen", "extras", "desk"})
    page.locator("#set-report").click()
    expect(page.locator(".page.report .tile").first).to_be_visible()
    opens("report", {"report"})
    page.goto("/#/settings")
    page.locator("#set-memory").click()
    expect(page.locator(".page.memory")).to_be_visible()
    opens("memory", {"memory"})
    page.goto("/#/settings")
    page.get_by_role("link", name="Conversations on this Mac").click()
    expect(page.locator(".page.desk")).to_be_visible()
    opens("desk", {"desk"})
    page.goto("/#/new")
    expect(page.locator("#ns-model-pick")).to_be_attached()
    opens("new-session", {"forms"})

    page.goto(f"/#/s/{sid}")
    expect(page.locator(".convo")).to_contain_text("Tuned.")
    actions(page, "Reopen")
    expect(page.locator("dialog .ro-form")).to_be_visible()
    opens("reopen", {"reopen"})
    page.keyboard.press("Escape")
    expect(page.locator("dialog[open]")).to_have_count(0)
    for label, selector, name in (
        ("Audit log", "dialog .sheet-title", "audit"),
        ("Cost and usage", "dialog .sheet-title", "extras"),
        ("Permissions", "dialog .sheet-title", "extras"),
    ):
        actions(page, label)
        expect(page.locator(selector)).to_have_text(label)
        opens(label.split()[0].lower(), {name})
        page.keyboard.press("Escape")
        expect(page.locator("dialog[open]")).to_have_count(0)
    scripted.answers["git_status"] = {"branch": "main", "entries": [], "total": 0}
    actions(page, "Changes")
    expect(page.locator(".fv")).to_contain_text("Branch main · 0 changed")
    opens("changes", {"files"})

    # Each chunk once (a module is evaluated once), from a versioned, hashed address, kept a year.
    names = chunks()
    assert len(names) == len(set(names)) and len(names) >= 7, names
    for response in fetched:
        assert response.status == 200, response.url
        assert CHUNK_ADDRESS.search(response.url), response.url
        headers = response.all_headers()
        assert headers["cache-control"] == "public, max-age=31536000, immutable"
        assert headers["content-type"].startswith("text/javascript")
    assert len(opened) == 10
