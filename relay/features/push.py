"""Web Push: a notification on the phone when a session starts needing you (and, if asked, when a
turn ends), even with the page closed.

The standards, each a few lines here rather than a library (only ``cryptography`` is needed):

* RFC 8292 (VAPID): the relay signs every push request with its own P-256 key, made once and kept
  in the data folder (``vapid.pem``, readable by the relay's user only). The browser learns the
  public half from ``GET /api/push/key`` when it subscribes. On PostgreSQL every relay node signs
  with the same key, kept in the table ``push_keys``: the first node to start makes it (or takes
  the ``vapid.pem`` of a relay moved over from SQLite, so its phones' subscriptions stay valid),
  and two nodes starting at once end with one key (insert if absent, then read back).
* RFC 8291 (message encryption, ``aes128gcm`` of RFC 8188): the payload is encrypted for the
  subscription's keys, so the push service only ever carries ciphertext.

A subscription's endpoint comes from a phone, so the relay posts only where a push service can
be: an ``https`` URL whose host resolves to public addresses only (no loopback, private,
link-local, unique-local, carrier-grade NAT, multicast or cloud-metadata address). It is checked
when the phone subscribes and again for every send, where the host is resolved once and the
connection goes to exactly the address checked (a DNS answer that changes in between cannot
send it inside the network). ``push_allowed_hosts`` names the exceptions (a private push
service). A phone only ever hears "sent" or "failed", never what the other side answered.

Subscriptions are kept per account in ``push.json`` in the data folder (on PostgreSQL in the table
``push_subscriptions``, so whichever node hears of a session's change can notify), each tied to
the phone that made it: when that phone is revoked or logs out, it gets no more notifications.

Routes (login required, like every route): ``GET /api/push/key``, ``POST /api/push/subscribe``,
``DELETE /api/push/subscribe``, ``POST /api/push/test``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Coroutine, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from fastapi import APIRouter, Depends, Request
from pydantic import Field

from relay.db import Connection
from relay.deps import Body, Phone, relay_state
from relay.errors import BadRequest, Conflict
from relay.feature import Feature
from relay.jsontext import dumps
from relay.state import RelayState
from relay.store import Session, Store
from wire.config import Config
from wire.protocol import SessionInfo
from wire.tasks import TaskSet

_log = logging.getLogger("relay.features.push")

KEY_FILE = "vapid.pem"
KEY_NAME = "vapid"  # the VAPID key's row in push_keys (PostgreSQL)
SUBSCRIPTIONS_FILE = "push.json"
RECORD_SIZE = 4096
MAX_PAYLOAD = 3000  # bytes of JSON; one aes128gcm record holds at most 3,993
MAX_SUBSCRIPTIONS = 20  # per account
JWT_LIFETIME = 12 * 3600  # seconds; RFC 8292 allows up to 24 h


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# ---------------------------------------------------------------------------------------------
# RFC 8291: encrypt a payload for one subscription
# ---------------------------------------------------------------------------------------------


def _hmac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def public_bytes(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )


def encrypt(
    payload: bytes,
    p256dh: bytes,
    auth: bytes,
    *,
    salt: bytes | None = None,
    server_key: ec.EllipticCurvePrivateKey | None = None,
) -> bytes:
    """The ``aes128gcm`` body (RFC 8188 header + one record) of ``payload`` for a subscription.

    ``salt`` and ``server_key`` are fresh for every message; tests pass fixed ones to check the
    RFC 8291 example.
    """
    if len(payload) > RECORD_SIZE - 103:
        raise ValueError("a push payload is limited to 3,993 bytes")
    salt = salt if salt is not None else os.urandom(16)
    server_key = server_key if server_key is not None else ec.generate_private_key(ec.SECP256R1())
    ua_public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), p256dh)
    as_public = public_bytes(server_key.public_key())
    shared = server_key.exchange(ec.ECDH(), ua_public)
    # HKDF(auth, shared, "WebPush: info" || 0 || ua_public || as_public, 32)
    prk_key = _hmac(auth, shared)
    ikm = _hmac(prk_key, b"WebPush: info\x00" + p256dh + as_public + b"\x01")
    prk = _hmac(salt, ikm)
    cek = _hmac(prk, b"Content-Encoding: aes128gcm\x00\x01")[:16]
    nonce = _hmac(prk, b"Content-Encoding: nonce\x00\x01")[:12]
    record = AESGCM(cek).encrypt(nonce, payload + b"\x02", None)  # 0x02: the last record
    header = salt + struct.pack("!IB", RECORD_SIZE, len(as_public)) + as_public
    return header + record


# ---------------------------------------------------------------------------------------------
# RFC 8292: the relay's VAPID key and the Authorization header
# ---------------------------------------------------------------------------------------------


class Vapid:
    """The relay's VAPID key pair, made once and kept in the data folder."""

    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self.key = key
        self.public_key = b64u(public_bytes(key.public_key()))

    @classmethod
    def from_pem(cls, pem: bytes, where: str) -> Vapid:
        loaded = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{where} does not hold a P-256 key; move it away to make a new one")
        return cls(loaded)

    def pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    @classmethod
    def load_or_create(cls, path: Path) -> Vapid:
        if path.exists():
            return cls.from_pem(path.read_bytes(), str(path))
        key = ec.generate_private_key(ec.SECP256R1())
        pem = cls(key).pem()
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        os.replace(temp, path)
        return cls(key)

    @classmethod
    async def shared(cls, store: Store, path: Path) -> Vapid:
        """The key every node of a PostgreSQL cluster signs with (table ``push_keys``): made by
        the first node that finds none, from ``path`` when that file exists."""
        where = "the push_keys table"
        rows = await store.read("SELECT pem FROM push_keys WHERE name = ?", (KEY_NAME,))
        if rows:
            return cls.from_pem(str(rows[0][0]).encode(), where)
        if path.exists():  # a relay moved over from SQLite keeps its key
            mine = cls.from_pem(path.read_bytes(), str(path))
        else:
            mine = cls(ec.generate_private_key(ec.SECP256R1()))
        pem = mine.pem().decode()

        def job(conn: Connection) -> str:
            # Another node may be doing the same now: the first insert wins, both read it back.
            conn.execute(
                "INSERT INTO push_keys (name, pem, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (name) DO NOTHING",
                (KEY_NAME, pem, time.time()),
            )
            row = conn.execute("SELECT pem FROM push_keys WHERE name = ?", (KEY_NAME,)).fetchone()
            return str(row[0])

        kept = await store.write(job)
        return mine if kept == pem else cls.from_pem(kept.encode(), where)

    def token(self, audience: str, subject: str, now: float | None = None) -> str:
        """A signed JWT (ES256) for one push service origin."""
        now = time.time() if now is None else now
        header = b64u(json.dumps({"typ": "JWT", "alg": "ES256"}).encode())
        claims = {"aud": audience, "exp": int(now) + JWT_LIFETIME, "sub": subject}
        body = b64u(json.dumps(claims, separators=(",", ":")).encode())
        signing_input = f"{header}.{body}".encode()
        der = self.key.sign(signing_input, ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
        return f"{header}.{body}.{b64u(signature)}"

    def authorization(self, endpoint: str, subject: str, now: float | None = None) -> str:
        parts = urlsplit(endpoint)
        audience = f"{parts.scheme}://{parts.netloc}"
        return f"vapid t={self.token(audience, subject, now)}, k={self.public_key}"


# ---------------------------------------------------------------------------------------------
# Subscriptions
# ---------------------------------------------------------------------------------------------


@dataclass
class Subscription:
    endpoint: str
    p256dh: str  # base64url, 65 bytes uncompressed P-256 point
    auth: str  # base64url, 16 bytes
    account_id: str
    phone_id: str
    turn_end: bool = False
    lang: str = "en"
    created_at: float = 0.0


class SubscriptionBook:
    """Every account's push subscriptions, in one small JSON file written atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._items: dict[str, Subscription] = {}
        if path.exists():
            try:
                raw = json.loads(path.read_text())
                for item in raw.get("subscriptions", []):
                    sub = Subscription(**item)
                    self._items[sub.endpoint] = sub
            except (ValueError, TypeError) as exc:
                _log.warning("ignoring unreadable %s: %s", path, exc)

    def _save(self) -> None:
        data = {"subscriptions": [asdict(s) for s in self._items.values()]}
        temp = self.path.with_suffix(".tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the relay's user only
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(data, indent=1, allow_nan=False))
        os.replace(temp, self.path)

    def add(self, sub: Subscription) -> None:
        with self._lock:
            mine = [s for s in self._items.values() if s.account_id == sub.account_id]
            if sub.endpoint not in self._items and len(mine) >= MAX_SUBSCRIPTIONS:
                raise _too_many()
            self._items[sub.endpoint] = sub
            self._save()

    def remove(self, endpoint: str, account_id: str | None = None) -> bool:
        with self._lock:
            sub = self._items.get(endpoint)
            if sub is None or (account_id is not None and sub.account_id != account_id):
                return False
            del self._items[endpoint]
            self._save()
            return True

    def for_account(self, account_id: str) -> list[Subscription]:
        with self._lock:
            return [s for s in self._items.values() if s.account_id == account_id]

    def all(self) -> list[Subscription]:
        with self._lock:
            return list(self._items.values())

    def get(self, endpoint: str) -> Subscription | None:
        with self._lock:
            return self._items.get(endpoint)

    # The face the relay uses, shared with SharedSubscriptionBook (the file is small and local).

    async def save(self, sub: Subscription) -> None:
        self.add(sub)

    async def drop(self, endpoint: str, account_id: str | None = None) -> bool:
        return self.remove(endpoint, account_id)

    async def of_account(self, account_id: str) -> list[Subscription]:
        return self.for_account(account_id)

    async def find(self, endpoint: str) -> Subscription | None:
        return self.get(endpoint)


_SUBSCRIPTION_COLUMNS = "endpoint, p256dh, auth, account_id, phone_id, turn_end, lang, created_at"


def _subscription(row: Any) -> Subscription:
    endpoint, p256dh, auth, account_id, phone_id, turn_end, lang, created_at = row
    return Subscription(
        str(endpoint),
        str(p256dh),
        str(auth),
        str(account_id),
        str(phone_id),
        bool(turn_end),
        str(lang),
        float(created_at),
    )


class SharedSubscriptionBook:
    """PostgreSQL: every account's subscriptions in the table ``push_subscriptions``, read by
    every relay node (a phone subscribes through one node, its sessions change on another)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def import_file(self, path: Path) -> int:
        """A relay moved over from SQLite: its ``push.json`` subscriptions, once (an endpoint
        already in the table is left as it is); the file is then renamed ``….imported``, so a
        subscription removed later does not come back at the next start."""
        if not path.exists():
            return 0
        subs = SubscriptionBook(path).all()

        def job(conn: Connection) -> int:
            added = 0
            for sub in subs:
                added += conn.execute(
                    f"INSERT INTO push_subscriptions ({_SUBSCRIPTION_COLUMNS})"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (endpoint) DO NOTHING",
                    _row(sub),
                ).rowcount
            return added

        added: int = await self.store.write(job)
        os.replace(path, path.with_name(path.name + ".imported"))
        _log.info("push: %d subscriptions of %s moved into the database", added, path)
        return added

    async def save(self, sub: Subscription) -> None:
        def job(conn: Connection) -> None:
            # The account's row, locked: two nodes adding at once count one after the other.
            conn.execute(
                f"SELECT id FROM accounts WHERE id = ?{conn.dialect.for_update}",
                (sub.account_id,),
            )
            row = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(CASE WHEN endpoint = ? THEN 1 ELSE 0 END), 0)"
                " FROM push_subscriptions WHERE account_id = ?",
                (sub.endpoint, sub.account_id),
            ).fetchone()
            if not row[1] and int(row[0]) >= MAX_SUBSCRIPTIONS:
                raise _too_many()
            conn.execute(
                f"INSERT INTO push_subscriptions ({_SUBSCRIPTION_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (endpoint) DO UPDATE SET"
                " p256dh = excluded.p256dh, auth = excluded.auth,"
                " account_id = excluded.account_id, phone_id = excluded.phone_id,"
                " turn_end = excluded.turn_end, lang = excluded.lang,"
                " created_at = excluded.created_at",
                _row(sub),
            )

        await self.store.write(job)

    async def drop(self, endpoint: str, account_id: str | None = None) -> bool:
        sql = "DELETE FROM push_subscriptions WHERE endpoint = ?"
        params: tuple[str, ...] = (endpoint,)
        if account_id is not None:
            sql, params = sql + " AND account_id = ?", (endpoint, account_id)

        def job(conn: Connection) -> bool:
            return bool(conn.execute(sql, params).rowcount > 0)

        dropped: bool = await self.store.write(job)
        return dropped

    async def of_account(self, account_id: str) -> list[Subscription]:
        rows = await self.store.read(
            f"SELECT {_SUBSCRIPTION_COLUMNS} FROM push_subscriptions WHERE account_id = ?"
            " ORDER BY created_at, endpoint",
            (account_id,),
        )
        return [_subscription(r) for r in rows]

    async def find(self, endpoint: str) -> Subscription | None:
        rows = await self.store.read(
            f"SELECT {_SUBSCRIPTION_COLUMNS} FROM push_subscriptions WHERE endpoint = ?",
            (endpoint,),
        )
        return _subscription(rows[0]) if rows else None

    def for_account(self, account_id: str) -> list[Subscription]:
        """The same as ``of_account``, from any thread but the event loop's (tools, tests)."""
        rows = self.store.db.query(
            f"SELECT {_SUBSCRIPTION_COLUMNS} FROM push_subscriptions WHERE account_id = ?"
            " ORDER BY created_at, endpoint",
            (account_id,),
        )
        return [_subscription(r) for r in rows]


