"""Versioned schema migrations, run as the database opens, for both backends.

The core's steps are numbered (``CORE``); each database records the last one applied in
``schema_migrations`` (one row per component: ``core``, and each feature's schema by name). A step
runs once, in a transaction, with a line for the person starting the relay. On PostgreSQL the
whole run holds an advisory lock, so relay nodes that start together take turns: the first
migrates, the others find it done. A database newer than this relay (a step it does not know) is
refused with what to do, rather than used half-understood.

A new, empty database is made silently (there is nothing to tell a person starting the relay for
the first time); a database an older relay made says each step it is given.

The features' schemas (relay/feature.py) run after the core's, under the same lock, every time:
they are written to be run again (CREATE … IF NOT EXISTS, backfills of what is missing) and their
version is recorded beside the core's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from relay.db.base import Connection, Dialect, Schema, StepLog
from wire.config import ConfigError

# The advisory lock key of a migration run (any fixed 64-bit number; this one spells "cbmigrat").
MIGRATION_LOCK = 0x63626D6967726174


@dataclass(frozen=True)
class Step:
    version: int
    what: str  # for the person: "applying 2: …"
    apply: Callable[[Connection, Dialect], None]
    postgres_only: bool = False  # recorded, silently, on SQLite (nothing to do there)


def _run_script(conn: Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


CORE_TABLES = """
CREATE TABLE IF NOT EXISTS accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS devices (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_seen REAL,
    info TEXT NOT NULL DEFAULT '{}',
    revoked_at REAL
);
CREATE TABLE IF NOT EXISTS phones (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    name TEXT NOT NULL,
    created_at REAL NOT NULL,
    last_seen REAL,
    revoked_at REAL
);
CREATE TABLE IF NOT EXISTS tokens (
    hash TEXT PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL CHECK (kind IN ('device', 'phone')),
    subject_id TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL,
    revoked_at REAL
);
DROP TABLE IF EXISTS pair_codes;
CREATE TABLE IF NOT EXISTS pairing_codes (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    expires_at REAL NOT NULL,
    used_at REAL,
    failures INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts(id),
    device_id TEXT NOT NULL REFERENCES devices(id),
    cwd TEXT NOT NULL DEFAULT '',
    title TEXT NOT NULL DEFAULT '',
    title_set_by_person INTEGER NOT NULL DEFAULT 0,
    grp TEXT NOT NULL DEFAULT '',
    position REAL NOT NULL DEFAULT 0,
    locked INTEGER NOT NULL DEFAULT 0,
    mark TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    conversation_id TEXT,
    conversation_ids TEXT NOT NULL DEFAULT '[]',
    permission_mode TEXT,
    epoch TEXT NOT NULL,
    last_seq INTEGER NOT NULL DEFAULT 0,
    oldest_seq INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS sessions_account ON sessions(account_id, position);
CREATE TABLE IF NOT EXISTS conversations (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    conversation_id TEXT NOT NULL,
    last_offset INTEGER NOT NULL,
    PRIMARY KEY (session_id, conversation_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS line_uuids (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    uuid TEXT NOT NULL,
    PRIMARY KEY (session_id, uuid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID
"""


def _core_tables(conn: Connection, dialect: Dialect) -> None:
    _run_script(conn, CORE_TABLES)


def _columns(conn: Connection, dialect: Dialect, table: str) -> set[str]:
    if dialect.postgres:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_schema = current_schema() AND table_name = ?",
            (table,),
        ).fetchall()
        return {str(r[0]) for r in rows}
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}


def add_column(conn: Connection, table: str, column: str, declaration: str) -> bool:
    """Add ``column`` to ``table`` when it has none yet (a feature's schema migrating its own
    table, relay/feature.py); True when it was added, so the caller can fill it in."""
    if column in _columns(conn, conn.dialect, table):
        return False
    conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
    return True


def _epoch_start(conn: Connection, dialect: Dialect) -> None:
    if "epoch_start" not in _columns(conn, dialect, "sessions"):
        conn.execute("ALTER TABLE sessions ADD COLUMN epoch_start INTEGER NOT NULL DEFAULT 1")


def _last_known(conn: Connection, dialect: Dialect) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS last_known ("
        " session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,"
        " data TEXT NOT NULL) WITHOUT ROWID"
    )


def _lineage(conn: Connection, dialect: Dialect) -> None:
    """A fork's parent (sessions.parent_id) and a worktree session's branch (sessions.branch)."""
    have = _columns(conn, dialect, "sessions")
    if "parent_id" not in have:
        conn.execute("ALTER TABLE sessions ADD COLUMN parent_id TEXT")
    if "branch" not in have:
        conn.execute("ALTER TABLE sessions ADD COLUMN branch TEXT")


def _conversation_times(conn: Connection, dialect: Dialect) -> None:
    """When a line of each conversation was last stored: a session keeps the newest
    ``conversations_max_per_session`` (relay/store/conversations.py)."""
    if "stored_at" not in _columns(conn, dialect, "conversations"):
        conn.execute("ALTER TABLE conversations ADD COLUMN stored_at REAL NOT NULL DEFAULT 0")


CLUSTER_TABLES = """
CREATE TABLE IF NOT EXISTS relay_nodes (
    node_id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    started_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS device_links (
    device_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    linked_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS live_sessions (
    session_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    device_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS live_sessions_device ON live_sessions(device_id);
CREATE TABLE IF NOT EXISTS node_requests (
    id TEXT PRIMARY KEY,
    origin TEXT NOT NULL,
    target TEXT NOT NULL,
    device_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at REAL NOT NULL,
    answer TEXT
);
CREATE TABLE IF NOT EXISTS node_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rate_hits (
    bucket TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_hits_bucket ON rate_hits(bucket, at)
"""


def _cluster_tables(conn: Connection, dialect: Dialect) -> None:
    """Only PostgreSQL serves several relay nodes (relay/cluster.py); SQLite has one process."""
    if dialect.postgres:
        _run_script(conn, CLUSTER_TABLES)


CORE: tuple[Step, ...] = (
    Step(1, "the core tables (accounts, Macs, phones, tokens, sessions, events)", _core_tables),
    Step(2, "where each session's current epoch starts (sessions.epoch_start)", _epoch_start),
    Step(3, "what each session's Mac last said of it (last_known)", _last_known),
    Step(
        4,
        "the relay nodes, their leases on Macs' links, requests between them",
        _cluster_tables,
        postgres_only=True,
    ),
    Step(
        5, "a fork's parent and a worktree's branch (sessions.parent_id, sessions.branch)", _lineage
    ),
    Step(
        6, "when each conversation was last stored (conversations.stored_at)", _conversation_times
    ),
)
CORE_VERSION = CORE[-1].version


def _versions(conn: Connection) -> dict[str, int]:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " component TEXT PRIMARY KEY, version INTEGER NOT NULL, applied_at REAL NOT NULL)"
    )
    return {
        str(r[0]): int(r[1])
        for r in conn.execute("SELECT component, version FROM schema_migrations")
    }


def _record(conn: Connection, component: str, version: int) -> None:
    conn.execute(
        "INSERT INTO schema_migrations (component, version, applied_at) VALUES (?, ?, ?)"
        " ON CONFLICT (component) DO UPDATE SET version = excluded.version,"
        " applied_at = excluded.applied_at",
        (component, version, time.time()),
    )


def _begin(conn: Connection, dialect: Dialect) -> None:
    conn.execute("BEGIN" if dialect.postgres else "BEGIN IMMEDIATE")


def migrate(
    conn: Connection,
    dialect: Dialect,
    schemas: Sequence[Schema],
    log: StepLog,
    *,
    where: str,
) -> list[int]:
    """Bring the database up to this relay's schema; answers the core steps applied. ``conn`` is
    in autocommit mode (each step opens its own transaction)."""
    if dialect.postgres:
        conn.execute("SELECT pg_advisory_lock(?)", (MIGRATION_LOCK,))
    try:
        _begin(conn, dialect)
        try:
            # A database from before versions were kept reads as 0: every step is safe again.
            have = _versions(conn).get("core", 0)
            fresh = have == 0 and "sessions" not in _tables(conn, dialect)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if have > CORE_VERSION:
            raise ConfigError(
                f"the database at {where} has schema version {have}, newer than this relay's "
                f"({CORE_VERSION}): it was used by a newer claude-bridge. Upgrade this relay "
                "(every node of a cluster runs the same version)"
            )
        applied: list[int] = []
        for step in CORE:
            if step.version <= have:
                continue
            if not fresh and (dialect.postgres or not step.postgres_only):
                log(
                    f"database {where}: applying migration {step.version} of {CORE_VERSION}: "
                    f"{step.what}"
                )
            _begin(conn, dialect)
            try:
                step.apply(conn, dialect)
                _record(conn, "core", step.version)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            applied.append(step.version)
        for schema in schemas:  # the features' tables (relay/feature.py)
            schema(conn)
            name = getattr(schema, "__module__", "feature").rsplit(".", 1)[-1]
            _record(conn, f"feature:{name}", int(getattr(schema, "schema_version", 1)))
        return applied
    finally:
        if dialect.postgres:
            conn.execute("SELECT pg_advisory_unlock(?)", (MIGRATION_LOCK,))


def _tables(conn: Connection, dialect: Dialect) -> set[str]:
    if dialect.postgres:
        rows = conn.execute(
            "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
    else:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return {str(r[0]) for r in rows}
