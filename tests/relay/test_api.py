"""The phone API against a real relay: logins, account isolation, paging, limits, commands, cards.

Every test talks HTTP (and the agent link) to a real uvicorn relay; Macs are scripted MacLinks
speaking the real link protocol. Async parts run under ``asyncio.run`` in the test thread.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator
from typing import Any, TypeVar

import httpx
import pytest
import websockets

from relay.app import WEB_DIR
from tests.support.api import BIG, SMALL, api_routes, error_of, new_id, push
from tests.support.relay import Account, RelayServer, archived, mac, phone_client
from tests.support.waits import await_until, wait_until
from wire.client import LinkRefused, link_url
from wire.protocol import Card, CardOption, Command, CommandResult, Hello, SessionInfo

T = TypeVar("T")

PUBLIC_ROUTES = {"/api/health", "/api/pair"}
LINK_PATH = "/api/agent/link"


# -- helpers ---------------------------------------------------------------------------------


def make_session(server: RelayServer, acct: Account, prefix: str = BIG) -> tuple[str, int]:
    """A session created by the account's Mac sending a transcript; the Mac then goes away."""
    session_id = new_id()

    async def go() -> int:
        async with mac(server, acct.device_token) as link:
            return await push(link, session_id, prefix)

    last = asyncio.run(go())
    assert last > 0
    wait_offline(server, acct)
    return session_id, last


def wait_offline(server: RelayServer, acct: Account) -> None:
    """Wait until the relay has let go of the account's Mac link."""
    wait_until(
        lambda: server.state.live.link(acct.device_id) is None, what=f"Mac {acct.device_id} offline"
    )


