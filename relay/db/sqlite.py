"""The embedded backend: SQLite in WAL mode in the data folder, every write through one writer.

Readers have a connection per thread (query-only); a checkpointer thread copies the WAL back into
the database about once a second, beside the writer (an automatic checkpoint inside a COMMIT
stalls the writer, the whole tail of fan-out).
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable, Sequence
from typing import Any

from relay.datadir import DATABASE, secure_folder
from relay.db.base import SQLITE, Connection, Database, Schema, StepLog, T, default_step_log
from relay.db.migrations import migrate
from relay.writer import Writer, WriterBackend, translate
from wire.config import Config

CHECKPOINT_EVERY = 1.0  # seconds between WAL checkpoints


class SqliteConnection(sqlite3.Connection):
    """sqlite3's connection, saying which dialect it speaks (relay/db/base.py)."""

    dialect = SQLITE


class SqliteDatabase(Database):
    dialect = SQLITE

    def __init__(self, config: Config, schemas: Sequence[Schema], log: StepLog | None) -> None:
        self.config = config
        self.path = config.data_path / DATABASE
        secure_folder(self.path.parent)  # 0700 / 0600 whatever the umask (relay/datadir.py)
        self._schemas = tuple(schemas)
        self._log = log or default_step_log
        self._local = threading.local()
        self.writer = Writer(
            WriterBackend(connect=self._connect_writer, translate=translate),
            batch_max=config.int("writer_batch_max"),
        )
        self._stop = threading.Event()
        self._checkpointer = threading.Thread(
            target=self._checkpoint_loop, name="relay-checkpoint", daemon=True
        )
        self._checkpointer.start()

    def describe(self) -> str:
        return str(self.path)

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.Error,)

    def translate(self, exc: BaseException) -> BaseException:
        return translate(exc)

    def _connect(self) -> SqliteConnection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, factory=SqliteConnection
        )
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _connect_writer(self) -> SqliteConnection:
        conn = self._connect()
        conn.execute("PRAGMA journal_mode = WAL")
        synchronous = self.config.str("store_synchronous").upper()
        if synchronous not in {"NORMAL", "FULL", "EXTRA"}:
            synchronous = "NORMAL"
        conn.execute(f"PRAGMA synchronous = {synchronous}")
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer thread does it
        try:
            migrate(conn, SQLITE, self._schemas, self._log, where=str(self.path))
        except BaseException:
            conn.close()
            raise
        return conn

    def _reader(self) -> SqliteConnection:
        conn: SqliteConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
        return conn

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = self._reader().execute(sql, params).fetchall()
        return rows

    def read(self, work: Callable[[Connection], T]) -> T:
        return work(self._reader())

    async def aquery(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return await asyncio.to_thread(self.query, sql, params)
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    def close(self) -> None:
        self._stop.set()
        self._checkpointer.join()
        self.writer.close()
        with contextlib.suppress(sqlite3.Error):
            conn = self._connect()
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            conn.close()

    def _checkpoint_loop(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while not self._stop.wait(CHECKPOINT_EVERY):
                try:
                    if conn is None:
                        conn = self._connect()
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
                except sqlite3.Error:
                    continue  # busy or briefly locked: the next round catches up
        finally:
            if conn is not None:
                conn.close()
