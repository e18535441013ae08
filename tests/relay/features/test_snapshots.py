"""Snapshots of the decisions ledger through a real relay: taken at a turn end that carried a
decision, at compaction and /clear, at the session's end; stored as ``snapshot`` events that
page like any event and reach the Mac's archive; the handoff given to the Mac after each one and
after a pin changes. Captured Claude Code 2.1.332 transcripts, pushed by a scripted Mac."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.features.snapshots import EVENT_INPUT_MAX_BYTES, event_input, session_ended
from relay.ledger import Decision, Ledger, Source
from relay.recent_work import HANDOFF_OPENING, Exchange
from relay.snapshot import Snapshot
from tests.support.relay import Account, RelayServer, archived, mac
from tests.support.relay import transcript as fixture
from tests.support.transcripts import transcript
from wire.client import MacLink
from wire.protocol import Command, CommandResult, LineRecord, SessionInfo
from wire.transcript import read_lines

CWD = "/work/widgets"
WAIT = 30.0  # generous: a loaded CI machine; a pass returns as soon as it holds


def lines_of(name: str) -> list[LineRecord]:
    return list(read_lines(transcript(name).read_bytes()))


def phone(relay: RelayServer, account: Account) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=relay.url, headers={"Authorization": f"Bearer {account.phone_token}"}
    )


async def snapshots(client: httpx.AsyncClient, session_id: str) -> list[dict[str, Any]]:
    body = (await client.get(f"/api/sessions/{session_id}/events")).json()
    return [e for e in body["events"] if e["kind"] == "snapshot"]


async def until(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + WAIT
    while True:
        found = await check()
        if found:
            return found
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {WAIT} s: {what}")
        await asyncio.sleep(0.05)


class Commands:
    """The Mac's side of commands: every one answered ok and kept."""

    def __init__(self) -> None:
        self.seen: list[Command] = []

    async def __call__(self, command: Command) -> CommandResult:
        self.seen.append(command)
        return CommandResult(command_id=command.command_id, ok=True, data={})

    def handoffs(self) -> list[dict[str, Any]]:
        return [c.args for c in self.seen if c.name == "set_resume"]


async def turn(link: MacLink, session_id: str) -> None:
    await link.update(SessionInfo(session_id=session_id, state="busy"))
    await link.update(SessionInfo(session_id=session_id, state="idle"))


