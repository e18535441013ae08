"""The relay application: routes, the agent link, the control page, limits and error handling."""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from relay import link, routes
from relay.deps import refuse_read_only
from relay.errors import PayloadTooLarge, RelayError
from relay.feature import Feature, close_all, schemas, start_all
from relay.features import (
    audit,
    decisions,
    desk,
    files,
    fulltext,
    grants,
    memory,
    moves,
    outbox,
    permissions,
    push,
    report,
    resume,
    retention,
    search,
    snapshots,
    subagents,
    textsearch,
    title_convention,
    titles,
    usage,
)
from relay.hub import Hub
from relay.jsontext import JSONText
from relay.localtoken import keep_local_token
from relay.pagedata import account_page_data
from relay.state import RelayState
from relay.static import WebApp
from relay.store import Store
from relay.webfiles import web_root
from wire import __version__
from wire.config import Config, Network, trusted_networks

_log = logging.getLogger("relay")

WEB_DIR = Path(__file__).resolve().parent.parent / "web"

# The page's scripts and styles come from the relay only; transcript text can never run.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
        "form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


# Routes that take a larger body and count it themselves (an attachment: its own setting).
OWN_BODY_LIMIT = re.compile(r"^/api/sessions/[^/]+/attachments$")


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before they are read into memory."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or OWN_BODY_LIMIT.match(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        too_large = PayloadTooLarge(
            f"request bodies are limited to {self.limit:,} bytes",
            code="body_too_large",
            limit=self.limit,
        )
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await JSONText(too_large.body(), status_code=413)(scope, receive, send)
            return
        received = 0
        started = False
        exceeded = False

        async def limited_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    exceeded = True
                    raise _BodyTooLarge()
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if exceeded and not started:
                # FastAPI catches _BodyTooLarge while reading the body and answers a generic
                # 400 "error parsing the body": drop that answer, the 413 below replaces it.
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        with suppress(_BodyTooLarge):
            await self.app(scope, limited_receive, tracking_send)
        if exceeded and not started:
            await JSONText(too_large.body(), status_code=413)(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


_FORWARDED = frozenset(
    {b"x-forwarded-for", b"x-forwarded-proto", b"x-forwarded-host", b"x-real-ip", b"forwarded"}
)


class ForwardedHeaders:
    """Forwarded headers from a trusted proxy set the client, scheme and host; from anyone else
    they are removed, so no later part (rate limits, the origin check, cookies) can read them.

    uvicorn's own handling is off (see ``server_options``): it trusts 127.0.0.1 by default,
    which lets any local process, or a proxy that passes the header through, pick the client
    address, and it keeps no record of who the peer was.
    """

    def __init__(self, app: ASGIApp, trusted: tuple[Network, ...]) -> None:
        self.app = app
        self.trusted = trusted

    def _is_trusted(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in net for net in self.trusted)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        forwarded: dict[bytes, bytes] = {}
        for key, value in headers:
            if key in _FORWARDED:  # several lines of one header read as one list
                forwarded[key] = forwarded[key] + b"," + value if key in forwarded else value
        if not forwarded:
            await self.app(scope, receive, send)
            return
        scope = dict(scope)
        peer = scope.get("client")
        if not (peer and self._is_trusted(str(peer[0]))):
            scope["headers"] = [(k, v) for k, v in headers if k not in _FORWARDED]
            await self.app(scope, receive, send)
            return
        chain = [
            h.strip() for h in forwarded.get(b"x-forwarded-for", b"").decode("latin-1").split(",")
        ]
        chain = [h for h in chain if h]
        # The client is the nearest address that is not one of our proxies (the ones before it
        # were written by the client itself and prove nothing).
        for hop in reversed(chain):
            if not self._is_trusted(hop):
                scope["client"] = (hop, 0)
                break
        else:
            if chain:
                scope["client"] = (chain[0], 0)
        # Of a list, the value our proxy wrote is the last: the ones before came from further out.
        proto = forwarded.get(b"x-forwarded-proto", b"").decode("latin-1").split(",")[-1]
        proto = proto.strip().lower()
        host = forwarded.get(b"x-forwarded-host", b"").split(b",")[-1].strip()
        scope["headers"] = [(k, v) for k, v in headers if k != b"x-forwarded-host"]
        if host:
            scope["headers"].append((b"x-forwarded-host", host))  # one value: relay/auth.py
        if proto in ("http", "https"):
            secure = proto == "https"
            if scope["type"] == "websocket":
                scope["scheme"] = "wss" if secure else "ws"
            else:
                scope["scheme"] = proto
        await self.app(scope, receive, send)


def server_options(config: Config) -> dict[str, Any]:
    """The uvicorn settings of every way the relay is started (cli/main.py, the tests)."""
    return {
        "ws_max_size": config.int("max_link_message_bytes"),
        # Forwarded headers are ForwardedHeaders' job, trusting only ``trusted_proxies``.
        "proxy_headers": False,
    }


class SecurityHeaders:
    """SECURITY_HEADERS on every answer; ``inline_styles`` (CSP sources, relay/static.py) are the
    only inline styles let in: the pages' own stylesheet, by its hash."""

    def __init__(self, app: ASGIApp, inline_styles: tuple[str, ...] = ()) -> None:
        self.app = app
        headers = dict(SECURITY_HEADERS)
        if inline_styles:
            csp = headers["content-security-policy"]
            styles = "style-src 'self' " + " ".join(inline_styles)
            headers["content-security-policy"] = csp.replace("style-src 'self'", styles, 1)
        self.headers = [(k.encode(), v.encode()) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + self.headers
            await send(message)

        await self.app(scope, receive, with_headers)


# Every feature of the relay (relay/feature.py), started in this order and closed in the reverse:
# the titles' observer ahead of the search index's, retention (and its schedule) last.
FEATURES: tuple[Feature, ...] = (
    subagents.FEATURE,  # the subagent index and pages
    usage.FEATURE,  # usage and cost per session
    push.FEATURE,  # Web Push: keys, subscriptions, watcher
    titles.FEATURE,  # derived and Claude Code's titles
    title_convention.FEATURE,  # title_format applied to every automatic title; regenerate
    search.FEATURE,  # summaries and the search index
    permissions.FEATURE,  # the relay's copy of session policies
    grants.FEATURE,  # the running claude's grants ("always" on a card), revoked from the phone
    audit.FEATURE,  # every decision on every card
    retention.FEATURE,  # expiry on a schedule
    files.FEATURE,  # a session's folder and git changes, read from its Mac
    fulltext.FEATURE,  # the whole text of an event the relay cut, read again from its Mac
    textsearch.FEATURE,  # search in conversations: the messages' own words
    outbox.FEATURE,  # messages queued for an offline Mac
    moves.FEATURE,  # a session moved to another Mac
    decisions.FEATURE,  # the decisions ledger: constraints, remember marks, open items
    snapshots.FEATURE,  # the ledger's snapshots as events; the handoff given to the Mac
    memory.FEATURE,  # memory candidates, written to a project's CLAUDE.md with a tap
    report.FEATURE,  # the usage report: starts, resumes, searches, memory, expiries
    resume.FEATURE,  # resume scopes and the reopen card's figures
    desk.FEATURE,  # a Mac's Claude Code conversations, the desk's too
)


async def _join_cluster(state: RelayState) -> None:
    """On PostgreSQL the relay is one node of a cluster (relay/cluster.py), even when alone."""
    from relay.cluster import Cluster
    from relay.db.postgres import PostgresDatabase

    db = state.store.db
    assert isinstance(db, PostgresDatabase)
    cluster = Cluster(state, db)
    state.cluster = cluster
    state.hub.forward = cluster
    state.store.add_notice(cluster.event_notice)
    await cluster.start()


def create_app(config: Config) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = Store(config, schemas=schemas(FEATURES))
        hub = Hub(config.int("sse_queue_size"), config.int("sse_max_streams_per_token"))
        hub.bind(asyncio.get_running_loop())
        store.add_listener(hub.publish_events_threadsafe)
        state = RelayState(config=config, store=store, hub=hub)
        app.state.relay = state
        try:
            store.ensure_account()
            keep_local_token(store, config.data_path)  # the command line's, on this machine
            state.last_known = await store.read_last_known()
            if store.dialect.postgres:
                await _join_cluster(state)
            started = await start_all(FEATURES, state)
        except BaseException:
            # A start that fails half-way still closes what it opened (connections, threads).
            await close_all(state)
            if state.cluster is not None:
                await state.cluster.close()
            await state.tasks.close()
            store.close()
            raise
        for name, part in started.items():
            setattr(app.state, name, part)  # e.g. app.state.retention, for tests and tools
        _log.info("relay store at %s", store.describe())
        try:
            yield
        finally:
            await close_all(state)
            for device_link in list(app.state.relay.live.links.values()):
                device_link.fail_pending()
            if state.cluster is not None:
                await state.cluster.close()
            await state.tasks.close()  # the core's own: each linked Mac's token watch
            store.close()

    app = FastAPI(
        title="claude-bridge relay",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # every route needs a login; the API is described in README.md
        default_response_class=JSONText,  # never NaN / Infinity (relay/jsontext.py)
        # A read-only view (X-CB-Read-Only) can change nothing, whichever router serves it.
        dependencies=[Depends(refuse_read_only)],
    )

    @app.exception_handler(RelayError)
    async def relay_error(_: Request, exc: RelayError) -> Response:
        headers = {}
        if exc.status == 401:
            headers["www-authenticate"] = "Bearer"
        if "retry_after" in exc.details:
            headers["retry-after"] = str(exc.details["retry_after"])
        return JSONText(exc.body(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        kind = first.get("type", "")
        status = 400
        if kind == "json_invalid" or "decode" in str(first.get("msg", "")).lower():
            code, message = "bad_json", "the request body is not valid JSON (UTF-8)"
        elif kind == "finite_number":
            # Well-formed, but a value no phone could read back (JSON has no NaN / Infinity).
            status, code = 422, "not_finite"
            message = f"{where or 'request'}: must be a finite number, not NaN or infinity"
        else:
            code = "bad_request"
            message = f"{where or 'request'}: {first.get('msg', 'invalid value')}"
        return JSONText({"error": {"code": code, "message": message}}, status_code=status)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        """Starlette's own errors (no route, wrong method, an unreadable body) in the relay's
        error body, never ``{"detail": …}``."""
        status = exc.status_code
        if status == 400 and exc.__cause__ is not None:
            # FastAPI could not read the body: not UTF-8, or nested deeper than a parser goes.
            code, message = "bad_json", "the request body is not valid JSON (UTF-8)"
        elif status == 404:
            code, message = "not_found", f"nothing at {request.url.path[:200]}"
        elif status == 405:
            code = "method_not_allowed"
            message = f"{request.method} is not accepted at {request.url.path[:200]}"
        else:
            code, message = f"http_{status}", str(exc.detail)
        return JSONText(
            {"error": {"code": code, "message": message}},
            status_code=status,
            headers=dict(exc.headers or {}),
        )

    app.include_router(routes.router)
    for feature in FEATURES:
        if feature.router is not None:
            app.include_router(feature.router)
    app.include_router(link.router)
    # The page's folder (relay/webfiles.py); missing files stop the relay here, not 404 later.
    web = WebApp(web_root(config.str("web_dir")), page_data=account_page_data)
    app.mount("/", web, name="web")

    # Added last = outermost: even a 413 from the body limit carries the security headers.
    app.add_middleware(BodyLimit, limit=config.int("max_body_bytes"))
    app.add_middleware(SecurityHeaders, inline_styles=web.inline_styles)
    # Outermost: every part below sees the client and scheme only a trusted proxy may change.
    app.add_middleware(ForwardedHeaders, trusted=trusted_networks(config.str("trusted_proxies")))
    return app
