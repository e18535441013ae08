"""Retention: sessions move from active to archived to deleted, by themselves.

Stages:

* **active** — the default. A session idle for ``archive_after_days`` (30) is archived. Idle
  means no new event and no change to the session (``sessions.updated_at``) and no retention
  action by a person (pin, unpin) for that long; a session that is working or waiting for its
  person on a linked Mac is never archived.
* **archived** — kept in ``sessions`` (so lists and search still find it) with the stage in
  this module's table ``session_retention``. It opens read-only: every command that would act
  on it (send, answer a card, interrupt, end, rest, reopen, set_policy…) is refused with 409
  ``session_archived`` (``refuse_if_archived``, a command guard of relay/deps.py
  ``send_command``). New events arriving from its Mac make it active again at the next run;
  pinning makes it active at once.
* **deleted** — ``delete_after_days`` (180) after it was archived, the session is deleted on the
  relay: its row in ``sessions`` and everything keyed by its id (events, conversations, and any
  table with a ``session_id`` column, so derived data such as usage or a search index goes
  too), in one transaction. Then, over the link, the Mac is told with a ``delete_history``
  command: the agent deletes its event archive and forgets the session. A Mac that is offline
  is told when it links again (the ledger ``retention_deleted`` remembers; see
  ``deliver_pending``), and until it confirms nothing else happens on the relay. If a Mac's
  ``hello`` brings the deleted id back before it was told (the relay then re-creates an empty
  row), that row is removed again once the Mac confirms.

The **audit log** (features/audit.py) is not the session's: deleting a session leaves its audit
rows in place (the table is kept out of the sweep below, and its append-only trigger would
refuse anyway). Each run deletes the audit rows older than ``audit_keep_days`` (365), counted
from each decision, in the same transaction.

A **pinned** session is kept: never archived or deleted (pinning an archived one makes it
active again; unpinning restarts its idle clock).

Expiry runs by itself: once when the relay starts, then every ``retention_interval`` seconds
(an asyncio task started in the app's lifespan). Each run logs one line and keeps a report per
account, shown by ``GET /api/retention``; ``POST /api/retention/run`` runs it now for the
caller's account. Ages and the clock are injectable (``Retention.clock``) for tests.

On PostgreSQL, where several relay nodes share the database, each node keeps its schedule but a
run holds an advisory lock (``RUN_LOCK``) on a connection of its own: a node that finds it taken
skips its turn (a line in the log; ``POST /api/retention/run`` answers 409
``retention_running``). Each node reads the ledger of deleted sessions again at every check and
tells the Macs linked to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Depends, Request

from relay.db import Connection, database_errors
from relay.deps import Phone, State, refuse_read_only, relay_state, session_or_404
from relay.errors import Conflict, RelayError
from relay.feature import Feature
from relay.features import audit, report
from relay.live import Link
from relay.state import RelayState, iso
from relay.store import Principal, Session, sessions
from relay.store import accounts as store_accounts
from wire.config import Config
from wire.protocol import DeleteHistoryArgs, SessionInfo
from wire.tasks import TaskSet

_log = logging.getLogger("relay.features.retention")
# A read-only view (X-CB-Read-Only) may read but not change: same guard as relay/routes.py
# (relay/deps.py refuse_read_only).
router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

DAY = 86400.0
ACTIVE = "active"
ARCHIVED = "archived"
WORKING_STATES = frozenset({"starting", "busy", "waiting"})  # never archived while so
# Tables never swept by session id: the audit log outlives its sessions (its own age, below).
KEEP_TABLES = frozenset({"sessions", "retention_deleted", "retention_reports", "audit"})

TABLES = (
    """CREATE TABLE IF NOT EXISTS session_retention (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        stage TEXT NOT NULL DEFAULT 'active' CHECK (stage IN ('active', 'archived')),
        pinned INTEGER NOT NULL DEFAULT 0,
        since REAL,
        archived_at REAL,
        archived_seq INTEGER
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS session_retention_stage ON session_retention(stage)",
    """CREATE TABLE IF NOT EXISTS retention_deleted (
        session_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        device_id TEXT NOT NULL,
        deleted_at REAL NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS retention_reports (
        account_id TEXT PRIMARY KEY,
        report TEXT NOT NULL
    ) WITHOUT ROWID""",
)

# On PostgreSQL every relay node schedules runs, and a run takes this advisory lock (any fixed
# 64-bit number; this one spells "cbretent") on a connection of its own: one node runs at a
# time, the others skip their turn.
RUN_LOCK = 0x6362726574656E74
BUSY = "retention is running on another relay node now; try again in a moment"


