"""What every database backend gives the store: a writer, reads, and its SQL dialect.

A job (relay/writer.py) and a read (``Database.read``) get a :class:`Connection`
(relay/db/connection.py: ``execute`` / ``executemany`` DB-API style, and its ``dialect``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from relay.db.connection import POSTGRES, SQLITE, Connection, Cursor, Dialect
from relay.writer import Writer

__all__ = [
    "POSTGRES",
    "SQLITE",
    "Connection",
    "Cursor",
    "Database",
    "Dialect",
    "Schema",
    "StepLog",
    "default_step_log",
]

_log = logging.getLogger("relay.store")

T = TypeVar("T")


# A feature's tables: made on the writer's connection as the store opens (relay/feature.py),
# inside the migration transaction; it must be safe to run again (CREATE … IF NOT EXISTS).
Schema = Callable[[Connection], None]
# Told each migration step as it runs, in words for a person ("applying …").
StepLog = Callable[[str], None]


def default_step_log(message: str) -> None:
    _log.info("%s", message)


class Database:
    """One backend: made by relay/db/__init__.py ``open_database``."""

    dialect: Dialect
    writer: Writer

    def describe(self) -> str:
        """Where the data is, for a person (a path, or a URL without its password)."""
        raise NotImplementedError

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows of a read, from this thread (a reader connection of its own)."""
        raise NotImplementedError

    def read(self, work: Callable[[Connection], T]) -> T:
        """``work`` on a reader connection, from this thread (a read that may stop early, or
        read several statements, e.g. relay/store/events.py)."""
        raise NotImplementedError

    async def aquery(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def notify(self, conn: Connection, channel: str, payload: str) -> None:
        """Inside a write job: tell the other relay nodes, once the transaction commits."""

    def translate(self, exc: BaseException) -> BaseException:
        return exc

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        return ()

    def close(self) -> None:
        raise NotImplementedError
