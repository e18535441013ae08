"""The Macs (``devices``) and phones (``phones``) paired with an account.

A device or phone row is made with its first token (relay/store/accounts.py keeps the token),
told when it was last seen, and revoked with all its tokens; a revoked one stays listed as such
(phones) or leaves the list (Macs). Every statement on the two tables is here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from relay.db import Connection
from relay.errors import NotFound

# The table of each kind of login's subject.
TABLES: Final[dict[str, str]] = {"device": "devices", "phone": "phones"}
ID_PREFIXES: Final[dict[str, str]] = {"device": "mac", "phone": "phone"}


@dataclass(frozen=True)
class Device:
    id: str
    account_id: str
    name: str
    created_at: float
    last_seen: float | None
    info: dict[str, Any]

    COLUMNS = "id, account_id, name, created_at, last_seen, info"

    @classmethod
    def from_row(cls, row: Any) -> Device:
        device_id, account_id, name, created_at, last_seen, info = row
        return cls(device_id, account_id, name, created_at, last_seen, json.loads(info))


@dataclass(frozen=True)
class Phone:
    id: str
    name: str
    created_at: float
    last_seen: float | None
    revoked: bool

    COLUMNS = "id, name, created_at, last_seen, revoked_at"

    @classmethod
    def from_row(cls, row: Any) -> Phone:
        phone_id, name, created_at, last_seen, revoked_at = row
        return cls(phone_id, name, created_at, last_seen, revoked_at is not None)


def add(
    conn: Connection, kind: str, subject_id: str, account_id: str, name: str, now: float
) -> None:
    """A new Mac or phone of the account (``kind`` device or phone)."""
    conn.execute(
        f"INSERT INTO {TABLES[kind]} (id, account_id, name, created_at) VALUES (?, ?, ?, ?)",
        (subject_id, account_id, name, now),
    )


def of_account(conn: Connection, account_id: str) -> list[Device]:
    """The account's Macs that are not revoked, oldest first."""
    rows = conn.execute(
        f"SELECT {Device.COLUMNS} FROM devices WHERE account_id = ? AND revoked_at IS NULL"
        " ORDER BY created_at",
        (account_id,),
    ).fetchall()
    return [Device.from_row(r) for r in rows]


def phones_of_account(conn: Connection, account_id: str) -> list[Phone]:
    """The account's phones, revoked ones too, oldest first."""
    rows = conn.execute(
        f"SELECT {Phone.COLUMNS} FROM phones WHERE account_id = ? ORDER BY created_at",
        (account_id,),
    ).fetchall()
    return [Phone.from_row(r) for r in rows]


def seen(conn: Connection, device_id: str, now: float, info: dict[str, Any] | None) -> None:
    """The Mac was seen now; ``info`` is what its hello said of itself (its name among it)."""
    if info is None:
        conn.execute("UPDATE devices SET last_seen = ? WHERE id = ?", (now, device_id))
        return
    name = info.get("name", "")
    conn.execute(
        "UPDATE devices SET last_seen = ?, info = ?,"
        " name = CASE WHEN ? != '' THEN ? ELSE name END WHERE id = ?",
        (now, json.dumps(info), name, name, device_id),
    )


def phone_seen(conn: Connection, phone_id: str, now: float) -> None:
    conn.execute("UPDATE phones SET last_seen = ? WHERE id = ?", (now, phone_id))


def revoke(conn: Connection, account_id: str, kind: str, subject_id: str, now: float) -> None:
    """Mark the account's Mac or phone revoked; NotFound ``unknown_<kind>`` when it has none."""
    table = TABLES[kind]
    found = conn.execute(
        f"SELECT 1 FROM {table} WHERE id = ? AND account_id = ?", (subject_id, account_id)
    ).fetchone()
    if not found:
        raise NotFound(f"no {kind} {subject_id} in this account", code=f"unknown_{kind}")
    conn.execute(f"UPDATE {table} SET revoked_at = ? WHERE id = ?", (now, subject_id))


def take_turn(conn: Connection, device_id: str) -> None:
    """Inside a write: writers on several relay nodes adding to one Mac (its sessions, its
    queued messages) take turns from here to their commit (the Mac's row is locked on
    PostgreSQL; SQLite's one writer needs no lock)."""
    if conn.dialect.postgres:
        conn.execute("SELECT id FROM devices WHERE id = ?" + conn.dialect.for_update, (device_id,))