def setup(conn: Connection) -> None:
    """The feature's tables (its schema, made as the store opens; safe to run again)."""
    for sql in TABLES:
        conn.execute(sql)


class RetentionBusy(Conflict):
    """Another relay node holds the run lock."""

    def __init__(self) -> None:
        super().__init__(BUSY, code="retention_running")


# -- the rules (pure) ----------------------------------------------------------------------


@dataclass(frozen=True)
class Ages:
    """Seconds; 0 turns a step off."""

    archive_after: float
    delete_after: float
    audit_keep: float = 0.0  # an audit row's own age (relay/features/audit.py), never its session's

    @classmethod
    def from_config(cls, config: Config) -> Ages:
        return cls(
            config.float("archive_after_days") * DAY,
            config.float("delete_after_days") * DAY,
            config.float("audit_keep_days") * DAY,
        )


@dataclass(frozen=True)
class SessionAge:
    session_id: str
    updated_at: float
    last_seq: int
    stage: str = ACTIVE
    pinned: bool = False
    since: float | None = None  # a stage change or a person's pin/unpin: the idle clock restarts
    archived_at: float | None = None
    archived_seq: int | None = None

    @property
    def idle_since(self) -> float:
        return max(self.updated_at, self.since or 0.0)


@dataclass
class Plan:
    archive: list[str] = field(default_factory=list)
    restore: list[str] = field(default_factory=list)  # archived, but new events came
    delete: list[str] = field(default_factory=list)
    kept_pinned: list[str] = field(default_factory=list)
    kept_working: list[str] = field(default_factory=list)


def plan(
    sessions: Iterable[SessionAge], now: float, ages: Ages, working: Iterable[str] = ()
) -> Plan:
    """What one run does to each session (see the module's docstring)."""
    busy = set(working)
    out = Plan()
    for s in sessions:
        if s.stage == ARCHIVED:
            if s.pinned or s.last_seq > (s.archived_seq or 0):
                out.restore.append(s.session_id)
            elif (
                ages.delete_after > 0
                and s.archived_at is not None
                and now - s.archived_at >= ages.delete_after
            ):
                out.delete.append(s.session_id)
            continue
        if ages.archive_after <= 0 or now - s.idle_since < ages.archive_after:
            continue
        if s.pinned:
            out.kept_pinned.append(s.session_id)
        elif s.session_id in busy:
            out.kept_working.append(s.session_id)
        else:
            out.archive.append(s.session_id)
    return out


# -- the store -----------------------------------------------------------------------------

_AGES_SQL = (
    "SELECT s.id, s.account_id, s.device_id, s.title, s.updated_at, s.last_seq,"
    " COALESCE(r.stage, 'active'), COALESCE(r.pinned, 0), r.since, r.archived_at, r.archived_seq"
    " FROM sessions s LEFT JOIN session_retention r ON r.session_id = s.id"
)


@dataclass
class _Found:
    account_id: str
    device_id: str
    title: str
    age: SessionAge


@dataclass
class _Applied:
    plan: Plan
    found: dict[str, _Found]
    deleted: list[str]
    failed: list[tuple[str, str]]
    counts: dict[str, dict[str, int]]  # account → {active, archived, pinned}
    accounts: list[str]
    audit_expired: dict[str, int]  # account → audit rows past their age, deleted


def _tables_with_session_id(conn: Connection) -> list[str]:
    """Tables holding rows of a session by its id: real tables and virtual ones (FTS), never a
    virtual table's own shadow tables (written only through the virtual table)."""
    if conn.dialect.postgres:
        # In the order they were made, as sqlite_master lists them.
        rows = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
            " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')"
            " AND a.attname = 'session_id' AND NOT a.attisdropped ORDER BY c.oid"
        ).fetchall()
        return [str(r[0]) for r in rows if str(r[0]) not in KEEP_TABLES]
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    virtual = [n for n, sql in rows if (sql or "").upper().startswith("CREATE VIRTUAL TABLE")]
    found: list[str] = []
    for name, _ in rows:
        if name in KEEP_TABLES or any(name.startswith(v + "_") for v in virtual):
            continue
        try:
            columns = {r[1] for r in conn.execute(f"PRAGMA table_info({quoted(name)})")}
        except sqlite3.Error:
            continue  # a virtual table whose module is not loaded here
        if "session_id" in columns:
            found.append(name)
    return found


def quoted(name: str) -> str:
    """A table's name as SQL reads it whatever it holds."""
    return '"' + name.replace('"', '""') + '"'


