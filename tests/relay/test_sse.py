"""SSE streams against a real relay: catch-up, Last-Event-ID, the subscribe-then-replay race,
slow clients, revocation and keep-alives."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import uuid
from typing import Any

import httpx

from relay.store import hash_secret
from tests.support.relay import Account, RelayServer, SSEReader, mac, phone_client
from wire.protocol import LineRecord, SessionInfo


def user_lines(start_offset: int, count: int, prefix: str = "m") -> list[LineRecord]:
    lines = []
    for i in range(count):
        ident = str(uuid.uuid4())
        body = {
            "type": "user",
            "uuid": ident,
            "sessionId": "conv",
            "timestamp": "2026-11-29T21:33:53.764Z",
            "message": {"role": "user", "content": f"{prefix}{i}"},
        }
        lines.append(LineRecord(offset=start_offset + i * 1000, text=json.dumps(body), uuid=ident))
    return lines


def client_for(server: RelayServer, token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


async def read_until(reader: SSEReader, last: int, timeout: float = 20) -> list[int]:
    seqs: list[int] = []
    while not seqs or seqs[-1] < last:
        msg = await reader.next(timeout)
        if msg.event == "event":
            assert msg.id is not None
            assert json.loads(msg.data)["seq"] == int(msg.id)
            seqs.append(int(msg.id))
        else:
            assert msg.event == "hello", msg
    return seqs


def test_stream_catches_up_then_goes_live(relay: RelayServer, account: Account) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> tuple[list[int], list[int]]:
        async with (
            mac(relay, account.device_token) as link,
            client_for(relay, account.phone_token) as c,
        ):
            await link.send_lines(session_id, "conv", user_lines(0, 10))
            async with c.stream(
                "GET", f"/api/sessions/{session_id}/stream", params={"after": 4}
            ) as r:
                assert r.status_code == 200
                assert r.headers["content-type"].startswith("text/event-stream")
                reader = SSEReader(r)
                hello = await reader.next()
                assert hello.event == "hello" and json.loads(hello.data)["after"] == 4
                caught = await read_until(reader, 10)
                await link.send_lines(session_id, "conv", user_lines(100_000, 5, "live"))
                live = await read_until(reader, 15)
                return caught, live

    caught, live = asyncio.run(run())
    assert caught == list(range(5, 11))
    assert live == list(range(11, 16))


def test_last_event_id_header_wins_over_after(relay: RelayServer, account: Account) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> list[int]:
        async with (
            mac(relay, account.device_token) as link,
            client_for(relay, account.phone_token) as c,
        ):
            await link.send_lines(session_id, "conv", user_lines(0, 12))
            async with c.stream(
                "GET",
                f"/api/sessions/{session_id}/stream",
                params={"after": 2},
                headers={"Last-Event-ID": "9"},
            ) as r:
                return await read_until(SSEReader(r), 12)

    assert asyncio.run(run()) == [10, 11, 12]


def test_no_event_lost_or_doubled_while_streams_join_during_writes(
    relay: RelayServer, account: Account
) -> None:
    """The subscribe-then-replay race: streams open at random moments of a steady write."""
    session_id = str(uuid.uuid4())
    batches, per_batch = 40, 5
    total = 1 + batches * per_batch

    async def writer(link: Any) -> None:
        for b in range(batches):
            start = (1 + b * per_batch) * 1000
            await link.send_lines(session_id, "conv", user_lines(start, per_batch))
            await asyncio.sleep(random.uniform(0, 0.01))

    async def viewer(c: httpx.AsyncClient, delay: float) -> list[int]:
        await asyncio.sleep(delay)
        async with c.stream("GET", f"/api/sessions/{session_id}/stream", params={"after": 0}) as r:
            return await read_until(SSEReader(r), total)

    async def run() -> list[list[int]]:
        async with (
            mac(relay, account.device_token) as link,
            client_for(relay, account.phone_token) as c,
        ):
            await link.send_lines(session_id, "conv", user_lines(0, 1, "first"))  # create it
            viewers = [asyncio.create_task(viewer(c, random.uniform(0, 0.4))) for _ in range(8)]
            await writer(link)
            return await asyncio.gather(*viewers)

    for seqs in asyncio.run(run()):
        assert seqs == list(range(1, total + 1))


def test_a_slow_client_gets_resync_and_is_closed(make_relay: Any) -> None:
    server: RelayServer = make_relay(sse_queue_size=30)
    acct = server.account()
    session_id = str(uuid.uuid4())

    async def run() -> tuple[list[str], bool]:
        async with (
            mac(server, acct.device_token) as link,
            client_for(server, acct.phone_token) as c,
        ):
            await link.send_lines(session_id, "conv", user_lines(0, 1, "first"))
            async with c.stream(
                "GET", f"/api/sessions/{session_id}/stream", params={"after": 1}
            ) as r:
                reader = SSEReader(r)
                assert (await reader.next()).event == "hello"
                # Flood while not reading: socket buffers fill, then the subscriber's queue.
                big = "y" * 3000
                for b in range(150):
                    lines = user_lines((b + 1) * 100_000, 20, prefix=big)
                    await link.send_lines(session_id, "conv", lines)
                names = []
                ended = False
                try:
                    while True:
                        msg = await reader.next(timeout=10)
                        names.append(msg.event)
                except EOFError:
                    ended = True
                return names, ended

    names, ended = asyncio.run(run())
    assert names[-1] == "resync"
    assert ended
    assert set(names[:-1]) <= {"event"}


def test_revoking_a_phone_closes_its_open_streams(relay: RelayServer, account: Account) -> None:
    session_id = str(uuid.uuid4())
    other_token, _, _ = relay.state.store.create_token(account.account_id, "phone", "second phone")

    async def run() -> tuple[str, str]:
        async with (
            mac(relay, account.device_token) as link,
            client_for(relay, account.phone_token) as c,
        ):
            await link.send_lines(session_id, "conv", user_lines(0, 3))
            async with (
                c.stream("GET", f"/api/sessions/{session_id}/stream") as r,
                c.stream("GET", "/api/stream") as r2,
            ):
                reader, reader2 = SSEReader(r), SSEReader(r2)
                await read_until(reader, 3)
                assert (await reader2.next()).event == "snapshot"
                async with client_for(relay, other_token) as other:
                    revoked = await other.delete(f"/api/phones/{account.phone_id}")
                    assert revoked.status_code == 200, revoked.text
                return (await reader.next(5)).event, (await reader2.next(5)).event

    assert asyncio.run(run()) == ("revoked", "revoked")
    with phone_client(relay, account.phone_token) as client:
        assert client.get("/api/sessions").json()["error"]["code"] == "token_revoked"


def test_a_token_revoked_from_the_command_line_closes_streams_soon(make_relay: Any) -> None:
    server: RelayServer = make_relay(auth_recheck_interval=0.3, sse_keepalive=0.2)
    acct = server.account()
    session_id = str(uuid.uuid4())
    # A separate token of the same phone, revoked by id as `claude-bridge token revoke` does.
    token, token_id, _ = server.state.store.create_token(acct.account_id, "phone", "cli phone")

    async def run() -> tuple[str, int]:
        async with mac(server, acct.device_token) as link, client_for(server, token) as c:
            await link.send_lines(session_id, "conv", user_lines(0, 2))
            async with c.stream("GET", f"/api/sessions/{session_id}/stream") as r:
                reader = SSEReader(r)
                await read_until(reader, 2)
                await asyncio.sleep(0.5)
                assert server.state.store.revoke_token_sync(token_id)
                msg = await reader.next(5)
                return msg.event, reader.comments

    event, comments = asyncio.run(run())
    assert event == "revoked"
    assert comments >= 1  # keep-alive comments flowed while idle


def test_account_stream_shows_sessions_devices_and_previews(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> list[tuple[str, dict[str, Any]]]:
        seen: list[tuple[str, dict[str, Any]]] = []
        async with client_for(relay, account.phone_token) as c, c.stream("GET", "/api/stream") as r:
            reader = SSEReader(r)
            snap = await reader.next()
            seen.append((snap.event, json.loads(snap.data)))
            async with mac(relay, account.device_token) as link:
                await link.send_lines(session_id, "conv", user_lines(0, 1), cwd="/p")
                await link.update(SessionInfo(session_id=session_id, state="busy"))
                await link.update(SessionInfo(session_id=session_id, preview="Writing the an"))
                for _ in range(4):
                    msg = await reader.next()
                    seen.append((msg.event, json.loads(msg.data)))
            msg = await reader.next()
            seen.append((msg.event, json.loads(msg.data)))
        return seen

    seen = asyncio.run(run())
    names = [name for name, _ in seen]
    assert names[0] == "snapshot"
    assert names[1] == "device" and seen[1][1]["online"] is True
    assert ("session", "busy") in [(n, d.get("state")) for n, d in seen]
    assert ("preview", "Writing the an") in [(n, d.get("text")) for n, d in seen]
    assert names[-1] == "device" and seen[-1][1]["online"] is False


def test_bad_stream_positions_are_clear_errors(relay: RelayServer, account: Account) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, "conv", user_lines(0, 3))

    asyncio.run(run())
    with phone_client(relay, account.phone_token) as client:
        cases = {
            ("after", "9"): (409, "after_beyond_last"),
            ("after", "-1"): (400, "bad_after"),
            ("epoch", "nope"): (409, "epoch_mismatch"),
        }
        for (key, value), (status, code) in cases.items():
            response = client.get(f"/api/sessions/{session_id}/stream", params={key: value})
            assert (response.status_code, response.json()["error"]["code"]) == (status, code)
        missing = client.get("/api/sessions/no-such-session/stream")
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "unknown_session")


def test_a_login_past_its_stream_limit_closes_its_oldest_and_never_locks_itself_out(
    make_relay: Any,
) -> None:
    """A phone that reconnects again and again (its old streams dead, not yet noticed) always
    gets its new stream: the oldest of its login is closed with ``closed``, naming the setting;
    another login's streams are left alone."""
    server: RelayServer = make_relay(sse_max_streams_per_token=2)
    acct = server.account()
    other_token, _, _ = server.state.store.create_token(acct.account_id, "phone", "other phone")
    session_id = str(uuid.uuid4())
    hub = server.state.hub

    async def run() -> None:
        async with (
            mac(server, acct.device_token) as link,
            client_for(server, acct.phone_token) as c,
            client_for(server, other_token) as o,
        ):
            await link.send_lines(session_id, "conv", user_lines(0, 1))
            async with (
                o.stream("GET", "/api/stream") as theirs,
                c.stream("GET", "/api/stream") as first,
                c.stream("GET", f"/api/sessions/{session_id}/stream") as second,
            ):
                their_reader, first_reader = SSEReader(theirs), SSEReader(first)
                second_reader = SSEReader(second)
                assert (await their_reader.next()).event == "snapshot"
                assert (await first_reader.next()).event == "snapshot"
                assert (await second_reader.next()).event == "hello"
                assert hub.streams_of(hash_secret(acct.phone_token)) == 2
                for attempt in range(3):  # reconnects, each one past the limit
                    async with c.stream("GET", "/api/stream") as newest:
                        reader = SSEReader(newest)
                        assert (await reader.next()).event == "snapshot", attempt
                        if attempt == 0:
                            closed = await first_reader.next(5)
                            assert closed.event == "closed"
                            body = json.loads(closed.data)
                            assert body["reason"] == "too_many_streams"
                            assert "sse_max_streams_per_token" in body["message"]
                            with contextlib.suppress(EOFError, httpx.HTTPError):
                                await first_reader.next(5)  # and it ends
                                raise AssertionError("the closed stream went on")
                        assert hub.streams_of(hash_secret(acct.phone_token)) <= 2
                # The other login kept its stream: it still hears the account's news.
                await link.update(SessionInfo(session_id=session_id, state="busy"))
                while (news := await their_reader.next(5)).event != "session":
                    pass
                assert json.loads(news.data)["state"] == "busy"

    asyncio.run(run())


