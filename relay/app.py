"""The relay application: routes, the agent link, the control page, limits and error handling."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

from fastapi import Depends, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from relay import audit, link, permissions, push, retention, routes, search, usage
from relay.config import Config
from relay.errors import PayloadTooLarge, RelayError
from relay.hub import Hub
from relay.state import RelayState
from relay.store import Store

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


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before they are read into memory."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        too_large = PayloadTooLarge(
            f"request bodies are limited to {self.limit:,} bytes",
            code="body_too_large",
            limit=self.limit,
        )
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await JSONResponse(too_large.body(), status_code=413)(scope, receive, send)
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
            await JSONResponse(too_large.body(), status_code=413)(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + self.headers
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(config: Config) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = Store(config)
        hub = Hub(int(config.sse_queue_size))
        hub.bind(asyncio.get_running_loop())
        store.add_listener(hub.publish_events_threadsafe)
        await usage.install(store, config)  # usage and cost per session (relay/usage.py)
        store.ensure_account()
        app.state.relay = RelayState(config=config, store=store, hub=hub)
        app.state.push = push.install(app.state.relay)  # Web Push: keys, subscriptions, watcher
        app.state.search = search.install(app.state.relay)  # titles, summaries, search index
        await permissions.install(app.state.relay)  # the relay's copy of session policies
        app.state.audit = await audit.install(app.state.relay)  # card decisions (relay/audit.py)
        app.state.retention = await retention.install(app.state.relay)  # expiry on a schedule
        _log.info("relay store at %s", store.path)
        try:
            yield
        finally:
            await app.state.retention.close()
            await app.state.audit.close()
            await app.state.push.close()
            for device_link in list(app.state.relay.live.links.values()):
                device_link.fail_pending()
            store.close()

    app = FastAPI(
        title="claude-bridge relay",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # every route needs a login; the API is described in README.md
        # A read-only view (X-CB-Read-Only) can change nothing, whichever router serves it.
        dependencies=[Depends(routes.refuse_read_only)],
    )

    @app.exception_handler(RelayError)
    async def relay_error(_: Request, exc: RelayError) -> Response:
        headers = {}
        if exc.status == 401:
            headers["www-authenticate"] = "Bearer"
        if "retry_after" in exc.details:
            headers["retry-after"] = str(exc.details["retry_after"])
        return JSONResponse(exc.body(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> Response:
        errors = exc.errors()
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        kind = first.get("type", "")
        if kind == "json_invalid" or "decode" in str(first.get("msg", "")).lower():
            code, message = "bad_json", "the request body is not valid JSON (UTF-8)"
        else:
            code = "bad_request"
            message = f"{where or 'request'}: {first.get('msg', 'invalid value')}"
        return JSONResponse({"error": {"code": code, "message": message}}, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # FastAPI reports a body that is not UTF-8 as a bare HTTPException(400); say it clearly.
        if exc.status_code == 400 and isinstance(exc.__cause__, UnicodeDecodeError):
            body = {"code": "bad_json", "message": "the request body is not valid JSON (UTF-8)"}
            return JSONResponse({"error": body}, status_code=400)
        return await http_exception_handler(request, exc)

    app.include_router(routes.router)
    app.include_router(push.router)  # /api/push/*: Web Push (relay/push.py)
    app.include_router(permissions.router)  # /api/sessions/{id}/policy (relay/permissions.py)
    app.include_router(retention.router)  # /api/retention, pin/unpin (relay/retention.py)
    app.include_router(search.router)  # /api/search, summaries, titles (relay/search.py)
    app.include_router(usage.router)  # /api/sessions/{id}/cost, /api/costs (relay/usage.py)
    app.include_router(audit.router)  # /api/audit: every decision on every card (relay/audit.py)
    app.include_router(link.router)
    web_dir = Path(str(config.web_dir)).expanduser() if config.web_dir else WEB_DIR
    if web_dir.is_dir():
        app.mount("/", StaticFiles(directory=web_dir, html=True), name="web")

    # Added last = outermost: even a 413 from the body limit carries the security headers.
    app.add_middleware(BodyLimit, limit=int(config.max_body_bytes))
    app.add_middleware(SecurityHeaders)
    return app
