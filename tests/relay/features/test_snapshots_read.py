"""A session's latest snapshot is parsed once per snapshot taken, not at every read: the row's
seq says whether the one in memory is still the latest (another relay of a cluster may have taken
one since); a snapshot's JSON is made once for its event and its row."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest

from relay.features import snapshots as snapshots_module
from relay.features.snapshots import EVENT_INPUT_MAX_BYTES, LatestSnapshots, event_input, setup
from relay.ledger import Constraint, Decision, Ledger, Source
from relay.recent_work import Exchange
from relay.snapshot import Snapshot
from relay.state import RelayState

SESSION = "s1"


class Rows:
    """``state.store.read`` over one SQLite connection holding the feature's table."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY)")
        self.conn.execute("INSERT INTO sessions (id) VALUES (?)", (SESSION,))
        setup(self.conn)  # type: ignore[arg-type]

    async def read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql, tuple(params)).fetchall()

    def keep(self, seq: int, snapshot: Snapshot | str) -> None:
        data = snapshot if isinstance(snapshot, str) else json.dumps(snapshot.to_json())
        self.conn.execute(
            "INSERT INTO ledger_snapshots (session_id, seq, through_seq, data, taken_at)"
            " VALUES (?, ?, ?, ?, 0) ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq,"
            " data = excluded.data",
            (SESSION, seq, seq, data),
        )


def snapshot(through: int, pin: str) -> Snapshot:
    ledger = Ledger(
        decisions=(Decision("e1.0", "typed_answer", "use sqlite", Source(1, None)),),
        constraints=(Constraint("c1", pin, Source(2, None)),),
        through_seq=through,
    )
    return Snapshot(("compaction",), ledger, ("a.py",), Exchange(()), through)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    seen: list[object] = []
    real = Snapshot.from_json

    def counted(data: object) -> Snapshot:
        seen.append(data)
        return real(data)

    monkeypatch.setattr(Snapshot, "from_json", counted)
    return seen


def test_the_latest_snapshot_is_parsed_once_until_another_is_taken(parses: list[object]) -> None:
    asyncio.run(parsed_once(parses))


async def parsed_once(parses: list[object]) -> None:
    rows = Rows()
    state = cast(RelayState, SimpleNamespace(store=rows))
    latest = LatestSnapshots()
    assert await latest.get(state, SESSION) is None
    first = snapshot(5, "no new dependencies")
    rows.keep(6, first)
    assert await latest.get(state, SESSION) == first
    assert await latest.get(state, SESSION) == first
    assert len(parses) == 1
    second = snapshot(9, "keep the API stable")  # taken by another relay of the cluster
    rows.keep(10, second)
    assert await latest.get(state, SESSION) == second
    assert await latest.get(state, SESSION) == second
    assert len(parses) == 2
    rows.keep(11, "{not json")
    assert await latest.get(state, SESSION) is None  # unreadable: none, as before
    rows.conn.execute("DELETE FROM ledger_snapshots")
    assert await latest.get(state, SESSION) is None
    rows.keep(12, first)
    assert await latest.get(state, SESSION) == first


def test_a_read_of_a_snapshot_is_the_same_as_a_fresh_read() -> None:
    asyncio.run(same_as_fresh())


async def same_as_fresh() -> None:
    rows = Rows()
    state = cast(RelayState, SimpleNamespace(store=rows))
    kept = LatestSnapshots()
    rows.keep(6, snapshot(5, "pin"))
    for seq, pin in ((6, "pin"), (8, "other"), (8, "other")):
        rows.keep(seq, snapshot(seq - 1, pin))
        assert await kept.get(state, SESSION) == await snapshots_module.latest(state, SESSION)


def test_the_event_input_is_the_same_from_the_json_made_once() -> None:
    decision = Decision("e1.0", "typed_answer", "x" * 8000, Source(1, None))
    big = Snapshot(
        ("decision",), Ledger(decisions=(decision,) * 20, through_seq=1), (), Exchange(()), 1
    )
    for shot in (big, snapshot(3, "pin")):
        whole = shot.to_json()
        text = json.dumps(whole, ensure_ascii=False)
        assert event_input(shot, whole, text) == event_input(shot)
    assert event_input(big)["complete"] is False
    assert len(json.dumps(big.to_json())) > EVENT_INPUT_MAX_BYTES
