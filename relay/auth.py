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


def check_origin(conn: HTTPConnection) -> None:
    origin = conn.headers.get("origin")
    if origin is None:
        referer = conn.headers.get("referer")
        if referer is None:
            raise Forbidden(
                "a change made with the login cookie needs an Origin header", code="bad_origin"
            )
        origin = referer
    host = conn.headers.get("host", "")
    scheme_sep = origin.find("://")
    origin_host = origin[scheme_sep + 3 :].split("/", 1)[0] if scheme_sep >= 0 else ""
    forwarded_host = conn.headers.get("x-forwarded-host", "")
    if origin_host not in {host, forwarded_host} or not origin_host:
        raise Forbidden(f"requests from {origin} are not accepted", code="bad_origin")


class RateLimiter:
    """A sliding window per key (client address): at most ``limit`` attempts per ``window`` s."""

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
