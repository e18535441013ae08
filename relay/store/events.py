"""A session's numbered events (``events``): the latest ``events_kept`` of each session, as the
JSON of a ``NumberedEvent`` by seq. Older ones live in the Mac's archive (relay/history.py).

Every statement on the table is here: the ingest stores a batch and ages out what passed the
window, a new epoch adopts the events kept, and readers read a range, oldest or newest first,
within a byte budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from relay.db import Connection

Events = list[tuple[int, str]]  # (seq, NumberedEvent JSON), oldest first


def insert(conn: Connection, session_id: str, stored: Events) -> None:
    if not stored:
        return
    if conn.dialect.postgres:
        # One statement for the batch (arrays), not one per row: a round trip each on a server.
        conn.execute(
            "INSERT INTO events (session_id, seq, data)"
            " SELECT ?, s, d FROM unnest(?::bigint[], ?::text[]) AS batch(s, d)",
            (session_id, [seq for seq, _ in stored], [data for _, data in stored]),
        )
        return
    conn.executemany(
        "INSERT INTO events (session_id, seq, data) VALUES (?, ?, ?)",
        [(session_id, seq, data) for seq, data in stored],
    )


def age_out(conn: Connection, session_id: str, first: int, below: int) -> None:
    """Delete the events ``first <= seq < below``: what just aged out of the window (events kept
    from before a new epoch, below its start, stay readable)."""
    conn.execute(
        "DELETE FROM events WHERE session_id = ? AND seq >= ? AND seq < ?",
        (session_id, first, below),
    )


def adopt_epoch(conn: Connection, session_id: str, epoch: str) -> None:
    """The stored events stay, below a new epoch's start, and are read as the new epoch's."""
    set_epoch = conn.dialect.set_json_key("data", "epoch")
    conn.execute(f"UPDATE events SET data = {set_epoch} WHERE session_id = ?", (epoch, session_id))


@dataclass(frozen=True)
class Range:
    """Which events to read: ``first <= seq <= last``, within ``max_bytes`` of JSON (at least
    one event), from ``first`` on or, ``newest``, from ``last`` back."""

    session_id: str
    first: int
    last: int
    max_bytes: int | None = None
    newest: bool = False


def read(conn: Connection, wanted: Range) -> Events:
    """The events of ``wanted``, oldest first; a huge range never sits in memory at once (the
    read stops where the budget does)."""
    if wanted.last < wanted.first:
        return []
    order = "DESC" if wanted.newest else "ASC"
    cursor = conn.execute(
        "SELECT seq, data FROM events WHERE session_id = ? AND seq BETWEEN ? AND ?"
        f" ORDER BY seq {order}",
        (wanted.session_id, wanted.first, wanted.last),
    )
    out: Events = []
    size = 0
    try:
        for seq, data in cursor:
            size += len(data) + 1
            if wanted.max_bytes is not None and out and size > wanted.max_bytes:
                break
            out.append((int(seq), str(data)))
    finally:
        cursor.close()
    if wanted.newest:
        out.reverse()
    return out
