"""A bare sse-starlette broadcast server: the baseline the relay's fan-out is compared with.

No storage, no auth, no numbering: ``POST /publish`` with ``{"events": ["<data>", ...]}`` puts each
payload into every subscriber's asyncio.Queue; ``GET /stream`` sends a ``hello`` event once its
queue is registered, then yields each payload as a ServerSentEvent (event "event", a growing id)
through EventSourceResponse. Run under uvicorn with the same defaults as the relay.

    .venv/bin/python bench/bare_sse.py --port 8766
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from collections.abc import AsyncIterator

import uvicorn
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

subscribers: set[asyncio.Queue[tuple[int, str]]] = set()
ids = itertools.count(1)


async def stream(request: Request) -> EventSourceResponse:
    queue: asyncio.Queue[tuple[int, str]] = asyncio.Queue()
    subscribers.add(queue)

    async def events() -> AsyncIterator[ServerSentEvent]:
        try:
            yield ServerSentEvent(data=json.dumps({"hello": True}), event="hello")
            while True:
                ident, data = await queue.get()
                yield ServerSentEvent(data=data, event="event", id=str(ident))
        finally:
            subscribers.discard(queue)

    return EventSourceResponse(
        events(), ping=15.0, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    )


async def publish(request: Request) -> JSONResponse:
    body = await request.json()
    items = [(next(ids), data) for data in body["events"]]
    for queue in list(subscribers):
        for item in items:
            queue.put_nowait(item)
    return JSONResponse(
        {"ok": True, "subscribers": len(subscribers), "last_id": items[-1][0] if items else 0}
    )


async def health(request: Request) -> JSONResponse:
    return JSONResponse({"status": "ok", "subscribers": len(subscribers)})


app = Starlette(
    routes=[
        Route("/stream", stream),
        Route("/publish", publish, methods=["POST"]),
        Route("/health", health),
    ]
)


def main() -> None:
    parser = argparse.ArgumentParser(description="bare sse-starlette broadcast server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args()
    uvicorn.run(
        app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=3
    )


if __name__ == "__main__":
    main()
