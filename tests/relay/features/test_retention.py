"""Retention: active → archived → deleted with configurable ages, pins, read-only
archived sessions, deletion on the relay and over the link on the Mac (also when it comes back
later), the schedule and its report. The relay's clock is injected (``Retention.clock``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from relay.features.retention import BUSY, DAY, RUN_LOCK, Ages, SessionAge, plan
from tests.support.api import SMALL, error_of, new_id, push
from tests.support.cli import cli
from tests.support.postgres import PostgresCluster
from tests.support.relay import RelayServer, mac, phone_client
from tests.support.retention import FAST, Clock, Mac, retention_of, run
from tests.support.waits import await_until, wait_for
from wire.client import MemoryArchive
from wire.protocol import SessionInfo

AGES = Ages(archive_after=30 * DAY, delete_after=180 * DAY)

# -- the rules (pure) ------------------------------------------------------------------------


@pytest.fixture
def pg_url(postgres: PostgresCluster) -> str:
    """An empty database of the test's own on the run's PostgreSQL cluster."""
    return postgres.new_database("retention")


def age(sid: str, idle_days: float, now: float, **kw: Any) -> SessionAge:
    return SessionAge(sid, updated_at=now - idle_days * DAY, last_seq=5, **kw)


def test_active_sessions_are_archived_after_the_idle_age() -> None:
    now = 1_000_000_000.0
    result = plan([age("fresh", 29.9, now), age("old", 30, now), age("older", 400, now)], now, AGES)
    assert result.archive == ["old", "older"]
    assert result.delete == [] and result.restore == []


def test_pinned_and_working_sessions_are_kept() -> None:
    now = 1_000_000_000.0
    sessions = [age("pinned", 90, now, pinned=True), age("busy", 90, now), age("idle", 90, now)]
    result = plan(sessions, now, AGES, working={"busy"})
    assert result.archive == ["idle"]
    assert result.kept_pinned == ["pinned"] and result.kept_working == ["busy"]


def test_a_person_touching_retention_restarts_the_idle_clock() -> None:
    now = 1_000_000_000.0
    unpinned_lately = age("s", 90, now, since=now - 2 * DAY)
    assert plan([unpinned_lately], now, AGES).archive == []


def test_archived_sessions_are_deleted_after_the_delete_age_unless_kept() -> None:
    now = 1_000_000_000.0

    def archived(sid: str, days_ago: float, **kw: Any) -> SessionAge:
        return SessionAge(
            sid,
            updated_at=now - 500 * DAY,
            last_seq=kw.pop("last_seq", 5),
            stage="archived",
            archived_at=now - days_ago * DAY,
            archived_seq=5,
            **kw,
        )

    result = plan(
        [
            archived("young", 179),
            archived("due", 180),
            archived("active_again", 200, last_seq=9),  # new events since it was archived
            archived("pinned", 200, pinned=True),
        ],
        now,
        AGES,
    )
    assert result.delete == ["due"]
    assert sorted(result.restore) == ["active_again", "pinned"]
    assert result.archive == []


def test_an_age_of_zero_turns_the_step_off() -> None:
    now = 1_000_000_000.0
    never = Ages(archive_after=0, delete_after=0)
    old = SessionAge("a", now - 999 * DAY, 1, stage="archived", archived_at=now - 999 * DAY)
    assert plan([age("x", 999, now), old], now, never).archive == []
    assert plan([old], now, never).delete == []


# -- through the relay ---------------------------------------------------------------------------


def ids(items: list[dict[str, Any]]) -> list[str]:
    return sorted(i["session_id"] for i in items)


def session_rows(server: RelayServer, session_id: str) -> dict[str, int]:
    """Rows under the session's id in every table that has a session_id column."""

    async def count() -> dict[str, int]:
        store = server.state.store
        found: dict[str, int] = {}
        if store.dialect.postgres:
            tables = await store.read(
                "SELECT table_name FROM information_schema.columns WHERE column_name = 'session_id'"
                " AND table_schema = current_schema()"
            )
            with_ids = [str(r[0]) for r in tables]
        else:
            tables = await store.read(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
            with_ids = [
                str(name)
                for (name,) in tables
                if "session_id" in {r[1] for r in await store.read(f'PRAGMA table_info("{name}")')}
            ]
        for name in with_ids:
            if not name.startswith("session_fts_"):
                rows = await store.read(
                    f'SELECT COUNT(*) FROM "{name}" WHERE session_id = ?', (session_id,)
                )
                found[name] = int(rows[0][0])
        rows = await store.read("SELECT COUNT(*) FROM sessions WHERE id = ?", (session_id,))
        found["sessions"] = int(rows[0][0])
        return found

    return asyncio.run(count())


def test_stages_pins_read_only_archive_and_deletion_on_a_linked_mac(
    make_relay: Callable[..., RelayServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="relay.features.retention")
    server = make_relay(**FAST)
    acct = server.account()
    clock = Clock()
    retention_of(server).clock = clock
    handler = Mac()
    old, kept, other = new_id(), new_id(), new_id()

    async def go() -> None:
        headers = {"Authorization": f"Bearer {acct.phone_token}"}
        async with mac(
            server, acct.device_token, on_command=handler, archive=handler.archive
        ) as link:
            for sid in (old, kept, other):
                await push(link, sid, SMALL)
            await asyncio.to_thread(scenario, headers)

    def scenario(headers: dict[str, str]) -> None:
        with httpx.Client(base_url=server.url, headers=headers, timeout=15) as client:
            base = f"/api/sessions/{old}"
            clock.days(29)
            early = run(client)
            assert early["archived"] == [] and early["counts"]["active"] == 3

            pinned = client.post(f"/api/sessions/{kept}/pin").json()
            assert pinned["pinned"] is True and pinned["stage"] == "active"

            clock.days(31)
            report = run(client)
            assert ids(report["archived"]) == sorted([old, other])
            assert report["archived"][0]["idle_days"] == pytest.approx(31, abs=0.1)
            assert report["kept_pinned"] == 1
            assert report["counts"] == {"active": 1, "archived": 2, "pinned": 1}
            assert report["trigger"] == "request" and "archived 2" in report["summary"]
            assert report["archive_after_days"] == 30 and report["delete_after_days"] == 180

            # Archived: still listed and readable, but read-only.
            listed = {s["id"] for s in client.get("/api/sessions").json()["sessions"]}
            assert {old, kept, other} <= listed
            page = client.get(f"{base}/events", params={"after": 0})
            assert page.status_code == 200 and page.json()["events"]
            view = client.get(f"{base}/retention").json()
            assert view["stage"] == "archived" and view["delete_at"] is not None
            asked = len(handler.commands)
            refused = client.post(f"{base}/messages", json={"text": "hello"})
            assert "read-only" in error_of(refused, 409, "session_archived")["message"]
            error_of(client.post(f"{base}/interrupt"), 409, "session_archived")
            error_of(
                client.put(f"{base}/policy", json={"allow_all": True}), 409, "session_archived"
            )
            assert len(handler.commands) == asked  # the Mac was never asked

            # Pinning an archived session makes it active again at once.
            back = client.post(f"/api/sessions/{other}/pin").json()
            assert back["stage"] == "active" and back["pinned"] is True
            sent = client.post(f"/api/sessions/{other}/messages", json={"text": "hi"})
            assert sent.status_code == 200, sent.text

            overview = client.get("/api/retention").json()
            assert [a["session_id"] for a in overview["archived"]] == [old]
            assert sorted(overview["pinned"]) == sorted([kept, other])
            assert overview["last_run"]["summary"] == report["summary"]
            assert overview["settings"]["archive_after_days"] == 30

            clock.days(31 + 179)
            assert run(client)["deleted"] == []
            assert session_rows(server, old)["events"] > 0

            clock.days(31 + 181)
            report = run(client)
            (gone,) = report["deleted"]
            assert gone["session_id"] == old and "deleted 1" in report["summary"]
            # Told over the link in the same run, or (a link the retention loop has not noted
            # yet) at its next tick: the Mac deletes it either way, and the ledger empties.
            assert gone["mac"] in ("deleted", "waiting"), gone
            wait_for(lambda: handler.deleted() == [old], 10, "delete_history on the Mac")
            wait_for(
                lambda: client.get("/api/retention").json()["waiting_for_mac"] == [],
                10,
                "the Mac's confirmation",
            )
            assert old not in handler.archive
            error_of(client.get(base), 404, "unknown_session")
            error_of(client.get(f"{base}/events", params={"after": 0}), 404, "unknown_session")
            rows = session_rows(server, old)
            assert rows["sessions"] == 0 and rows["events"] == 0
            assert not any(rows.values()), rows  # nothing left under its id anywhere
            assert client.get("/api/retention").json()["waiting_for_mac"] == []
            # The pinned ones are kept all along.
            listed = {s["id"] for s in client.get("/api/sessions").json()["sessions"]}
            assert {kept, other} <= listed and old not in listed

    asyncio.run(go())
    lines = [r.getMessage() for r in caplog.records if r.name == "relay.features.retention"]
    assert any("archived 2" in line for line in lines), lines
    assert any("deleted 1 (" in line for line in lines), lines  # told now or at the next tick
    assert any("1 deleted sessions also deleted on their Macs" in line for line in lines), lines


def test_an_offline_mac_is_told_of_the_deletion_when_it_links_again(
    make_relay: Callable[..., RelayServer],
) -> None:
    server = make_relay(**FAST)
    acct = server.account()
    clock = Clock()
    retention_of(server).clock = clock
    archive = MemoryArchive()
    session_id = new_id()

    async def first_life() -> None:
        async with mac(server, acct.device_token, archive=archive) as link:
            await push(link, session_id, SMALL)
            await link.wait_for_seq(session_id, 2)

    asyncio.run(first_life())
    assert session_id in archive
    wait_for(lambda: server.state.live.link(acct.device_id) is None, 10, "the Mac offline")

    with phone_client(server, acct.phone_token) as client:
        clock.days(31)
        assert ids(run(client)["archived"]) == [session_id]
        clock.days(31 + 180)
        report = run(client)
        assert report["deleted"][0]["mac"] == "waiting"
        assert "still to be deleted on an offline Mac" in report["summary"]
        waiting = client.get("/api/retention").json()["waiting_for_mac"]
        assert [w["session_id"] for w in waiting] == [session_id]
        assert waiting[0]["device_id"] == acct.device_id
        assert session_rows(server, session_id)["events"] == 0

    handler = Mac(archive)

    async def second_life() -> None:
        # Its hello still lists the session (the relay re-creates an empty row for it); then
        # it is told to delete it, and the relay drops that row again.
        async with mac(server, acct.device_token, archive=archive, on_command=handler):

            async def told() -> bool:
                return handler.deleted() == [session_id]

            await await_until(told, timeout=10, what="delete_history on the Mac")

    asyncio.run(second_life())
    assert session_id not in archive
    with phone_client(server, acct.phone_token) as client:
        wait_for(
            lambda: client.get("/api/retention").json()["waiting_for_mac"] == [],
            10,
            "nothing left to tell the Mac",
        )
        listed = {s["id"] for s in client.get("/api/sessions").json()["sessions"]}
        assert session_id not in listed
    assert session_rows(server, session_id)["sessions"] == 0


def test_new_events_make_an_archived_session_active_again(
    make_relay: Callable[..., RelayServer],
) -> None:
    server = make_relay(**FAST)
    acct = server.account()
    clock = Clock()
    retention_of(server).clock = clock
    session_id = new_id()
    archive = MemoryArchive()

    async def send(prefix: str) -> None:
        async with mac(server, acct.device_token, archive=archive) as link:
            await push(link, session_id, prefix)

    asyncio.run(send(SMALL))
    with phone_client(server, acct.phone_token) as client:
        clock.days(31)
        assert ids(run(client)["archived"]) == [session_id]
        asyncio.run(send("d_bash_permission"))  # its Mac wrote more
        report = run(client)
        assert ids(report["restored"]) == [session_id]
        assert client.get(f"/api/sessions/{session_id}/retention").json()["stage"] == "active"


def test_a_working_session_is_not_archived(make_relay: Callable[..., RelayServer]) -> None:
    server = make_relay(**FAST)
    acct = server.account()
    clock = Clock()
    retention_of(server).clock = clock
    session_id = new_id()

    async def go() -> None:
        async with mac(server, acct.device_token) as link:
            await push(link, session_id, SMALL)
            await link.update(SessionInfo(session_id=session_id, state="busy"))

            async def live() -> bool:
                return session_id in server.state.live.sessions

            await await_until(live, what="the live side")
            clock.days(60)
            report = await asyncio.to_thread(_run_with, server, acct.phone_token)
            assert report["archived"] == [] and report["kept_working"] == [session_id]

    asyncio.run(go())


def _run_with(server: RelayServer, token: str) -> dict[str, Any]:
    with phone_client(server, token) as client:
        return run(client)


def test_expiry_runs_by_itself_on_a_schedule(make_relay: Callable[..., RelayServer]) -> None:
    server = make_relay(retention_interval=1.0, **FAST)
    acct = server.account()
    retention = retention_of(server)
    clock = Clock()
    retention.clock = clock
    session_id = new_id()

    async def go() -> None:
        async with mac(server, acct.device_token) as link:
            await push(link, session_id, SMALL)

    asyncio.run(go())
    clock.days(45)
    with phone_client(server, acct.phone_token) as client:

        def archived_by_schedule() -> dict[str, Any] | None:
            last = client.get("/api/retention").json()["last_run"]
            done = last and last["trigger"] == "schedule" and last["archived"]
            return last if done else None

        last = wait_for(archived_by_schedule, 10, "a scheduled run")
        assert ids(last["archived"]) == [session_id]
        assert client.get("/api/retention").json()["next_run_at"] is not None


def test_retention_routes_need_a_login_and_a_known_session(
    relay: RelayServer,
) -> None:
    acct = relay.account()
    with phone_client(relay, None) as anonymous:
        error_of(anonymous.get("/api/retention"), 401, "unauthorized")
        error_of(anonymous.post("/api/retention/run"), 401, "unauthorized")
        error_of(anonymous.post("/api/sessions/x/pin"), 401, "unauthorized")
    with phone_client(relay, acct.phone_token) as client:
        error_of(client.post("/api/sessions/nope/pin"), 404, "unknown_session")
        error_of(client.post("/api/sessions/nope/unpin"), 404, "unknown_session")
        error_of(client.get("/api/sessions/nope/retention"), 404, "unknown_session")
        fresh = client.get("/api/retention").json()
        assert fresh["archived"] == [] and fresh["waiting_for_mac"] == []
        assert fresh["settings"] == {
            "archive_after_days": 30.0,
            "delete_after_days": 180.0,
            "audit_keep_days": 365.0,
            "retention_interval": 3600.0,
        }


# -- several relay nodes on one PostgreSQL database --------------------------------------------


def test_a_run_is_skipped_while_another_node_holds_the_run_lock(
    pg_url: str, make_relay: Callable[..., RelayServer], caplog: pytest.LogCaptureFixture
) -> None:
    import psycopg

    caplog.set_level(logging.INFO, logger="relay.features.retention")
    second = make_relay(database_url=pg_url, **FAST)
    # Another node's run, as it holds the lock: a session of its own (waiting, if the start-up
    # run of the node just started holds it now).
    with psycopg.connect(pg_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (RUN_LOCK,))
        first = make_relay(database_url=pg_url, **FAST)  # its start-up run finds the lock taken
        wait_for(
            lambda: (
                "retention (schedule): skipped, another relay node is running it" in caplog.text
            ),
            10,
            "the start-up run of a node skipping its turn",
        )
        acct = first.account()
        with phone_client(second, acct.phone_token) as client:
            refused = error_of(client.post("/api/retention/run"), 409, "retention_running")
            assert "another relay node" in refused["message"]
        told = cli(second, acct.phone_token, "retention", "--run", code=2).stderr
        assert told.splitlines()[0] == f"claude-bridge: {BUSY} (retention_running)"
    session_id = new_id()

    async def go() -> None:
        async with mac(first, acct.device_token) as link:
            await push(link, session_id, SMALL)

    asyncio.run(go())
    clock = Clock()
    clock.days(45)  # due for archiving
    retention_of(second).clock = clock
    # The lock is free again: a run on either node happens, and both see what it did.
    ran = cli(second, acct.phone_token, "retention", "--run").stdout.splitlines()
    assert ran[0] == "Ran retention now: archived 1, made active again 0, deleted 0."
    with phone_client(first, acct.phone_token) as client:
        assert client.get(f"/api/sessions/{session_id}/retention").json()["stage"] == "archived"
