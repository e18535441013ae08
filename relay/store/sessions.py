"""Sessions: the rows a phone lists and a Mac's lines are numbered under (``sessions``), and what
each session's Mac last said of it (``last_known``).

Every statement that changes these two tables is here: the core's routes and link, the ingest
(relay/store/ingest.py) and the features (a derived title, a move's mark, a deletion) change a
session through these functions, inside their own transaction when they need one
(``Store.write``), and read it as a :class:`Session`, never as a tuple.

A Mac has at most ``sessions_max_per_mac`` sessions on the relay (:func:`check_room`, before any
new row of a Mac: its lines, its hello, a phone's new session, a move to it).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from relay import seq as seqrules
from relay.db import Connection, integrity_errors
from relay.errors import Conflict, NotFound, RelayError
from relay.store import devices


@dataclass(frozen=True)
class Session:
    id: str
    account_id: str
    device_id: str
    cwd: str
    title: str
    group: str
    position: float
    locked: bool
    mark: str | None
    created_at: float
    updated_at: float
    conversation_id: str | None
    conversation_ids: list[str]
    permission_mode: str | None
    epoch: str
    last_seq: int
    oldest_seq: int
    # The first seq numbered in this epoch: events below it may carry an earlier epoch (the
    # history a new epoch continues, e.g. in the Mac's archive after the relay lost a session).
    epoch_start: int = 1
    parent_id: str | None = None  # a fork's parent session
    branch: str | None = None  # the branch of the session's own git worktree

    @property
    def numbering(self) -> seqrules.SessionSeq:
        return seqrules.SessionSeq(self.epoch, self.last_seq, self.oldest_seq)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Session:
        """A row of ``SELECT {COLUMNS}`` (the one place its columns are read by position)."""
        values = dict(zip(_FIELDS.values(), row, strict=True))
        values["locked"] = bool(values["locked"])
        values["conversation_ids"] = json.loads(values["conversation_ids"])
        return cls(**values)


# Each column of a session row and the field of Session it fills, in one place.
_FIELDS: Final[dict[str, str]] = {
    "id": "id",
    "account_id": "account_id",
    "device_id": "device_id",
    "cwd": "cwd",
    "title": "title",
    "grp": "group",
    "position": "position",
    "locked": "locked",
    "mark": "mark",
    "created_at": "created_at",
    "updated_at": "updated_at",
    "conversation_id": "conversation_id",
    "conversation_ids": "conversation_ids",
    "permission_mode": "permission_mode",
    "epoch": "epoch",
    "last_seq": "last_seq",
    "oldest_seq": "oldest_seq",
    "epoch_start": "epoch_start",
    "parent_id": "parent_id",
    "branch": "branch",
}
COLUMNS: Final = ", ".join(_FIELDS)

# What a person (or the Mac placing a session) may change with ``update``, by its field.
CHANGEABLE: Final[dict[str, str]] = {
    "title": "title",
    "group": "grp",
    "locked": "locked",
    "position": "position",
    "mark": "mark",
    "cwd": "cwd",  # where the Mac runs it (a worktree's folder)
    "branch": "branch",
}


def new_session_id() -> str:
    """A session id as ``claude --session-id`` takes it: a UUID."""
    return str(uuid.uuid4())


def unknown(session_id: str) -> NotFound:
    # The same answer for "no such session" and "another account's": no probing.
    return NotFound(f"no session {session_id}", code="unknown_session", session_id=session_id)


def not_yours(session_id: str) -> RelayError:
    return Conflict(
        f"session {session_id} belongs to another Mac of this account; only the Mac it runs on "
        "may send its lines or positions",
        code="not_your_session",
        session_id=session_id,
    )


# -- reading ----------------------------------------------------------------------------------


def find(conn: Connection, session_id: str) -> Session | None:
    row = conn.execute(f"SELECT {COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else Session.from_row(row)


def select(conn: Connection, session_id: str) -> Session:
    """A session known to exist (inside the transaction that made or changed it)."""
    found = find(conn, session_id)
    assert found is not None, f"session {session_id} is gone inside its own transaction"
    return found


def get(conn: Connection, account_id: str, session_id: str) -> Session:
    """The account's session; NotFound ``unknown_session`` when it has none of that id."""
    row = conn.execute(
        f"SELECT {COLUMNS} FROM sessions WHERE id = ? AND account_id = ?",
        (session_id, account_id),
    ).fetchone()
    if row is None:
        raise unknown(session_id)
    return Session.from_row(row)


