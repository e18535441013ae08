"""The relay's database backends: SQLite (the embedded default) and PostgreSQL (several nodes).

``open_database(config)`` picks one by the ``database_url`` setting. Both give the store the same
things (relay/db/base.py): one writer (relay/writer.py), reads, and the SQL dialect the store and
the features write for. Schema migrations are versioned and run as the database opens
(relay/db/migrations.py).
"""

from __future__ import annotations

import sqlite3

from relay.db.base import Connection, Database, Dialect, Schema, StepLog
from wire.config import Config

__all__ = [
    "Connection",
    "Database",
    "Dialect",
    "Schema",
    "StepLog",
    "database_errors",
    "integrity_errors",
    "is_postgres_url",
    "open_database",
]


def is_postgres_url(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def open_database(
    config: Config, schemas: tuple[Schema, ...] = (), log: StepLog | None = None
) -> Database:
    """The database the settings name, migrated and ready; a bad URL or an unreachable server is
    a ConfigError / StoreUnavailable with what to do."""
    url = config.str("database_url").strip()
    if not url:
        from relay.db.sqlite import SqliteDatabase

        return SqliteDatabase(config, schemas, log)
    if not is_postgres_url(url):
        from wire.config import ConfigError

        raise ConfigError(
            f"database_url must be a PostgreSQL URL (postgresql://user:password@host/db), not "
            f"{url.split(':', 1)[0]!r}; leave it empty for SQLite in the data folder"
        )
    from relay.db.postgres import PostgresDatabase

    return PostgresDatabase(config, url, schemas, log)


def database_errors(dialect: Dialect) -> tuple[type[BaseException], ...]:
    """The errors of the database ``dialect`` speaks (a statement that may fail is caught by
    these, e.g. inside a savepoint of a job)."""
    if dialect.postgres:
        import psycopg

        return (psycopg.Error,)
    return (sqlite3.Error,)


def integrity_errors(dialect: Dialect) -> tuple[type[BaseException], ...]:
    """A constraint refused the statement (a foreign key, a unique key)."""
    if dialect.postgres:
        import psycopg

        return (psycopg.errors.IntegrityError,)
    return (sqlite3.IntegrityError,)