def _apply(
    conn: Connection,
    now: float,
    ages: Ages,
    working: tuple[set[str], set[str]],
    account_id: str | None,
) -> _Applied:
    """One run in one transaction. ``working``: the sessions whose live side says starting,
    busy or waiting, and the Macs linked now (a live side only counts on its linked Mac)."""
    where, params = ("", ()) if account_id is None else (" WHERE s.account_id = ?", (account_id,))
    found: dict[str, _Found] = {}
    for r in conn.execute(_AGES_SQL + where, params):
        age = SessionAge(r[0], float(r[4]), int(r[5]), r[6], bool(r[7]), r[8], r[9], r[10])
        found[r[0]] = _Found(r[1], r[2], r[3], age)
    live, online = working
    busy = [sid for sid in live if sid in found and found[sid].device_id in online]
    todo = plan((f.age for f in found.values()), now, ages, busy)
    for sid in todo.archive:
        conn.execute(
            "INSERT INTO session_retention (session_id, stage, since, archived_at, archived_seq)"
            " VALUES (?, 'archived', ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
            " stage = 'archived', since = excluded.since, archived_at = excluded.archived_at,"
            " archived_seq = excluded.archived_seq",
            (sid, now, now, found[sid].age.last_seq),
        )
    for sid in todo.restore:
        conn.execute(
            "UPDATE session_retention SET stage = 'active', since = ?, archived_at = NULL,"
            " archived_seq = NULL WHERE session_id = ?",
            (now, sid),
        )
    deleted: list[str] = []
    failed: list[tuple[str, str]] = []
    tables = _tables_with_session_id(conn) if todo.delete else []
    for sid in todo.delete:
        conn.execute("SAVEPOINT forget")
        try:
            sessions.delete(conn, sid, tables)
            conn.execute(
                "INSERT INTO retention_deleted"
                " (session_id, account_id, device_id, deleted_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET account_id = excluded.account_id,"
                " device_id = excluded.device_id, deleted_at = excluded.deleted_at",
                (sid, found[sid].account_id, found[sid].device_id, now),
            )
        except database_errors(conn.dialect) as exc:
            conn.execute("ROLLBACK TO forget")
            failed.append((sid, str(exc)))
        else:
            deleted.append(sid)
        conn.execute("RELEASE forget")
    # Audit rows go by their own age, for every account (the age is the relay's setting).
    expired = audit.expire(conn, now - ages.audit_keep) if ages.audit_keep > 0 else {}
    accounts = store_accounts.account_ids(conn) if account_id is None else [account_id]
    counts = {a: {"active": 0, "archived": 0, "pinned": 0} for a in accounts}
    for r in conn.execute(
        "SELECT s.account_id, COALESCE(r.stage, 'active'), COALESCE(r.pinned, 0), COUNT(*)"
        " FROM sessions s LEFT JOIN session_retention r ON r.session_id = s.id"
        + where
        + " GROUP BY 1, 2, 3",
        params,
    ):
        bucket = counts.setdefault(r[0], {"active": 0, "archived": 0, "pinned": 0})
        bucket[r[1]] = bucket.get(r[1], 0) + int(r[3])
        if r[2]:
            bucket["pinned"] += int(r[3])
    return _Applied(todo, found, deleted, failed, counts, accounts, expired)


async def stage_of(state: RelayState, session_id: str) -> tuple[str, bool, float | None]:
    """(stage, pinned, archived_at) of a session; a session never touched is active."""
    rows = await state.store.read(
        "SELECT stage, pinned, archived_at FROM session_retention WHERE session_id = ?",
        (session_id,),
    )
    if not rows:
        return ACTIVE, False, None
    return str(rows[0][0]), bool(rows[0][1]), rows[0][2]


async def stages(state: RelayState, account_id: str) -> dict[str, tuple[str, bool]]:
    """(stage, pinned) of every session of an account that left the default (active, unpinned)."""
    rows = await state.store.read(
        "SELECT r.session_id, r.stage, r.pinned FROM session_retention r"
        " JOIN sessions s ON s.id = r.session_id WHERE s.account_id = ?",
        (account_id,),
    )
    return {str(r[0]): (str(r[1]), bool(r[2])) for r in rows}


async def refuse_if_archived(state: RelayState, session: Session) -> None:
    """409 ``session_archived`` for a command to an archived session: it opens read-only."""
    stage, _, _ = await stage_of(state, session.id)
    if stage == ARCHIVED:
        raise Conflict(
            "this session is archived: it opens read-only. Pin it to make it active again.",
            code="session_archived",
            session_id=session.id,
        )


