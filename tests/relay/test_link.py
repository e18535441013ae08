"""The agent link over a real WebSocket to a real relay: hello, acks, idempotency, archive."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import pytest

from tests.support.relay import Account, RelayServer, archived, mac, phone_client, transcript
from wire.client import MacLink
from wire.protocol import EventKind, LineRecord, NumberedEvent, SessionInfo
from wire.transcript import read_lines


def lines_of(prefix: str) -> list[LineRecord]:
    return list(read_lines(transcript(prefix).read_bytes()))


def user_line(offset: int, text: str) -> LineRecord:
    body: dict[str, Any] = {
        "type": "user",
        "uuid": str(uuid.uuid4()),
        "timestamp": "2026-11-29T21:33:53.764Z",
        "sessionId": "conv",
        "message": {"role": "user", "content": text},
    }
    return LineRecord(offset=offset, text=json.dumps(body), uuid=body["uuid"])


def stored(server: RelayServer, acct: Account, session_id: str) -> list[dict[str, Any]]:
    with phone_client(server, acct.phone_token) as client:
        response = client.get(f"/api/sessions/{session_id}/events", params={"after": 0})
        assert response.status_code == 200, response.text
        return list(response.json()["events"])


def test_lines_are_acked_numbered_and_sent_back_to_the_mac(
    relay: RelayServer, account: Account
) -> None:
    lines = lines_of("d_bash_permission")
    session_id = str(uuid.uuid4())

    async def run() -> tuple[list[int], dict[int, NumberedEvent]]:
        async with mac(relay, account.device_token) as link:
            acks = []
            for start in range(0, len(lines), 20):
                ack = await link.send_lines(
                    session_id, "conv-1", lines[start : start + 20], cwd="/w"
                )
                acks.append(ack.last_seq)
                assert ack.through_offset == lines[min(start + 19, len(lines) - 1)].offset
            await link.wait_for_seq(session_id, acks[-1])
            return acks, archived(link)[session_id]

    acks, archive = asyncio.run(run())
    assert acks == sorted(acks) and acks[-1] > 0
    events = stored(relay, account, session_id)
    assert [e["seq"] for e in events] == list(range(1, acks[-1] + 1))
    # The Mac's archive holds exactly what the relay stored.
    assert [archive[e["seq"]].model_dump(exclude_none=True) for e in events] == [
        NumberedEvent.model_validate(e).model_dump(exclude_none=True) for e in events
    ]


def test_a_batch_sent_twice_after_reconnect_is_stored_once(
    relay: RelayServer, account: Account
) -> None:
    lines = lines_of("f_ask_question")
    session_id = str(uuid.uuid4())

    async def run() -> tuple[int, int, int]:
        async with mac(relay, account.device_token) as first:
            ack1 = await first.send_lines(session_id, "conv", lines)
        async with mac(relay, account.device_token) as second:
            ack2 = await second.send_lines(session_id, "conv", lines)
            # A resend that overlaps the stored part and adds one new line.
            extra = user_line(lines[-1].offset + 10_000, "one more")
            ack3 = await second.send_lines(session_id, "conv", [*lines[-3:], extra])
        assert ack2.duplicates == len(lines)
        assert ack3.duplicates == 3
        return ack1.last_seq, ack2.last_seq, ack3.last_seq

    first, second, third = asyncio.run(run())
    assert first == second
    assert third == first + 1
    events = stored(relay, account, session_id)
    assert [e["seq"] for e in events] == list(range(1, third + 1))
    assert events[-1]["text"] == "one more"


def test_same_line_copied_into_another_conversation_is_not_shown_twice(
    relay: RelayServer, account: Account
) -> None:
    lines = lines_of("b_idle")
    session_id = str(uuid.uuid4())

    async def run() -> tuple[int, int]:
        async with mac(relay, account.device_token) as link:
            ack1 = await link.send_lines(session_id, "conv-a", lines)
            # Older Claude Code copied history into a new file on resume: same uuids, new offsets.
            shifted = [LineRecord(offset=x.offset + 7, text=x.text, uuid=x.uuid) for x in lines]
            ack2 = await link.send_lines(session_id, "conv-b", shifted)
            return ack1.last_seq, ack2.last_seq

    a, b = asyncio.run(run())
    assert a == b > 0


def test_hello_sends_back_the_events_a_mac_missed(relay: RelayServer, account: Account) -> None:
    lines = lines_of("g_plan_approval")
    session_id = str(uuid.uuid4())

    async def run() -> tuple[int, dict[int, NumberedEvent]]:
        async with mac(relay, account.device_token) as link:
            last = (await link.send_lines(session_id, "conv", lines)).last_seq
            await link.wait_for_seq(session_id, last)
            archive = dict(archived(link)[session_id])
        # The Mac lost the tail of its archive (say the ack arrived but the write did not).
        partial = MacLink(relay.url, account.device_token)
        archived(partial)[session_id] = {s: e for s, e in archive.items() if s <= 4}
        partial.archive.set_epoch(session_id, archive[1].epoch)
        await partial.connect()
        try:
            await partial.wait_for_seq(session_id, last)
            return last, dict(archived(partial)[session_id])
        finally:
            await partial.close()

    last, archive = asyncio.run(run())
    assert sorted(archive) == list(range(1, last + 1))


def test_relay_that_lost_a_session_starts_a_new_epoch_after_the_macs_seq(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> tuple[str | None, int, str]:
        link = MacLink(relay.url, account.device_token)
        link.archive.set_epoch(session_id, "epoch-the-relay-never-saw")
        # The Mac archived 1..40 of a session the relay does not know (its database was replaced).
        archived(link)[session_id] = {
            s: NumberedEvent(
                kind=EventKind.USER, text="x", session_id=session_id, seq=s, epoch="old"
            )
            for s in range(1, 41)
        }
        welcome = await link.connect()
        try:
            pos = next(p for p in welcome.sessions if p.session_id == session_id)
            ack = await link.send_lines(session_id, "conv", [user_line(0, "after the loss")])
            return pos.epoch, ack.last_seq, ack.epoch
        finally:
            await link.close()

    epoch, last_seq, ack_epoch = asyncio.run(run())
    assert epoch not in (None, "old", "epoch-the-relay-never-saw")
    assert ack_epoch == epoch
    assert last_seq == 41  # numbering goes on after the Mac's 40: no seq is given twice
    with phone_client(relay, account.phone_token) as client:
        page = client.get(f"/api/sessions/{session_id}/events", params={"after": 40}).json()
        assert [e["seq"] for e in page["events"]] == [41]
        older = client.get(f"/api/sessions/{session_id}/events", params={"after": 0})
        # 1..40 live only on the Mac, which is gone now: said clearly, never a silent gap.
        assert older.status_code == 409
        assert older.json()["error"]["code"] == "history_unavailable"
        assert older.json()["error"]["oldest_seq"] == 41


def test_the_newest_link_of_a_mac_wins(relay: RelayServer, account: Account) -> None:
    async def run() -> tuple[bool, bool]:
        first = MacLink(relay.url, account.device_token)
        await first.connect()
        second = MacLink(relay.url, account.device_token)
        await second.connect()
        for _ in range(100):
            if not first.connected:
                break
            await asyncio.sleep(0.05)
        try:
            return first.connected, second.connected
        finally:
            await first.close()
            await second.close()

    assert asyncio.run(run()) == (False, True)
    with phone_client(relay, account.phone_token) as client:
        devices = client.get("/api/devices").json()["devices"]
        assert [d["online"] for d in devices if d["id"] == account.device_id] == [False]


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        '{"type": "teleport"}',
        '{"type": "lines", "batch": 1, "session_id": "s", "conversation_id": "c",'
        ' "lines": [{"offset": -5, "text": "x"}]}',
        "[1, 2, 3]",
    ],
)
def test_bad_link_messages_get_an_error_and_touch_nothing(
    relay: RelayServer, account: Account, bad: str
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> tuple[list[str], int]:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, "conv", lines_of("b_idle"))
            await link.send_raw(bad)
            ack = await link.send_lines(session_id, "conv", [user_line(10**7, "still works")])
            return [e.code for e in link.errors], ack.last_seq

    before_codes, last = asyncio.run(run())
    assert before_codes == ["bad_message"]
    events = stored(relay, account, session_id)
    assert [e["seq"] for e in events] == list(range(1, last + 1))
    assert events[-1]["text"] == "still works"


def test_binary_frames_are_refused_politely(relay: RelayServer, account: Account) -> None:
    async def run() -> list[str]:
        async with mac(relay, account.device_token) as link:
            assert link._ws is not None
            await link._ws.send(b"\xff\xfe binary")
            await link.send_lines(str(uuid.uuid4()), "conv", [user_line(0, "ok")])
            return [e.code for e in link.errors]

    assert asyncio.run(run()) == ["bad_message"]


def test_a_line_over_the_limit_becomes_a_marker_and_is_not_resent(make_relay: object) -> None:
    server: RelayServer = make_relay(max_line_bytes=2000)  # type: ignore[operator]
    acct = server.account()
    session_id = str(uuid.uuid4())
    huge = user_line(100, "x" * 5000)

    async def run() -> tuple[list[str], int, int]:
        async with mac(server, acct.device_token) as link:
            ack = await link.send_lines(session_id, "conv", [user_line(0, "small"), huge])
            again = await link.send_lines(session_id, "conv", [huge])
            return ack.rejected, ack.through_offset, again.duplicates

    rejected, through, duplicates = asyncio.run(run())
    assert len(rejected) == 1 and "limit 2000" in rejected[0]
    assert through == 100 and duplicates == 1
    events = stored(server, acct, session_id)
    assert [e["kind"] for e in events] == ["user", "marker"]
    assert events[1]["marker"] == "line_too_large"


def test_subagent_lines_keep_the_sessions_conversation(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    main = lines_of("m_subagent__b9a49076")
    sub = lines_of("m_subagent__subagent")

    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, "b9a49076-7ef0-4409-b3eb-ff11c5c634e6", main)
            await link.send_lines(session_id, "agent-a0f2c7af82d1d7fd7", sub)

    asyncio.run(run())
    with phone_client(relay, account.phone_token) as client:
        snap = client.get(f"/api/sessions/{session_id}").json()
    assert snap["conversation_id"] == "b9a49076-7ef0-4409-b3eb-ff11c5c634e6"
    events = stored(relay, account, session_id)
    assert any(e.get("agent_id") == "a0f2c7af82d1d7fd7" for e in events)


def test_session_updates_reach_the_snapshot_and_vanish_when_the_mac_goes(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> tuple[dict[str, object], dict[str, object]]:
        async with httpx.AsyncClient(
            base_url=relay.url, headers={"Authorization": f"Bearer {account.phone_token}"}
        ) as client:
            async with mac(relay, account.device_token) as link:
                await link.send_lines(session_id, "conv", [user_line(0, "hi")], cwd="/proj")
                await link.update(
                    SessionInfo(
                        session_id=session_id, state="busy", activity="coding", preview="Writ"
                    )
                )
                for _ in range(100):
                    snap = (await client.get(f"/api/sessions/{session_id}")).json()
                    if snap["state"] == "busy":
                        break
                    await asyncio.sleep(0.02)
                online = snap
            for _ in range(100):
                offline = (await client.get(f"/api/sessions/{session_id}")).json()
                if offline["mark"] == "offline":
                    break
                await asyncio.sleep(0.02)
            return online, offline

    online, offline = asyncio.run(run())
    assert (online["state"], online["activity"], online["preview"], online["cwd"]) == (
        "busy",
        "coding",
        "Writ",
        "/proj",
    )
    assert offline["mark"] == "offline" and offline["state"] == "ended"


def test_a_revoked_device_token_closes_the_open_link(make_relay: object) -> None:
    server: RelayServer = make_relay(auth_recheck_interval=0.2)  # type: ignore[operator]
    acct = server.account()

    async def run() -> bool:
        link = MacLink(server.url, acct.device_token)
        await link.connect()
        try:
            tokens = server.state.store.list_tokens_sync()
            token_id = next(t["id"] for t in tokens if t["subject_id"] == acct.device_id)
            assert server.state.store.revoke_token_sync(token_id)
            for _ in range(100):
                if not link.connected:
                    break
                await asyncio.sleep(0.05)
            return link.connected
        finally:
            await link.close()

    assert asyncio.run(run()) is False


def test_a_card_survives_later_updates_and_clears_only_when_told(
    relay: RelayServer, account: Account
) -> None:
    from wire.protocol import Card, CardOption, HeldMessage

    session_id = str(uuid.uuid4())
    card = Card(
        id="c1", kind="permission", title="Bash command", options=[CardOption(key="1", label="Yes")]
    )

    async def snapshot(client: httpx.AsyncClient, want: object, key: str) -> dict[str, object]:
        for _ in range(100):
            snap = (await client.get(f"/api/sessions/{session_id}")).json()
            if snap[key] == want:
                return dict(snap)
            await asyncio.sleep(0.02)
        raise AssertionError(f"{key} never became {want!r}: {snap}")

    async def run() -> None:
        async with (
            httpx.AsyncClient(
                base_url=relay.url, headers={"Authorization": f"Bearer {account.phone_token}"}
            ) as client,
            mac(relay, account.device_token) as link,
        ):
            await link.send_lines(session_id, "conv", [user_line(0, "hi")])
            await link.update(SessionInfo(session_id=session_id, state="busy"))
            await link.update(SessionInfo(session_id=session_id, state="waiting", card=card))
            await link.update(
                SessionInfo(session_id=session_id, held=[HeldMessage(id="h1", text="later")])
            )
            snap = await snapshot(
                client,
                [
                    {
                        "id": "h1",
                        "text": "later",
                        "state": "held",
                        "created_at": None,
                        "when": "held",
                        "attachments": [],
                    }
                ],
                "held",
            )
            assert snap["card"]["id"] == "c1" and snap["state"] == "waiting"  # type: ignore[index]
            await link.update(SessionInfo(session_id=session_id, state="busy", clear_card=True))
            snap = await snapshot(client, None, "card")
            assert snap["state"] == "busy"
            assert link.connected  # no update ever cost the link

    asyncio.run(run())


def test_a_refused_token_is_read_from_the_close_code(relay: RelayServer, account: Account) -> None:
    from agent.errors import AgentError, NotLinked
    from agent.link import RelayLink
    from wire.client import MemoryArchive
    from wire.errors import LinkLost, LinkRefused, WireError
    from wire.protocol import CLOSE_UNAUTHORIZED, CommandResult, DeviceInfo

    async def go() -> None:
        with pytest.raises(LinkRefused) as refused:
            async with mac(relay, account.phone_token):
                pass
        assert refused.value.close_code == CLOSE_UNAUTHORIZED and refused.value.token_refused

        async def no_command(command: object) -> CommandResult:
            raise AssertionError("no command expected")

        async def linked(welcome: object) -> None:
            raise AssertionError("a phone token must not link")

        agent_link = RelayLink(
            relay.url, "cbd_not-a-token", DeviceInfo(name="m"), MemoryArchive(), no_command, linked
        )
        agent_link.start()
        try:
            async with asyncio.timeout(10):
                while agent_link.refused is None:
                    await asyncio.sleep(0.02)
        finally:
            await agent_link.stop()
        # One root per package: the agent's and the shared package's errors are each one tree.
        assert issubclass(NotLinked, AgentError) and issubclass(LinkLost, WireError)

    asyncio.run(go())
