"""What every database backend gives the store: a writer, reads, and its SQL dialect.

The store and the features write their SQL once, in the common subset of SQLite and PostgreSQL
(``?`` placeholders, ``ON CONFLICT``, ``RETURNING``); where the two differ, the ``Dialect`` holds
the spelling of each. A job (relay/writer.py) gets a connection with ``execute`` /
``executemany`` (DB-API style) and its ``dialect``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from relay.writer import Writer

_log = logging.getLogger("relay.store")


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Any: ...

    def close(self) -> None: ...


class Connection(Protocol):
    """The part of a DB-API connection the store's jobs use (sqlite3's, or relay/db/postgres.py's
    adapter of psycopg's)."""

    dialect: Dialect

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, params: Any, /) -> Any: ...


@dataclass(frozen=True)
class Dialect:
    """Where SQLite and PostgreSQL spell a thing differently."""

    name: str  # "sqlite" | "postgres"
    # Appended to the SELECT of a session row that is about to be numbered: the row lock that
    # orders two nodes' ingests of one session (SQLite's single writer needs none).
    for_update: str
    # SQL of a JSON text column with one top-level key set: {column}, {key} and a ? for the value.
    json_set_text: str
    # A JSON array parameter's elements as rows of one column ``value`` (IN (SELECT value …)).
    json_values: str

    @property
    def postgres(self) -> bool:
        return self.name == "postgres"

    def set_json_key(self, column: str, key: str) -> str:
        return self.json_set_text.format(column=column, key=key)


SQLITE = Dialect(
    name="sqlite",
    for_update="",
    json_set_text="json_set({column}, '$.{key}', ?)",
    json_values="SELECT value FROM json_each(?)",
)
POSTGRES = Dialect(
    name="postgres",
    for_update=" FOR UPDATE",
    json_set_text="jsonb_set({column}::jsonb, '{{{key}}}', to_jsonb(?::text))::text",
    json_values="SELECT jsonb_array_elements_text(?::jsonb) AS value",
)

# A feature's tables: made on the writer's connection as the store opens (relay/feature.py),
# inside the migration transaction; it must be safe to run again (CREATE … IF NOT EXISTS).
Schema = Callable[[Any], None]
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

    def stream(self, sql: str, params: Sequence[Any], consume: Callable[[Any], bool]) -> None:
        """Feed rows of a read to ``consume`` until it answers False (large reads stop early)."""
        raise NotImplementedError

    async def aquery(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def notify(self, conn: Any, channel: str, payload: str) -> None:
        """Inside a write job: tell the other relay nodes, once the transaction commits."""

    def translate(self, exc: BaseException) -> BaseException:
        return exc

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        return ()

    def close(self) -> None:
        raise NotImplementedError