def of_account(conn: Connection, account_id: str) -> list[Session]:
    """The account's sessions in the order a person arranged them."""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM sessions WHERE account_id = ? ORDER BY position, created_at",
        (account_id,),
    ).fetchall()
    return [Session.from_row(r) for r in rows]


def by_ids(conn: Connection, account_id: str, session_ids: Sequence[str]) -> dict[str, Session]:
    """The account's sessions among ``session_ids``, by id (one query: a JSON array)."""
    if not session_ids:
        return {}
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM sessions WHERE account_id = ?"
        f" AND id IN ({conn.dialect.json_values})",
        (account_id, json.dumps(list(session_ids))),
    ).fetchall()
    return {s.id: s for s in map(Session.from_row, rows)}


def account_of(conn: Connection, session_id: str) -> str | None:
    row = conn.execute("SELECT account_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else str(row[0])


@dataclass(frozen=True)
class Owner:
    """Whose a session is (its account and the Mac it runs on) and how it is numbered now."""

    account_id: str
    device_id: str
    numbering: seqrules.SessionSeq


def owner(conn: Connection, session_id: str, account_id: str | None = None) -> Owner | None:
    """The session's account, Mac and numbering, its row locked for this transaction on
    PostgreSQL (the writers of one session on several relay nodes take turns from here); with
    ``account_id``, only a session of that account."""
    sql = "SELECT account_id, device_id, epoch, last_seq, oldest_seq FROM sessions WHERE id = ?"
    params: tuple[str, ...] = (session_id,)
    if account_id is not None:
        sql += " AND account_id = ?"
        params = (session_id, account_id)
    row = conn.execute(sql + conn.dialect.for_update, params).fetchone()
    if row is None:
        return None
    found_account, device_id, epoch, last_seq, oldest_seq = row
    return Owner(
        str(found_account), str(device_id), seqrules.SessionSeq(epoch, last_seq, oldest_seq)
    )


# -- making and changing ------------------------------------------------------------------


def check_room(conn: Connection, device_id: str, limit: int) -> None:
    """Before a new session of a Mac is inserted: 409 ``too_many_sessions`` when the Mac has
    ``limit`` (``sessions_max_per_mac``) already; no limit when it is 0."""
    if limit <= 0:
        return
    devices.take_turn(conn, device_id)  # nodes adding sessions for one Mac take turns
    count = int(
        conn.execute("SELECT COUNT(*) FROM sessions WHERE device_id = ?", (device_id,)).fetchone()[
            0
        ]
    )
    if count >= limit:
        raise Conflict(
            f"this Mac has {count:,} sessions on the relay, the most "
            f"sessions_max_per_mac allows ({limit:,}); delete the ones it no longer "
            "needs (claude-bridge delete, or let retention delete old ones), or raise "
            "sessions_max_per_mac",
            code="too_many_sessions",
        )


def insert(
    conn: Connection,
    account_id: str,
    device_id: str,
    session_id: str,
    cwd: str,
    title: str,
    epoch: str,
    last_seq: int,
) -> bool:
    """Insert a session row; False when another writer (another relay node) inserted it first."""
    now = time.time()
    position = conn.execute(
        "SELECT COALESCE(MAX(position), 0) + 1 FROM sessions WHERE account_id = ?", (account_id,)
    ).fetchone()[0]
    cursor = conn.execute(
        "INSERT INTO sessions (id, account_id, device_id, cwd, title, position, created_at,"
        " updated_at, epoch, last_seq, oldest_seq, epoch_start)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (
            session_id,
            account_id,
            device_id,
            cwd,
            title,
            position,
            now,
            now,
            epoch,
            last_seq,
            last_seq + 1,
            last_seq + 1,
        ),
    )
    return cursor.rowcount > 0