# -- the scheduler -------------------------------------------------------------------------


class Retention:
    """Runs expiry on a schedule and tells Macs about deleted sessions (one per relay)."""

    def __init__(self, state: RelayState, clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self.clock = clock
        self.tasks = TaskSet("retention", _log)
        self._kick = asyncio.Event()
        self._deliver_lock = asyncio.Lock()
        self._run_lock = asyncio.Lock()
        self._pending_devices: set[str] = set()
        self._seen: dict[str, Link] = {}  # a link seen once has surely had its welcome
        self.next_run_at: float | None = None  # wall-clock time of the next scheduled run

    @property
    def _shared(self) -> bool:
        """Whether other relay nodes share the database (PostgreSQL)."""
        return bool(self.state.store.dialect.postgres)

    @property
    def ages(self) -> Ages:
        return Ages.from_config(self.state.config)

    async def setup(self) -> None:
        def job(conn: Connection) -> list[str]:
            # Made as the store opens already; again for a store opened without the schema. Not
            # on PostgreSQL when there: CREATE INDEX IF NOT EXISTS would lock the table.
            if (
                not conn.dialect.postgres
                or not conn.execute(
                    "SELECT to_regclass('session_retention') IS NOT NULL"
                ).fetchone()[0]
            ):
                setup(conn)
            return [str(r[0]) for r in conn.execute("SELECT device_id FROM retention_deleted")]

        self._pending_devices = set(await self.state.store.write(job))
        self.state.hooks.watchers.append(self._watch)

    def start(self) -> None:
        self.tasks.start(self._loop(), name="schedule")

    async def close(self) -> None:
        await self.tasks.close()
        with contextlib.suppress(ValueError):
            self.state.hooks.watchers.remove(self._watch)

    async def _loop(self) -> None:
        interval = max(1.0, self.state.config.float("retention_interval"))
        retry = max(0.05, self.state.config.float("retention_retry_interval"))
        loop = asyncio.get_running_loop()
        due = loop.time()  # the first run when the relay starts
        while True:
            if loop.time() >= due:
                try:
                    await self.run_once(trigger="schedule")
                except RetentionBusy:
                    _log.info("retention (schedule): skipped, another relay node is running it")
                except RelayError as exc:  # e.g. the store closing under us
                    _log.warning("retention run failed: %s", exc)
                except Exception:
                    _log.exception("retention run failed")
                due = loop.time() + interval
                self.next_run_at = time.time() + interval
            try:
                if self._shared:
                    await self._reload_pending()  # another node may have deleted sessions
                await self.deliver_pending()
            except Exception:
                _log.exception("telling Macs about deleted sessions failed")
            self._note_links()
            self._kick.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._kick.wait(), min(retry, max(0.0, due - loop.time())))

    def _note_links(self) -> None:
        """Remember the links there are now. A command is sent only on a link noted at an
        earlier tick: one that just attached may not have sent its welcome yet, and a Mac takes
        nothing before its welcome."""
        self._seen = {d: link for d, link in self.state.live.links.items() if not link.closed}

    def _watch(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo
    ) -> None:
        """A session_update came from a Mac, so its link has had its welcome: a Mac with
        deleted sessions to drop can be told at once."""
        link = self.state.live.link(session.device_id)
        if link is not None and self._seen.get(session.device_id) is not link:
            self._seen[session.device_id] = link
            if session.device_id in self._pending_devices:
                self._kick.set()

    # -- a run -------------------------------------------------------------------------

    async def run_once(
        self, *, account_id: str | None = None, trigger: str = "request"
    ) -> dict[str, dict[str, Any]]:
        """Archive, restore and delete what is due; tell Macs; keep and return the reports.
        RetentionBusy (409 ``retention_running``) when another relay node is running it."""
        async with self._run_lock:
            if not self._shared:
                return await self._run(account_id, trigger)
            # A thread's future, not a task: cancelling the run leaves it to finish, and the
            # lock it takes is let go then.
            taking = asyncio.get_running_loop().run_in_executor(None, self._take_run_lock)
            try:
                conn = await asyncio.shield(taking)
            except asyncio.CancelledError:  # the relay stopping: the lock is let go when taken
                taking.add_done_callback(self._release_when_taken)
                raise
            if conn is None:
                raise RetentionBusy()
            try:
                return await self._run(account_id, trigger)
            finally:
                await asyncio.to_thread(self._release_run_lock, conn)

    def _take_run_lock(self) -> Connection | None:
        """A connection of its own holding the run lock, or None when another node holds it."""
        from relay.db.postgres import PostgresDatabase  # only on PostgreSQL (psycopg)

        db = self.state.store.db
        assert isinstance(db, PostgresDatabase)
        conn = db.connect()
        try:
            row = conn.execute("SELECT pg_try_advisory_lock(?)", (RUN_LOCK,)).fetchone()
        except BaseException:
            conn.close()
            raise
        if not row[0]:
            conn.close()
            return None
        return conn

    def _release_when_taken(self, taking: asyncio.Future[Connection | None]) -> None:
        if taking.cancelled() or taking.exception() is not None:
            return
        conn = taking.result()
        if conn is not None:
            self._release_run_lock(conn)

    @staticmethod
    def _release_run_lock(conn: Connection) -> None:
        try:
            conn.execute("SELECT pg_advisory_unlock(?)", (RUN_LOCK,))
        except Exception as exc:  # the session's end releases it anyway
            _log.warning("retention: releasing the run lock failed: %s", exc)
        finally:
            conn.close()

    async def _reload_pending(self) -> None:
        rows = await self.state.store.read("SELECT DISTINCT device_id FROM retention_deleted")
        self._pending_devices = {str(r[0]) for r in rows}

    async def _run(self, account_id: str | None, trigger: str) -> dict[str, dict[str, Any]]:
        now = self.clock()
        ages = self.ages
        working = self._working_sessions()
        applied = await self.state.store.write(
            lambda conn: _apply(conn, now, ages, working, account_id)
        )
        for sid in applied.deleted:
            info = applied.found[sid]
            self._pending_devices.add(info.device_id)
            self.state.live.sessions.pop(sid, None)
            self.state.hub.publish_account(info.account_id, "session_deleted", {"session_id": sid})
        for sid, stage in [(s, ARCHIVED) for s in applied.plan.archive] + [
            (s, ACTIVE) for s in applied.plan.restore
        ]:
            info = applied.found[sid]
            self.state.hub.publish_account(
                info.account_id, "session_stage", {"session_id": sid, "stage": stage}
            )
        if applied.deleted:
            await self.deliver_pending()
        waiting = await self._waiting_ids()
        reports = {
            account: self._report(account, applied, now, trigger, waiting)
            for account in applied.accounts
        }
        texts = {a: json.dumps(r, separators=(",", ":")) for a, r in reports.items()}

        def store_reports(conn: Connection) -> None:
            conn.executemany(
                "INSERT INTO retention_reports (account_id, report) VALUES (?, ?)"
                " ON CONFLICT (account_id) DO UPDATE SET report = excluded.report",
                list(texts.items()),
            )
            report.record_retention(conn, now, reports)

        await self.state.store.write(store_reports)
        p = applied.plan
        _log.info(
            "retention (%s): archived %d, made active again %d, deleted %d (%d wait for their"
            " Mac), failed %d; kept %d pinned and %d working sessions; %d audit entries expired",
            trigger,
            len(p.archive),
            len(p.restore),
            len(applied.deleted),
            len([s for s in applied.deleted if s in waiting]),
            len(applied.failed),
            len(p.kept_pinned),
            len(p.kept_working),
            sum(applied.audit_expired.values()),
        )
        return reports

    def _working_sessions(self) -> tuple[set[str], set[str]]:
        live = self.state.live
        working = {sid for sid, info in live.sessions.items() if info.state in WORKING_STATES}
        return working, {d for d, link in live.links.items() if not link.closed}

    def _report(
        self, account: str, applied: _Applied, now: float, trigger: str, waiting: set[str]
    ) -> dict[str, Any]:
        def mine(ids: Iterable[str]) -> list[str]:
            return [s for s in ids if applied.found[s].account_id == account]

        def item(sid: str, **extra: Any) -> dict[str, Any]:
            return {"session_id": sid, "title": applied.found[sid].title, **extra}

        p = applied.plan
        archived = [
            item(s, idle_days=round((now - applied.found[s].age.idle_since) / DAY, 1))
            for s in mine(p.archive)
        ]
        restored = [item(s) for s in mine(p.restore)]
        deleted = [
            item(s, mac="waiting" if s in waiting else "deleted") for s in mine(applied.deleted)
        ]
        failed = [
            item(s, error=e) for s, e in applied.failed if applied.found[s].account_id == account
        ]
        pieces = [
            f"archived {len(archived)}",
            f"made active again {len(restored)}",
            f"deleted {len(deleted)}",
        ]
        late = sum(1 for d in deleted if d["mac"] == "waiting")
        if late:
            pieces[-1] += f" ({late} still to be deleted on an offline Mac)"
        if failed:
            pieces.append(f"could not delete {len(failed)}")
        return {
            "ran_at": iso(now),
            "trigger": trigger,
            "summary": ", ".join(pieces),
            "archive_after_days": self.state.config.float("archive_after_days"),
            "delete_after_days": self.state.config.float("delete_after_days"),
            "archived": archived,
            "restored": restored,
            "deleted": deleted,
            "failed": failed,
            "kept_pinned": len(mine(p.kept_pinned)),
            "kept_working": mine(p.kept_working),
            "counts": applied.counts.get(account, {"active": 0, "archived": 0, "pinned": 0}),
            "audit_keep_days": self.state.config.float("audit_keep_days"),
            "audit_expired": applied.audit_expired.get(account, 0),
        }

    async def _waiting_ids(self, account_id: str | None = None) -> set[str]:
        sql = "SELECT session_id FROM retention_deleted"
        rows = await self.state.store.read(
            sql if account_id is None else sql + " WHERE account_id = ?",
            () if account_id is None else (account_id,),
        )
        return {str(r[0]) for r in rows}

    # -- telling the Macs ----------------------------------------------------------------

    async def deliver_pending(self) -> list[str]:
        """Send ``delete_history`` for deleted sessions whose Mac is linked; return the ids the
        Macs confirmed. A Mac that is offline, times out or refuses is asked again later."""
        if not self._pending_devices:
            return []
        async with self._deliver_lock:
            rows = await self.state.store.read(
                "SELECT d.session_id, d.device_id, d.deleted_at, s.cwd, s.created_at"
                " FROM retention_deleted d LEFT JOIN sessions s ON s.id = d.session_id"
                " ORDER BY d.deleted_at"
            )
            by_device: dict[str, list[tuple[str, float, str | None, float | None]]] = {}
            for sid, device_id, deleted_at, cwd, created_at in rows:
                by_device.setdefault(device_id, []).append((sid, deleted_at, cwd, created_at))
            self._pending_devices = set(by_device)
            done: list[str] = []
            timeout = self.state.config.float("command_timeout")
            for device_id, items in by_device.items():
                # A Mac linked to another relay node is told by that node (it reads this ledger
                # too): one node sends each delete_history, not every node that sees the link.
                link: Link | None = (
                    self.state.live.local.get(device_id)
                    if self._shared
                    else self.state.live.link(device_id)
                )
                if link is None or link.closed:
                    continue
                if self._seen.get(device_id) is not link:
                    continue  # linked just now: it may not have had its welcome yet
                for sid, deleted_at, cwd, created_at in items:
                    if cwd and created_at is not None and created_at > deleted_at:
                        # The id came back with work since (a new session made with it, or
                        # its Mac still writing to it): keep that, only forget the ledger.
                        await self._settle(sid, remove_row=False)
                        continue
                    try:
                        result = await link.command(sid, DeleteHistoryArgs(), timeout)
                    except RelayError as exc:
                        _log.info("Mac %s not told of deleted %s yet: %s", device_id, sid, exc)
                        break
                    if not result.ok:
                        _log.warning(
                            "Mac %s could not delete session %s: %s %s",
                            device_id,
                            sid,
                            result.code,
                            result.error,
                        )
                        continue
                    await self._settle(sid, remove_row=cwd is not None)
                    done.append(sid)
            if done:
                _log.info("retention: %d deleted sessions also deleted on their Macs", len(done))
            remaining = await self.state.store.read("SELECT device_id FROM retention_deleted")
            self._pending_devices = {str(r[0]) for r in remaining}
            return done

    async def _settle(self, session_id: str, *, remove_row: bool) -> None:
        """The Mac confirmed: drop the ledger entry, and the empty row its hello re-created."""

        def job(conn: Connection) -> str | None:
            conn.execute("DELETE FROM retention_deleted WHERE session_id = ?", (session_id,))
            if not remove_row:
                return None
            account_id = sessions.account_of(conn, session_id)
            if account_id is None:
                return None
            sessions.delete(conn, session_id, _tables_with_session_id(conn))
            return account_id

        account = await self.state.store.write(job)
        if account is not None:
            self.state.live.sessions.pop(session_id, None)
            self.state.hub.publish_account(account, "session_deleted", {"session_id": session_id})

    # -- a person's delete -------------------------------------------------------------------

    async def delete_now(self, session: Session) -> dict[str, Any]:
        """Delete a session now (``DELETE /api/sessions/{id}``), as a run deletes an expired one.

        Its Mac is told first when it is linked: ``delete_history`` stops its claude and drops
        the Mac's archive and copies, so no line of it comes back after the relay forgot it.
        A Mac that is offline (or does not answer) is told through the ledger, as for expiry,
        when it links again. Then the relay forgets it in one transaction
        (relay/store/sessions.py ``delete``)."""
        link = self.state.live.link(session.device_id)
        told = False
        if link is not None and not link.closed:
            try:
                result = await link.command(
                    session.id, DeleteHistoryArgs(), self.state.config.float("command_timeout")
                )
            except RelayError as exc:
                _log.info(
                    "Mac %s not told of deleted %s yet: %s", session.device_id, session.id, exc
                )
            else:
                if not result.ok:
                    raise Conflict(
                        result.error or "the Mac could not delete the session",
                        code=result.code or "command_failed",
                    )
                told = True
        now = self.clock()

        def job(conn: Connection) -> None:
            sessions.delete(conn, session.id, _tables_with_session_id(conn))
            if not told:
                conn.execute(
                    "INSERT INTO retention_deleted"
                    " (session_id, account_id, device_id, deleted_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT (session_id) DO UPDATE SET account_id = excluded.account_id,"
                    " device_id = excluded.device_id, deleted_at = excluded.deleted_at",
                    (session.id, session.account_id, session.device_id, now),
                )

        await self.state.store.write(job)
        self.state.live.sessions.pop(session.id, None)
        self.state.last_known.pop(session.id, None)
        self.state.hub.publish_account(
            session.account_id, "session_deleted", {"session_id": session.id}
        )
        if not told:
            self._pending_devices.add(session.device_id)
            self._kick.set()
        _log.info(
            "session %s deleted by a person%s",
            session.id,
            "" if told else " (its Mac is told when it links again)",
        )
        return {"ok": True, "session_id": session.id, "mac": "deleted" if told else "waiting"}

    # -- pins and views --------------------------------------------------------------------

    async def set_pinned(self, session_id: str, pinned: bool) -> None:
        """Pin: active (again) and kept. Unpin: the idle clock restarts; an archived session
        stays archived."""
        now = self.clock()
        if pinned:
            sql = (
                "INSERT INTO session_retention (session_id, stage, pinned, since)"
                " VALUES (?, 'active', 1, NULL) ON CONFLICT (session_id) DO UPDATE SET"
                " pinned = 1, stage = 'active', archived_at = NULL, archived_seq = NULL,"
                " since = CASE WHEN session_retention.stage = 'archived' THEN ?"
                " ELSE session_retention.since END"
            )
        else:
            sql = (
                "INSERT INTO session_retention (session_id, stage, pinned, since)"
                " VALUES (?, 'active', 0, ?) ON CONFLICT (session_id) DO UPDATE SET"
                " pinned = 0, since = CASE WHEN session_retention.stage = 'active'"
                " THEN excluded.since ELSE session_retention.since END"
            )

        def job(conn: Connection) -> None:
            conn.execute(sql, (session_id, now))

        await self.state.store.write(job)

    async def session_view(self, session: Session) -> dict[str, Any]:
        stage, pinned, archived_at = await stage_of(self.state, session.id)
        rows = await self.state.store.read(
            "SELECT since FROM session_retention WHERE session_id = ?", (session.id,)
        )
        since = rows[0][0] if rows else None
        ages = self.ages
        archive_at = delete_at = None
        if stage == ACTIVE and not pinned and ages.archive_after > 0:
            archive_at = max(session.updated_at, since or 0.0) + ages.archive_after
        if stage == ARCHIVED and archived_at is not None and ages.delete_after > 0:
            delete_at = archived_at + ages.delete_after
        return {
            "session_id": session.id,
            "stage": stage,
            "pinned": pinned,
            "archived_at": iso(archived_at),
            "archive_at": iso(archive_at),  # if it stays idle
            "delete_at": iso(delete_at),
        }

    async def account_view(self, account_id: str) -> dict[str, Any]:
        rows = await self.state.store.read(
            "SELECT report FROM retention_reports WHERE account_id = ?", (account_id,)
        )
        last = json.loads(rows[0][0]) if rows else None
        marked = await self.state.store.read(
            "SELECT r.session_id, r.stage, r.pinned, r.archived_at FROM session_retention r"
            " JOIN sessions s ON s.id = r.session_id WHERE s.account_id = ?"
            " AND (r.stage = 'archived' OR r.pinned = 1) ORDER BY r.session_id",
            (account_id,),
        )
        waiting = await self.state.store.read(
            "SELECT session_id, device_id, deleted_at FROM retention_deleted"
            " WHERE account_id = ? ORDER BY deleted_at",
            (account_id,),
        )
        delete_after = self.ages.delete_after
        return {
            "settings": {
                "archive_after_days": self.state.config.float("archive_after_days"),
                "delete_after_days": self.state.config.float("delete_after_days"),
                "audit_keep_days": self.state.config.float("audit_keep_days"),
                "retention_interval": self.state.config.float("retention_interval"),
            },
            "last_run": last,
            "next_run_at": iso(self.next_run_at),
            "archived": [
                {
                    "session_id": r[0],
                    "archived_at": iso(r[3]),
                    "delete_at": iso(r[3] + delete_after) if delete_after > 0 else None,
                }
                for r in marked
                if r[1] == ARCHIVED
            ],
            "pinned": [r[0] for r in marked if r[2]],
            "waiting_for_mac": [
                {"session_id": r[0], "device_id": r[1], "deleted_at": iso(r[2])} for r in waiting
            ],
        }