def _row(sub: Subscription) -> tuple[Any, ...]:
    return (
        sub.endpoint,
        sub.p256dh,
        sub.auth,
        sub.account_id,
        sub.phone_id,
        int(sub.turn_end),
        sub.lang,
        sub.created_at,
    )


def _too_many() -> Conflict:
    return Conflict(
        f"this account already has {MAX_SUBSCRIPTIONS} push subscriptions; "
        "turn notifications off on a phone you no longer use",
        code="too_many_subscriptions",
    )


Book = SubscriptionBook | SharedSubscriptionBook


# ---------------------------------------------------------------------------------------------
# What to say, and when (pure)
# ---------------------------------------------------------------------------------------------

_TEXT = {
    "en": {
        "permission": "Permission",
        "question": "Question",
        "plan": "Plan",
        "dialog": "Terminal",
        "keyed": "Terminal",
        "stuck": "Waiting for instructions",
        "needs_you": "{name} needs you",
        "turn_end": "{name} finished its turn",
        "turn_end_body": "Claude is waiting for your next message.",
        "test": "Notifications work",
        "test_body": "You will be told when a session needs you.",
    },
    "ko": {
        "permission": "권한 요청",
        "question": "질문",
        "plan": "플랜 승인",
        "dialog": "터미널 확인",
        "keyed": "터미널 확인",
        "stuck": "지시 대기",
        "needs_you": "{name} · 응답 대기",
        "turn_end": "{name} · 턴이 끝났어요",
        "turn_end_body": "Claude 가 다음 지시를 기다려요.",
        "test": "알림이 켜졌어요",
        "test_body": "세션이 응답을 기다리면 알려 드려요.",
    },
}


