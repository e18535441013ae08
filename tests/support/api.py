"""Helpers for the relay's HTTP API and link tests: its error answers, its routes, a fixture
transcript sent by a Mac in one batch."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
from fastapi.routing import APIRoute, APIWebSocketRoute

from tests.support.relay import transcript
from wire.client import MacLink
from wire.protocol import LineRecord
from wire.transcript import read_lines

BIG = "d_bash_permission"  # 23 display events
SMALL = "b_idle"  # 2 display events


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert a relay error answer and return its ``error`` object."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert isinstance(body, dict) and "error" in body, body
    error: dict[str, Any] = body["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"].strip(), error
    return error


def transcript_lines(prefix: str) -> tuple[str, list[LineRecord]]:
    path = transcript(prefix)
    return path.stem, list(read_lines(path.read_bytes()))


def new_id() -> str:
    """A new session id, as the agent makes them (the relay takes nothing but a UUID)."""
    return str(uuid.uuid4())


async def push(link: MacLink, session_id: str, prefix: str = BIG) -> int:
    """Send a whole fixture transcript as one batch; return the session's last seq."""
    conversation, lines = transcript_lines(prefix)
    ack = await link.send_lines(session_id, conversation, lines, cwd="/Users/test/project")
    assert ack.session_id == session_id
    return ack.last_seq


def api_routes(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, set[str], Any]]:
    """(path, methods, route) of every API route, through included routers of any FastAPI."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:  # FastAPI keeps included routers as one lazy route each
            context = getattr(route, "include_context", None)
            yield from api_routes(inner.routes, prefix + str(getattr(context, "prefix", "") or ""))
        elif isinstance(route, APIRoute):
            yield prefix + route.path, set(route.methods or ()), route
        elif isinstance(route, APIWebSocketRoute):
            yield prefix + route.path, {"WEBSOCKET"}, route