async def start(state: RelayState) -> Retention:
    """Create the tables, refuse commands to archived sessions, start the schedule (the app's
    lifespan)."""
    retention = Retention(state)
    await retention.setup()

    async def guard(session: Session) -> None:
        await refuse_if_archived(state, session)

    async def listed(account_id: str) -> Callable[[str], dict[str, Any]]:
        found = await stages(state, account_id)

        def fields(session_id: str) -> dict[str, Any]:
            stage, pinned = found.get(session_id, (ACTIVE, False))
            return {"stage": stage, "pinned": pinned}

        return fields

    async def shown(session: Session) -> dict[str, Any]:
        stage, pinned, _ = await stage_of(state, session.id)
        return {"stage": stage, "pinned": pinned}

    state.hooks.command_guards.append(guard)
    state.hooks.list_fields.append(listed)
    state.hooks.snapshot_fields.append(shown)
    retention.start()
    return retention


# -- routes --------------------------------------------------------------------------------


def _retention(request: Request) -> Retention:
    found = relay_state(request).part(Retention)
    assert found is not None, "the retention feature is not started"
    return found


@router.get("/retention")
async def retention_report(request: Request, principal: Phone) -> dict[str, Any]:
    """The last run's report for this account, what is archived or pinned, what waits for a Mac."""
    return await _retention(request).account_view(principal.account_id)