@dataclass(frozen=True)
class Notice:
    kind: Literal["card", "turn_end"]
    session_id: str
    name: str
    card_kind: str = ""
    card_text: str = ""


def notice_for(session: Session, before: SessionInfo | None, after: SessionInfo) -> Notice | None:
    """Whether this change of a session's live side is worth a notification."""
    name = session.title or Path(session.cwd).name or session.id[:8]
    card = after.card
    if card is not None and (before is None or before.card is None or before.card.id != card.id):
        text = card.title or card.text or (card.tool or "")
        return Notice("card", session.id, name, card.kind, text)
    was_busy = before is not None and before.state == "busy"
    if was_busy and after.state == "idle" and card is None:
        return Notice("turn_end", session.id, name)
    return None


def payload_for(notice: Notice, lang: str) -> dict[str, Any]:
    text = _TEXT.get(lang, _TEXT["en"])
    if notice.kind == "card":
        label = text.get(notice.card_kind, notice.card_kind)
        body = f"{label}: {notice.card_text}" if notice.card_text else label
        title = text["needs_you"].format(name=notice.name)
    else:
        title, body = text["turn_end"].format(name=notice.name), text["turn_end_body"]
    return {
        "session_id": notice.session_id,
        "title": title[:120],
        "body": body[:300],
        "kind": notice.kind,
    }


