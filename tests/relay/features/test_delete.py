"""DELETE /api/sessions/{id}: a person deletes a session now, through retention's deletion
(relay/features/retention.py ``delete_now``): its Mac is told first (``delete_history``: its claude
stops, its archive goes), then every row under its id goes on the relay; an offline Mac is told
through retention's ledger when it links again. On both store backends, with a scripted Mac."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable

import httpx

from tests.support.api import SMALL, error_of, push
from tests.support.cli import cli
from tests.support.relay import RelayServer, mac
from tests.support.retention import FAST, Mac
from tests.support.waits import await_until, wait_for
from wire.client import MemoryArchive
from wire.protocol import Command, CommandResult


async def rows(server: RelayServer, session_id: str) -> dict[str, int]:
    """Rows under the session's id in the core's tables and the search index."""
    store = server.state.store
    found = {}
    for table, column in (
        ("sessions", "id"),
        ("events", "session_id"),
        ("line_uuids", "session_id"),
        ("conversations", "session_id"),
        ("last_known", "session_id"),
    ):
        counted = await store.read(
            f"SELECT COUNT(*) FROM {table} WHERE {column} = ?", (session_id,)
        )
        found[table] = int(counted[0][0])
    return found


def test_delete_stops_it_on_the_mac_and_removes_everything_on_the_relay(
    relay: RelayServer,
) -> None:
    acct = relay.account()
    handler = Mac()
    gone, kept = str(uuid.uuid4()), str(uuid.uuid4())

    async def go() -> None:
        async with mac(
            relay, acct.device_token, on_command=handler, archive=handler.archive
        ) as link:
            await push(link, gone, SMALL)
            await push(link, kept, SMALL)
            await link.wait_for_seq(gone, 2)
            assert (await rows(relay, gone))["events"] > 0
            await asyncio.to_thread(scenario)
            left = await rows(relay, gone)
            assert not any(left.values()), left

    def scenario() -> None:
        headers = {"Authorization": f"Bearer {acct.phone_token}"}
        with httpx.Client(base_url=relay.url, headers=headers, timeout=15) as phone:
            base = f"/api/sessions/{gone}"
            phone.patch(base, json={"locked": True})
            error_of(phone.delete(base), 409, "session_locked")
            assert handler.deleted() == []
            phone.patch(base, json={"locked": False})

            done = phone.delete(base)
            assert done.status_code == 200, done.text
            assert done.json() == {"ok": True, "session_id": gone, "mac": "deleted"}
            assert handler.deleted() == [gone] and gone not in handler.archive
            error_of(phone.get(base), 404, "unknown_session")
            error_of(phone.get(f"{base}/events", params={"after": 0}), 404, "unknown_session")
            error_of(phone.get(f"{base}/stream", params={"after": 0}), 404, "unknown_session")
            error_of(phone.delete(base), 404, "unknown_session")
            listed = {s["id"] for s in phone.get("/api/sessions").json()["sessions"]}
            assert gone not in listed and kept in listed
            found = phone.get("/api/search", params={"q": ""}).json()
            ids = {item["id"] for section in ("here", "elsewhere") for item in found[section]}
            assert gone not in ids and kept in ids
            assert phone.get("/api/retention").json()["waiting_for_mac"] == []

            # From a terminal, by the start of its id.
            printed = cli(relay, acct.phone_token, "delete", kept[:12], "--json").stdout
            assert json.loads(printed) == {"ok": True, "session_id": kept, "mac": "deleted"}
            assert handler.deleted() == [gone, kept]
            cli(relay, acct.phone_token, "delete", kept, code=2)

    asyncio.run(go())


def test_an_offline_mac_deletes_its_copy_when_it_links_again(
    make_relay: Callable[..., RelayServer],
) -> None:
    relay = make_relay(**FAST)  # retention's ledger checked often
    acct = relay.account()
    archive = MemoryArchive()
    session_id = str(uuid.uuid4())

    async def first_life() -> None:
        async with mac(relay, acct.device_token, archive=archive) as link:
            await push(link, session_id, SMALL)
            await link.wait_for_seq(session_id, 2)

    asyncio.run(first_life())
    wait_for(lambda: relay.state.live.link(acct.device_id) is None, 10, "the Mac offline")
    headers = {"Authorization": f"Bearer {acct.phone_token}"}
    with httpx.Client(base_url=relay.url, headers=headers, timeout=15) as phone:
        done = phone.delete(f"/api/sessions/{session_id}")
        assert done.status_code == 200, done.text
        assert done.json()["mac"] == "waiting"
        error_of(phone.get(f"/api/sessions/{session_id}"), 404, "unknown_session")
        waiting = phone.get("/api/retention").json()["waiting_for_mac"]
        assert [w["session_id"] for w in waiting] == [session_id]

    handler = Mac(archive)

    async def second_life() -> None:
        async with mac(relay, acct.device_token, archive=archive, on_command=handler):

            async def told() -> bool:
                return handler.deleted() == [session_id]

            await await_until(told, timeout=15, what="delete_history on the Mac")

    asyncio.run(second_life())
    assert session_id not in archive
    with httpx.Client(base_url=relay.url, headers=headers, timeout=15) as phone:
        wait_for(
            lambda: phone.get("/api/retention").json()["waiting_for_mac"] == [],
            10,
            "nothing left to tell the Mac",
        )
        listed = {s["id"] for s in phone.get("/api/sessions").json()["sessions"]}
        assert session_id not in listed


def test_a_mac_that_refuses_keeps_the_session_everywhere(relay: RelayServer) -> None:
    acct = relay.account()
    session_id = str(uuid.uuid4())

    async def refuse(command: Command) -> CommandResult:
        return CommandResult(
            command_id=command.command_id, ok=False, code="mac_error", error="disk is read-only"
        )

    async def go() -> None:
        async with mac(relay, acct.device_token, on_command=refuse) as link:
            await push(link, session_id, SMALL)
            await asyncio.to_thread(scenario)

    def scenario() -> None:
        headers = {"Authorization": f"Bearer {acct.phone_token}"}
        with httpx.Client(base_url=relay.url, headers=headers, timeout=15) as phone:
            refused = phone.delete(f"/api/sessions/{session_id}")
            assert "read-only" in error_of(refused, 409, "mac_error")["message"]
            page = phone.get(f"/api/sessions/{session_id}/events", params={"after": 0})
            assert page.status_code == 200 and page.json()["events"]

    asyncio.run(go())
