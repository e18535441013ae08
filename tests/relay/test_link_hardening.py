"""The agent link and the event store against hostile or buggy peers (issue 9, defects 1, 2, 3, 8,
10 and part of 14): a raw ``websockets`` client speaking to the real relay under uvicorn."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import websockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection

from tests.support.relay import (
    Account,
    RelayServer,
    agent_link,
    fail_first_ingest,
    mac,
    phone_client,
    transcript,
)
from wire.client import MacLink, MemoryArchive, link_url
from wire.protocol import EventKind, LineRecord, NumberedEvent, SessionPosition, Welcome
from wire.transcript import read_lines


def user_text(text: str) -> str:
    """A transcript line (JSON text) of a person's message."""
    body = {
        "type": "user",
        "uuid": str(uuid.uuid4()),
        "timestamp": "2026-11-29T21:33:53.764Z",
        "sessionId": "conv",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(body)


def user_line(offset: int, text: str) -> LineRecord:
    return LineRecord(offset=offset, text=user_text(text))


def page(server: RelayServer, acct: Account, session_id: str, **params: Any) -> httpx.Response:
    with phone_client(server, acct.phone_token) as client:
        return client.get(f"/api/sessions/{session_id}/events", params=params)


def stored(server: RelayServer, acct: Account, session_id: str) -> list[dict[str, Any]]:
    response = page(server, acct, session_id, after=0)
    assert response.status_code == 200, response.text
    return list(response.json()["events"])


def online(server: RelayServer, acct: Account, device_id: str) -> bool:
    with phone_client(server, acct.phone_token) as client:
        devices = client.get("/api/devices").json()["devices"]
    return bool(next(d["online"] for d in devices if d["id"] == device_id))


def wait_until(condition: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return bool(condition())


@asynccontextmanager
async def raw_link(server: RelayServer, token: str) -> AsyncIterator[ClientConnection]:
    ws = await websockets.connect(
        link_url(server.url),
        additional_headers={"Authorization": f"Bearer {token}"},
        max_size=None,
    )
    try:
        yield ws
    finally:
        await ws.close()


async def hello(ws: ClientConnection, sessions: list[dict[str, Any]] | None = None) -> Any:
    await ws.send(
        json.dumps({"type": "hello", "device": {"name": "raw"}, "sessions": sessions or []})
    )
    return json.loads(await asyncio.wait_for(ws.recv(), 10))


async def until(ws: ClientConnection, kind: str, timeout: float = 10.0) -> dict[str, Any]:
    """The next message of type ``kind`` (others are skipped)."""

    async def read() -> dict[str, Any]:
        while True:
            message = json.loads(await ws.recv())
            if message["type"] == kind:
                return dict(message)

    return await asyncio.wait_for(read(), timeout)


async def answer(ws: ClientConnection, text: str) -> dict[str, Any]:
    """Send one message and return the relay's ack or error for it (events are skipped)."""
    await ws.send(text)

    async def read() -> dict[str, Any]:
        while True:
            message = json.loads(await ws.recv())
            if message["type"] in ("ack", "error", "pong"):
                return dict(message)

    return await asyncio.wait_for(read(), 10)


async def still_up(ws: ClientConnection) -> bool:
    return (await answer(ws, '{"type": "ping"}'))["type"] == "pong"


def lines_json(session_id: str, lines: list[tuple[int, str]], batch: int = 1) -> str:
    """A ``lines`` message built by hand, each text given as raw JSON string content."""
    records = ",".join(f'{{"offset": {o}, "text": "{t}"}}' for o, t in lines)
    return (
        f'{{"type": "lines", "batch": {batch}, "session_id": "{session_id}",'
        f' "conversation_id": "conv", "lines": [{records}]}}'
    )


def escaped(text: str) -> str:
    """``text`` as the content of a JSON string (without the quotes)."""
    return json.dumps(text)[1:-1]


# -- 1. one line cannot take a Mac offline -----------------------------------------------------


def test_a_line_with_a_lone_surrogate_is_stored_and_the_link_stays(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    # What a JavaScript program writes when it cuts an emoji in half: legal JSON, not Unicode.
    inner = escaped(user_text("before")).replace("before", "half \\\\ud83d emoji")
    outer = escaped(user_text("outer")).replace("outer", "raw ") + "\\ud83d"

    async def run() -> tuple[dict[str, Any], dict[str, Any], bool]:
        async with raw_link(relay, account.device_token) as ws:
            await hello(ws)
            first = await answer(
                ws,
                lines_json(
                    session_id,
                    [
                        (0, escaped(user_text("one"))),
                        (100, inner),
                        (200, escaped(user_text("two"))),
                    ],
                ),
            )
            # A lone surrogate in the message's own JSON (not inside the line's): also stored.
            second = await answer(ws, lines_json(session_id, [(300, outer)], batch=2))
            return first, second, await still_up(ws)

    first, second, up = asyncio.run(run())
    assert first["type"] == "ack" and first["through_offset"] == 200, first
    assert second["type"] == "ack" and second["through_offset"] == 300, second
    assert up
    events = stored(relay, account, session_id)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    texts = [e["text"] for e in events]
    assert texts[0] == "one" and texts[2] == "two"
    assert "\ufffd" in texts[1] and "emoji" in texts[1]  # the bad code point replaced
    assert len(events) == 4


def test_an_exception_while_handling_a_message_answers_internal_and_keeps_the_link(
    make_relay: Any,
) -> None:
    server: RelayServer = make_relay()
    acct = server.account()
    fail_first_ingest(server)
    session_id = str(uuid.uuid4())

    async def run() -> tuple[dict[str, Any], dict[str, Any]]:
        async with raw_link(server, acct.device_token) as ws:
            await hello(ws)
            line = escaped(user_text("hi"))
            failed = await answer(ws, lines_json(session_id, [(0, line)], batch=1))
            again = await answer(ws, lines_json(session_id, [(0, line)], batch=2))
            return failed, again

    failed, again = asyncio.run(run())
    assert failed["type"] == "error" and failed["code"] == "internal" and failed["batch"] == 1
    assert again["type"] == "ack" and again["last_seq"] == 1


# -- 2. a Mac is never stuck online; integers from the wire are range-checked ------------------


def test_a_hello_followed_by_an_aborted_connection_leaves_the_mac_offline(
    relay: RelayServer, account: Account
) -> None:
    # Many sessions make the relay's work after hello long enough for the abort to land in it.
    sessions = [{"session_id": str(uuid.uuid4()), "last_seq": 0} for _ in range(400)]

    async def run() -> None:
        ws = await websockets.connect(
            link_url(relay.url),
            additional_headers={"Authorization": f"Bearer {account.device_token}"},
        )
        await ws.send(json.dumps({"type": "hello", "device": {"name": "x"}, "sessions": sessions}))
        ws.transport.abort()

    asyncio.run(run())
    assert wait_until(lambda: not online(relay, account, account.device_id))
    assert wait_until(lambda: relay.state.live.link(account.device_id) is None)


@pytest.mark.parametrize(
    "message",
    [
        # A seq beyond SQLite's INTEGER and beyond JavaScript's safe integer.
        '{"type": "history", "request_id": "r", "events": [{"kind": "user", "session_id": "s",'
        ' "seq": 9223372036854775808, "epoch": "e"}]}',
        '{"type": "history", "request_id": "r", "events": [{"kind": "user", "session_id": "s",'
        ' "seq": 9007199254740992, "epoch": "e"}]}',
        '{"type": "lines", "batch": 9223372036854775808, "session_id": "SID",'
        ' "conversation_id": "conv", "lines": []}',
        '{"type": "lines", "batch": -1, "session_id": "SID", "conversation_id": "conv", "lines": []}',
        '{"type": "lines", "batch": 3, "session_id": "SID", "conversation_id": "conv",'
        ' "lines": [{"offset": 9223372036854775808, "text": "{}"}]}',
        '{"type": "lines", "batch": 3, "session_id": "SID", "conversation_id": "conv",'
        ' "lines": [{"offset": 9007199254740992, "text": "{}"}]}',
    ],
)
def test_out_of_range_integers_get_bad_message_and_touch_nothing(
    relay: RelayServer, account: Account, message: str
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> tuple[dict[str, Any], bool, dict[str, Any]]:
        async with raw_link(relay, account.device_token) as ws:
            await hello(ws)
            first = await answer(ws, lines_json(session_id, [(0, escaped(user_text("a")))]))
            assert first["type"] == "ack"
            refused = await answer(ws, message.replace("SID", session_id))
            up = await still_up(ws)
            later = await answer(
                ws, lines_json(session_id, [(100, escaped(user_text("b")))], batch=4)
            )
            return refused, up, later

    refused, up, later = asyncio.run(run())
    assert refused["type"] == "error" and refused["code"] == "bad_message", refused
    assert up
    assert later["type"] == "ack" and later["last_seq"] == 2 and later["through_offset"] == 100
    assert [e["text"] for e in stored(relay, account, session_id)] == ["a", "b"]


def test_a_hello_with_a_huge_last_seq_is_refused_and_the_next_link_works(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> tuple[dict[str, Any], Welcome]:
        async with raw_link(relay, account.device_token) as ws:
            refused = await hello(ws, [{"session_id": session_id, "last_seq": 2**63}])
        async with mac(relay, account.device_token) as link:
            assert link.welcome is not None
            assert online(relay, account, account.device_id)
            return refused, link.welcome

    refused, welcome = asyncio.run(run())
    assert refused["type"] == "error" and "last_seq" in refused["message"], refused
    assert welcome.device_id == account.device_id
    assert wait_until(lambda: not online(relay, account, account.device_id))


# -- 3. a Mac speaks only for its own sessions; its positions and history are checked ----------


def second_mac(server: RelayServer, acct: Account) -> tuple[str, str]:
    token, _, device_id = server.state.store.create_token(acct.account_id, "device", "other mac")
    return token, device_id


def fill(server: RelayServer, token: str, session_id: str, count: int) -> tuple[int, str]:
    async def run() -> tuple[int, str]:
        async with mac(server, token) as link:
            lines = [user_line(i * 100, f"n{i}") for i in range(count)]
            ack = await link.send_lines(session_id, "conv", lines)
            return ack.last_seq, ack.epoch

    return asyncio.run(run())


def test_another_mac_of_the_account_cannot_touch_a_session(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    last, epoch = fill(relay, account.device_token, session_id, 30)
    other_token, _ = second_mac(relay, account)

    async def run() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with raw_link(relay, other_token) as ws:
            await ws.send(
                json.dumps(
                    {
                        "type": "hello",
                        "sessions": [{"session_id": session_id, "last_seq": 5000, "epoch": epoch}],
                    }
                )
            )
            welcome = await until(ws, "welcome")  # the welcome always comes first
            error = await until(ws, "error")
            refused = await answer(
                ws, lines_json(session_id, [(10**6, escaped(user_text("intruder")))], batch=9)
            )
            return error, welcome, refused

    error, welcome, refused = asyncio.run(run())
    assert error["code"] == "not_your_session" and session_id in error["message"]
    assert welcome["sessions"] == []
    assert refused["type"] == "error" and refused["code"] == "not_your_session"
    assert refused["batch"] == 9
    events = stored(relay, account, session_id)
    assert [e["seq"] for e in events] == list(range(1, 31)) and last == 30
    assert {e["epoch"] for e in events} == {epoch}
    with phone_client(relay, account.phone_token) as client:
        snap = client.get(f"/api/sessions/{session_id}").json()
    assert snap["device_id"] == account.device_id and snap["last_seq"] == 30


def test_the_owners_hello_ahead_of_the_relay_never_deletes_stored_events(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    _, epoch = fill(relay, account.device_token, session_id, 30)

    async def run() -> list[SessionPosition]:
        archive = MemoryArchive()
        archive[session_id] = {}
        archive.set_epoch(session_id, epoch)
        link = MacLink(relay.url, account.device_token, archive=archive)
        link.archive.positions = lambda: [  # type: ignore[method-assign]
            SessionPosition(session_id=session_id, last_seq=5000, epoch=epoch)
        ]
        welcome = await link.connect()
        try:
            response = await asyncio.to_thread(page, relay, account, session_id, after=30)
            # The Mac has none of 31..5000: a clear error, never an empty page saying "more".
            assert response.status_code == 409, response.text
            assert response.json()["error"]["code"] == "history_unavailable"
        finally:
            await link.close()
        return welcome.sessions

    positions = asyncio.run(run())
    assert positions[0].epoch != epoch  # a new epoch: numbering goes on after the Mac's seq
    events = stored(relay, account, session_id)
    assert [e["seq"] for e in events] == list(range(1, 31))
    assert [e["text"] for e in events] == [f"n{i}" for i in range(30)]
    assert {e["epoch"] for e in events} == {positions[0].epoch}


class CraftedArchive(MemoryArchive):
    """An archive whose history answers are whatever the test says."""

    def __init__(self, answer: list[NumberedEvent]) -> None:
        super().__init__()
        self.answer = answer

    def read(self, session_id: str, first: int, last: int) -> list[NumberedEvent]:
        return self.answer


@pytest.mark.parametrize("flaw", ["epoch", "session", "repeat", "order", "outside", "empty"])
def test_history_from_the_mac_is_checked_before_a_phone_sees_it(make_relay: Any, flaw: str) -> None:
    server: RelayServer = make_relay(events_kept=5)
    acct = server.account()
    session_id = str(uuid.uuid4())
    last, epoch = fill(server, acct.device_token, session_id, 20)
    assert last == 20

    def event(seq: int, *, ep: str = epoch, sid: str = session_id) -> NumberedEvent:
        return NumberedEvent(
            kind=EventKind.USER, text=f"old {seq}", session_id=sid, seq=seq, epoch=ep
        )

    good = [event(s) for s in range(11, 16)]
    crafted = {
        "epoch": [*good[:-1], event(15, ep="another")],
        "session": [*good[:-1], event(15, sid=str(uuid.uuid4()))],
        "repeat": [*good, good[-1]],
        "order": [good[1], good[0], *good[2:]],
        "outside": [event(9), *good],
        "empty": [],
    }[flaw]

    async def run() -> httpx.Response:
        link = MacLink(server.url, acct.device_token, archive=CraftedArchive(crafted))
        await link.connect()
        try:
            return await asyncio.to_thread(page, server, acct, session_id, before=16, limit=5)
        finally:
            await link.close()

    response = asyncio.run(run())
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "history_unavailable"


def test_a_gap_in_the_macs_own_archive_is_what_the_mac_answered(make_relay: Any) -> None:
    server: RelayServer = make_relay(events_kept=5)
    acct = server.account()
    session_id = str(uuid.uuid4())
    _, epoch = fill(server, acct.device_token, session_id, 20)
    archive = [
        NumberedEvent(
            kind=EventKind.USER, text=f"old {s}", session_id=session_id, seq=s, epoch=epoch
        )
        for s in (11, 13, 14, 15)
    ]

    async def run() -> httpx.Response:
        link = MacLink(server.url, acct.device_token, archive=CraftedArchive(archive))
        await link.connect()
        try:
            return await asyncio.to_thread(page, server, acct, session_id, before=16, limit=5)
        finally:
            await link.close()

    response = asyncio.run(run())
    assert response.status_code == 200, response.text
    assert [e["seq"] for e in response.json()["events"]] == [11, 13, 14, 15]


@pytest.mark.parametrize("query", [{"before": 2**70}, {"after": 2**70}, {"before": 2**53 + 1}])
def test_positions_from_a_phone_are_range_checked_on_every_events_page(
    relay: RelayServer, account: Account, query: dict[str, int]
) -> None:
    session_id = str(uuid.uuid4())
    main = list(read_lines(transcript("m_subagent__b9a49076").read_bytes()))
    sub = list(read_lines(transcript("m_subagent__subagent").read_bytes()))

    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, "b9a49076-7ef0-4409-b3eb-ff11c5c634e6", main)
            await link.send_lines(session_id, "agent-a0f2c7af82d1d7fd7", sub)

    asyncio.run(run())
    with phone_client(relay, account.phone_token) as client:
        base = f"/api/sessions/{session_id}"
        for path in (f"{base}/events", f"{base}/subagents/a0f2c7af82d1d7fd7/events"):
            response = client.get(path, params=query)
            assert response.status_code == 400, (path, response.text)
            assert response.json()["error"]["code"] == "bad_after"


# -- 8. line offsets -----------------------------------------------------------------------------


def test_dropped_lines_are_reported_in_the_ack_by_offset_and_reason(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with raw_link(relay, account.device_token) as ws:
            await hello(ws)
            line = escaped(user_text("x"))
            first = await answer(
                ws,
                lines_json(
                    session_id,
                    [(0, line), (500, line), (300, line), (2**50, line), (700, line)],
                ),
            )
            again = await answer(ws, lines_json(session_id, [(500, line), (900, line)], batch=2))
            later = await answer(ws, lines_json(session_id, [(1100, line)], batch=3))
            return first, again, later

    first, again, later = asyncio.run(run())
    assert first["type"] == "ack", first
    assert first["dropped"] == [
        {"offset": 300, "reason": "out_of_order"},
        {"offset": 2**50, "reason": "out_of_range"},
    ]
    assert first["through_offset"] == 700  # the out-of-range line did not poison the rest
    assert again["dropped"] == [{"offset": 500, "reason": "duplicate"}]
    assert later["through_offset"] == 1100 and later["dropped"] == []
    assert len(stored(relay, account, session_id)) == 5


def test_the_agent_logs_the_lines_the_relay_dropped(
    relay: RelayServer, account: Account, caplog: pytest.LogCaptureFixture
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> None:
        link = agent_link(relay.url, account.device_token)
        link.start()
        try:
            await asyncio.wait_for(link.linked.wait(), 10)
            await link.send_lines(
                session_id, "conv", [user_line(100, "a"), user_line(50, "b")], cwd="/w"
            )
        finally:
            await link.stop()

    with caplog.at_level(logging.INFO, logger="agent.link"):
        asyncio.run(run())
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert dropped and "50" in dropped[0] and "out_of_order" in dropped[0], caplog.text


def test_a_batch_the_relay_fails_on_is_kept_by_the_agent_for_later(make_relay: Any) -> None:
    from agent.link import BatchRefused

    server: RelayServer = make_relay()
    acct = server.account()
    fail_first_ingest(server)
    session_id = str(uuid.uuid4())

    async def run() -> tuple[str, int]:
        link = agent_link(server.url, acct.device_token)
        link.start()
        try:
            await asyncio.wait_for(link.linked.wait(), 10)
            lines = [user_line(0, "a")]
            with pytest.raises(BatchRefused) as refused:
                await link.send_lines(session_id, "conv", lines, cwd="/w")
            ack = await link.send_lines(session_id, "conv", lines, cwd="/w")  # sent again later
            return str(refused.value), ack.last_seq
        finally:
            await link.stop()

    reason, last_seq = asyncio.run(run())
    assert "internal" in reason and last_seq == 1


# -- 10. pages are bounded in bytes --------------------------------------------------------------


def test_event_pages_are_bounded_in_bytes_and_read_whole(make_relay: Any) -> None:
    server: RelayServer = make_relay(max_page_bytes=100_000, events_kept=1000)
    acct = server.account()
    session_id = str(uuid.uuid4())
    sizes = [30_000] * 9 + [250_000] + [30_000] * 5  # one event alone over the limit

    async def run() -> None:
        async with mac(server, acct.device_token) as link:
            lines = [user_line(i * 10**6, "x" * n) for i, n in enumerate(sizes)]
            await link.send_lines(session_id, "conv", lines)

    asyncio.run(run())
    seen: list[int] = []
    after = 0
    while True:
        response = page(server, acct, session_id, after=after)
        assert response.status_code == 200
        body = response.json()
        seqs = [e["seq"] for e in body["events"]]
        assert seqs, body
        assert len(response.content) <= 100_000 + 1000 or len(seqs) == 1
        seen += seqs
        after = seqs[-1]
        if not body["has_more"]:
            break
    assert seen == list(range(1, len(sizes) + 1))
    # Backwards too: each page the newest that fit, the next one before its first.
    backwards: list[int] = []
    before = len(sizes) + 1
    while before > 1:
        body = page(server, acct, session_id, before=before).json()
        seqs = [e["seq"] for e in body["events"]]
        assert seqs
        backwards = seqs + backwards
        before = seqs[0]
        if not body["has_more"]:
            break
    assert backwards == list(range(1, len(sizes) + 1))


# -- 14. a replaced link ------------------------------------------------------------------------


@pytest.fixture
def relay_log() -> Iterator[list[logging.LogRecord]]:
    """Records of the relay's and uvicorn's loggers (uvicorn's do not reach the root logger)."""
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    handler = Keep(level=logging.DEBUG)
    names = ["relay", "uvicorn", "uvicorn.error", "uvicorn.asgi"]
    loggers = [logging.getLogger(n) for n in names]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.INFO)
    try:
        yield records
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)


def test_a_replaced_link_logs_one_line_not_a_traceback(
    relay: RelayServer, account: Account, relay_log: list[logging.LogRecord]
) -> None:
    async def run() -> None:
        first = MacLink(relay.url, account.device_token)
        await first.connect()
        second = MacLink(relay.url, account.device_token)
        await second.connect()
        for _ in range(200):
            if not first.connected:
                break
            await asyncio.sleep(0.02)
        await second.close()
        await first.close()

    asyncio.run(run())
    assert wait_until(lambda: not online(relay, account, account.device_id))
    mine = [r for r in relay_log if account.device_id in r.getMessage() or r.exc_info]
    assert not [r for r in relay_log if r.exc_info], [r.getMessage() for r in relay_log]
    assert [r for r in mine if "replaced" in r.getMessage()], [r.getMessage() for r in mine]


def test_history_of_an_earlier_epoch_below_the_epochs_start_is_shown_as_this_epochs(
    relay: RelayServer, account: Account
) -> None:
    # The relay lost the session; the Mac's archive holds 1..40 numbered in the old epoch.
    session_id = str(uuid.uuid4())
    archive = MemoryArchive()
    archive[session_id] = {
        s: NumberedEvent(
            kind=EventKind.USER, text=f"old {s}", session_id=session_id, seq=s, epoch="old"
        )
        for s in range(1, 41)
    }
    archive.set_epoch(session_id, "old")

    async def run() -> tuple[str, httpx.Response]:
        link = MacLink(relay.url, account.device_token, archive=archive)
        welcome = await link.connect()
        try:
            response = await asyncio.to_thread(page, relay, account, session_id, after=0)
            return str(welcome.sessions[0].epoch), response
        finally:
            await link.close()

    epoch, response = asyncio.run(run())
    assert response.status_code == 200, response.text
    events = response.json()["events"]
    assert [e["seq"] for e in events] == list(range(1, 41))
    assert {e["epoch"] for e in events} == {epoch} and epoch != "old"


def test_another_mac_cannot_update_a_sessions_live_side(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    fill(relay, account.device_token, session_id, 1)
    other_token, _ = second_mac(relay, account)
    card = {"id": "fake", "kind": "permission", "title": "Bash", "options": []}

    async def run() -> dict[str, Any]:
        async with raw_link(relay, other_token) as ws:
            await hello(ws)
            update = {"type": "session_update", "session": {"session_id": session_id, "card": card}}
            await ws.send(json.dumps(update))
            return await until(ws, "error")

    error = asyncio.run(run())
    assert error["code"] == "not_your_session"
    with phone_client(relay, account.phone_token) as client:
        assert client.get(f"/api/sessions/{session_id}").json()["card"] is None


def test_a_relay_message_the_mac_cannot_read_is_skipped_not_the_end_of_its_link() -> None:
    """A newer relay's message type, or a broken one, must not end the Mac's read loop: the
    commands after it are still run and answered."""
    from wire.protocol import Command, CommandResult

    answers: list[dict[str, Any]] = []

    async def fake_relay(ws: Any) -> None:
        await ws.recv()  # hello
        await ws.send(Welcome(device_id="mac_1").model_dump_json())
        await ws.send('{"type": "brand_new_kind", "x": 1}')
        await ws.send('{"type": "ack", "batch": "not a number"}')
        await ws.send(
            Command(
                command_id="c1", name="interrupt", session_id=str(uuid.uuid4())
            ).model_dump_json()
        )
        answers.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))

    async def on_command(command: Command) -> CommandResult:
        return CommandResult(command_id=command.command_id, ok=True)

    async def run() -> None:
        async with websockets.serve(fake_relay, "127.0.0.1", 0) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            link = MacLink(f"http://127.0.0.1:{port}", "token", on_command=on_command)
            await link.connect()
            try:
                for _ in range(200):
                    if answers:
                        break
                    await asyncio.sleep(0.05)
            finally:
                await link.close()

    asyncio.run(run())
    assert answers and answers[0]["type"] == "command_result" and answers[0]["ok"] is True


# -- issue 20: session ids are UUIDs on the link too; sessions per Mac are bounded ----------------


def _sessions(server: RelayServer, acct: Account) -> set[str]:
    with phone_client(server, acct.phone_token) as client:
        return {s["id"] for s in client.get("/api/sessions").json()["sessions"]}


NOT_SESSION_IDS = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=60),
    st.uuids().map(lambda u: str(u).upper()),  # another spelling of a UUID
    st.uuids().map(lambda u: u.hex),
    st.uuids().map(lambda u: "{" + str(u) + "}"),
    st.sampled_from(["SID", "../../x", "s1", " " + str(uuid.uuid4()), str(uuid.uuid4()) + "\n"]),
).filter(lambda text: not _canonical(text))


def _canonical(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(session_id=NOT_SESSION_IDS)
def test_a_lines_batch_for_an_id_that_is_not_a_uuid_is_refused_and_the_link_goes_on(
    relay: RelayServer, account: Account, session_id: str
) -> None:
    good = str(uuid.uuid4())

    async def go() -> None:
        async with raw_link(relay, account.device_token) as ws:
            assert (await hello(ws))["type"] == "welcome"
            batch = {
                "type": "lines",
                "batch": 7,
                "session_id": session_id,
                "conversation_id": "conv",
                "cwd": "/w",
                "lines": [{"offset": 0, "text": user_text("hello")}],
            }
            refused = await answer(ws, json.dumps(batch))
            assert refused["type"] == "error" and refused["code"] == "bad_session_id", refused
            assert refused["batch"] == 7 and "UUID" in refused["message"]
            # The link goes on: the next batch, for a real id, is stored.
            ok = await answer(ws, json.dumps({**batch, "batch": 8, "session_id": good}))
            assert ok["type"] == "ack" and ok["last_seq"] == 1, ok

    asyncio.run(go())
    assert session_id not in _sessions(relay, account)


def test_a_hello_naming_ids_that_are_not_uuids_leaves_them_out_and_says_so(
    relay: RelayServer, account: Account
) -> None:
    good = str(uuid.uuid4())

    async def go() -> None:
        async with raw_link(relay, account.device_token) as ws:
            positions = [{"session_id": s} for s in ("SID", good, good.upper(), "../x")]
            welcome = await hello(ws, positions)
            assert [p["session_id"] for p in welcome["sessions"]] == [good]
            error = await until(ws, "error")
            assert error["code"] == "bad_session_id" and "3 session id(s)" in error["message"]
            assert await still_up(ws)

    asyncio.run(go())
    assert good in _sessions(relay, account)
    assert not {"SID", good.upper(), "../x"} & _sessions(relay, account)


def test_a_mac_past_sessions_max_per_mac_stores_no_new_session_from_any_side(
    make_relay: Any,
) -> None:
    server: RelayServer = make_relay(sessions_max_per_mac=2)
    acct = server.account()
    first, second, third, fourth, fifth = (str(uuid.uuid4()) for _ in range(5))

    async def go() -> None:
        async with raw_link(server, acct.device_token) as ws:
            welcome = await hello(ws, [{"session_id": first}])  # one new from hello
            assert [p["session_id"] for p in welcome["sessions"]] == [first]
            lines = {
                "type": "lines",
                "batch": 1,
                "session_id": second,
                "conversation_id": "conv",
                "lines": [{"offset": 0, "text": user_text("two")}],
            }
            assert (await answer(ws, json.dumps(lines)))["type"] == "ack"  # two: the limit
            refused = await answer(ws, json.dumps({**lines, "batch": 2, "session_id": third}))
            assert refused["type"] == "error" and refused["code"] == "too_many_sessions"
            assert refused["batch"] == 2 and "sessions_max_per_mac" in refused["message"]
            # A session already stored still takes its lines.
            more = {**lines, "batch": 3, "lines": [{"offset": 100, "text": user_text("2b")}]}
            assert (await answer(ws, json.dumps(more)))["last_seq"] == 2
            assert await still_up(ws)
        async with raw_link(server, acct.device_token) as ws:
            welcome = await hello(ws, [{"session_id": first}, {"session_id": fourth}])
            assert [p["session_id"] for p in welcome["sessions"]] == [first]
            error = await until(ws, "error")
            assert error["code"] == "too_many_sessions" and fourth in error["message"]
            assert "sessions_max_per_mac" in error["message"] and await still_up(ws)

    asyncio.run(go())
    assert _sessions(server, acct) == {first, second}
    # The phone's side: a new session on that Mac is refused before it is stored or sent.
    with phone_client(server, acct.phone_token) as client:

        async def on_command(command: Any) -> Any:
            raise AssertionError("nothing may reach the Mac")

        async def start() -> httpx.Response:
            async with mac(server, acct.device_token, on_command=on_command):
                return await asyncio.to_thread(
                    client.post,
                    "/api/sessions",
                    json={"device_id": acct.device_id, "cwd": "/w", "session_id": fifth},
                )

        response = asyncio.run(start())
        assert response.status_code == 409, response.text
        error = response.json()["error"]
        assert error["code"] == "too_many_sessions" and "sessions_max_per_mac" in error["message"]
    assert _sessions(server, acct) == {first, second}


def test_what_a_mac_says_of_itself_is_kept_cut_to_a_bounded_size(
    relay: RelayServer, account: Account
) -> None:
    huge = {"name": "Studio " + "M" * 100_000, "os": "macOS " + "x" * 50_000}

    async def go() -> None:
        async with raw_link(relay, account.device_token) as ws:
            await ws.send(json.dumps({"type": "hello", "device": huge, "sessions": []}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "welcome"
            later = {**huge, "claude_version": "2.1." + "9" * 80_000}
            await ws.send(json.dumps({"type": "device", "device": later}))
            assert await still_up(ws)

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as client:
        [device] = [
            d for d in client.get("/api/devices").json()["devices"] if d["id"] == account.device_id
        ]
    assert device["name"] == ("Studio " + "M" * 100_000)[:200]
    assert all(len(v) <= 200 for v in device["info"].values() if isinstance(v, str))
    assert device["info"]["claude_version"].startswith("2.1.99")


def test_a_sessions_conversations_are_bounded_the_newest_kept_and_no_event_lost(
    make_relay: Any,
) -> None:
    """A Mac sending lines under ever new conversation ids (its own session's) grows neither
    the session's listed conversations, which every snapshot carries, nor its stored offsets
    past conversations_max_per_session: the newest are kept, and every event stays. An id that
    is no conversation's (a path, a long text) is refused, and the link goes on."""
    server: RelayServer = make_relay(conversations_max_per_session=3)
    acct = server.account()
    session_id = str(uuid.uuid4())
    claudes = [str(uuid.uuid4()) for _ in range(6)]
    subagents = ["agent-a0f2c7af82d1d7fd7", "agent-a6f78510e898a61f4"]

    async def go() -> None:
        async with raw_link(server, acct.device_token) as ws:
            await hello(ws)
            for batch, conversation in enumerate([*claudes[:3], *subagents, *claudes[3:]], 1):
                lines = {
                    "type": "lines",
                    "batch": batch,
                    "session_id": session_id,
                    "conversation_id": conversation,
                    "cwd": "/w",
                    "lines": [{"offset": 0, "text": user_text(f"line {batch}")}],
                }
                assert (await answer(ws, json.dumps(lines)))["type"] == "ack"
            for bad in ("../../etc/passwd", "c" * 129, "-rf", ""):
                wrong = {**lines, "batch": 99, "conversation_id": bad}
                refused = await answer(ws, json.dumps(wrong))
                assert refused["type"] == "error", refused
                assert refused["code"] == "bad_conversation_id" and refused["batch"] == 99
            assert await still_up(ws)

    asyncio.run(go())
    with phone_client(server, acct.phone_token) as client:
        snapshot = client.get(f"/api/sessions/{session_id}").json()
    assert snapshot["conversation_ids"] == claudes[3:]  # the newest three, in their order
    assert snapshot["conversation_id"] == claudes[-1]
    assert len(stored(server, acct, session_id)) == 8  # every line's event stays
    offsets = server.state.store.db.query(
        "SELECT conversation_id FROM conversations WHERE session_id = ?", (session_id,)
    )
    assert {r[0] for r in offsets} == set(claudes[3:])  # the newest three stored offsets
