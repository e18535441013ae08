"""The relay's database backends: SQLite (the embedded default) and PostgreSQL (several nodes).

``open_database(config)`` picks one by the ``database_url`` setting. Both give the store the same
things (relay/db/base.py): one writer (relay/writer.py), reads, and the SQL dialect the store and
the features write for. Schema migrations are versioned and run as the database opens
(relay/db/migrations.py).
"""

from __future__ import annotations

from relay.db.base import Database, Dialect, Schema, StepLog
from wire.config import Config

__all__ = ["Database", "Dialect", "Schema", "StepLog", "is_postgres_url", "open_database"]


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
