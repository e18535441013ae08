"""The relay's store: every write through one writer thread, on SQLite or PostgreSQL (relay/db/).

Tables: accounts, devices (Macs), phones, tokens (hashed), pair_codes, sessions, conversations
(how far each transcript was stored), line_uuids (lines already stored, by uuid), last_known (what
each session's Mac last said of it, shown while the Mac is offline) and events (the latest
``events_kept`` per session). Seq numbers are given inside the same transaction that
stores the events, so a crash can never leave a number given without its event, or the reverse:
the session row is locked first (``FOR UPDATE`` on PostgreSQL, where several relay nodes write),
the idempotency check (conversation offset, line uuid) comes next, and only then is the session's
``last_seq`` moved (``UPDATE … RETURNING``), so a retry or a second node never numbers a line twice
or leaves a hole.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import json
import re
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from relay import seq as seqrules
from relay.convert import Conversion, ConversionLimits, convert_line
from relay.db import Database, Schema, StepLog, open_database
from relay.errors import BadRequest, Conflict, NotFound, RelayError, Unauthorized
from wire.config import Config
from wire.markers import BRIDGE_CONVERSATION
from wire.protocol import (
    CONVERSATION_KEY,
    MAX_SEQ,
    MAX_TRANSCRIPT_OFFSET,
    DisplayEvent,
    DroppedLine,
    EventKind,
    LineRecord,
    MarkerKind,
    SessionPosition,
    replace_surrogates,
)

T = TypeVar("T")

DEFAULT_ACCOUNT = "default"
TOKEN_BYTES = 24
PAIR_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed
# A pairing code is a public id (4 characters) and a secret (12 characters: 60 bits), shown as
# ABCD-EFGH-JKLM-NPQR. A wrong secret for a live id counts against that code, which dies after
# PAIR_CODE_GUESSES of them: a guess succeeds with a chance of at most 5 in 2**60.
PAIR_CODE_ID_LENGTH = 4
PAIR_CODE_SECRET_LENGTH = 12
PAIR_CODE_GUESSES = 5
_UNKNOWN_CODE = "this pairing code is unknown, used or expired; run `claude-bridge pair` again"


def _pair_chars(count: int) -> str:
    return "".join(secrets.choice(PAIR_CODE_ALPHABET) for _ in range(count))


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def _new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


@dataclass(frozen=True)
class Principal:
    """Who is calling: a Mac (device) or a phone, in one account."""

    token_id: str
    token_hash: str
    account_id: str
    kind: str  # "device" | "phone"
    subject_id: str  # device id or phone id


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


@dataclass(frozen=True)
class Device:
    id: str
    account_id: str
    name: str
    created_at: float
    last_seen: float | None
    info: dict[str, Any]


@dataclass(frozen=True)
class Phone:
    id: str
    name: str
    created_at: float
    last_seen: float | None
    revoked: bool


@dataclass
class IngestResult:
    session: Session
    events: list[tuple[int, str]]  # (seq, NumberedEvent JSON), oldest first
    through_offset: int
    duplicates: int = 0
    rejected: list[str] = field(default_factory=list)
    dropped: list[DroppedLine] = field(default_factory=list)
    created: bool = False


@dataclass(frozen=True)
class Reconciled:
    session: Session
    send_after: int | None  # send the Mac the events after this seq
    restarted: bool  # a new epoch began for a session the relay had: viewers must resync


@dataclass
class Reconciliation:
    sessions: list[Reconciled] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # session ids of another Mac: untouched
    # New session ids past sessions_max_per_mac: not stored (and why)
    over_limit: list[str] = field(default_factory=list)
    over_limit_reason: str = ""


@dataclass(frozen=True)
class NewLines:
    """Lines of one conversation stored for the first time in an ingest transaction (never a
    line sent again), with their conversions: what a :class:`LineObserver` is given."""

    account_id: str
    session_id: str
    conversation_id: str
    lines: list[tuple[LineRecord, Conversion]]


class LineObserver(Protocol):
    """Something that derives its own data from new transcript lines (usage, search…).

    ``setup`` creates its tables; ``on_lines`` runs inside the ingest transaction with the lines
    stored for the first time (never for a line sent again) and their conversions."""

    def setup(self, conn: Any) -> None: ...

    def on_lines(self, conn: Any, new: NewLines) -> None: ...


__all__ = ["Schema", "Store"]

# Inside the ingest transaction, after the events are numbered: (connection, account_id,
# session_id, [(seq, json), ...]); e.g. the notification to the other relay nodes (relay/cluster.py).
CommitNotice = Callable[[Any, str, str, list[tuple[int, str]]], None]

# Called after COMMIT, in commit order: (account_id, session_id, [(seq, json), ...]).
EventListener = Callable[[str, str, list[tuple[int, str]]], None]


class Store:
    def __init__(
        self, config: Config, schemas: Sequence[Schema] = (), log: StepLog | None = None
    ) -> None:
        self.config = config
        self.db: Database = open_database(config, tuple(schemas), log)
        self.dialect = self.db.dialect
        # The SQLite file (None on PostgreSQL): what tools and tests open beside the relay.
        self.path = getattr(self.db, "path", None)
        self._limits = ConversionLimits.from_config(config)
        self._listeners: list[EventListener] = []
        self._observers: list[LineObserver] = []
        self._notices: list[CommitNotice] = []
        self._writer = self.db.writer

    def describe(self) -> str:
        """Where the store keeps its data, for a person (no password)."""
        return self.db.describe()

    def close(self) -> None:
        self.db.close()

    def add_notice(self, notice: CommitNotice) -> None:
        """Run ``notice`` inside each ingest transaction that numbered events."""
        self._notices.append(notice)

    def add_listener(self, listener: EventListener) -> None:
        self._listeners.append(listener)

    def add_observer(self, observer: LineObserver) -> None:
        """Derive more from new lines, in the ingest transaction (see LineObserver)."""
        self._writer.run_sync(lambda conn, _: observer.setup(conn))
        self._observers.append(observer)

    def write(self, job: Callable[[Any], T]) -> Awaitable[T]:
        """Run ``job`` in the writer's transaction (for modules that keep their own tables)."""
        return self._writer.run(lambda conn, _: job(conn))

    async def read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return await self._read(sql, params)

    # -- accounts, tokens, pairing (sync: used by the CLI and at start-up) ----

    def ensure_account(self, name: str = DEFAULT_ACCOUNT) -> str:
        def job(conn: Any, _: list[Callable[[], None]]) -> str:
            row = conn.execute("SELECT id FROM accounts WHERE name = ?", (name,)).fetchone()
            if row:
                return str(row[0])
            account_id = _new_id("acct")
            conn.execute(
                "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)",
                (account_id, name, time.time()),
            )
            return account_id

        return self._writer.run_sync(job)

    def create_token(
        self, account_id: str, kind: str, name: str, ttl_days: float | None = None
    ) -> tuple[str, str, str]:
        """Make a device or phone with a fresh token; return (token, token_id, subject_id)."""
        if kind not in {"device", "phone"}:
            raise ValueError(f"token kind must be device or phone, not {kind!r}")
        token = f"cb{kind[0]}_{secrets.token_urlsafe(TOKEN_BYTES)}"
        days = self.config.float("token_ttl_days") if ttl_days is None else ttl_days
        now = time.time()
        expires = now + days * 86400 if days > 0 else None

        def job(conn: Any, _: list[Callable[[], None]]) -> tuple[str, str]:
            subject_id = _new_id("mac" if kind == "device" else "phone")
            table = "devices" if kind == "device" else "phones"
            conn.execute(
                f"INSERT INTO {table} (id, account_id, name, created_at) VALUES (?, ?, ?, ?)",
                (subject_id, account_id, name, now),
            )
            token_id = _new_id("tok")
            conn.execute(
                "INSERT INTO tokens (hash, id, account_id, kind, subject_id, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (hash_secret(token), token_id, account_id, kind, subject_id, now, expires),
            )
            return token_id, subject_id

        token_id, subject_id = self._writer.run_sync(job)
        return token, token_id, subject_id

    def authenticate(self, token: str, now: float | None = None) -> Principal:
        """The principal holding ``token``; Unauthorized when unknown, revoked or expired."""
        return self.authenticate_hash(hash_secret(token), now)

    def authenticate_hash(self, token_hash: str, now: float | None = None) -> Principal:
        rows = self.db.query(
            "SELECT id, account_id, kind, subject_id, expires_at, revoked_at FROM tokens"
            " WHERE hash = ?",
            (token_hash,),
        )
        return _principal(token_hash, rows[0] if rows else None, now)

    async def authenticate_async(self, token_hash: str, now: float | None = None) -> Principal:
        """``authenticate_hash`` off the event loop (a network round trip on PostgreSQL)."""
        rows = await self._read(
            "SELECT id, account_id, kind, subject_id, expires_at, revoked_at FROM tokens"
            " WHERE hash = ?",
            (token_hash,),
        )
        return _principal(token_hash, rows[0] if rows else None, now)

    def create_pair_code(self, account_id: str, kind: str, name: str) -> str:
        """A one-time code, ``ABCD-EFGH-JKLM-NPQR``: its first group is its id, the rest secret."""
        now = time.time()
        expires = now + self.config.float("pair_code_ttl")

        def job(conn: Any, _: list[Callable[[], None]]) -> str:
            conn.execute("DELETE FROM pairing_codes WHERE expires_at <= ?", (now,))
            while True:
                code_id = _pair_chars(PAIR_CODE_ID_LENGTH)
                if not conn.execute(
                    "SELECT 1 FROM pairing_codes WHERE id = ?", (code_id,)
                ).fetchone():
                    break  # ids of live codes are unique, so a guess counts against one code
            secret = _pair_chars(PAIR_CODE_SECRET_LENGTH)
            conn.execute(
                "INSERT INTO pairing_codes (id, secret_hash, account_id, kind, name, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (code_id, hash_secret(code_id + secret), account_id, kind, name, expires),
            )
            return code_id + secret

        plain = self._writer.run_sync(job)
        return "-".join(plain[i : i + 4] for i in range(0, len(plain), 4))

    async def redeem_pair_code(self, code: str, name: str | None) -> tuple[str, str, str]:
        """Trade a one-time code for a new token: (token, kind, subject_id).

        A wrong secret for a live code's id is counted against that code (committed, not rolled
        back with the refusal); after PAIR_CODE_GUESSES of them the code no longer works.
        """
        normalized = "".join(code.split()).replace("-", "").upper()
        code_id = normalized[:PAIR_CODE_ID_LENGTH]

        def job(conn: Any, _: list[Callable[[], None]]) -> tuple[str, str, str] | str:
            row = conn.execute(
                "SELECT secret_hash, account_id, kind, name, expires_at, used_at, failures"
                " FROM pairing_codes WHERE id = ?",
                (code_id,),
            ).fetchone()
            now = time.time()
            if row is None or row[5] is not None or row[4] <= now:
                return _UNKNOWN_CODE
            secret_hash, account_id, kind, default_name, _, _, failures = row
            if failures >= PAIR_CODE_GUESSES:
                return (
                    f"this pairing code was tried with a wrong secret {PAIR_CODE_GUESSES} times "
                    "and no longer works; run `claude-bridge pair` again"
                )
            if not hmac.compare_digest(hash_secret(normalized), secret_hash):
                conn.execute(
                    "UPDATE pairing_codes SET failures = failures + 1 WHERE id = ?", (code_id,)
                )
                return _UNKNOWN_CODE
            conn.execute("UPDATE pairing_codes SET used_at = ? WHERE id = ?", (now, code_id))
            return account_id, kind, name or default_name

        found = await self._writer.run(job)
        if isinstance(found, str):
            raise Unauthorized(found, code="bad_pair_code")
        account_id, kind, final_name = found
        token, _, subject_id = await asyncio.to_thread(
            self.create_token, account_id, kind, final_name
        )
        return token, kind, subject_id

    async def revoke(self, account_id: str, kind: str, subject_id: str) -> list[str]:
        """Revoke a phone or a device and every token it holds; return the token hashes."""
        table = "devices" if kind == "device" else "phones"

        def job(conn: Any, _: list[Callable[[], None]]) -> list[str]:
            found = conn.execute(
                f"SELECT 1 FROM {table} WHERE id = ? AND account_id = ?", (subject_id, account_id)
            ).fetchone()
            if not found:
                raise NotFound(f"no {kind} {subject_id} in this account", code=f"unknown_{kind}")
            now = time.time()
            conn.execute(f"UPDATE {table} SET revoked_at = ? WHERE id = ?", (now, subject_id))
            hashes = [
                str(r[0])
                for r in conn.execute(
                    "SELECT hash FROM tokens WHERE subject_id = ? AND revoked_at IS NULL",
                    (subject_id,),
                )
            ]
            conn.execute(
                "UPDATE tokens SET revoked_at = ? WHERE subject_id = ? AND revoked_at IS NULL",
                (now, subject_id),
            )
            return hashes

        return await self._writer.run(job)

    def revoke_token_sync(self, token_id: str) -> bool:
        def job(conn: Any, _: list[Callable[[], None]]) -> bool:
            cur = conn.execute(
                "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (time.time(), token_id),
            )
            return bool(cur.rowcount > 0)

        return self._writer.run_sync(job)

    def list_tokens_sync(self) -> list[dict[str, Any]]:
        rows = self.db.query(
            "SELECT t.id, a.name, t.kind, t.subject_id, COALESCE(d.name, p.name), t.created_at,"
            " t.expires_at, t.revoked_at FROM tokens t JOIN accounts a ON a.id = t.account_id"
            " LEFT JOIN devices d ON d.id = t.subject_id LEFT JOIN phones p ON p.id = t.subject_id"
            " ORDER BY t.created_at"
        )
        keys = (
            "id",
            "account",
            "kind",
            "subject_id",
            "name",
            "created_at",
            "expires_at",
            "revoked_at",
        )
        return [dict(zip(keys, row, strict=True)) for row in rows]

    # -- devices and phones ----------------------------------------------------

    async def list_devices(self, account_id: str) -> list[Device]:
        rows = await self._read(
            "SELECT id, account_id, name, created_at, last_seen, info FROM devices"
            " WHERE account_id = ? AND revoked_at IS NULL ORDER BY created_at",
            (account_id,),
        )
        return [Device(r[0], r[1], r[2], r[3], r[4], json.loads(r[5])) for r in rows]

    async def list_phones(self, account_id: str) -> list[Phone]:
        rows = await self._read(
            "SELECT id, name, created_at, last_seen, revoked_at FROM phones WHERE account_id = ?"
            " ORDER BY created_at",
            (account_id,),
        )
        return [Phone(r[0], r[1], r[2], r[3], r[4] is not None) for r in rows]

    async def device_seen(self, device_id: str, info: dict[str, Any] | None = None) -> None:
        def job(conn: Any, _: list[Callable[[], None]]) -> None:
            if info is not None:
                conn.execute(
                    "UPDATE devices SET last_seen = ?, info = ?,"
                    " name = CASE WHEN ? != '' THEN ? ELSE name END WHERE id = ?",
                    (
                        time.time(),
                        json.dumps(info),
                        info.get("name", ""),
                        info.get("name", ""),
                        device_id,
                    ),
                )
            else:
                conn.execute(
                    "UPDATE devices SET last_seen = ? WHERE id = ?", (time.time(), device_id)
                )

        await self._writer.run(job)

    async def phone_seen(self, phone_id: str) -> None:
        def job(conn: Any, _: list[Callable[[], None]]) -> None:
            conn.execute("UPDATE phones SET last_seen = ? WHERE id = ?", (time.time(), phone_id))

        await self._writer.run(job)

    # -- sessions ----------------------------------------------------------------

    _SESSION_COLUMNS = (
        "id, account_id, device_id, cwd, title, grp, position, locked, mark, created_at,"
        " updated_at, conversation_id, conversation_ids, permission_mode, epoch, last_seq, oldest_seq,"
        " epoch_start, parent_id, branch"
    )

    @staticmethod
    def _session(row: Sequence[Any]) -> Session:
        return Session(
            id=row[0],
            account_id=row[1],
            device_id=row[2],
            cwd=row[3],
            title=row[4],
            group=row[5],
            position=row[6],
            locked=bool(row[7]),
            mark=row[8],
            created_at=row[9],
            updated_at=row[10],
            conversation_id=row[11],
            conversation_ids=json.loads(row[12]),
            permission_mode=row[13],
            epoch=row[14],
            last_seq=row[15],
            oldest_seq=row[16],
            epoch_start=row[17],
            parent_id=row[18],
            branch=row[19],
        )

    async def list_sessions(self, account_id: str) -> list[Session]:
        rows = await self._read(
            f"SELECT {self._SESSION_COLUMNS} FROM sessions WHERE account_id = ?"
            " ORDER BY position, created_at",
            (account_id,),
        )
        return [self._session(r) for r in rows]

    async def get_session(self, account_id: str, session_id: str) -> Session:
        rows = await self._read(
            f"SELECT {self._SESSION_COLUMNS} FROM sessions WHERE id = ? AND account_id = ?",
            (session_id, account_id),
        )
        if not rows:
            # The same answer for "no such session" and "another account's": no probing.
            raise NotFound(
                f"no session {session_id}", code="unknown_session", session_id=session_id
            )
        return self._session(rows[0])

    async def create_session(
        self,
        account_id: str,
        device_id: str,
        session_id: str,
        cwd: str,
        title: str = "",
        *,
        parent_id: str | None = None,
    ) -> Session:
        room = self._session_room()

        def job(conn: Any, _: list[Callable[[], None]]) -> Session:
            existing = conn.execute(
                "SELECT account_id FROM sessions WHERE id = ?", (session_id,)
            ).fetchone()
            if existing is not None:
                raise Conflict(f"session {session_id} already exists", code="session_exists")
            room(conn, device_id)
            _insert_session(
                conn, account_id, device_id, session_id, cwd, title, seqrules.new_epoch(), 0
            )
            if parent_id is not None:
                conn.execute(
                    "UPDATE sessions SET parent_id = ? WHERE id = ?", (parent_id, session_id)
                )
            return self._session(_select_session(conn, session_id))

        return await self._writer.run(job)

    async def discard_empty_session(self, account_id: str, session_id: str) -> bool:
        """Forget a session that never stored an event (its start was refused)."""

        def job(conn: Any, _: list[Callable[[], None]]) -> bool:
            cur = conn.execute(
                "DELETE FROM sessions WHERE id = ? AND account_id = ? AND last_seq = 0",
                (session_id, account_id),
            )
            return bool(cur.rowcount > 0)

        return await self._writer.run(job)

    async def save_last_known(self, session_id: str, data: dict[str, Any]) -> None:
        """What the session's Mac last said of it (state, waiting card): kept across restarts so
        a session of an offline Mac still shows it."""
        text = json.dumps(data, separators=(",", ":"))

        def job(conn: Any, _: list[Callable[[], None]]) -> None:
            conn.execute(
                "INSERT INTO last_known (session_id, data) SELECT id, ? FROM sessions WHERE id = ?"
                " ON CONFLICT (session_id) DO UPDATE SET data = excluded.data",
                (text, session_id),
            )

        await self._writer.run(job)

    async def read_last_known(self) -> dict[str, dict[str, Any]]:
        """Every session's last known state, by session id."""
        rows = await self._read("SELECT session_id, data FROM last_known", ())
        return {str(row[0]): json.loads(row[1]) for row in rows}

    async def update_session(self, account_id: str, session_id: str, **fields: Any) -> Session:
        columns = {
            "title": "title",
            "group": "grp",
            "locked": "locked",
            "position": "position",
            "mark": "mark",
            "cwd": "cwd",  # where the Mac runs it (a worktree's folder)
            "branch": "branch",
        }

        def job(conn: Any, _: list[Callable[[], None]]) -> Session:
            row = conn.execute(
                "SELECT 1 FROM sessions WHERE id = ? AND account_id = ?", (session_id, account_id)
            ).fetchone()
            if row is None:
                raise NotFound(
                    f"no session {session_id}", code="unknown_session", session_id=session_id
                )
            sets = []
            values: list[Any] = []
            for key, value in fields.items():
                sets.append(f"{columns[key]} = ?")
                values.append(value)
                if key == "title":
                    sets.append("title_set_by_person = 1")
            if sets:
                sets.append("updated_at = ?")
                values.append(time.time())
                conn.execute(
                    f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*values, session_id)
                )
            return self._session(_select_session(conn, session_id))

        return await self._writer.run(job)

    async def hand_over(
        self,
        account_id: str,
        session_id: str,
        from_device: str,
        to_device: str,
        cwd: str,
        also: Callable[[Any], None] | None = None,
    ) -> Session:
        """Give the session to another Mac of the account, in one transaction: from then on
        only ``to_device`` may send its lines, positions and reports (``from_device`` is
        refused, as any other Mac is). Its id, title, group, events and seq stay; its folder is
        the one on the new Mac and its mark goes. ``also`` runs in the same transaction (the
        move's own record): if it raises, nothing changes. Conflict ``not_your_session`` when
        the session is no longer on ``from_device``, ``too_many_sessions`` when ``to_device``
        has ``sessions_max_per_mac`` already."""
        lock = self.dialect.for_update
        room = self._session_room()

        def job(conn: Any, _: list[Callable[[], None]]) -> Session:
            row = conn.execute(
                "SELECT device_id FROM sessions WHERE id = ? AND account_id = ?" + lock,
                (session_id, account_id),
            ).fetchone()
            if row is None:
                raise NotFound(
                    f"no session {session_id}", code="unknown_session", session_id=session_id
                )
            if row[0] != from_device:
                raise _not_yours(session_id)
            room(conn, to_device)  # a Mac gets no more sessions by a move than by its own lines
            conn.execute(
                "UPDATE sessions SET device_id = ?, cwd = ?, mark = NULL, updated_at = ?"
                " WHERE id = ?",
                (to_device, cwd, time.time(), session_id),
            )
            if also is not None:
                also(conn)
            return self._session(_select_session(conn, session_id))

        return await self._writer.run(job)

    async def stored_offsets(self, session_id: str) -> dict[str, int]:
        """How far each conversation of the session is stored: conversation id → the offset of
        its last stored line (what a Mac's follower goes on from)."""
        rows = await self._read(
            "SELECT conversation_id, last_offset FROM conversations WHERE session_id = ?",
            (session_id,),
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def _session_room(self) -> Callable[[Any, str], None]:
        """Inside a write job, before a new session of a Mac is inserted: raise 409
        ``too_many_sessions`` when the Mac has ``sessions_max_per_mac`` already."""
        limit = self.config.int("sessions_max_per_mac")
        lock = self.dialect.for_update

        def check(conn: Any, device_id: str) -> None:
            if limit <= 0:
                return
            # Nodes adding sessions for one Mac take turns (SQLite's one writer needs no lock).
            conn.execute("SELECT id FROM devices WHERE id = ?" + lock, (device_id,))
            count = int(
                conn.execute(
                    "SELECT COUNT(*) FROM sessions WHERE device_id = ?", (device_id,)
                ).fetchone()[0]
            )
            if count >= limit:
                raise Conflict(
                    f"this Mac has {count:,} sessions on the relay, the most "
                    f"sessions_max_per_mac allows ({limit:,}); delete the ones it no longer "
                    "needs (claude-bridge delete, or let retention delete old ones), or raise "
                    "sessions_max_per_mac",
                    code="too_many_sessions",
                )

        return check

    # -- events ------------------------------------------------------------------

    async def ingest(
        self,
        account_id: str,
        device_id: str,
        session_id: str,
        conversation_id: str,
        lines: Sequence[LineRecord],
        cwd: str | None = None,
    ) -> IngestResult:
        """Store a batch of transcript lines as numbered events, once each (idempotent).

        A session keeps at most ``conversations_max_per_session`` conversations listed (its
        ``conversation_ids``) and their stored offsets (``conversations``), the newest: a Mac
        sending lines under ever new conversation ids makes the oldest be forgotten, never a
        stored event."""
        if not CONVERSATION_KEY.match(conversation_id):
            raise BadRequest(
                f"{conversation_id[:80]!r} is not a conversation id (a Claude Code conversation "
                "UUID, a subagent's agent-…, or bridge: letters, digits, - and _, 128 at most)",
                code="bad_conversation_id",
            )
        conversations_kept = self.config.int("conversations_max_per_session")
        kept = self.config.int("events_kept")
        max_line = self.config.int("max_line_bytes")
        limits = self._limits
        listeners = self._listeners
        observers = self._observers
        notices = self._notices
        lock = self.dialect.for_update
        room = self._session_room()

        def job(conn: Any, after_commit: list[Callable[[], None]]) -> IngestResult:
            # The session row first, locked: two nodes ingesting one session take turns here,
            # and each sees what the other committed before it checks for duplicates.
            row = conn.execute(
                "SELECT account_id, device_id FROM sessions WHERE id = ?" + lock, (session_id,)
            ).fetchone()
            created = False
            if row is None:
                room(conn, device_id)
                created = _insert_session(
                    conn, account_id, device_id, session_id, cwd or "", "", seqrules.new_epoch(), 0
                )
                row = conn.execute(
                    "SELECT account_id, device_id FROM sessions WHERE id = ?" + lock, (session_id,)
                ).fetchone()
            if row[0] != account_id:
                raise NotFound(
                    f"no session {session_id}", code="unknown_session", session_id=session_id
                )
            elif row[1] != device_id:
                raise _not_yours(session_id)
            srow = _select_session(conn, session_id)
            numbering = seqrules.SessionSeq(srow[14], srow[15], srow[16])
            conv = conn.execute(
                "SELECT last_offset FROM conversations WHERE session_id = ? AND conversation_id = ?",
                (session_id, conversation_id),
            ).fetchone()
            last_offset = conv[0] if conv else -1
            through = last_offset
            duplicates = 0
            rejected: list[str] = []
            dropped: list[DroppedLine] = []
            pending: list[tuple[LineRecord, DisplayEvent]] = []
            converted: list[tuple[LineRecord, Conversion]] = []
            new_uuids: list[str] = []
            permission_mode: str | None = None
            known = _known_uuids(conn, session_id, [x.uuid for x in lines if x.uuid])
            for line in lines:
                # Offsets only grow within a conversation; a line that breaks the order is
                # dropped and reported, never allowed to move the mark (it would hide every
                # later line as "already stored").
                if line.offset >= MAX_TRANSCRIPT_OFFSET:
                    dropped.append(DroppedLine(offset=line.offset, reason="out_of_range"))
                    continue
                if line.offset <= last_offset:
                    duplicates += 1  # sent again after a reconnect: stored already
                    dropped.append(DroppedLine(offset=line.offset, reason="duplicate"))
                    continue
                if line.offset <= through:
                    dropped.append(DroppedLine(offset=line.offset, reason="out_of_order"))
                    continue
                through = line.offset
                if line.uuid is not None:
                    if line.uuid in known:
                        duplicates += 1  # the same line copied into another conversation file
                        dropped.append(DroppedLine(offset=line.offset, reason="duplicate"))
                        continue
                    known.add(line.uuid)
                    new_uuids.append(line.uuid)
                line = _readable(line)
                size = len(line.text.encode("utf-8", "surrogatepass"))
                if size > max_line:
                    reason = f"line at offset {line.offset} is {size} bytes (limit {max_line})"
                    rejected.append(reason)
                    pending.append((line, _too_large_marker(size, max_line)))
                    continue
                conversion = convert_line(line.text, limits)
                facts = conversion.facts
                converted.append((line, conversion))
                if facts.permission_mode:
                    permission_mode = facts.permission_mode
                pending.extend((line, event) for event in conversion.events)
            if numbering.last_seq + len(pending) > MAX_SEQ:
                raise BadRequest(
                    f"session {session_id} has used every seq up to {MAX_SEQ}", code="seq_exhausted"
                )
            aged_from = numbering.oldest_seq
            numbers, numbering = seqrules.number(numbering, len(pending), kept)
            for observer in observers:
                # Same transaction: what observers derive (titles, usage, search…) is stored
                # exactly when the lines are, never twice for a line sent again.
                observer.on_lines(
                    conn, NewLines(account_id, session_id, conversation_id, converted)
                )
            stored: list[tuple[int, str]] = []
            for seq, (line, event) in zip(numbers, pending, strict=True):
                # The shape of NumberedEvent, built directly: this runs for every event.
                data = event.model_dump(mode="json", exclude_none=True)
                data.update(
                    session_id=session_id,
                    seq=seq,
                    epoch=numbering.epoch,
                    conversation_id=conversation_id,
                    offset=line.offset,
                )
                stored.append((seq, json.dumps(data, ensure_ascii=False, separators=(",", ":"))))
            if stored:
                _insert_events(conn, session_id, stored)
                # Only what just aged out of the window: events kept from before a new epoch
                # (below its start, see reconcile) stay readable.
                conn.execute(
                    "DELETE FROM events WHERE session_id = ? AND seq >= ? AND seq < ?",
                    (session_id, aged_from, numbering.oldest_seq),
                )
            if new_uuids:
                _insert_uuids(conn, session_id, new_uuids)
            if through != last_offset:
                conn.execute(
                    "INSERT INTO conversations (session_id, conversation_id, last_offset,"
                    " stored_at) VALUES (?, ?, ?, ?) ON CONFLICT (session_id, conversation_id)"
                    " DO UPDATE SET last_offset = excluded.last_offset,"
                    " stored_at = excluded.stored_at",
                    (session_id, conversation_id, through, time.time()),
                )
                if conv is None:
                    _forget_oldest_conversations(conn, session_id, conversations_kept)
            conv_ids: list[str] = json.loads(srow[12])
            is_claudes = _is_claude_conversation(conversation_id)
            if is_claudes and conversation_id not in conv_ids:
                conv_ids.append(conversation_id)
                conv_ids = newest(conv_ids, conversations_kept)
            # The number moves here, once, in the transaction that stores the events (under
            # the row lock taken above): what was given is what the row now says.
            moved = conn.execute(
                "UPDATE sessions SET last_seq = last_seq + ?, oldest_seq = ?, updated_at = ?,"
                " conversation_id = CASE WHEN ? = 1 THEN ? ELSE conversation_id END,"
                " conversation_ids = ?,"
                " permission_mode = COALESCE(?, permission_mode) WHERE id = ? RETURNING last_seq",
                (
                    len(pending),
                    numbering.oldest_seq,
                    time.time(),
                    1 if is_claudes else 0,
                    conversation_id,
                    json.dumps(conv_ids),
                    permission_mode,
                    session_id,
                ),
            ).fetchone()
            if moved is None or int(moved[0]) != numbering.last_seq:
                raise RuntimeError(
                    f"session {session_id} was numbered beside this write (seq {moved}, expected "
                    f"{numbering.last_seq}): nothing of this batch was stored"
                )
            if stored:
                for notice in notices:
                    notice(conn, account_id, session_id, stored)
                after_commit.extend(
                    functools.partial(listener, account_id, session_id, stored)
                    for listener in listeners
                )
            return IngestResult(
                session=self._session(_select_session(conn, session_id)),
                events=stored,
                through_offset=through,
                duplicates=duplicates,
                rejected=rejected,
                dropped=dropped,
                created=created,
            )

        return await self._writer.run(job)

    async def reconcile(
        self, account_id: str, device_id: str, positions: Iterable[SessionPosition]
    ) -> Reconciliation:
        """Apply the Mac's hello: for each session, the relay's numbering and what to send back.

        A Mac speaks only for its own sessions (the device the session is on): another Mac's are
        refused and left untouched. A Mac ahead of the relay (the relay lost its latest events)
        starts a new epoch numbered after the Mac's seq (relay/seq.py), but what the relay has
        stored stays: a Mac's word never deletes an event."""
        positions = list(positions)
        set_epoch = self.dialect.set_json_key("data", "epoch")
        lock = self.dialect.for_update
        room = self._session_room()

        def job(conn: Any, _: list[Callable[[], None]]) -> Reconciliation:
            out = Reconciliation()
            for pos in positions:
                row = conn.execute(
                    "SELECT account_id, device_id, epoch, last_seq, oldest_seq FROM sessions"
                    " WHERE id = ?" + lock,
                    (pos.session_id,),
                ).fetchone()
                if row is not None and row[0] != account_id:
                    continue  # another account's session id: ignore, reveal nothing
                if row is not None and row[1] != device_id:
                    out.refused.append(pos.session_id)
                    continue
                relay_seq = seqrules.SessionSeq(row[2], row[3], row[4]) if row else None
                decision = seqrules.reconcile(relay_seq, pos.last_seq, pos.epoch)
                if row is None:
                    try:
                        room(conn, device_id)
                    except Conflict as exc:
                        out.over_limit.append(pos.session_id)  # left out, named to the Mac
                        out.over_limit_reason = exc.message
                        continue
                    _insert_session(
                        conn,
                        account_id,
                        device_id,
                        pos.session_id,
                        "",
                        "",
                        decision.seq.epoch,
                        decision.seq.last_seq,
                    )
                elif decision.new_epoch:
                    conn.execute(
                        "UPDATE sessions SET epoch = ?, last_seq = ?, oldest_seq = ?,"
                        " epoch_start = ? WHERE id = ?",
                        (
                            decision.seq.epoch,
                            decision.seq.last_seq,
                            decision.seq.oldest_seq,
                            decision.seq.last_seq + 1,
                            pos.session_id,
                        ),
                    )
                    # The stored events stay, below the new epoch's start, and are read from
                    # here (relay/history.py); they belong to the new epoch now.
                    conn.execute(
                        f"UPDATE events SET data = {set_epoch} WHERE session_id = ?",
                        (decision.seq.epoch, pos.session_id),
                    )
                session = self._session(_select_session(conn, pos.session_id))
                out.sessions.append(
                    Reconciled(session, decision.send_after, decision.new_epoch and row is not None)
                )
            return out

        return await self._writer.run(job)

    async def read_events(
        self,
        session_id: str,
        first: int,
        last: int,
        *,
        max_bytes: int | None = None,
        newest: bool = False,
    ) -> list[tuple[int, str]]:
        """Stored events with first <= seq <= last, oldest first, as (seq, JSON).

        With ``max_bytes`` it stops once the events read would pass that many bytes of JSON (at
        least one event is read): from ``first`` on, or with ``newest`` from ``last`` back, so a
        huge range never sits in memory at once."""
        if last < first:
            return []
        order = "DESC" if newest else "ASC"
        sql = (
            "SELECT seq, data FROM events WHERE session_id = ? AND seq BETWEEN ? AND ?"
            f" ORDER BY seq {order}"
        )

        def run() -> list[tuple[int, str]]:
            out: list[tuple[int, str]] = []
            size = 0

            def take(row: Any) -> bool:
                nonlocal size
                seq, data = row
                size += len(data) + 1
                if max_bytes is not None and out and size > max_bytes:
                    return False
                out.append((int(seq), str(data)))
                return True

            self.db.stream(sql, (session_id, first, last), take)
            if newest:
                out.reverse()
            return out

        try:
            return await asyncio.to_thread(run)
        except self.db.errors as exc:
            raise self.db.translate(exc) from exc

    def read_events_sync(self, session_id: str, first: int, last: int) -> list[tuple[int, str]]:
        rows = self.db.query(
            "SELECT seq, data FROM events WHERE session_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
            (session_id, first, last),
        )
        return [(int(r[0]), str(r[1])) for r in rows]

    async def _read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        try:
            return await self.db.aquery(sql, params)
        except self.db.errors as exc:
            raise self.db.translate(exc) from exc


def _principal(token_hash: str, row: Any, now: float | None) -> Principal:
    """The principal of a token row; Unauthorized when unknown, revoked or expired."""
    if row is None:
        raise Unauthorized("this token is not known to the relay; pair again", code="unauthorized")
    token_id, account_id, kind, subject_id, expires_at, revoked_at = row
    if revoked_at is not None:
        raise Unauthorized("this token was revoked; pair again", code="token_revoked")
    if expires_at is not None and (now or time.time()) >= expires_at:
        raise Unauthorized("this token has expired; pair again", code="token_expired")
    return Principal(token_id, token_hash, account_id, kind, subject_id)


def _insert_session(
    conn: Any,
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
    return bool(cursor.rowcount > 0)


def newest(items: list[T], kept: int) -> list[T]:
    """The last ``kept`` of ``items`` (all of them when ``kept`` is 0: no limit). Pure."""
    return items[-kept:] if kept > 0 else items


def _forget_oldest_conversations(conn: Any, session_id: str, kept: int) -> None:
    """A session's stored offsets beyond the newest ``kept`` conversations (by when a line of
    each was last stored) are forgotten: a line sent again under one of those is then told a
    duplicate by its uuid alone. Its events stay."""
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


def _is_claude_conversation(conversation_id: str) -> bool:
    """A subagent's transcript (agent-…) and the bridge's own lines are not the session's
    conversation: they never replace its current conversation id."""
    return not conversation_id.startswith("agent-") and conversation_id != BRIDGE_CONVERSATION


UUIDS_PER_QUERY = 500  # ids per IN (…) query, well under SQLite's limit on bound variables


def _known_uuids(conn: Any, session_id: str, uuids: list[str | None]) -> set[str]:
    """Which of these line uuids the session has stored already (one query per chunk; on
    PostgreSQL one query with an array, a statement it prepares once)."""
    if conn.dialect.postgres:
        if not uuids:
            return set()
        # Driven by the batch's ids: one primary-key probe each (``uuid = ANY(…)`` would read
        # every uuid of the session).
        rows = conn.execute(
            "SELECT l.uuid FROM unnest(?::text[]) AS batch(u)"
            " JOIN line_uuids l ON l.session_id = ? AND l.uuid = batch.u",
            ([u for u in uuids if u], session_id),
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


def _insert_events(conn: Any, session_id: str, stored: list[tuple[int, str]]) -> None:
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


def _insert_uuids(conn: Any, session_id: str, uuids: list[str]) -> None:
    if conn.dialect.postgres:
        conn.execute(
            "INSERT INTO line_uuids (session_id, uuid)"
            " SELECT ?, u FROM unnest(?::text[]) AS batch(u) ON CONFLICT DO NOTHING",
            (session_id, uuids),
        )
        return
    conn.executemany(
        "INSERT INTO line_uuids (session_id, uuid) VALUES (?, ?) ON CONFLICT DO NOTHING",
        [(session_id, u) for u in uuids],
    )


def _select_session(conn: Any, session_id: str) -> Sequence[Any]:
    row = conn.execute(
        f"SELECT {Store._SESSION_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
    ).fetchone()
    assert row is not None
    return tuple(row)


def _not_yours(session_id: str) -> RelayError:
    return Conflict(
        f"session {session_id} belongs to another Mac of this account; only the Mac it runs on "
        "may send its lines or positions",
        code="not_your_session",
        session_id=session_id,
    )


# A JSON escape of a UTF-16 surrogate, or a lone one itself. Claude Code (JavaScript) writes a
# pair as the character, so an escaped one in a transcript is nearly always lone: rare, checked.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")


def _readable(line: LineRecord) -> LineRecord:
    """The line with every lone surrogate in it or in its JSON replaced by U+FFFD (else it cannot
    be stored: UTF-8 has no such code point). A line that is not JSON keeps its text otherwise:
    it becomes the unreadable marker."""
    if not _SURROGATE.search(line.text):
        return line
    text = replace_surrogates(line.text)
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return LineRecord(offset=line.offset, text=text, uuid=line.uuid)
    repaired = replace_surrogates(parsed)
    if repaired != parsed:
        text = json.dumps(repaired, ensure_ascii=False, separators=(",", ":"))
    if text == line.text:
        return line
    return LineRecord(offset=line.offset, text=text, uuid=line.uuid)


def _too_large_marker(size: int, limit: int) -> DisplayEvent:
    return DisplayEvent(
        kind=EventKind.MARKER,
        marker=MarkerKind.LINE_TOO_LARGE,
        text=f"A transcript line of {size:,} bytes is larger than the relay keeps ({limit:,}); "
        "it stays in the transcript on the Mac.",
    )


def new_session_id() -> str:
    return str(uuid.uuid4())
