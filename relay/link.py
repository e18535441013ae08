"""The agent link: one WebSocket per Mac at ``/api/agent/link``, authenticated by a device token.

The Mac says ``hello`` with what it has archived; the relay answers ``welcome`` and sends back any
numbered events the Mac missed. Then the Mac streams transcript ``lines`` (each batch answered by
an ``ack`` once it is durably stored, and the new numbered events), ``session_update`` reports and
answers to the relay's ``command`` and ``history_request`` messages. See docs/protocol.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect
from pydantic import ValidationError
from starlette.websockets import WebSocketState

from relay.auth import authenticate
from relay.errors import NotFound, RelayError
from relay.live import DeviceLink
from relay.state import RelayState
from wire.protocol import (
    CLOSE_PROTOCOL,
    CLOSE_REPLACED,
    CLOSE_TRY_AGAIN,
    CLOSE_UNAUTHORIZED,
    PROTOCOL_VERSION,
    Ack,
    CommandResult,
    Decision,
    DecisionAck,
    DeviceInfo,
    DeviceUpdate,
    Hello,
    History,
    Lines,
    LinkError,
    Ping,
    Pong,
    SessionPosition,
    SessionUpdate,
    Welcome,
    agent_message,
    replace_surrogates,
)

router = APIRouter()
_log = logging.getLogger("relay.link")

HELLO_TIMEOUT = 10.0
EVENTS_CHUNK = 500  # events per `events` message when catching a Mac up
# What a Mac says of itself is kept on the relay and shown to every phone of the account: each
# text of it at most this long (a name, a version), however long the Mac made it.
DEVICE_TEXT_CHARS = 200


def _device_info(device: DeviceInfo) -> dict[str, Any]:
    """What a Mac says of itself, as the relay keeps it: each text cut to DEVICE_TEXT_CHARS (its
    recent folders are bounded by the protocol)."""
    info = device.model_dump()
    return {k: v[:DEVICE_TEXT_CHARS] if isinstance(v, str) else v for k, v in info.items()}


def is_session_id(value: str) -> bool:
    """A session id as the phone's API takes it and the agent makes it: a UUID, in its one
    canonical spelling (lower case, hyphens), so no two spellings name one session."""
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def _not_a_session_id(session_id: str) -> str:
    return (
        f"{session_id[:80]!r} is not a session id: session ids are UUIDs in lower case "
        "(like 123e4567-e89b-12d3-a456-426614174000), as the agent makes them"
    )


def events_message(session_id: str, epoch: str, events: list[tuple[int, str]]) -> str:
    """An ``events`` message built from stored JSON without re-encoding each event."""
    head = json.dumps({"type": "events", "session_id": session_id, "epoch": epoch})[:-1]
    return head + ',"events":[' + ",".join(data for _, data in events) + "]}"


@router.websocket("/api/agent/link")
async def agent_link(ws: WebSocket) -> None:
    state: RelayState = ws.app.state.relay
    try:
        # Off the event loop: on PostgreSQL the token is a round trip away.
        principal = await asyncio.to_thread(authenticate, ws, state.store, kind="device")
    except RelayError as exc:
        # Accept, then close with a reason: a refused handshake would only show the Mac "403".
        # A database that is away is not a bad token: the Mac retries, it need not pair again.
        await ws.accept()
        code = CLOSE_TRY_AGAIN if exc.status == 503 else CLOSE_UNAUTHORIZED
        await ws.close(code=code, reason=f"{exc.code}: {exc.message}"[:120])
        return
    await ws.accept()
    try:
        first = await asyncio.wait_for(ws.receive_text(), HELLO_TIMEOUT)
        hello = parse_message(first)
        if not isinstance(hello, Hello):
            raise ValueError("the first message must be hello")
        if hello.protocol != PROTOCOL_VERSION:
            raise ValueError(
                f"this relay speaks link protocol {PROTOCOL_VERSION}, the Mac {hello.protocol}; "
                "update the older side"
            )
    except ValidationError as exc:
        await _close_protocol(ws, f"expected a valid hello first: {_first_error(exc)}")
        return
    except (TimeoutError, ValueError, WebSocketDisconnect, RuntimeError) as exc:
        await _close_protocol(ws, f"expected hello first: {exc}")
        return

    device_id = principal.subject_id
    account_id = principal.account_id
    device = _device_info(hello.device)
    name = device["name"] or device_id
    link = DeviceLink(device_id, account_id, name, ws.send_text, close_socket=ws.close)
    old = state.live.attach(link)
    watchdog: asyncio.Task[None] | None = None
    # From here on every step is inside the cleanup below: whatever happens (the socket dies
    # during the welcome, a store error), the Mac never stays listed as online.
    try:
        if old is not None:
            # The newest connection of a Mac wins (the old one is usually a dead socket).
            old.replaced = True
            old.fail_pending()
            await old.close(CLOSE_REPLACED, "replaced by a newer link from the same Mac")
        await state.store.device_seen(device_id, device)
        if state.cluster is not None:
            await state.cluster.linked(link)  # this node holds the Mac now (its lease)
        named = [p for p in hello.sessions if is_session_id(p.session_id)]
        outcome = await state.store.reconcile(account_id, device_id, named)
        positions = [
            SessionPosition(
                session_id=r.session.id, last_seq=r.session.last_seq, epoch=r.session.epoch
            )
            for r in outcome.sessions
        ]
        await link.send(Welcome(device_id=device_id, sessions=positions).model_dump_json())
        link.welcomed.set()
        if outcome.refused:
            await link.send(
                _error(
                    "not_your_session",
                    f"{len(outcome.refused)} session(s) in hello belong to another Mac of this "
                    f"account and were left as they are: {_listed(outcome.refused)}",
                )
            )
        if len(named) < len(hello.sessions):
            odd = [p.session_id[:80] for p in hello.sessions if not is_session_id(p.session_id)]
            await link.send(
                _error(
                    "bad_session_id",
                    f"{len(odd)} session id(s) in hello are not UUIDs and were left out: "
                    f"{_listed(odd)}",
                )
            )
        if outcome.over_limit:
            await link.send(
                _error(
                    "too_many_sessions",
                    f"{len(outcome.over_limit)} new session(s) in hello were not stored: "
                    f"{outcome.over_limit_reason} ({_listed(outcome.over_limit)})",
                )
            )
        for r in outcome.sessions:
            if r.restarted:
                state.hub.resync_session(r.session.id, "history_restarted")
                state.publish_session(r.session)
            if r.send_after is not None:
                await _send_missed(
                    state, link, r.session.id, r.session.epoch, r.send_after, r.session.last_seq
                )
        state.publish_device(account_id, device_id, device)
        _log.info("Mac %s (%s) linked with %d sessions", name, device_id, len(hello.sessions))
        watchdog = state.tasks.start(
            _watch_token(state, link, principal.token_hash), name=f"token watch {device_id}"
        )
        await _serve(state, link, ws)
    except (WebSocketDisconnect, OSError):
        pass  # the connection went away
    except RuntimeError as exc:  # the socket was closed under us (a replaced link)
        _log.debug("link %s closed: %s", device_id, exc)
    except Exception:
        _log.exception("the link of Mac %s (%s) failed", name, device_id)
        await link.close(1011, "relay error")
    finally:
        if watchdog is not None:
            watchdog.cancel()
        link.fail_pending()
        if state.live.detach(link):
            with contextlib.suppress(Exception):  # still the cleanup: never skip what follows
                await state.store.device_seen(device_id)
            still_ours = True
            if state.cluster is not None:
                with contextlib.suppress(Exception):
                    still_ours = await state.cluster.unlinked(link)
            if still_ours:  # else it linked to another node meanwhile: not offline
                state.publish_device(account_id, device_id)
        if link.replaced:
            _log.info("Mac %s (%s): link replaced by a newer one", name, device_id)
        else:
            _log.info("Mac %s (%s) unlinked", name, device_id)


async def _serve(state: RelayState, link: DeviceLink, ws: WebSocket) -> None:
    """Read messages until the socket closes; one message's failure is answered, never fatal."""
    max_bytes = state.config.int("max_link_message_bytes")
    while True:
        frame = await ws.receive()
        if frame["type"] == "websocket.disconnect":
            return
        text = frame.get("text")
        if text is None:
            await link.send(_error("bad_message", "send JSON text frames, not binary ones"))
            continue
        if len(text) > max_bytes:
            await link.send(
                _error("message_too_large", f"a link message is limited to {max_bytes} bytes")
            )
            continue
        try:
            message = parse_message(text)
        except ValidationError as exc:
            await _refuse(link, text, exc)
            continue
        try:
            await _dispatch(state, link, message)
        except Exception as exc:
            if _gone(ws) or isinstance(exc, WebSocketDisconnect):
                raise
            _log.exception(
                "Mac %s (%s): a %s message failed", link.name, link.device_id, message.type
            )
            batch = message.batch if isinstance(message, Lines) else None
            await link.send(
                _error(
                    "internal",
                    f"the relay failed to handle this {message.type} message and did not apply "
                    "it; the link goes on (see the relay's log)",
                    batch=batch,
                )
            )