@router.post("/retention/run")
async def retention_run(request: Request, principal: Phone) -> dict[str, Any]:
    """Run expiry now for this account; answers with the report."""
    retention = _retention(request)
    reports = await retention.run_once(account_id=principal.account_id, trigger="request")
    return {"ok": True, "report": reports.get(principal.account_id)}


@router.get("/sessions/{session_id}/retention")
async def session_retention(
    session_id: str, request: Request, principal: Phone, state: State
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    return await _retention(request).session_view(session)


@router.post("/sessions/{session_id}/pin")
async def pin(session_id: str, request: Request, principal: Phone, state: State) -> dict[str, Any]:
    """Keep the session: never archived or deleted; an archived one becomes active again."""
    return await _set_pinned(request, state, principal, session_id, True)


@router.post("/sessions/{session_id}/unpin")
async def unpin(
    session_id: str, request: Request, principal: Phone, state: State
) -> dict[str, Any]:
    """Let the session age again; its idle clock restarts now."""
    return await _set_pinned(request, state, principal, session_id, False)


@router.delete("/sessions/{session_id}")
async def delete_session(
    session_id: str, request: Request, principal: Phone, state: State
) -> dict[str, Any]:
    """End the session and delete it, with its events, on the relay and its Mac (now, or when
    an offline Mac links again: ``mac`` says which). Claude Code's own transcripts stay."""
    session = await session_or_404(state, principal, session_id)
    if session.locked:
        raise Conflict("this session is locked; unlock it first", code="session_locked")
    return await _retention(request).delete_now(session)


async def _set_pinned(
    request: Request, state: RelayState, principal: Principal, session_id: str, pinned: bool
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    retention = _retention(request)
    await retention.set_pinned(session.id, pinned)
    view = await retention.session_view(session)
    _publish_stage(state, session, view["stage"], pinned=pinned)
    return {"ok": True, **view}


def _publish_stage(state: RelayState, session: Session, stage: str, *, pinned: bool) -> None:
    """Every phone of the account sees the change (not only the one that made it)."""
    state.hub.publish_account(
        session.account_id,
        "session_stage",
        {"session_id": session.id, "stage": stage, "pinned": pinned},
    )


FEATURE = Feature("retention", schema=setup, start=start, router=router)
