"""The events a session's ledgers are built from are parsed once: a ledger built after more
events were stored (or aged out, or a new epoch rewrote them, or the bytes budget cut the oldest)
reads the same events as a read from scratch."""

from __future__ import annotations

import asyncio
import sqlite3
from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.features import decisions
from relay.features.decisions import EventsRead
from relay.state import RelayState
from relay.store import Session
from relay.store import events as stored_events
from wire.protocol import EventKind, NumberedEvent

SESSION = "s1"


class Events:
    """``state.store.read_events`` over the real ``events`` reads, on one SQLite connection."""

    def __init__(self) -> None:
        self.conn = sqlite3.connect(":memory:")
        self.conn.execute(
            "CREATE TABLE events (session_id TEXT, seq INTEGER, data TEXT,"
            " PRIMARY KEY (session_id, seq))"
        )
        self.reads: list[tuple[int, int]] = []

    async def read_events(
        self,
        session_id: str,
        first: int,
        last: int,
        *,
        max_bytes: int | None = None,
        newest: bool = False,
    ) -> list[tuple[int, str]]:
        self.reads.append((first, last))
        if last < first:
            return []
        wanted = stored_events.Range(session_id, first, last, max_bytes, newest)
        return stored_events.read(self.conn, wanted)  # type: ignore[arg-type]

    def add(self, seq: int, epoch: str, text: str) -> None:
        data = NumberedEvent(
            kind=EventKind.ASSISTANT, text=text, session_id=SESSION, seq=seq, epoch=epoch
        ).model_dump_json()
        self.conn.execute("INSERT INTO events VALUES (?, ?, ?)", (SESSION, seq, data))


def session(epoch: str, last: int, oldest: int) -> Session:
    return cast(Session, SimpleNamespace(id=SESSION, epoch=epoch, last_seq=last, oldest_seq=oldest))


async def from_scratch(state: RelayState, now: Session) -> list[NumberedEvent]:
    return await EventsRead().read(state, now)


# Each step: stored events to add, how many of the oldest age out, whether a new epoch starts.
STEPS = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 3), st.booleans(), st.text(max_size=30)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(steps=STEPS, budget=st.sampled_from([200, 600, 32 * 1024 * 1024]))
def test_a_later_read_is_a_read_from_scratch(
    steps: list[tuple[int, int, bool, str]], budget: int
) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decisions, "EVENTS_READ_MAX_BYTES", budget)
        asyncio.run(later_reads(steps))


async def later_reads(steps: list[tuple[int, int, bool, str]]) -> None:
    store = Events()
    state = cast(RelayState, SimpleNamespace(store=store))
    kept = EventsRead()
    epoch, last, oldest = "e0", 0, 1
    for added, aged, new_epoch, text in steps:
        if new_epoch:  # a new epoch rewrites every stored event
            epoch = f"e{int(epoch[1:]) + 1}"
            rows = store.conn.execute("SELECT seq, data FROM events").fetchall()
            store.conn.execute("DELETE FROM events")
            for seq, _ in rows:
                store.add(seq, epoch, text)
        for _ in range(added):
            last += 1
            store.add(last, epoch, f"{text} {last}")
        oldest = min(oldest + aged, last + 1) if last else 1
        store.conn.execute("DELETE FROM events WHERE seq < ?", (oldest,))
        now = session(epoch, last, oldest)
        assert await kept.read(state, now) == await from_scratch(state, now)


def test_only_the_events_stored_since_are_read_again() -> None:
    asyncio.run(read_again())


async def read_again() -> None:
    store = Events()
    state = cast(RelayState, SimpleNamespace(store=store))
    kept = EventsRead()
    for seq in range(1, 11):
        store.add(seq, "e0", f"line {seq}")
    first = await kept.read(state, session("e0", 10, 1))
    store.add(11, "e0", "line 11")
    store.conn.execute("DELETE FROM events WHERE seq < 3")
    later = await kept.read(state, session("e0", 11, 3))
    assert store.reads == [(1, 10), (11, 11)]
    assert [e.seq for e in later] == [*(e.seq for e in first[2:]), 11]
    await kept.read(state, session("e1", 11, 3))  # a new epoch: everything read again
    assert store.reads[-1] == (3, 11)


def test_an_unreadable_stored_event_is_left_out_as_before() -> None:
    async def check() -> list[Any]:
        store = Events()
        store.add(1, "e0", "fine")
        store.conn.execute("INSERT INTO events VALUES (?, 2, '{not an event')", (SESSION,))
        state = cast(RelayState, SimpleNamespace(store=store))
        return [e.seq for e in await EventsRead().read(state, session("e0", 2, 1))]

    assert asyncio.run(check()) == [1]