def parse_message(text: str) -> Any:
    """An agent message from its JSON text.

    JSON may hold a lone UTF-16 surrogate escape (legal JSON, though not Unicode); the fast
    parser refuses it, so such a message is read again and the bad code points replaced."""
    try:
        return agent_message.validate_json(text)
    except ValidationError as exc:
        if not any(e["type"] == "json_invalid" for e in exc.errors()):
            raise
        try:
            raw = json.loads(text)
        except (ValueError, RecursionError):
            raise exc from None
        return agent_message.validate_python(replace_surrogates(raw))


async def _refuse(link: DeviceLink, text: str, exc: ValidationError) -> None:
    """Answer a message that is not valid; a history answer also ends its request at once."""
    reason = _first_error(exc)
    await link.send(_error("bad_message", reason))
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        return
    if isinstance(raw, dict) and raw.get("type") == "history":
        request_id = raw.get("request_id")
        if isinstance(request_id, str):
            link.resolve(request_id, History(request_id=request_id, error=f"not valid: {reason}"))


def _gone(ws: WebSocket) -> bool:
    return WebSocketState.DISCONNECTED in (ws.client_state, ws.application_state)


async def _watch_token(state: RelayState, link: DeviceLink, token_hash: str) -> None:
    """Close the link soon after its token is revoked or expires, wherever that was done."""
    interval = state.config.float("auth_recheck_interval")
    while True:
        await asyncio.sleep(interval)
        try:
            await state.store.authenticate_async(token_hash)
        except RelayError as exc:
            if exc.code == "store_unavailable":
                continue  # the database is away, not the token: check again later
            link.fail_pending()
            await link.close(CLOSE_UNAUTHORIZED, f"{exc.code}: {exc.message}"[:120])
            return