def events_page(client: httpx.Client, session_id: str, **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/sessions/{session_id}/events", params=params)
    assert response.status_code == 200, response.text
    page: dict[str, Any] = response.json()
    return page


def seqs(page: dict[str, Any]) -> list[int]:
    return [e["seq"] for e in page["events"]]


def request(client: httpx.Client, method: str, url: str, **kwargs: Any) -> httpx.Response:
    """A request whose body is read only if it is not an open stream (SSE on success)."""
    with client.stream(method, url, **kwargs) as response:
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            return response  # a stream was opened: the caller only looks at the status
        response.read()
        return response


async def link_refusal(server: RelayServer, headers: dict[str, str]) -> str:
    """How the relay refuses the agent link: an HTTP status before the upgrade, or close 4401."""
    try:
        async with websockets.connect(
            link_url(server.url), additional_headers=headers, open_timeout=5
        ) as ws:
            await ws.send(Hello().model_dump_json())
            first = await asyncio.wait_for(ws.recv(), 5)
    except websockets.exceptions.InvalidStatus as exc:
        return f"http {exc.response.status_code}"
    except websockets.exceptions.ConnectionClosed as exc:
        assert exc.rcvd is not None and exc.rcvd.code == 4401, exc
        return "close 4401"
    raise AssertionError(f"the link was accepted: {first!r}")


# -- 1. a login on every route ---------------------------------------------------------------


def test_every_api_route_refuses_missing_revoked_expired_and_device_tokens(
    relay: RelayServer, account: Account
) -> None:
    store = relay.state.store
    session_id, _ = make_session(relay, account, SMALL)
    revoked_token, _, revoked_phone = store.create_token(account.account_id, "phone", "lost phone")
    expired_token, _, _ = store.create_token(account.account_id, "phone", "x", ttl_days=1e-9)
    with phone_client(relay, account.phone_token) as owner:
        assert owner.delete(f"/api/phones/{revoked_phone}").json()["ok"] is True
    time.sleep(0.01)  # the expired token's lifetime (under a millisecond) is over

    routes = list(api_routes(relay.app.routes))
    paths = {path for path, _, _ in routes}
    assert LINK_PATH in paths and "/api/sessions/{session_id}/events" in paths
    http_routes = [(p, m) for p, methods, _ in routes for m in methods if m != "WEBSOCKET"]
    protected = [(p, m) for p, m in http_routes if p not in PUBLIC_ROUTES and m != "HEAD"]
    assert len(protected) >= 18, protected

    params = {
        "session_id": session_id,
        "phone_id": account.phone_id,
        "device_id": account.device_id,
        "card_id": "c1",
        "message_id": "m1",
        "agent_id": "a1",
        "grant_id": "g1",
        "seq": 1,
        "candidate_id": "m1",
        "conversation_id": "0b7f5a3e-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
        "constraint_id": "c1",
        "decision_id": "e1.0",
    }
    bodies: dict[tuple[str, str], Any] = {
        ("POST", "/api/sessions"): {"device_id": account.device_id, "cwd": "/tmp"},
        ("PATCH", "/api/sessions/{session_id}"): {"title": "x"},
        ("POST", "/api/sessions/{session_id}/messages"): {"text": "hi"},
        ("POST", "/api/sessions/{session_id}/cards/{card_id}"): {"key": "1"},
    }
    callers: list[tuple[str | None, int, str]] = [
        (None, 401, "unauthorized"),
        ("cbp_not-a-real-token", 401, "unauthorized"),
        (revoked_token, 401, "token_revoked"),
        (expired_token, 401, "token_expired"),
        (account.device_token, 403, "wrong_token_kind"),
    ]
    for token, status, code in callers:
        with phone_client(relay, token) as client:
            for path, method in protected:
                url = path.format(**params)
                kwargs = {"json": bodies[(method, path)]} if (method, path) in bodies else {}
                response = request(client, method, url, **kwargs)
                where = f"{method} {path} with {code}"
                assert response.status_code == status, (where, response.status_code, response.text)
                assert response.json()["error"]["code"] == code, where
                if status == 401:
                    assert response.headers["www-authenticate"] == "Bearer", where

    # Nothing was changed by the refused calls: the owner still sees the session, phone and Mac.
    with phone_client(relay, account.phone_token) as owner:
        assert [s["id"] for s in owner.get("/api/sessions").json()["sessions"]] == [session_id]
        assert owner.get(f"/api/sessions/{session_id}").json()["title"] != "x"
        assert owner.get("/api/me").json()["id"] == account.phone_id
        assert [d["id"] for d in owner.get("/api/devices").json()["devices"]] == [account.device_id]
        # The public routes stay public.
    with phone_client(relay, None) as anonymous:
        assert anonymous.get("/api/health").json() == {"status": "ok"}


def test_agent_link_refuses_phone_tokens_and_no_token(relay: RelayServer, account: Account) -> None:
    async def go() -> None:
        assert await link_refusal(relay, {}) in {"http 403", "close 4401"}
        assert await link_refusal(relay, {"Authorization": "Bearer "}) in {"http 403", "close 4401"}
        phone_header = {"Authorization": f"Bearer {account.phone_token}"}
        assert await link_refusal(relay, phone_header) in {"http 403", "close 4401"}
        with pytest.raises(LinkRefused):
            async with mac(relay, account.phone_token):
                pass
        # The same relay accepts the account's Mac: the refusals above were about the token.
        async with mac(relay, account.device_token) as link:
            assert link.welcome is not None and link.welcome.device_id == account.device_id

    asyncio.run(go())


# -- 2. accounts see only their own things ------------------------------------------------------


def test_account_cannot_see_or_touch_another_accounts_things(relay: RelayServer) -> None:
    a, b = relay.account(), relay.account()
    a_session, _ = make_session(relay, a, SMALL)
    b_session, b_last = make_session(relay, b, BIG)
    made_up = new_id()

    with (
        phone_client(relay, a.phone_token) as client_a,
        phone_client(relay, b.phone_token) as client_b,
    ):
        b_events_before = client_b.get(f"/api/sessions/{b_session}/events").json()
        listed = client_a.get("/api/sessions").json()
        assert [s["id"] for s in listed["sessions"]] == [a_session]

        probes: list[tuple[str, str, Any]] = [
            ("GET", "/api/sessions/{}", None),
            ("GET", "/api/sessions/{}/events", None),
            ("GET", "/api/sessions/{}/stream", None),
            ("PATCH", "/api/sessions/{}", {"title": "mine now"}),
            ("POST", "/api/sessions/{}/messages", {"text": "rm -rf /"}),
            ("POST", "/api/sessions/{}/cards/c1", {"key": "1"}),
            ("POST", "/api/sessions/{}/interrupt", None),
            ("POST", "/api/sessions/{}/end", None),
        ]
        for method, template, body in probes:
            kwargs = {} if body is None else {"json": body}
            theirs = request(client_a, method, template.format(b_session), **kwargs)
            unknown = request(client_a, method, template.format(made_up), **kwargs)
            error_of(theirs, 404, "unknown_session")
            error_of(unknown, 404, "unknown_session")
            # Word for word the answer for an id that does not exist: nothing to probe.
            assert theirs.json() == json.loads(unknown.text.replace(made_up, b_session)), method

        # Macs and phones of B are invisible and untouchable.
        assert [d["id"] for d in client_a.get("/api/devices").json()["devices"]] == [a.device_id]
        assert [p["id"] for p in client_a.get("/api/phones").json()["phones"]] == [a.phone_id]
        error_of(client_a.delete(f"/api/phones/{b.phone_id}"), 404, "unknown_phone")
        error_of(client_a.delete(f"/api/devices/{b.device_id}"), 404, "unknown_device")
        new = client_a.post("/api/sessions", json={"device_id": b.device_id, "cwd": "/tmp"})
        error_of(new, 404, "unknown_device")

        # B is unharmed: its phone still works, its Mac is listed, its session unchanged.
        assert client_b.get("/api/me").json()["id"] == b.phone_id
        assert [d["id"] for d in client_b.get("/api/devices").json()["devices"]] == [b.device_id]
        snapshot = client_b.get(f"/api/sessions/{b_session}").json()
        assert snapshot["title"] != "mine now" and snapshot["last_seq"] == b_last

    # A's Mac cannot write into B's session over the link either.
    async def intrude() -> None:
        async with mac(relay, a.device_token) as link:
            with pytest.raises(LinkRefused, match="unknown_session"):
                await push(link, b_session, SMALL)

    asyncio.run(intrude())
    with phone_client(relay, b.phone_token) as client_b:
        assert client_b.get(f"/api/sessions/{b_session}/events").json() == b_events_before


# -- 3. paging through events -----------------------------------------------------------------


def test_events_paging_and_position_errors(relay: RelayServer, account: Account) -> None:
    session_id, last = make_session(relay, account, BIG)
    assert last >= 20
    base = f"/api/sessions/{session_id}/events"
    with phone_client(relay, account.phone_token) as client:
        full = events_page(client, session_id, after=0)
        assert seqs(full) == list(range(1, last + 1))
        assert full["has_more"] is False
        assert (full["last_seq"], full["oldest_seq"], full["session_id"]) == (last, 1, session_id)
        epoch = full["epoch"]
        assert all(e["epoch"] == epoch and e["session_id"] == session_id for e in full["events"])
        assert events_page(client, session_id) == full  # after defaults to 0

        # Forward pages of 5 join up to the whole history, each saying whether more follow.
        collected: list[dict[str, Any]] = []
        after = 0
        while True:
            page = events_page(client, session_id, after=after, limit=5, epoch=epoch)
            assert seqs(page) == list(range(after + 1, min(after + 5, last) + 1))
            collected += page["events"]
            after = page["events"][-1]["seq"]
            assert page["has_more"] is (after < last)
            if not page["has_more"]:
                break
        assert collected == full["events"]
        assert events_page(client, session_id, after=last)["events"] == []

        # Backward: the newest events before N, oldest first.
        back = events_page(client, session_id, before=last, limit=5)
        assert seqs(back) == list(range(last - 5, last))
        assert back["has_more"] is True
        assert back["events"] == full["events"][last - 6 : last - 1]
        start = events_page(client, session_id, before=4, limit=10)
        assert seqs(start) == [1, 2, 3] and start["has_more"] is False
        assert seqs(events_page(client, session_id, before=last + 1)) == list(range(1, last + 1))

        for limit in (0, 501, -1):
            error_of(client.get(base, params={"after": 0, "limit": limit}), 400, "bad_limit")
        error_of(client.get(base, params={"after": -1}), 400, "bad_after")
        error_of(client.get(base, params={"before": 0}), 400, "bad_after")
        beyond = error_of(client.get(base, params={"after": last + 1}), 409, "after_beyond_last")
        assert (beyond["last_seq"], beyond["epoch"]) == (last, epoch)
        stale = error_of(
            client.get(base, params={"after": 3, "epoch": "0ld3p0ch"}), 409, "epoch_mismatch"
        )
        assert (stale["epoch"], stale["last_seq"]) == (epoch, last)
        error_of(client.get(base, params={"before": 3, "epoch": "0ld3p0ch"}), 409, "epoch_mismatch")
        both = client.get(base, params={"after": 1, "before": 5})
        assert both.status_code == 400 and both.json()["error"]["code"] == "bad_after"
        for bad in ({"after": "abc"}, {"limit": "ten"}, {"before": "1.5"}):
            response = client.get(base, params=bad)
            error_of(response, 400, "bad_request")
            assert next(iter(bad)) in response.json()["error"]["message"]
        error_of(client.get(f"/api/sessions/{new_id()}/events"), 404, "unknown_session")
        # None of that changed anything.
        assert events_page(client, session_id, after=0) == full


# -- 4. history older than the relay keeps -----------------------------------------------------


def test_older_history_comes_from_the_mac_or_is_refused_when_it_is_offline(make_relay: Any) -> None:
    server: RelayServer = make_relay(events_kept=10)
    acct = server.account()
    session_id = new_id()
    url = f"/api/sessions/{session_id}/events"
    headers = {"Authorization": f"Bearer {acct.phone_token}"}

    async def connected() -> tuple[int, list[dict[str, Any]]]:
        async with mac(server, acct.device_token) as link:
            last = await push(link, session_id, BIG)
            assert last > 10
            await link.wait_for_seq(session_id, last)
            archive = [
                json.loads(archived(link)[session_id][s].model_dump_json(exclude_none=True))
                for s in range(1, last + 1)
            ]
            async with httpx.AsyncClient(
                base_url=server.url, headers=headers, timeout=15
            ) as client:
                snapshot = (await client.get(f"/api/sessions/{session_id}")).json()
                assert (snapshot["last_seq"], snapshot["oldest_seq"]) == (last, last - 9)
                kept = server.state.store.read_events_sync(session_id, 1, last)
                assert [s for s, _ in kept] == list(range(last - 9, last + 1))

                whole = (await client.get(url, params={"after": 0})).json()
                assert seqs(whole) == list(range(1, last + 1)) and whole["has_more"] is False
                assert whole["events"] == archive
                assert whole["oldest_seq"] == last - 9
                # A page across the boundary: part from the Mac, part from the relay.
                mixed = (await client.get(url, params={"after": last - 12, "limit": 6})).json()
                assert mixed["events"] == archive[last - 12 : last - 6]
                older = (await client.get(url, params={"before": 4})).json()
                assert older["events"] == archive[0:3]
            return last, archive

    last, archive = asyncio.run(connected())
    wait_offline(server, acct)
    with phone_client(server, acct.phone_token) as client:
        error = error_of(client.get(url, params={"after": 0}), 409, "history_unavailable")
        assert error["oldest_seq"] == last - 9
        assert str(last - 9) in error["message"]
        error_of(client.get(url, params={"before": last - 9}), 409, "history_unavailable")
        # What the relay keeps stays readable without the Mac.
        kept = events_page(client, session_id, after=last - 10)
        assert kept["events"] == archive[last - 10 :]


# -- 5. bad input ----------------------------------------------------------------------------------


def test_bad_input_is_refused_clearly_and_changes_nothing(make_relay: Any) -> None:
    server: RelayServer = make_relay(max_body_bytes=1000, max_message_chars=50)
    acct = server.account()
    session_id, _ = make_session(server, acct, BIG)
    messages = f"/api/sessions/{session_id}/messages"
    json_type = {"content-type": "application/json"}

    def chunks() -> Iterator[bytes]:
        yield b'{"text": "'
        for _ in range(10):
            yield b"x" * 300
        yield b'"}'

    with phone_client(server, acct.phone_token) as client:
        events = client.get(f"/api/sessions/{session_id}/events").text
        snapshot = client.get(f"/api/sessions/{session_id}").json()

        def unchanged() -> None:
            assert client.get(f"/api/sessions/{session_id}/events").text == events
            assert client.get(f"/api/sessions/{session_id}").json() == snapshot

        big = json.dumps({"text": "x" * 2000})
        error = error_of(
            client.post(messages, content=big, headers=json_type), 413, "body_too_large"
        )
        assert error["limit"] == 1000
        unchanged()
        streamed = client.post(messages, content=chunks(), headers=json_type)
        assert "content-length" not in streamed.request.headers
        error_of(streamed, 413, "body_too_large")
        unchanged()
        patch = client.patch(f"/api/sessions/{session_id}", content=chunks(), headers=json_type)
        error_of(patch, 413, "body_too_large")
        unchanged()
        with phone_client(server, None) as anonymous:  # the limit holds before any login
            error_of(
                anonymous.post("/api/pair", content=big, headers=json_type), 413, "body_too_large"
            )

        error_of(client.post(messages, content=b'{"text": ', headers=json_type), 400, "bad_json")
        unchanged()
        not_utf8 = client.post(messages, content=b'{"text": "\xff\xfe\xfd"}', headers=json_type)
        assert "UTF-8" in error_of(not_utf8, 400, "bad_json")["message"]
        unchanged()
        too_long = error_of(client.post(messages, json={"text": "y" * 51}), 413, "text_too_large")
        assert "50" in too_long["message"]
        unchanged()
        # Exactly at the limit the text is accepted (and then needs the Mac, which is offline).
        error_of(client.post(messages, json={"text": "y" * 50}), 409, "device_offline")
        error_of(client.post(messages, json={"text": ""}), 400, "bad_request")
        error_of(client.post(messages, json=["text"]), 400, "bad_request")

        error_of(client.patch(f"/api/sessions/{session_id}", json={}), 400, "bad_request")
        error_of(
            client.patch(f"/api/sessions/{session_id}", json={"title": None}), 400, "bad_request"
        )
        bad_type = client.patch(f"/api/sessions/{session_id}", json={"locked": "maybe"})
        assert "locked" in error_of(bad_type, 400, "bad_request")["message"]
        unchanged()

        error_of(
            client.post(f"/api/sessions/{new_id()}/messages", json={"text": "hi"}),
            404,
            "unknown_session",
        )
        error_of(
            client.patch(f"/api/sessions/{new_id()}", json={"title": "t"}), 404, "unknown_session"
        )
        missing_mac = client.post("/api/sessions", json={"device_id": "mac_nope", "cwd": "/tmp"})
        error_of(missing_mac, 404, "unknown_device")
        error_of(client.delete("/api/devices/mac_nope"), 404, "unknown_device")
        error_of(client.delete("/api/phones/phone_nope"), 404, "unknown_phone")
        unchanged()
        assert [s["id"] for s in client.get("/api/sessions").json()["sessions"]] == [session_id]

        # A body just under the limit goes through: the limit is the limit, not "any body".
        fine = client.patch(
            f"/api/sessions/{session_id}", json={"title": "t" * 400, "group": "g" * 150}
        )
        assert fine.status_code == 200 and fine.json()["title"] == "t" * 400
        assert client.get(f"/api/sessions/{session_id}/events").text == events


# -- 6. commands that need the Mac --------------------------------------------------------------


class Recorder:
    """A scripted Mac's command handler: records commands, refuses the names in ``refuse``."""

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.refuse: set[str] = set()

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        if command.name in self.refuse:
            return CommandResult(command_id="", ok=False, code="x", error="the Mac said no")
        return CommandResult(command_id="", ok=True, data={"done": command.name})

    def names(self) -> list[str]:
        return [c.name for c in self.commands]


def test_commands_without_a_mac_are_refused_as_device_offline(
    relay: RelayServer, account: Account
) -> None:
    session_id, _ = make_session(relay, account, SMALL)
    with phone_client(relay, account.phone_token) as client:
        before = client.get("/api/sessions").json()
        calls: list[tuple[str, Any]] = [
            (f"/api/sessions/{session_id}/messages", {"text": "hello"}),
            (f"/api/sessions/{session_id}/interrupt", None),
            (f"/api/sessions/{session_id}/end", None),
            (f"/api/sessions/{session_id}/rest", None),
            (f"/api/sessions/{session_id}/reopen", None),
            ("/api/sessions", {"device_id": account.device_id, "cwd": "/tmp", "prompt": "hi"}),
        ]
        for url, body in calls:
            error = error_of(client.post(url, json=body), 409, "device_offline")
            assert "offline" in error["message"] and error["device_id"] == account.device_id, url
        after = client.get("/api/sessions").json()
        assert after == before  # no session made, no mark changed
        assert after["sessions"][0]["mark"] == "offline"


def test_commands_reach_the_mac_and_its_answers_come_back(
    relay: RelayServer, account: Account
) -> None:
    recorder = Recorder()
    session_id = new_id()
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    base = f"/api/sessions/{session_id}"

    async def go() -> None:
        async with (
            mac(relay, account.device_token, on_command=recorder) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)

            sent = await client.post(
                f"{base}/messages", json={"text": "run the tests", "now": True}
            )
            assert sent.status_code == 200 and sent.json() == {"ok": True, "done": "send"}
            command = recorder.commands[-1]
            assert (command.name, command.session_id) == ("send", session_id)
            assert command.args == {"text": "run the tests", "now": True}

            interrupted = await client.post(f"{base}/interrupt")
            assert interrupted.json() == {"ok": True, "done": "interrupt"}
            assert recorder.commands[-1].name == "interrupt"

            created = await client.post(
                "/api/sessions",
                json={"device_id": account.device_id, "cwd": "/Users/test/new", "prompt": "start"},
            )
            assert created.status_code == 201, created.text
            new = created.json()["id"]
            command = recorder.commands[-1]
            assert (command.name, command.session_id) == ("create_session", new)
            assert command.args == {"cwd": "/Users/test/new", "prompt": "start"}
            assert created.json()["session"]["cwd"] == "/Users/test/new"
            listed = (await client.get("/api/sessions")).json()["sessions"]
            assert {s["id"] for s in listed} == {session_id, new}

            recorder.refuse = {"send", "end"}
            refused = await client.post(f"{base}/messages", json={"text": "no"})
            assert error_of(refused, 409, "x")["message"] == "the Mac said no"
            error_of(await client.post(f"{base}/end"), 409, "x")
            assert (await client.get(base)).json()["mark"] is None  # a refused end marks nothing
            recorder.refuse = set()

            locked = await client.patch(base, json={"locked": True})
            assert locked.json()["locked"] is True
            count = len(recorder.commands)
            error_of(await client.post(f"{base}/end"), 409, "session_locked")
            error_of(await client.post(f"{base}/rest"), 409, "session_locked")
            assert len(recorder.commands) == count  # the Mac was never asked
            assert (await client.get(base)).json()["mark"] is None

            await client.patch(base, json={"locked": False})
            ended = await client.post(f"{base}/end")
            assert ended.json() == {"ok": True, "done": "end"}
            assert (await client.get(base)).json()["mark"] == "ended"
            assert (await client.post(f"{base}/rest")).status_code == 200
            assert (await client.get(base)).json()["mark"] == "resting"
            assert (await client.post(f"{base}/reopen")).status_code == 200
            assert (await client.get(base)).json()["mark"] is None
            assert recorder.names()[-3:] == ["end", "rest", "reopen"]

    asyncio.run(go())


# -- 7. cards -------------------------------------------------------------------------------------


def test_cards_show_answer_and_close(relay: RelayServer, account: Account) -> None:
    recorder = Recorder()
    session_id = new_id()
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    base = f"/api/sessions/{session_id}"
    card = Card(
        id="c1",
        kind="permission",
        title="Bash command",
        text="rm -rf build/",
        options=[CardOption(key="1", label="Yes"), CardOption(key="3", label="No")],
    )

    async def go() -> None:
        async with (
            mac(relay, account.device_token, on_command=recorder) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)
            await link.update(SessionInfo(session_id=session_id, state="waiting", card=card))

            async def card_shown() -> dict[str, Any] | None:
                snapshot: dict[str, Any] = (await client.get(base)).json()
                return snapshot if snapshot["card"] else None

            snapshot = await await_until(card_shown, what="the card")
            shown = snapshot["card"]
            assert (shown["id"], shown["kind"], shown["title"], shown["text"]) == (
                "c1", "permission", "Bash command", "rm -rf build/",
            )  # fmt: skip
            assert shown["options"] == [{"key": "1", "label": "Yes"}, {"key": "3", "label": "No"}]
            assert snapshot["state"] == "waiting" and snapshot["needs_you"] is True
            listed = (await client.get("/api/sessions")).json()
            assert listed["needs_you"] == 1 and listed["sessions"][0]["needs_you"] is True

            answered = await client.post(f"{base}/cards/c1", json={"key": "1"})
            assert answered.status_code == 200, answered.text
            command = recorder.commands[-1]
            assert (command.name, command.session_id) == ("answer_card", session_id)
            assert command.args["card_id"] == "c1" and command.args["key"] == "1"
            assert "text" not in command.args and "keys" not in command.args

            count = len(recorder.commands)
            other = error_of(
                await client.post(f"{base}/cards/other", json={"key": "1"}), 409, "card_closed"
            )
            assert other["card_id"] == "other"
            both = await client.post(f"{base}/cards/c1", json={"key": "1", "text": "maybe"})
            error_of(both, 400, "bad_request")
            error_of(await client.post(f"{base}/cards/c1", json={}), 400, "bad_request")
            assert len(recorder.commands) == count

            await link.update(SessionInfo(session_id=session_id, clear_card=True))

            async def card_gone() -> dict[str, Any] | None:
                snapshot: dict[str, Any] = (await client.get(base)).json()
                return None if snapshot["card"] else snapshot

            snapshot = await await_until(card_gone, what="the card to close")
            assert snapshot["needs_you"] is False and snapshot["state"] == "waiting"
            closed = await client.post(f"{base}/cards/c1", json={"key": "1"})
            assert "already closed" in error_of(closed, 409, "card_closed")["message"]
            assert len(recorder.commands) == count

    asyncio.run(go())


# -- 8. titles, groups, locks and order -----------------------------------------------------------


def test_patch_persists_and_position_orders_the_list(relay: RelayServer, account: Account) -> None:
    first, second = new_id(), new_id()

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, first, SMALL)
            await push(link, second, SMALL)

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as client:

        def order() -> list[str]:
            return [s["id"] for s in client.get("/api/sessions").json()["sessions"]]

        assert order() == [first, second]
        changed = client.patch(
            f"/api/sessions/{second}",
            json={"title": "Fix the build", "group": "work", "locked": True, "position": 0.5},
        )
        assert changed.status_code == 200
        body = changed.json()
        assert (body["title"], body["group"], body["locked"], body["position"]) == (
            "Fix the build", "work", True, 0.5,
        )  # fmt: skip
        assert order() == [second, first]
        listed = {s["id"]: s for s in client.get("/api/sessions").json()["sessions"]}
        assert (listed[second]["title"], listed[second]["group"], listed[second]["locked"]) == (
            "Fix the build", "work", True,
        )  # fmt: skip
        assert listed[first]["locked"] is False and listed[first]["group"] == ""

        # One field at a time leaves the others alone.
        client.patch(f"/api/sessions/{second}", json={"locked": False})
        snapshot = client.get(f"/api/sessions/{second}").json()
        assert (snapshot["title"], snapshot["group"], snapshot["locked"]) == (
            "Fix the build",
            "work",
            False,
        )
        client.patch(f"/api/sessions/{first}", json={"position": 0.25})
        assert order() == [first, second]


