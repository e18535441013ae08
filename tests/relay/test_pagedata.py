"""The account in the page (relay/pagedata.py, relay/static.py, web/app.js): a logged-in phone's
index.html carries its account's snapshot, so a cold open draws the session rows with no API
answer before them.

Only the login cookie of a valid phone login gets it; the page with it is never stored; nothing a
session's title or a Mac's name holds can close the data block or run.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from playwright.sync_api import Route, expect

from relay.static import PAGE_DATA_ID, PERSONAL, REVALIDATE, with_page_data
from tests.support.relay import Account, RelayServer
from tests.support.web import Phone, ScriptedMac, new_sid, user_line

DATA_BLOCK = re.compile(
    rf'<script type="application/json" id="{PAGE_DATA_ID}">(.*?)</script>', re.S
)


def page_data(response: httpx.Response) -> Any:
    found = DATA_BLOCK.findall(response.text)
    assert len(found) <= 1, found
    return json.loads(found[0]) if found else None


def cookie_client(relay: RelayServer, token: str) -> httpx.Client:
    return httpx.Client(base_url=relay.url, cookies={"cb_login": token}, timeout=15)


def test_a_logged_in_phone_gets_its_account_in_the_page(
    relay: RelayServer, account: Account, scripted: ScriptedMac
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("make the login page faster", str(uuid.uuid4()))])
    scripted.update(sid, state="idle")
    with cookie_client(relay, account.phone_token) as c:
        for path in ("/", "/index.html"):
            page = c.get(path, headers={"Accept-Encoding": "gzip"})
            assert page.status_code == 200 and page.headers["content-encoding"] == "gzip"
            assert page.headers["cache-control"] == PERSONAL  # made for one login: never kept
            assert "etag" not in page.headers and "cookie" in page.headers["vary"].lower()
            data = page_data(page)
            assert [s["id"] for s in data["sessions"]] == [sid]
            assert data["sessions"][0]["state"] == "idle"
            assert [d["id"] for d in data["devices"]] == [account.device_id]
            # the same list the account stream starts with (summary, stage and pin included)
            listed = c.get("/api/sessions").json()["sessions"]
            assert {k: v for k, v in listed[0].items() if k in data["sessions"][0]} == {
                k: v for k, v in data["sessions"][0].items() if k in listed[0]
            }
        assert "summary" in data["sessions"][0] and "pinned" in data["sessions"][0]


def test_the_page_goes_as_it_is_without_a_valid_phone_cookie(
    relay: RelayServer, account: Account
) -> None:
    anonymous = httpx.get(relay.url + "/")
    assert page_data(anonymous) is None and anonymous.headers["cache-control"] == REVALIDATE
    # A bearer token is not how a page is opened (a navigation carries only the cookie).
    bearer = httpx.get(relay.url + "/", headers={"Authorization": f"Bearer {account.phone_token}"})
    assert page_data(bearer) is None
    # A Mac's token as a cookie, a made-up one, a revoked one: the page as it is.
    for token in (account.device_token, "not-a-token"):
        with cookie_client(relay, token) as c:
            assert page_data(c.get("/")) is None
    revoked = relay.account()
    revoked_bearer = {"Authorization": f"Bearer {revoked.phone_token}"}
    assert httpx.post(relay.url + "/api/logout", headers=revoked_bearer).status_code == 200
    with cookie_client(relay, revoked.phone_token) as c:
        page = c.get("/")
        assert page.status_code == 200 and page_data(page) is None
    # Other files are never personal.
    with cookie_client(relay, account.phone_token) as c:
        assert c.get("/pair.html").headers["cache-control"] == REVALIDATE
        assert PAGE_DATA_ID not in c.get("/pair.html").text


def test_a_snapshot_that_cannot_be_read_leaves_the_page_as_it_is(
    relay: RelayServer, account: Account, monkeypatch: Any
) -> None:
    def broken(*_: Any) -> Any:
        raise ZeroDivisionError("a bug while listing the sessions")

    monkeypatch.setattr(relay.state.store, "list_devices", broken)
    with cookie_client(relay, account.phone_token) as c:
        page = c.get("/")
    assert page.status_code == 200 and page_data(page) is None
    assert 'src="app.js?v=' in page.text


JSON_TEXT = st.text(st.characters(codec="utf-8"), max_size=40) | st.sampled_from(
    ["</script>", "</SCRIPT >", "<!--", "<script>alert(1)</script>", "]]>", "\u2028", "&lt;"]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_TEXT, inner, max_size=4),
    max_leaves=12,
)


@given(JSON_VALUES)
@settings(derandomize=True, database=None, max_examples=200)
def test_nothing_the_data_carries_can_close_its_block(data: Any) -> None:
    html = b"<!doctype html><html><head></head><body><main></main>\n</body></html>"
    page = with_page_data(html, data).decode("utf-8")
    (text,) = DATA_BLOCK.findall(page)
    assert json.loads(text) == data  # the page reads it back whole
    assert "<" not in text and ">" not in text and "&" not in text  # no markup inside
    assert page.endswith("</body></html>") and page.count("<script") == 1


def test_a_cold_open_draws_the_rows_with_no_api_answer_before_them(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    """Every request to the relay's API is held unanswered: the rows are there all the same,
    from the page itself (a new browser: no cache, no service worker)."""
    waiting, idle = new_sid(), new_sid()
    scripted.send_json_lines(waiting, [user_line("deploy the shop", str(uuid.uuid4()))])
    scripted.send_json_lines(idle, [user_line("write the release notes", str(uuid.uuid4()))])
    scripted.update(idle, state="idle")
    scripted.update(waiting, state="busy", activity="coding")
    held: list[Route] = []
    holding = True

    def hold(route: Route) -> None:
        if holding:
            held.append(route)
        else:
            route.continue_()

    page = phone.login(account).page
    page.route("**/api/**", hold)
    page.goto("/")
    expect(page.locator(f".session-row[data-id='{waiting}']")).to_contain_text("Deploy the shop")
    expect(page.locator(f".session-row[data-id='{idle}']")).to_contain_text(
        "Write the release notes"
    )
    expect(page.locator(f".session-row[data-id='{waiting}'] .badge").first).to_have_text("Coding")
    assert held, "the page asked the relay nothing at all"  # the stream, at least, was asked for
    holding = False
    for route in held:
        route.continue_()
    expect(page.locator("#live")).to_have_class("live on")  # and then live, as ever
    scripted.update(idle, state="busy", activity="writing")
    expect(page.locator(f".session-row[data-id='{idle}'] .badge").first).to_have_text("Working")


def test_the_service_worker_never_keeps_a_page_made_for_one_login(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    scripted.send_json_lines(sid, [user_line("a private title", str(uuid.uuid4()))])
    page = phone.login(account).open("/")
    expect(page.locator(f".session-row[data-id='{sid}']")).to_be_visible()
    page.wait_for_function("() => navigator.serviceWorker && navigator.serviceWorker.controller")
    page.reload()  # through the worker now: it fetches the page, and must not keep this one
    expect(page.locator(f".session-row[data-id='{sid}']")).to_be_visible()
    kept = page.evaluate(
        """async () => {
            const texts = [];
            for (const key of await caches.keys()) {
                const cache = await caches.open(key);
                for (const request of await cache.keys()) {
                    const body = await (await cache.match(request)).text();
                    if (request.url.endsWith("/") || body.includes("<html")) texts.push(body);
                }
            }
            return texts;
        }"""
    )
    assert kept, "the worker keeps the page's shell"
    assert all(PAGE_DATA_ID not in text and "a private title" not in text for text in kept)
