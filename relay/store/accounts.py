"""Accounts, their logins (tokens) and the one-time codes that pair a Mac or a phone.

Tables ``accounts``, ``tokens`` (each token kept only as its SHA-256: a token read from the
database cannot be used) and ``pairing_codes``. Every statement on them is here; the store
(relay/store/store.py) runs these functions in its writer's transaction or on a reader.

A pairing code is a public id (4 characters) and a secret (12 characters: 60 bits), shown as
``ABCD-EFGH-JKLM-NPQR``. A wrong secret for a live id counts against that code, which dies after
:data:`PAIR_CODE_GUESSES` of them: a guess succeeds with a chance of at most 5 in 2**60.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Any, Final

from relay.db import Connection
from relay.errors import Unauthorized

DEFAULT_ACCOUNT: Final = "default"
TOKEN_BYTES: Final = 24
DAY: Final = 86400.0
KINDS: Final = frozenset({"device", "phone"})
PAIR_CODE_ALPHABET: Final = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud and typed
PAIR_CODE_ID_LENGTH: Final = 4
PAIR_CODE_SECRET_LENGTH: Final = 12
PAIR_CODE_GUESSES: Final = 5
UNKNOWN_CODE: Final = (
    "this pairing code is unknown, used or expired; run `claude-bridge pair` again"
)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_id(prefix: str) -> str:
    """A row id: ``acct_…``, ``mac_…``, ``phone_…``, ``tok_…`` and 16 hex digits."""
    return f"{prefix}_{secrets.token_hex(8)}"


def new_token(kind: str) -> str:
    """A fresh login for a device (``cbd_…``) or a phone (``cbp_…``)."""
    if kind not in KINDS:
        raise ValueError(f"token kind must be device or phone, not {kind!r}")
    return f"cb{kind[0]}_{secrets.token_urlsafe(TOKEN_BYTES)}"


def _pair_chars(count: int) -> str:
    return "".join(secrets.choice(PAIR_CODE_ALPHABET) for _ in range(count))


def normalized_code(code: str) -> str:
    """A code as typed (any case, spaces and dashes) as stored: ``ABCDEFGHJKLMNPQR``."""
    return "".join(code.split()).replace("-", "").upper()


def shown_code(plain: str) -> str:
    """``ABCDEFGHJKLMNPQR`` as a person reads it: ``ABCD-EFGH-JKLM-NPQR``."""
    return "-".join(plain[i : i + 4] for i in range(0, len(plain), 4))


@dataclass(frozen=True)
class Principal:
    """Who is calling: a Mac (device) or a phone, in one account."""

    token_id: str
    token_hash: str
    account_id: str
    kind: str  # "device" | "phone"
    subject_id: str  # device id or phone id


@dataclass(frozen=True)
class TokenRow:
    """A login as ``tokens`` holds it (never the token itself)."""

    id: str
    account_id: str
    kind: str
    subject_id: str
    expires_at: float | None
    revoked_at: float | None

    COLUMNS = "id, account_id, kind, subject_id, expires_at, revoked_at"

    @classmethod
    def from_row(cls, row: Any) -> TokenRow:
        token_id, account_id, kind, subject_id, expires_at, revoked_at = row
        return cls(token_id, account_id, kind, subject_id, expires_at, revoked_at)

    def principal(self, token_hash: str, now: float | None = None) -> Principal:
        """Who holds it; Unauthorized when it was revoked or has expired."""
        if self.revoked_at is not None:
            raise Unauthorized("this token was revoked; pair again", code="token_revoked")
        if self.expires_at is not None and (now or time.time()) >= self.expires_at:
            raise Unauthorized("this token has expired; pair again", code="token_expired")
        return Principal(self.id, token_hash, self.account_id, self.kind, self.subject_id)


def unknown_token() -> Unauthorized:
    return Unauthorized("this token is not known to the relay; pair again", code="unauthorized")


# -- accounts -------------------------------------------------------------------------------


def ensure_account(conn: Connection, name: str = DEFAULT_ACCOUNT) -> str:
    """The id of the account called ``name``, made when there is none."""
    row = conn.execute("SELECT id FROM accounts WHERE name = ?", (name,)).fetchone()
    if row:
        return str(row[0])
    account_id = new_id("acct")
    conn.execute(
        "INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)",
        (account_id, name, time.time()),
    )
    return account_id


def account_ids(conn: Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT id FROM accounts")]


# -- tokens ---------------------------------------------------------------------------------


def add_token(
    conn: Connection,
    token: str,
    account_id: str,
    kind: str,
    subject_id: str,
    now: float,
    expires_at: float | None,
) -> str:
    """Keep a new login of ``subject_id`` (its hash); answers the token's id."""
    token_id = new_id("tok")
    conn.execute(
        "INSERT INTO tokens (hash, id, account_id, kind, subject_id, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (hash_secret(token), token_id, account_id, kind, subject_id, now, expires_at),
    )
    return token_id


def expiry(now: float, ttl_days: float) -> float | None:
    """When a token made now ends (None: never, for a ttl of 0 or less)."""
    return now + ttl_days * DAY if ttl_days > 0 else None