# -- 9. pairing, the login cookie and its origin check -------------------------------------------


def test_pairing_cookie_origin_and_logout(make_relay: Any) -> None:
    server: RelayServer = make_relay()  # a private relay: its pairing rate limit is ours alone
    acct = server.account()
    store = server.state.store
    code = store.create_pair_code(acct.account_id, "phone", "p")
    own_origin = {"Origin": server.url}
    foreign = {"Origin": "https://evil.example"}

    with phone_client(server, None) as anonymous:
        paired = anonymous.post("/api/pair", json={"code": code})
        assert paired.status_code == 200, paired.text
        body = paired.json()
        token, phone_id = body["token"], body["id"]
        assert body["kind"] == "phone" and token
        cookies = paired.headers.get_list("set-cookie")
        assert len(cookies) == 1
        attributes = [part.strip() for part in cookies[0].split(";")]
        assert attributes[0] == f"cb_login={token}"
        lowered = {a.lower() for a in attributes}
        assert "httponly" in lowered and "samesite=strict" in lowered and "path=/" in lowered

        again = anonymous.post("/api/pair", json={"code": code})
        error_of(again, 401, "bad_pair_code")

    cookie = {"Cookie": f"cb_login={token}"}
    with httpx.Client(base_url=server.url, headers=cookie, timeout=15) as browser:
        assert browser.get("/api/sessions").status_code == 200
        assert browser.get("/api/me").json()["id"] == phone_id
        assert browser.get("/api/me", headers=foreign).status_code == 200  # reading is not a change

        error_of(browser.post("/api/logout"), 403, "bad_origin")
        error_of(browser.post("/api/logout", headers=foreign), 403, "bad_origin")
        error_of(
            browser.post("/api/logout", headers={"Referer": "https://evil.example/x"}),
            403,
            "bad_origin",
        )
        lookalike = {"Origin": f"http://127.0.0.1:{server.port}.evil.example"}
        error_of(browser.post("/api/logout", headers=lookalike), 403, "bad_origin")
        assert browser.get("/api/me").status_code == 200  # the refused logouts did nothing

        # A bearer token is no cross-site risk: no origin check for it.
        third_token, _, third_phone = store.create_token(acct.account_id, "phone", "third")
        with phone_client(server, third_token) as app_client:
            assert (
                app_client.delete(f"/api/phones/{acct.phone_id}", headers=foreign).status_code
                == 200
            )
        # The page's own origin may change things with the cookie.
        assert browser.delete(f"/api/phones/{third_phone}", headers=own_origin).status_code == 200
        with phone_client(server, third_token) as app_client:
            error_of(app_client.get("/api/me"), 401, "token_revoked")

        out = browser.post("/api/logout", headers=own_origin)
        assert out.status_code == 200 and out.json() == {"ok": True}
        cleared = out.headers.get("set-cookie", "")
        assert cleared.startswith("cb_login=") and (
            "max-age=0" in cleared.lower() or "expires" in cleared.lower()
        )
        error_of(browser.get("/api/sessions"), 401, "token_revoked")
    with phone_client(server, token) as bearer:
        error_of(bearer.get("/api/me"), 401, "token_revoked")