def test_streams_carry_a_heartbeat_event_the_page_can_see(make_relay: Any) -> None:
    """A frozen relay keeps its sockets open and sends nothing: the page tells it from a quiet one
    by the heartbeat events (not comments, which a page's EventSource hides)."""
    server: RelayServer = make_relay(stream_heartbeat_interval=0.2)
    acct = server.account()
    session_id = str(uuid.uuid4())

    async def run() -> tuple[dict[str, str], list[str], int, int]:
        async with (
            mac(server, acct.device_token) as link,
            client_for(server, acct.phone_token) as c,
        ):
            await link.send_lines(session_id, "conv", user_lines(0, 1))
            async with (
                c.stream("GET", "/api/stream") as account,
                c.stream("GET", f"/api/sessions/{session_id}/stream") as session,
            ):
                raw: list[str] = []
                async for line in account.aiter_lines():
                    raw.append(line)
                    if raw.count("event: heartbeat") >= 2:
                        break
                reader = SSEReader(session)
                await read_until(reader, 1)
                await asyncio.sleep(0.7)
                with contextlib.suppress(TimeoutError):
                    await reader.next(0.3)
                return dict(account.headers), raw, reader.heartbeats, reader.comments

    headers, raw, beats, comments = asyncio.run(run())
    assert headers["x-cb-heartbeat"] == "0.2"
    assert headers["x-cb-keepalive"] == "0.2"  # the heartbeat is the keep-alive when sooner
    beat = raw[raw.index("event: heartbeat") + 1]
    assert beat.startswith("data: ") and json.loads(beat[6:])["at"] > 0
    assert beats >= 2 and comments >= beats
