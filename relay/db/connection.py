"""The connection every SQL statement of the relay runs on, and the SQL dialect it speaks.

The store and the features write their SQL once, in the common subset of SQLite and PostgreSQL
(``?`` placeholders, ``ON CONFLICT``, ``RETURNING``); where the two differ, the ``Dialect`` holds
the spelling of each. sqlite3's connection and relay/db/postgres.py's adapter of psycopg's are
both a :class:`Connection`: the writer's jobs (relay/writer.py), the readers, the migrations and
the features' schemas are given one, never anything looser.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Cursor(Protocol):
    """What a statement answers: its rows (tuples, in the order of the SELECT's columns) and,
    for a change, how many rows it changed. sqlite3's cursor, or relay/db/postgres.py's."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Connection(Protocol):
    """Every connection the relay's SQL runs on: the writer's (inside a job, relay/writer.py),
    a reader's (``Database.read``), and the one a migration or a schema is given. sqlite3's
    connection (relay/db/sqlite.py ``SqliteConnection``) and relay/db/postgres.py's
    ``PgConnection`` (psycopg's, answering as sqlite3's) both are one.

    SQL is written once, in the spelling of SQLite (``?`` placeholders); ``dialect`` says where
    the two databases differ (a row lock, JSON, arrays)."""

    @property
    def dialect(self) -> Dialect: ...

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Cursor: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...


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