def token_row(conn: Connection, token_hash: str) -> TokenRow | None:
    row = conn.execute(
        f"SELECT {TokenRow.COLUMNS} FROM tokens WHERE hash = ?", (token_hash,)
    ).fetchone()
    return None if row is None else TokenRow.from_row(row)


def authenticate(conn: Connection, token_hash: str, now: float | None = None) -> Principal:
    """The principal holding the token of ``token_hash``; Unauthorized when unknown, revoked or
    expired."""
    found = token_row(conn, token_hash)
    if found is None:
        raise unknown_token()
    return found.principal(token_hash, now)


def revoke_tokens_of(conn: Connection, subject_id: str, now: float) -> list[str]:
    """Revoke every live token of a device or phone; answers their hashes (for the streams)."""
    hashes = [
        str(r[0])
        for r in conn.execute(
            "SELECT hash FROM tokens WHERE subject_id = ? AND revoked_at IS NULL", (subject_id,)
        )
    ]
    conn.execute(
        "UPDATE tokens SET revoked_at = ? WHERE subject_id = ? AND revoked_at IS NULL",
        (now, subject_id),
    )
    return hashes


def revoke_token(conn: Connection, token_id: str, now: float) -> bool:
    """Revoke one token by its id; False when there is no such live token."""
    cur = conn.execute(
        "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now, token_id)
    )
    return cur.rowcount > 0


@dataclass(frozen=True)
class TokenListing:
    """One login as ``claude-bridge tokens`` lists it."""

    id: str
    account: str
    kind: str
    subject_id: str
    name: str | None
    created_at: float
    expires_at: float | None
    revoked_at: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "account": self.account,
            "kind": self.kind,
            "subject_id": self.subject_id,
            "name": self.name,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
        }


def list_tokens(conn: Connection) -> list[TokenListing]:
    rows = conn.execute(
        "SELECT t.id, a.name, t.kind, t.subject_id, COALESCE(d.name, p.name), t.created_at,"
        " t.expires_at, t.revoked_at FROM tokens t JOIN accounts a ON a.id = t.account_id"
        " LEFT JOIN devices d ON d.id = t.subject_id LEFT JOIN phones p ON p.id = t.subject_id"
        " ORDER BY t.created_at"
    ).fetchall()
    return [TokenListing(*row) for row in rows]


# -- pairing codes --------------------------------------------------------------------------


def add_pair_code(
    conn: Connection, account_id: str, kind: str, name: str, now: float, expires_at: float
) -> str:
    """A new one-time code (plain: its id then its secret); expired ones are dropped first."""
    conn.execute("DELETE FROM pairing_codes WHERE expires_at <= ?", (now,))
    while True:
        code_id = _pair_chars(PAIR_CODE_ID_LENGTH)
        if not conn.execute("SELECT 1 FROM pairing_codes WHERE id = ?", (code_id,)).fetchone():
            break  # ids of live codes are unique, so a guess counts against one code
    secret = _pair_chars(PAIR_CODE_SECRET_LENGTH)
    conn.execute(
        "INSERT INTO pairing_codes (id, secret_hash, account_id, kind, name, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (code_id, hash_secret(code_id + secret), account_id, kind, name, expires_at),
    )
    return code_id + secret


@dataclass(frozen=True)
class Redeemed:
    """What a code was made for, once it is used: the new login is made from it."""

    account_id: str
    kind: str
    name: str


def use_pair_code(
    conn: Connection, normalized: str, name: str | None, now: float
) -> Redeemed | str:
    """Use the code (``normalized_code``); answers what it pairs, or why it does not.

    A wrong secret for a live code's id is counted against that code (the caller commits the
    count with its refusal); after PAIR_CODE_GUESSES of them the code no longer works."""
    code_id = normalized[:PAIR_CODE_ID_LENGTH]
    row = conn.execute(
        "SELECT secret_hash, account_id, kind, name, expires_at, used_at, failures"
        " FROM pairing_codes WHERE id = ?",
        (code_id,),
    ).fetchone()
    if row is None:
        return UNKNOWN_CODE
    secret_hash, account_id, kind, default_name, expires_at, used_at, failures = row
    if used_at is not None or expires_at <= now:
        return UNKNOWN_CODE
    if failures >= PAIR_CODE_GUESSES:
        return (
            f"this pairing code was tried with a wrong secret {PAIR_CODE_GUESSES} times "
            "and no longer works; run `claude-bridge pair` again"
        )
    if not hmac.compare_digest(hash_secret(normalized), secret_hash):
        conn.execute("UPDATE pairing_codes SET failures = failures + 1 WHERE id = ?", (code_id,))
        return UNKNOWN_CODE
    conn.execute("UPDATE pairing_codes SET used_at = ? WHERE id = ?", (now, code_id))
    if kind == "device" and default_name:
        # A Mac is called what it was named at pairing (`pair --kind device --name`); the name
        # it gives itself (its host name) only when none was given.
        return Redeemed(account_id, kind, default_name)
    return Redeemed(account_id, kind, name or default_name)