def test_pairing_attempts_are_rate_limited(make_relay: Any) -> None:
    server: RelayServer = make_relay(pair_attempts_per_minute=3)
    acct = server.account()
    with phone_client(server, None) as anonymous:
        for _ in range(3):
            error_of(anonymous.post("/api/pair", json={"code": "WRONGCODE2"}), 401, "bad_pair_code")
        # The 4th attempt within the minute is refused even with a good code.
        good = server.state.store.create_pair_code(acct.account_id, "phone", "p")
        limited = anonymous.post("/api/pair", json={"code": good})
        error = error_of(limited, 429, "pair_rate_limited")
        retry = int(limited.headers["retry-after"])
        assert 1 <= retry <= 61 and error["retry_after"] == retry
        assert "set-cookie" not in limited.headers


# -- 10. content security policy -----------------------------------------------------------------


def script_sources(response: httpx.Response) -> list[str]:
    policy: str | None = response.headers.get("content-security-policy")
    assert policy, f"no CSP on {response.request.method} {response.request.url}"
    directives = {
        d.strip().split()[0]: d.strip().split()[1:] for d in policy.split(";") if d.strip()
    }
    sources: list[str] | None = directives.get("script-src", directives.get("default-src"))
    assert sources, policy
    return sources


def test_pages_and_api_answers_carry_a_csp_without_inline_scripts(
    relay: RelayServer, account: Account
) -> None:
    with phone_client(relay, account.phone_token) as client, phone_client(relay, None) as anonymous:
        responses = [
            anonymous.get("/api/health"),
            client.get("/api/sessions"),
            anonymous.get("/api/sessions"),  # 401
            client.get(f"/api/sessions/{new_id()}"),  # 404
            client.get("/api/sessions/x/events", params={"after": "x"}),  # 400
        ]
        index = WEB_DIR / "index.html"
        if index.is_file():
            page = anonymous.get("/")
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
            responses.append(page)
            for src in re.findall(r'<script[^>]+src="([^"]+)"', page.text):
                responses.append(anonymous.get(src if src.startswith("/") else f"/{src}"))
        for response in responses:
            sources = script_sources(response)
            assert "'unsafe-inline'" not in sources and "'unsafe-eval'" not in sources, sources
            assert "'self'" in sources
            assert response.headers.get("x-content-type-options") == "nosniff"