def test_a_turn_that_carried_a_decision_is_snapshotted_once(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    commands = Commands()

    async def run() -> None:
        async with (
            mac(relay, account.device_token, on_command=commands) as link,
            phone(relay, account) as client,
        ):
            await link.send_lines(session_id, "c1", lines_of("f_ask_question"), cwd=CWD)
            # The person picked "fresh": the Mac keeps the handoff a fresh start types first.
            chosen = await client.put(
                f"/api/sessions/{session_id}/resume_scope", json={"scope": "fresh"}
            )
            assert chosen.status_code == 200, chosen.text
            await turn(link, session_id)
            found = await until(lambda: snapshots(client, session_id), "a snapshot event")
            assert len(found) == 1
            event = found[0]
            assert (
                event["text"] == "Snapshot at a decision: 1 decision, 0 constraints, 0 open items"
            )
            snap = event["input"]
            assert snap["reasons"] == ["decision"] and snap["complete"] is True
            assert [d["text"] for d in snap["ledger"]["decisions"]] == ["Blue"]
            assert event["seq"] == snap["through_seq"] + 1
            # The Mac's archive has it too, at the same seq.
            await link.wait_for_seq(session_id, event["seq"])
            assert archived(link).last_seq(session_id) == event["seq"]
            # The handoff a fresh start would type, given to the Mac after the snapshot.
            handoff = await until(
                lambda: _async([h for h in commands.handoffs() if h.get("handoff")]),
                "set_resume with the handoff",
            )
            assert handoff[-1]["scope"] == "fresh" and handoff[-1]["decisions"] == 1
            assert "Blue" in handoff[-1]["handoff"]
            assert handoff[-1]["handoff"].startswith(HANDOFF_OPENING)

            # Another turn with no new decision: no snapshot.
            await turn(link, session_id)
            await asyncio.sleep(0.5)
            assert len(await snapshots(client, session_id)) == 1

            # A pin changes the handoff: the Mac is told again, with the pin in it.
            before = len(commands.handoffs())
            made = await client.post(
                f"/api/sessions/{session_id}/constraints", json={"text": "Keep it blue"}
            )
            assert made.status_code == 200
            await until(lambda: _async(len(commands.handoffs()) > before), "a new handoff")
            assert "Keep it blue" in commands.handoffs()[-1]["handoff"]
            # The reopen card's fresh figure is that handoff's (relay/features/resume.py).
            card = (await client.get(f"/api/sessions/{session_id}/reopen")).json()
            assert card["scopes"]["fresh"]["decisions"] == 1
            assert card["scopes"]["fresh"]["constraints"] == 1

            # The session ends: a snapshot "end", as the pin is new since the last one.
            await link.update(SessionInfo(session_id=session_id, state="ended"))
            ended = await until(
                lambda: _more(client, session_id, 1), "a snapshot at the session's end"
            )
            assert ended[-1]["input"]["reasons"] == ["end"]
            assert [c["text"] for c in ended[-1]["input"]["ledger"]["constraints"]] == [
                "Keep it blue"
            ]

    asyncio.run(run())


async def _async(value: Any) -> Any:
    return value


async def _more(client: httpx.AsyncClient, session_id: str, than: int) -> list[dict[str, Any]]:
    found = await snapshots(client, session_id)
    return found if len(found) > than else []


def test_compaction_and_clear_are_snapshotted(relay: RelayServer, account: Account) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> None:
        async with mac(relay, account.device_token) as link, phone(relay, account) as client:
            for name in ("ij_clear_compact__5d53", "ij_clear_compact__f521"):
                lines = list(read_lines(fixture(name).read_bytes()))
                await link.send_lines(session_id, name[-4:], lines, cwd=CWD)
            found = await until(lambda: _more(client, session_id, 1), "two snapshot events")
            assert [event["input"]["reasons"] for event in found] == [["compaction"], ["clear"]]
            for event in found:
                assert event["text"].startswith("Snapshot at ")
            # The ledger's decisions survive in the latest snapshot, read as the base.
            ledger = (await client.get(f"/api/sessions/{session_id}/decisions")).json()
            assert ledger["through_seq"] >= found[-1]["input"]["through_seq"]

    asyncio.run(run())


def test_a_large_snapshot_event_carries_its_counts() -> None:
    decision = Decision("e1.0", "typed_answer", "x" * 8000, Source(1, None))
    ledger = Ledger(decisions=tuple(decision for _ in range(20)), through_seq=1)
    big = Snapshot(("decision",), ledger, ("a.py",), Exchange(()), 1)
    shown = event_input(big)
    assert shown["complete"] is False and shown["counts"]["decisions"] == 20
    assert len(str(shown)) < EVENT_INPUT_MAX_BYTES
    small = Snapshot(("end",), Ledger(through_seq=3), (), Exchange(()), 3)
    assert event_input(small) == {**small.to_json(), "complete": True}


async def found(client: httpx.AsyncClient, query: str) -> list[str]:
    body = (await client.get("/api/search", params={"q": query})).json()
    return [item["id"] for item in body["here"] + body["elsewhere"]]


def test_decisions_and_constraints_are_searched(relay: RelayServer, account: Account) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> None:
        async with mac(relay, account.device_token) as link, phone(relay, account) as client:
            await link.send_lines(session_id, "c1", lines_of("f_ask_question"), cwd=CWD)
            assert await found(client, "decision:blue") == []
            await turn(link, session_id)
            # The answer and the question it answers, after the snapshot of that turn.
            await until(lambda: found(client, "decision:blue"), "the decision searched")
            assert await found(client, "decision:colour") == [session_id]
            made = await client.post(
                f"/api/sessions/{session_id}/constraints", json={"text": "No quokkas in prod"}
            )
            assert made.status_code == 200
            await until(lambda: found(client, "constraint:quokkas"), "the constraint searched")
            removed = await client.delete(
                f"/api/sessions/{session_id}/constraints/{made.json()['id']}"
            )
            assert removed.status_code == 200
            await until(lambda: _none(found(client, "quokkas")), "the constraint gone")

    asyncio.run(run())


async def _none(result: Awaitable[list[str]]) -> bool:
    return not await result


def test_an_index_made_before_decisions_gets_the_field_and_keeps_its_files(
    make_relay: Callable[..., RelayServer],
) -> None:
    first = make_relay()
    if first.state.store.path is None:
        pytest.skip(
            "an FTS5 index made before decisions exists on SQLite only (PostgreSQL adds the column)"
        )
    account = first.account("old")
    session_id = str(uuid.uuid4())

    async def push() -> None:
        async with mac(first, account.device_token) as link:
            await link.send_lines(session_id, "c1", lines_of("e_write_edit_permission"), cwd=CWD)

    asyncio.run(push())
    path = first.state.store.path
    data_dir = first.config.str("data_dir")
    first.stop()
    assert path is not None
    with sqlite3.connect(path) as db:  # the index as an earlier relay made it
        row = db.execute(
            "SELECT rowid, title, summary, files, tools, mac, folder, date, session_id"
            " FROM session_fts"
        ).fetchall()
        assert row and "hello" in row[0][3]
        db.execute("DROP TABLE session_fts")
        db.execute(
            "CREATE VIRTUAL TABLE session_fts USING fts5(title, summary, files, tools, mac,"
            " folder, date, session_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2',"
            " prefix = '2 3')"
        )
        db.executemany("INSERT INTO session_fts (rowid, title, summary, files, tools, mac,"
                       " folder, date, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)  # fmt: skip
    again = RelayServer(Path(data_dir)).start()
    try:

        async def check() -> None:
            async with phone(again, account) as client:
                assert await found(client, "file:hello") == [session_id]
                assert await found(client, "decision:anything") == []

        asyncio.run(check())
    finally:
        again.stop()


def test_only_a_session_seen_running_ends() -> None:
    def info(state: str | None) -> SessionInfo:
        return SessionInfo(session_id="s", state=state)  # type: ignore[arg-type]

    assert session_ended(info("idle"), info("ended"))
    assert session_ended(info("starting"), info("ended"))
    # First heard as ended (a relay start, a first report before claude ran): nothing ended.
    assert not session_ended(None, info("ended"))
    assert not session_ended(info(None), info("ended"))
    assert not session_ended(info("ended"), info("ended"))
    assert not session_ended(info("busy"), info("idle"))
