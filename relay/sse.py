"""Server-Sent Event streams: one session's numbered events, and an account's live updates.

The session stream registers its live listener *before* it reads stored history, then merges by
seq: anything published during the catch-up is either already in what was read (skipped by seq)
or arrives after it, so nothing is lost or doubled. A missing seq in the live feed is filled from
the store; a stream that falls behind gets ``resync`` and is closed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from sse_starlette import ServerSentEvent
from sse_starlette.sse import AppStatus
from starlette.requests import HTTPConnection

from relay import seq as seqrules
from relay.errors import RelayError
from relay.history import fetch_page
from relay.hub import Close, Subscriber, sse_frame
from relay.jsontext import dumps
from relay.state import RelayState
from relay.store import Principal, Session


def end_streams() -> None:
    """The server is stopping: every open stream ends now (sse-starlette's own flag, which it
    sets itself only when uvicorn's signal handler is the one that ran), not at the graceful
    timeout, cancelled with a traceback each."""
    AppStatus.should_exit = True


def _json(data: object) -> str:
    return dumps(data)  # never NaN / Infinity: JSON.parse on the page would fail


def heartbeat() -> ServerSentEvent:
    """The streams' keep-alive as an event the page sees (a comment is hidden from it): the relay
    is alive and writing now. ``at`` is the relay's clock, for nothing but a person reading it."""
    return ServerSentEvent(event="heartbeat", data=_json({"at": round(time.time(), 3)}))


def last_event_id(conn: HTTPConnection) -> int | None:
    """The ``Last-Event-ID`` header a reconnecting EventSource sends, read by hand."""
    raw = conn.headers.get("last-event-id")
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw.strip())
    except ValueError:
        return None


async def _still_allowed(state: RelayState, principal: Principal) -> Close | None:
    try:
        await state.store.authenticate_async(principal.token_hash)
    except RelayError as exc:
        if exc.status == 503:
            return None  # the database is away, not the login: check again later
        return Close("revoked", {"code": exc.code, "message": exc.message})
    return None


async def session_events(
    state: RelayState, principal: Principal, session: Session, after: int
) -> AsyncIterator[bytes]:
    sub = state.hub.subscribe_session(session.id, principal.token_hash)
    recheck = state.config.float("auth_recheck_interval")
    page = state.config.int("catchup_page")
    try:
        yield sse_frame(
            _json({"session_id": session.id, "epoch": session.epoch, "after": after}), event="hello"
        )
        # Catch up from storage (the listener is already registered).
        last = after
        current = await state.store.get_session(principal.account_id, session.id)
        while last < current.last_seq:
            try:
                events, _ = await fetch_page(
                    state, current, seqrules.page_after(current.numbering, last, page, None)
                )
            except RelayError as exc:
                # Older history is on an offline Mac: say so, then go on from what the relay has.
                yield sse_frame(_json(exc.body()["error"]), event="history_unavailable")
                events = await state.store.read_events(
                    session.id, current.oldest_seq, current.last_seq
                )
            if not events:
                break
            # One write per page, not per event: the catch-up is bound by sends, not by SQLite.
            page_frames = [
                sse_frame(data, event="event", id=seq) for seq, data in events if seq > last
            ]
            if page_frames:
                last = max(last, events[-1][0])
                yield b"".join(page_frames)
        # Then live.
        deadline = time.monotonic() + recheck
        while True:
            item = await sub.next(timeout=max(0.0, deadline - time.monotonic()))
            if item is None or time.monotonic() >= deadline:
                deadline = time.monotonic() + recheck
                closed = await _still_allowed(state, principal)
                if closed is not None:
                    yield sse_frame(_json(closed.data), event=closed.event)
                    return
                if item is None:
                    continue
            if isinstance(item, Close):
                yield sse_frame(_json(item.data), event=item.event)
                return
            for seq, frame in item:
                if seq <= last:
                    continue
                if seq > last + 1:
                    for gap_seq, data in await state.store.read_events(
                        session.id, last + 1, seq - 1
                    ):
                        yield sse_frame(data, event="event", id=gap_seq)
                yield frame
                last = seq
    finally:
        state.hub.unsubscribe(sub)


async def account_snapshot(state: RelayState, principal: Principal) -> dict[str, Any]:
    """Every Mac and session of the account: the account stream's first event, and what a
    logged-in phone's index.html carries (relay/pagedata.py)."""
    devices = await state.store.list_devices(principal.account_id)
    sessions = await state.store.list_sessions(principal.account_id)
    # The same fields as GET /api/sessions (summary, stage, pinned…): a page that reconnects
    # gets its list back whole, not without what only the list read carried.
    extra = await state.hooks.listed(principal.account_id)
    listed = [{**state.session_json(session), **extra(session.id)} for session in sessions]
    return {"devices": [state.device_json(d) for d in devices], "sessions": listed}


async def account_updates(state: RelayState, principal: Principal) -> AsyncIterator[bytes]:
    sub: Subscriber = state.hub.subscribe_account(principal.account_id, principal.token_hash)
    recheck = state.config.float("auth_recheck_interval")
    try:
        yield sse_frame(_json(await account_snapshot(state, principal)), event="snapshot")
        while True:
            item = await sub.next(timeout=recheck)
            if item is None:
                closed = await _still_allowed(state, principal)
                if closed is not None:
                    yield sse_frame(_json(closed.data), event=closed.event)
                    return
                continue
            if isinstance(item, Close):
                yield sse_frame(_json(item.data), event=item.event)
                return
            for _, frame in item:
                yield frame
    finally:
        state.hub.unsubscribe(sub)
