"""What of each session's transcripts is stored already: the idempotency marks of the ingest.

``conversations`` holds, per session and conversation (a transcript file), the offset of its last
stored line and when a line of it was last stored; ``line_uuids`` the uuids of the lines stored,
so a line Claude Code copies into another conversation file (on resume) is told a duplicate.
A session keeps the offsets of its newest ``conversations_max_per_session`` conversations only
(:func:`forget_oldest`): a line sent again under a forgotten one is told a duplicate by its uuid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from relay.db import Connection

UUIDS_PER_QUERY: Final = 500  # ids per IN (…) query, well under SQLite's limit on bound variables


def stored_offset(conn: Connection, session_id: str, conversation_id: str) -> int | None:
    """The offset of the conversation's last stored line; None when none of it is stored."""
    row = conn.execute(
        "SELECT last_offset FROM conversations WHERE session_id = ? AND conversation_id = ?",
        (session_id, conversation_id),
    ).fetchone()
    return None if row is None else int(row[0])


def offsets(conn: Connection, session_id: str) -> dict[str, int]:
    """How far each conversation of the session is stored: conversation id → the offset of its
    last stored line (what a Mac's follower goes on from)."""
    rows = conn.execute(
        "SELECT conversation_id, last_offset FROM conversations WHERE session_id = ?",
        (session_id,),
    ).fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def record_offset(
    conn: Connection, session_id: str, conversation_id: str, offset: int, now: float
) -> None:
    conn.execute(
        "INSERT INTO conversations (session_id, conversation_id, last_offset, stored_at)"
        " VALUES (?, ?, ?, ?) ON CONFLICT (session_id, conversation_id)"
        " DO UPDATE SET last_offset = excluded.last_offset, stored_at = excluded.stored_at",
        (session_id, conversation_id, offset, now),
    )


def forget_oldest(conn: Connection, session_id: str, kept: int) -> None:
    """A session's stored offsets beyond the newest ``kept`` conversations (by when a line of
    each was last stored) are forgotten. Its events stay."""
    if kept <= 0:
        return
    count = int(
        conn.execute(
            "SELECT COUNT(*) FROM conversations WHERE session_id = ?", (session_id,)
        ).fetchone()[0]
    )
    if count <= kept:
        return
    rows = conn.execute(
        "SELECT conversation_id FROM conversations WHERE session_id = ?"
        " ORDER BY stored_at DESC, conversation_id DESC",
        (session_id,),
    ).fetchall()
    for (old,) in rows[kept:]:
        conn.execute(
            "DELETE FROM conversations WHERE session_id = ? AND conversation_id = ?",
            (session_id, old),
        )


def known_uuids(conn: Connection, session_id: str, uuids: Sequence[str]) -> set[str]:
    """Which of these line uuids the session has stored already (one query per chunk; on
    PostgreSQL one query with an array, a statement it prepares once)."""
    if not uuids:
        return set()
    if conn.dialect.postgres:
        # Driven by the batch's ids: one primary-key probe each (``uuid = ANY(…)`` would read
        # every uuid of the session).
        rows = conn.execute(
            "SELECT l.uuid FROM unnest(?::text[]) AS batch(u)"
            " JOIN line_uuids l ON l.session_id = ? AND l.uuid = batch.u",
            (list(uuids), session_id),
        )
        return {str(r[0]) for r in rows}
    known: set[str] = set()
    for start in range(0, len(uuids), UUIDS_PER_QUERY):
        chunk = uuids[start : start + UUIDS_PER_QUERY]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT uuid FROM line_uuids WHERE session_id = ? AND uuid IN ({marks})",
            (session_id, *chunk),
        )
        known.update(str(r[0]) for r in rows)
    return known


def keep_uuids(conn: Connection, session_id: str, uuids: Sequence[str]) -> None:
    if not uuids:
        return
    if conn.dialect.postgres:
        conn.execute(
            "INSERT INTO line_uuids (session_id, uuid)"
            " SELECT ?, u FROM unnest(?::text[]) AS batch(u) ON CONFLICT DO NOTHING",
            (session_id, list(uuids)),
        )
        return
    conn.executemany(
        "INSERT INTO line_uuids (session_id, uuid) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(session_id, u) for u in uuids],
    )
