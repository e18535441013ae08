"""Who is calling: bearer tokens and the page's cookie, origin checks, pairing rate limits.

Phones send ``Authorization: Bearer <token>`` or carry the page's HttpOnly, SameSite=Strict
cookie. A cookie-authenticated request that changes something must come from the relay's own
origin (a second line of defence against cross-site requests). Macs authenticate the link with a
device token in the Authorization header.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from relay.errors import Forbidden, TooManyRequests, Unauthorized
from relay.store import Principal, Store

COOKIE_NAME = "cb_login"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Credential:
    token: str
    from_cookie: bool


def credential(conn: HTTPConnection) -> Credential | None:
    header = conn.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return Credential(value.strip(), from_cookie=False)
    cookie = conn.cookies.get(COOKIE_NAME)
    if cookie:
        return Credential(cookie, from_cookie=True)
    return None


def authenticate(conn: HTTPConnection, store: Store, kind: str, method: str = "GET") -> Principal:
    """The caller's principal; raises Unauthorized / Forbidden with a reason a person can act on."""
    cred = credential(conn)
    if cred is None:
        raise Unauthorized(
            "log in first: pair this browser with `claude-bridge pair`", code="unauthorized"
        )
    principal = store.authenticate(cred.token)
    if principal.kind != kind:
        raise Forbidden(
            f"a {principal.kind} token cannot be used here; this needs a {kind} token",
            code="wrong_token_kind",
        )
    if cred.from_cookie and method in UNSAFE_METHODS:
        check_origin(conn)
    return principal


_DEFAULT_PORTS = {"http": "80", "https": "443"}


def _origin_of(scheme: str, netloc: str) -> str:
    """``scheme://host[:port]`` in one spelling: lower case, no default port."""
    scheme, netloc = scheme.lower(), netloc.lower()
    host, sep, port = netloc.rpartition(":")
    if sep and "]" not in port and port == _DEFAULT_PORTS.get(scheme):
        netloc = host
    return f"{scheme}://{netloc}"


def check_origin(conn: HTTPConnection) -> None:
    """The page's own origin only: same scheme, same host and port as the relay was reached at.

    That is the Host header and the connection's scheme, or the X-Forwarded-Host / -Proto of a
    trusted proxy (``trusted_proxies``; relay/app.py drops them from anyone else).
    """
    origin = conn.headers.get("origin")
    if origin is None:
        referer = conn.headers.get("referer")
        if referer is None:
            raise Forbidden(
                "a change made with the login cookie needs an Origin header", code="bad_origin"
            )
        origin = referer
    scheme, sep, rest = origin.partition("://")
    host = conn.headers.get("x-forwarded-host") or conn.headers.get("host", "")
    own = _origin_of(conn.url.scheme, host)
    theirs = _origin_of(scheme, rest.split("/", 1)[0])
    if sep and host and theirs == own:
        return
    message = f"requests from {origin[:200]} are not accepted"
    if sep and host and theirs.split("://", 1)[1] == own.split("://", 1)[1]:
        message += (
            f"; the relay was reached over {conn.url.scheme}: behind an https proxy, set "
            "trusted_proxies (CB_TRUSTED_PROXIES) to the proxy's address"
        )
    raise Forbidden(message, code="bad_origin")


class RateLimiter:
    """A sliding window per key (client address): at most ``limit`` attempts per ``window`` s.

    The address is the peer's, or the client's as a trusted proxy reports it: a header a client
    sets itself never chooses its bucket (relay/app.py ForwardedHeaders).
    """

    def __init__(self, limit: int, window: float = 60.0) -> None:
        self.limit = limit
        self.window = window
        self._hits: dict[str, deque[float]] = {}

    def check(self, key: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            retry = int(hits[0] + self.window - now) + 1
            raise TooManyRequests(
                f"too many pairing attempts; wait {retry} s and try again",
                code="pair_rate_limited",
                retry_after=retry,
            )
        hits.append(now)
        if len(self._hits) > 10_000:  # forget idle addresses so the table cannot grow forever
            for k in [k for k, v in self._hits.items() if not v or v[-1] <= now - self.window]:
                del self._hits[k]