def create(
    conn: Connection,
    account_id: str,
    device_id: str,
    session_id: str,
    cwd: str,
    title: str,
    *,
    parent_id: str | None,
    room: int,
) -> Session:
    """A new, empty session a phone starts (or forks from ``parent_id``); 409
    ``session_exists`` for an id taken, ``too_many_sessions`` past ``room``."""
    existing = conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if existing is not None:
        raise Conflict(f"session {session_id} already exists", code="session_exists")
    check_room(conn, device_id, room)
    insert(conn, account_id, device_id, session_id, cwd, title, seqrules.new_epoch(), 0)
    if parent_id is not None:
        conn.execute("UPDATE sessions SET parent_id = ? WHERE id = ?", (parent_id, session_id))
    return select(conn, session_id)


def discard_empty(conn: Connection, account_id: str, session_id: str) -> bool:
    """Forget a session that never stored an event (its start was refused)."""
    cur = conn.execute(
        "DELETE FROM sessions WHERE id = ? AND account_id = ? AND last_seq = 0",
        (session_id, account_id),
    )
    return cur.rowcount > 0


def update(
    conn: Connection, account_id: str, session_id: str, fields: Mapping[str, Any]
) -> Session:
    """Change the fields of :data:`CHANGEABLE` a person (or the Mac placing it) gave; a title
    given is a person's, never replaced by a derived one (relay/features/titles.py)."""
    if owner(conn, session_id, account_id) is None:
        raise unknown(session_id)
    sets = []
    values: list[Any] = []
    for key, value in fields.items():
        sets.append(f"{CHANGEABLE[key]} = ?")
        values.append(value)
        if key == "title":
            sets.append("title_set_by_person = 1")
    if sets:
        sets.append("updated_at = ?")
        values.append(time.time())
        conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*values, session_id))
    return select(conn, session_id)


def hand_over(
    conn: Connection,
    account_id: str,
    session_id: str,
    from_device: str,
    to_device: str,
    cwd: str,
    room: int,
) -> Session:
    """Give the session to ``to_device`` (its folder there; its mark goes): see
    ``Store.hand_over``."""
    found = owner(conn, session_id, account_id)
    if found is None:
        raise unknown(session_id)
    if found.device_id != from_device:
        raise not_yours(session_id)
    check_room(conn, to_device, room)  # a Mac gets no more sessions by a move than by its lines
    conn.execute(
        "UPDATE sessions SET device_id = ?, cwd = ?, mark = NULL, updated_at = ? WHERE id = ?",
        (to_device, cwd, time.time(), session_id),
    )
    return select(conn, session_id)


@dataclass(frozen=True)
class Numbered:
    """What one ingest changes of its session's row, once its events are numbered."""

    added: int  # events numbered by this batch
    numbering: seqrules.SessionSeq  # the numbering after it
    conversation_id: str | None  # the session's current conversation from now on (None: same)
    conversation_ids: list[str]
    permission_mode: str | None  # the newest a line said (None: unchanged)


def record_numbering(conn: Connection, session_id: str, change: Numbered) -> None:
    """Move the session's ``last_seq`` once, in the transaction that stores its events, and check
    it moved to where the batch was numbered (else nothing of the batch may be stored)."""
    moved = conn.execute(
        "UPDATE sessions SET last_seq = last_seq + ?, oldest_seq = ?, updated_at = ?,"
        " conversation_id = COALESCE(?, conversation_id), conversation_ids = ?,"
        " permission_mode = COALESCE(?, permission_mode) WHERE id = ? RETURNING last_seq",
        (
            change.added,
            change.numbering.oldest_seq,
            time.time(),
            change.conversation_id,
            json.dumps(change.conversation_ids),
            change.permission_mode,
            session_id,
        ),
    ).fetchone()
    if moved is None or int(moved[0]) != change.numbering.last_seq:
        raise RuntimeError(
            f"session {session_id} was numbered beside this write (seq {moved}, expected "
            f"{change.numbering.last_seq}): nothing of this batch was stored"
        )


