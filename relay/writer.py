"""The one writer of the relay's SQLite database.

Every write goes through a single thread that owns the only writing connection (SQLite allows one
writer at a time anyway; doing it in one thread removes lock waits and makes ordering explicit).
Jobs queued while a transaction runs are committed together (group commit), each inside its own
savepoint so one failing job does not undo the others. A job's future resolves only after COMMIT,
so whoever awaits it knows the data is durable; ``after_commit`` callbacks run in commit order,
which is how events are published in the same order their seq numbers were assigned.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

from relay.errors import StoreUnavailable

T = TypeVar("T")
_log = logging.getLogger("relay.writer")

# A job gets the connection and a list to which it may append callbacks to run after COMMIT.
Job = Callable[[sqlite3.Connection, list[Callable[[], None]]], T]


class WriterClosed(StoreUnavailable):
    """The store is shutting down; the write was not done."""


def unavailable(exc: sqlite3.Error) -> StoreUnavailable:
    """The database failed under a job (disk full, I/O error, a lock, a damaged file): what a
    person sees, with SQLite's own words. Constraint and programming errors are not this: they
    are bugs and stay as they are."""
    return StoreUnavailable(
        f"the relay's database failed ({exc}); nothing of this request was stored. Check the "
        "disk and the data folder, then try again",
        code="store_unavailable",
    )


def translate(exc: BaseException) -> BaseException:
    if isinstance(exc, sqlite3.OperationalError | sqlite3.DatabaseError) and not isinstance(
        exc, sqlite3.IntegrityError | sqlite3.ProgrammingError
    ):
        return unavailable(exc)
    return exc


class Writer:
    def __init__(self, connect: Callable[[], sqlite3.Connection], batch_max: int) -> None:
        self._connect = connect
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
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    def run_sync(self, job: Job[T]) -> T:
        try:
            return self.submit(job).result()
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
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
                self._commit(conn, batch)
                if stop:
                    break
        finally:
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

    @staticmethod
    def _commit(conn: sqlite3.Connection, batch: list[tuple[Job[Any], Future[Any]]]) -> None:
        outcomes: list[tuple[Future[Any], Any, BaseException | None]] = []
        callbacks: list[Callable[[], None]] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job, future in batch:
                job_callbacks: list[Callable[[], None]] = []
                conn.execute("SAVEPOINT job")
                try:
                    result = job(conn, job_callbacks)
                except Exception as exc:
                    if not conn.in_transaction:
                        # SQLite rolled the whole transaction back itself (disk full, I/O
                        # error): nothing of this batch holds, so every job in it fails with
                        # that error, not with "no such savepoint".
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
            if conn.in_transaction:
                conn.rollback()
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
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