async def _dispatch(state: RelayState, link: DeviceLink, message: Any) -> None:
    if isinstance(message, Lines):
        await _ingest(state, link, message)
    elif isinstance(message, SessionUpdate):
        if await _owns(state, link, message.session.session_id):
            await state.session_update(link, message.session)
    elif isinstance(message, CommandResult):
        link.resolve(message.command_id, message)
    elif isinstance(message, History):
        link.resolve(message.request_id, message)
    elif isinstance(message, Decision):  # the Mac answered a permission itself: audit it
        code = "not_recorded"  # a relay without an audit log keeps no decisions
        recorder = state.hooks.decision_recorder
        if recorder is not None:
            code = await recorder(link.account_id, link.device_id, message)
        if code:
            await link.send(_error(code, f"no session {message.session_id} runs on this Mac"))
        ack = DecisionAck(id=message.id, stored=not code, code=code or None)
        await link.send(ack.model_dump_json(exclude_none=True))
    elif isinstance(message, Ping):
        await link.send(Pong().model_dump_json())
    elif isinstance(message, DeviceUpdate):
        info = _device_info(message.device)
        await state.store.device_seen(link.device_id, info)
        state.publish_device(link.account_id, link.device_id, info)
    elif isinstance(message, Hello):
        await link.send(_error("bad_message", "hello was already received on this link"))


async def _owns(state: RelayState, link: DeviceLink, session_id: str) -> bool:
    """Whether this Mac may speak for the session (an unknown one is left to the caller)."""
    try:
        session = await state.store.get_session(link.account_id, session_id)
    except NotFound:
        return True
    if session.device_id == link.device_id:
        return True
    await link.send(
        _error(
            "not_your_session",
            f"session {session_id} belongs to another Mac of this account; "
            "this update was not applied",
        )
    )
    return False


async def _ingest(state: RelayState, link: DeviceLink, batch: Lines) -> None:
    if not is_session_id(batch.session_id):
        # As the phone's API refuses it: such an id could never be opened, sent to or deleted.
        await link.send(_error("bad_session_id", _not_a_session_id(batch.session_id), batch.batch))
        return
    try:
        result = await state.store.ingest(
            link.account_id,
            link.device_id,
            batch.session_id,
            batch.conversation_id,
            batch.lines,
            batch.cwd,
        )
    except RelayError as exc:
        await link.send(_error(exc.code, exc.message, batch=batch.batch))
        return
    ack = Ack(
        batch=batch.batch,
        session_id=batch.session_id,
        conversation_id=batch.conversation_id,
        through_offset=result.through_offset,
        last_seq=result.session.last_seq,
        epoch=result.session.epoch,
        duplicates=result.duplicates,
        rejected=result.rejected,
        dropped=result.dropped,
    )
    await link.send(ack.model_dump_json())
    if result.events:
        await link.send(events_message(batch.session_id, result.session.epoch, result.events))
    if result.created or result.events:
        state.publish_session(result.session)


async def _send_missed(
    state: RelayState, link: DeviceLink, session_id: str, epoch: str, after: int, last: int
) -> None:
    first = after + 1
    while first <= last:
        chunk = await state.store.read_events(
            session_id,
            first,
            min(last, first + EVENTS_CHUNK - 1),
            max_bytes=state.config.int("max_page_bytes"),
        )
        if not chunk:
            break
        await link.send(events_message(session_id, epoch, chunk))
        first = chunk[-1][0] + 1


def _listed(ids: list[str], shown: int = 5) -> str:
    return ", ".join(ids[:shown]) + (" …" if len(ids) > shown else "")


def _error(code: str, message: str, batch: int | None = None) -> str:
    return LinkError(code=code, message=message, batch=batch).model_dump_json(exclude_none=True)


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "invalid message"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()))
    return f"invalid message: {first.get('msg', 'invalid')} at {where or 'top level'}"


async def _close_protocol(ws: WebSocket, reason: str) -> None:
    try:
        await ws.send_text(_error("protocol", reason))
        await ws.close(code=CLOSE_PROTOCOL, reason=reason[:120])
    except (RuntimeError, WebSocketDisconnect):
        pass