# ---------------------------------------------------------------------------------------------
# Sending
# ---------------------------------------------------------------------------------------------


Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# Not public although Python's ``is_global`` may say so, or said so in older versions.
_NOT_PUBLIC = tuple(
    ipaddress.ip_network(n)
    for n in (
        "100.64.0.0/10",  # carrier-grade NAT (RFC 6598)
        "169.254.0.0/16",  # link-local, where cloud metadata services answer (169.254.169.254)
        "100.100.100.200/32",  # Alibaba Cloud metadata
        "192.0.0.0/24",  # IETF protocol assignments (e.g. 192.0.0.192, Oracle Cloud metadata)
        "fd00:ec2::/32",  # AWS metadata over IPv6 (inside fc00::/7 too)
        "64:ff9b::/96",  # NAT64: the IPv4 address it embeds is checked instead
    )
)


def is_public(address: Address) -> bool:
    """Whether a push may go to ``address``: a globally routed unicast address only."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in ipaddress.ip_network("64:ff9b::/96"):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public(embedded)
    if not address.is_global or address.is_multicast or address.is_unspecified:
        return False
    return not any(address in net for net in _NOT_PUBLIC if net.version == address.version)


async def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to now (one lookup); [] when it does not resolve."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    found: list[Address] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in found:
            found.append(address)
    return found


@dataclass(frozen=True)
class Target:
    """Where one push goes: the endpoint, and the one address checked for it."""

    endpoint: str
    host: str
    port: int
    address: Address

    def url(self) -> str:
        """The endpoint with its host replaced by the checked address (no second lookup)."""
        parts = urlsplit(self.endpoint)
        literal = f"[{self.address}]" if self.address.version == 6 else str(self.address)
        netloc = f"{literal}:{self.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _refused(endpoint: str, why: str) -> BadRequest:
    return BadRequest(f"push endpoint {endpoint[:80]!r} refused: {why}", code="bad_push_endpoint")


def allowed_hosts(raw: str) -> frozenset[str]:
    """The ``push_allowed_hosts`` setting as a set of lower-case host names or addresses."""
    return frozenset(h.strip().lower().strip("[]") for h in raw.split(",") if h.strip())


async def check_endpoint(endpoint: str, allowed: Iterable[str] = ()) -> Target:
    """The endpoint's target when a push may go there; BadRequest ``bad_push_endpoint`` if not.

    Resolves the host once: the caller connects to ``Target.address``, not to the name again.
    """
    try:
        parts = urlsplit(endpoint)
        port = parts.port
    except ValueError:
        raise _refused(endpoint, "it is not a URL; it must be an https:// address") from None
    host = (parts.hostname or "").lower()
    listed = host in set(allowed)
    if not host or parts.username is not None or parts.password is not None:
        raise _refused(endpoint, "it must be an https:// address of a push service")
    if parts.scheme != "https" and not (listed and parts.scheme == "http"):
        raise _refused(endpoint, "push services are https:// addresses")
    port = port or (443 if parts.scheme == "https" else 80)
    addresses = await resolve(host, port)
    if not addresses:
        raise _refused(endpoint, f"{host} does not resolve; check the address or try again")
    if not listed:
        inside = [a for a in addresses if not is_public(a)]
        if inside:
            raise _refused(
                endpoint,
                f"{host} resolves to {inside[0]}, which is not a public address; push services "
                "are on the internet (a private one must be named in push_allowed_hosts)",
            )
    return Target(endpoint, host, port, addresses[0])


class PushSender:
    """Encrypts, signs and posts notifications, each to the address checked for it."""

    def __init__(
        self,
        vapid: Vapid,
        book: Book,
        subject: str,
        ttl: int,
        timeout: float,
        allowed: frozenset[str] = frozenset(),
    ) -> None:
        self.vapid = vapid
        self.book = book
        self.subject = subject
        self.ttl = ttl
        self.timeout = timeout
        self.allowed = allowed
        self._client: httpx.AsyncClient | None = None
        self.tasks = TaskSet("push", _log)

    async def post(self, target: Target, headers: dict[str, str], body: bytes) -> int:
        """POST to ``target.address``; Host and the TLS name (SNI, certificate) stay the host's."""
        if self._client is None:
            # No kept-alive connections: they are keyed by address, and one opened (and its
            # certificate checked) for one host must not carry another host's push.
            self._client = httpx.AsyncClient(
                timeout=self.timeout,
                follow_redirects=False,
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        netloc = urlsplit(target.endpoint).netloc.rsplit("@", 1)[-1]
        response = await self._client.post(
            target.url(),
            headers={**headers, "Host": netloc},
            content=body,
            extensions={"sni_hostname": target.host},
        )
        return response.status_code

    def request(
        self, sub: Subscription, payload: dict[str, Any], urgency: str = "normal"
    ) -> tuple[dict[str, str], bytes]:
        data = dumps(payload).encode()
        if len(data) > MAX_PAYLOAD:
            raise ValueError("push payload too large")
        body = encrypt(data, unb64u(sub.p256dh), unb64u(sub.auth))
        headers = {
            "Authorization": self.vapid.authorization(sub.endpoint, self.subject),
            "Content-Encoding": "aes128gcm",
            "Content-Type": "application/octet-stream",
            "TTL": str(self.ttl),
            "Urgency": urgency,
            "Topic": b64u(hashlib.sha256(str(payload.get("session_id")).encode()).digest()[:24]),
        }
        return headers, body

    async def send(
        self, sub: Subscription, payload: dict[str, Any], urgency: str = "normal"
    ) -> int:
        """Send one notification; forget the subscription when the service says it is gone.

        The answer's HTTP status, or 0 when nothing was sent (refused endpoint, network error).
        """
        headers, body = self.request(sub, payload, urgency)
        try:
            # Checked again now: the name may resolve elsewhere than when the phone subscribed.
            target = await check_endpoint(sub.endpoint, self.allowed)
        except BadRequest as exc:
            _log.warning("push not sent: %s", exc.message)
            return 0
        try:
            status = await self.post(target, headers, body)
        except (httpx.HTTPError, OSError) as exc:
            _log.warning("push to %s failed: %s", urlsplit(sub.endpoint).netloc, exc)
            return 0
        if status in (404, 410):
            await self.book.drop(sub.endpoint)
            _log.info("push subscription gone (%d); removed", status)
        elif status >= 400:
            _log.warning("push service %s answered %d", urlsplit(sub.endpoint).netloc, status)
        return status

    def spawn(self, coro: Coroutine[Any, Any, None], name: str = "notification") -> None:
        if self.tasks.closed:
            coro.close()  # the relay is stopping: nothing more is sent
            return
        self.tasks.start(coro, name=name)

    async def close(self) -> None:
        await self.tasks.close()
        if self._client is not None:
            await self._client.aclose()


class Push:
    """Web Push for one relay: keys, subscriptions, the sender and the session watcher."""

    def __init__(
        self, state: RelayState, vapid: Vapid | None = None, book: Book | None = None
    ) -> None:
        config: Config = state.config
        data = config.data_path
        self.state = state
        self.vapid = vapid if vapid is not None else Vapid.load_or_create(data / KEY_FILE)
        self.book: Book = book if book is not None else SubscriptionBook(data / SUBSCRIPTIONS_FILE)
        subject = config.str("push_subject")
        if not subject:
            base = config.base_url
            subject = base if base.startswith("https://") else "mailto:claude-bridge@localhost"
        self.sender = PushSender(
            self.vapid,
            self.book,
            subject,
            config.int("push_ttl"),
            config.float("push_timeout"),
            allowed_hosts(config.str("push_allowed_hosts")),
        )

    def watch(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo
    ) -> None:
        """Called by the relay for every session_update from a Mac (a SessionWatcher)."""
        notice = notice_for(session, before, after)
        if notice is None:
            return
        if isinstance(self.book, SubscriptionBook):  # in memory: only a task when there is work
            subs = self.book.for_account(account_id)
            if notice.kind == "turn_end":
                subs = [s for s in subs if s.turn_end]
            if subs:
                self.sender.spawn(self.notify(account_id, subs, notice))
        else:
            self.sender.spawn(self.notify_account(account_id, notice))

    async def notify_account(self, account_id: str, notice: Notice) -> None:
        subs = await self.book.of_account(account_id)
        if notice.kind == "turn_end":
            subs = [s for s in subs if s.turn_end]
        if subs:
            await self.notify(account_id, subs, notice)

    async def live_subscriptions(
        self, account_id: str, subs: list[Subscription]
    ) -> list[Subscription]:
        """Only subscriptions of phones still paired: a revoked phone hears nothing more."""
        phones = {p.id: p for p in await self.state.store.list_phones(account_id)}
        live = []
        for sub in subs:
            phone = phones.get(sub.phone_id)
            if phone is None or phone.revoked:
                await self.book.drop(sub.endpoint)
            else:
                live.append(sub)
        return live

    async def notify(self, account_id: str, subs: list[Subscription], notice: Notice) -> None:
        urgency = "high" if notice.kind == "card" else "normal"
        for sub in await self.live_subscriptions(account_id, subs):
            await self.sender.send(sub, payload_for(notice, sub.lang), urgency)

    async def close(self) -> None:
        await self.sender.close()


def setup(conn: Connection) -> None:
    """PostgreSQL: the tables of the key and the subscriptions all nodes share (SQLite keeps
    both in the data folder)."""
    if not conn.dialect.postgres:
        return
    conn.execute(
        "CREATE TABLE IF NOT EXISTS push_keys ("
        " name TEXT PRIMARY KEY, pem TEXT NOT NULL, created_at REAL NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS push_subscriptions ("
        " endpoint TEXT PRIMARY KEY, p256dh TEXT NOT NULL, auth TEXT NOT NULL,"
        " account_id TEXT NOT NULL REFERENCES accounts(id), phone_id TEXT NOT NULL,"
        " turn_end INTEGER NOT NULL DEFAULT 0, lang TEXT NOT NULL, created_at REAL NOT NULL)"
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS push_subscriptions_account"
        " ON push_subscriptions(account_id, created_at)"
    )


async def load_vapid(state: RelayState) -> Vapid:
    """The relay's VAPID key: the data folder's file on SQLite, the shared row on PostgreSQL."""
    path = state.config.data_path / KEY_FILE
    if state.store.dialect.postgres:
        return await Vapid.shared(state.store, path)
    return Vapid.load_or_create(path)


async def start(state: RelayState) -> Push:
    book: Book | None = None
    if state.store.dialect.postgres:
        book = SharedSubscriptionBook(state.store)
        await book.import_file(state.config.data_path / SUBSCRIPTIONS_FILE)
    push = Push(state, await load_vapid(state), book)
    state.hooks.watchers.append(push.watch)
    return push


# ---------------------------------------------------------------------------------------------
# Routes
# ---------------------------------------------------------------------------------------------

router = APIRouter(prefix="/api/push")


def _push(request: Request) -> Push:
    push = relay_state(request).part(Push)
    assert push is not None, "the push feature is not started"
    return push


PushDep = Annotated[Push, Depends(_push)]


class SubscriptionKeys(Body):
    p256dh: str = Field(min_length=80, max_length=100)
    auth: str = Field(min_length=16, max_length=32)


class SubscribeBody(Body):
    endpoint: str = Field(min_length=10, max_length=2048)
    keys: SubscriptionKeys
    turn_end: bool = False  # also notify when a turn ends
    lang: Literal["en", "ko"] = "en"


class UnsubscribeBody(Body):
    endpoint: str = Field(min_length=10, max_length=2048)


def _check_keys(keys: SubscriptionKeys) -> None:
    try:
        point = unb64u(keys.p256dh)
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
        auth = unb64u(keys.auth)
    except ValueError:
        raise BadRequest("keys.p256dh must be a P-256 public key in base64url") from None
    if len(point) != 65 or len(auth) != 16:
        raise BadRequest("keys.p256dh must be 65 bytes and keys.auth 16 bytes (base64url)")


@router.get("/key")
async def key(principal: Phone, push: PushDep) -> dict[str, str]:
    return {"key": push.vapid.public_key}


@router.post("/subscribe")
async def subscribe(body: SubscribeBody, principal: Phone, push: PushDep) -> dict[str, Any]:
    _check_keys(body.keys)
    await check_endpoint(body.endpoint, push.sender.allowed)
    existing = await push.book.find(body.endpoint)
    if existing is not None and existing.account_id != principal.account_id:
        await push.book.drop(body.endpoint)  # the browser now belongs to another login
    await push.book.save(
        Subscription(
            endpoint=body.endpoint,
            p256dh=body.keys.p256dh,
            auth=body.keys.auth,
            account_id=principal.account_id,
            phone_id=principal.subject_id,
            turn_end=body.turn_end,
            lang=body.lang,
            created_at=time.time(),
        )
    )
    return {"ok": True, "turn_end": body.turn_end}


@router.delete("/subscribe")
async def unsubscribe(body: UnsubscribeBody, principal: Phone, push: PushDep) -> dict[str, Any]:
    removed = await push.book.drop(body.endpoint, principal.account_id)
    return {"ok": True, "removed": removed}


@router.post("/test")
async def test_notification(
    body: UnsubscribeBody, principal: Phone, push: PushDep
) -> dict[str, Any]:
    """Send a test notification to one of this account's subscriptions."""
    sub = await push.book.find(body.endpoint)
    if sub is None or sub.account_id != principal.account_id:
        raise BadRequest("this browser is not subscribed; turn notifications on first")
    text = _TEXT.get(sub.lang, _TEXT["en"])
    payload = {"session_id": "", "title": text["test"], "body": text["test_body"], "kind": "test"}
    sent = 200 <= await push.sender.send(sub, payload) < 300
    # Only sent or failed: what a push endpoint answered (or that it did not) stays in the log.
    return {"ok": sent, "status": "sent" if sent else "failed"}


FEATURE = Feature("push", schema=setup, start=start, router=router)
