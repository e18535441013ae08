"""The one writer of the relay's database (one per relay process).

Every write goes through a single thread that owns the only writing connection (SQLite allows one
writer at a time anyway; doing it in one thread removes lock waits and makes ordering explicit;
on PostgreSQL it is the node's one writing connection, and its group commit). Jobs queued while a
transaction runs are committed together (group commit), each inside its own savepoint so one
failing job does not undo the others. A job's future resolves only after COMMIT, so whoever
awaits it knows the data is durable; ``after_commit`` callbacks run in commit order, which is how
events are published in the same order their seq numbers were assigned.

The database backend (relay/db/) gives the writer its connection, says which errors mean "the
database is unavailable" (a 503, the request may be retried) and which mean "run the batch
again" (a deadlock between two relay nodes): a broken connection is opened again for the next
batch, so the writer recovers by itself when the database is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from relay.errors import StoreUnavailable

if TYPE_CHECKING:
    from relay.db.connection import Connection

T = TypeVar("T")
_log = logging.getLogger("relay.writer")

# A job gets the connection and a list to which it may append callbacks to run after COMMIT.
Job = Callable[["Connection", list[Callable[[], None]]], T]

BATCH_ATTEMPTS = 3  # a batch aborted by a deadlock between nodes runs again, this many times in all
RECONNECT_PAUSE = 0.2  # seconds between attempts to open a broken writer connection again


class WriterClosed(StoreUnavailable):
    """The store is shutting down; the write was not done."""


def unavailable(exc: BaseException) -> StoreUnavailable:
    """The database failed under a job (disk full, I/O error, a lock, a damaged file, a lost
    connection): what a person sees, with the database's own words. Constraint and programming
    errors are not this: they are bugs and stay as they are."""
    words = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return StoreUnavailable(
        f"the relay's database failed ({words}); nothing of this request was stored. Check the "
        "database (the disk and data folder, or the PostgreSQL server), then try again",
        code="store_unavailable",
    )


def translate(exc: BaseException) -> BaseException:
    """SQLite's errors as the relay's (relay/db/sqlite.py)."""
    if isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError) and not isinstance(
        exc, sqlite3.IntegrityError | sqlite3.ProgrammingError
    ):
        return unavailable(exc)
    return exc


@dataclass(frozen=True)
class WriterBackend:
    """What the writer needs of a database: a connection, and how to read its errors."""

    connect: Callable[[], Connection]
    # The error as the relay's (StoreUnavailable for an unavailable database), or itself.
    translate: Callable[[BaseException], BaseException] = translate
    # A failure after which the whole batch may simply run again (a deadlock, a serialization
    # failure): nothing of it was committed.
    retryable: Callable[[BaseException], bool] = lambda exc: False
    # Whether the connection is unusable after this error (it is opened again).
    broken: Callable[[Connection, BaseException], bool] = lambda conn, exc: False
    begin: str = "BEGIN IMMEDIATE"
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)


class Writer:
    def __init__(self, connect: Callable[[], Connection] | WriterBackend, batch_max: int) -> None:
        self._backend = connect if isinstance(connect, WriterBackend) else WriterBackend(connect)
        self._connect = self._backend.connect
        self._batch_max = batch_max
        self._queue: queue.SimpleQueue[tuple[Job[Any], Future[Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="relay-writer", daemon=True)
        self._closed = False
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._thread.start()
        self._ready.wait()
        if self._start_error is not None:
            raise self._start_error

    def submit(self, job: Job[T]) -> Future[T]:
        if self._closed:
            raise WriterClosed(
                "the relay store is closed: the relay is stopping; try again once it is back",
                code="store_unavailable",
            )
        future: Future[T] = Future()
        self._queue.put((job, future))
        return future

    async def run(self, job: Job[T]) -> T:
        try:
            return await asyncio.wrap_future(self.submit(job))
        except self._backend.errors as exc:
            raise self._backend.translate(exc) from exc

    def run_sync(self, job: Job[T]) -> T:
        try:
            return self.submit(job).result()
        except self._backend.errors as exc:
            raise self._backend.translate(exc) from exc

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        conn: Connection | None
        try:
            conn = self._connect()
        except BaseException as exc:  # surfaced to the constructor
            self._start_error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while True:
                item = self._queue.get()
                if item is None:
                    break
                batch = [item]
                stop = False
                while len(batch) < self._batch_max:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        stop = True
                        break
                    batch.append(more)
                conn = self._commit_batch(conn, batch)
                if stop:
                    break
        finally:
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            # Anything still queued is refused rather than left waiting forever.
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[1].set_exception(
                        WriterClosed(
                            "the relay store is closed: the relay is stopping; try again once it "
                            "is back",
                            code="store_unavailable",
                        )
                    )

    def _commit_batch(
        self, conn: Connection | None, batch: list[tuple[Job[Any], Future[Any]]]
    ) -> Connection | None:
        """Commit one batch (again after a deadlock); answers the connection for the next one:
        the same, a new one, or None while the database cannot be reached."""
        for attempt in range(BATCH_ATTEMPTS):
            if conn is None:
                try:
                    conn = self._connect()
                except Exception as exc:
                    # The database is down: this batch fails now (503), the next tries again.
                    time.sleep(RECONNECT_PAUSE)
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    return None
            failure = self._commit(conn, batch, last_attempt=attempt == BATCH_ATTEMPTS - 1)
            if failure is None:
                return conn
            if self._backend.broken(conn, failure):
                with contextlib.suppress(Exception):
                    conn.close()
                conn = None
            if not self._backend.retryable(failure):
                return conn
            _log.info("a write batch was aborted (%s); running it again", failure)
        return conn

    def _commit(
        self,
        conn: Connection,
        batch: list[tuple[Job[Any], Future[Any]]],
        *,
        last_attempt: bool = True,
    ) -> BaseException | None:
        """One attempt at a batch; answers the error that failed the whole transaction (the
        jobs' futures are then failed, unless it may be retried and this is not the last
        attempt), or None."""
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        callbacks: list[Callable[[], None]] = []
        try:
            conn.execute(self._backend.begin)
            for job, future in batch:
                job_callbacks: list[Callable[[], None]] = []
                conn.execute("SAVEPOINT job")
                try:
                    result = job(conn, job_callbacks)
                except Exception as exc:
                    if (
                        not conn.in_transaction
                        or self._backend.retryable(exc)
                        or (self._backend.broken(conn, exc))
                    ):
                        # The whole transaction is gone (SQLite rolled it back itself: disk
                        # full, I/O error; a deadlock or a lost connection on PostgreSQL):
                        # nothing of this batch holds, so every job in it fails with that
                        # error (or the batch runs again), not with "no such savepoint".
                        raise
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                    outcomes.append((future, None, exc))
                else:
                    conn.execute("RELEASE job")
                    outcomes.append((future, result, None))
                    callbacks.extend(job_callbacks)
            conn.execute("COMMIT")
        except BaseException as exc:
            # The transaction itself failed (disk full, I/O error): nothing in it is durable.
            with contextlib.suppress(Exception):
                if conn.in_transaction:
                    conn.rollback()
            if self._backend.retryable(exc) and not last_attempt:
                return exc
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return exc
        for callback in callbacks:
            try:
                callback()
            except Exception:  # a listener's bug must not stop the writer
                _log.exception("after-commit callback failed")
        for future, result, error in outcomes:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)
        return None