def start_epoch(conn: Connection, session_id: str, numbering: seqrules.SessionSeq) -> None:
    """A new epoch for a session whose Mac is ahead of the relay (relay/seq.py ``reconcile``):
    numbering goes on after the Mac's seq."""
    conn.execute(
        "UPDATE sessions SET epoch = ?, last_seq = ?, oldest_seq = ?, epoch_start = ? WHERE id = ?",
        (
            numbering.epoch,
            numbering.last_seq,
            numbering.oldest_seq,
            numbering.last_seq + 1,
            session_id,
        ),
    )


def set_derived_title(conn: Connection, session_id: str, title: str) -> None:
    """The title derived from the work (relay/features/titles.py), unless a person set one."""
    conn.execute(
        "UPDATE sessions SET title = ? WHERE id = ? AND title_set_by_person = 0 AND title != ?",
        (title, session_id, title),
    )


def title_set_by_person(conn: Connection, session_id: str) -> bool:
    """Whether a person named the session (then no automatic title replaces theirs)."""
    row = conn.execute(
        "SELECT title_set_by_person FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    return bool(row and row[0])


def automatic_titles(conn: Connection) -> list[tuple[str, str]]:
    """(id, title) of every session no person named: those a title convention applies to."""
    rows = conn.execute("SELECT id, title FROM sessions WHERE title_set_by_person = 0")
    return [(str(r[0]), str(r[1])) for r in rows]


def give_back_title(conn: Connection, account_id: str, session_id: str, title: str) -> None:
    """Forget a person's title: the session shows ``title``, its derived one, again."""
    if owner(conn, session_id, account_id) is None:
        raise unknown(session_id)
    conn.execute(
        "UPDATE sessions SET title = ?, title_set_by_person = 0, updated_at = ? WHERE id = ?",
        (title, time.time(), session_id),
    )


def mark(conn: Connection, session_id: str, new: str | None, *, only_if: str | None = None) -> None:
    """Set the session's mark (``moving``, ``ended``…); with ``only_if``, only while its mark
    is still that one."""
    if only_if is None:
        conn.execute("UPDATE sessions SET mark = ? WHERE id = ?", (new, session_id))
    else:
        conn.execute(
            "UPDATE sessions SET mark = ? WHERE id = ? AND mark = ?", (new, session_id, only_if)
        )


def delete(conn: Connection, session_id: str, also: Iterable[str]) -> None:
    """Delete the session's row, so its ON DELETE CASCADEs and triggers (a feature's index) do
    their work; then whatever is left under its id in ``also``, tables that keep it without a
    foreign key. A table whose foreign key would refuse the delete is emptied first."""
    swept = list(also)
    conn.execute("SAVEPOINT session_row")
    try:
        conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
    except integrity_errors(conn.dialect):
        conn.execute("ROLLBACK TO session_row")
        conn.execute("RELEASE session_row")
        _sweep(conn, session_id, swept)
        conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
        return
    conn.execute("RELEASE session_row")
    _sweep(conn, session_id, swept)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sweep(conn: Connection, session_id: str, tables: Sequence[str]) -> None:
    for table in tables:
        conn.execute(f"DELETE FROM {_quote(table)} WHERE session_id = ?", (session_id,))


# -- what each session's Mac last said ------------------------------------------------------


def keep_last_known(conn: Connection, session_id: str, data: Mapping[str, Any]) -> None:
    """Keep what the session's Mac last said of it (state, waiting card), across restarts."""
    conn.execute(
        "INSERT INTO last_known (session_id, data) SELECT id, ? FROM sessions WHERE id = ?"
        " ON CONFLICT (session_id) DO UPDATE SET data = excluded.data",
        (json.dumps(data, separators=(",", ":")), session_id),
    )


def last_known(conn: Connection) -> dict[str, dict[str, Any]]:
    """Every session's last known state, by session id."""
    rows = conn.execute("SELECT session_id, data FROM last_known").fetchall()
    return {str(row[0]): json.loads(row[1]) for row in rows}
