"""The phone API's core: pairing, logins, sessions and their commands, as JSON over HTTP, every
route behind a login (bearer token or the page's cookie). The features add their own routers
(relay/features/); what they add to these routes (a session's summary and stage, a guard on
commands, the audit of a card's answer) comes through what they registered on ``RelayState``."""

from __future__ import annotations

import base64
import json
import re
from pathlib import PurePath
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from sse_starlette import EventSourceResponse

from relay import seq as seqrules
from relay.auth import COOKIE_NAME
from relay.deps import (
    READ_ONLY_HEADER,
    AllowAllFor,
    Body,
    CardAnswer,
    Page,
    Phone,
    State,
    allow_all_for,
    check_message_length,
    check_policy,
    check_result,
    refuse_read_only,
    send_command,
    session_or_404,
)
from relay.errors import BadRequest, Conflict, NotFound, PayloadTooLarge, Unprocessable
from relay.history import fetch_page
from relay.live import Link
from relay.sse import account_updates, heartbeat, last_event_id, session_events
from relay.state import RelayState, iso
from relay.store import Principal, new_session_id
from wire.protocol import (
    ATTACHMENT_ID,
    ATTACHMENT_TYPES,
    CLOSE_UNAUTHORIZED,
    HELD_MESSAGE_ID,
    MAX_ATTACHMENT_BYTES,
    MAX_ATTACHMENT_NAME_CHARS,
    MAX_ATTACHMENTS,
    MAX_BRANCH_CHARS,
    MAX_CWD_CHARS,
    MAX_MODEL_CHARS,
    MODEL_NAME,
    SENDER_MESSAGE_ID,
    AnswerCardArgs,
    CancelHeldArgs,
    CreateSessionArgs,
    EndArgs,
    InterruptArgs,
    MessageWhen,
    PermissionMode,
    RestArgs,
    SaveAttachmentArgs,
    SendArgs,
    SetModeArgs,
    SetModelArgs,
)

__all__ = ["READ_ONLY_HEADER", "refuse_read_only", "router"]

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])


# -- bodies and ids ----------------------------------------------------------------


# What ``claude --session-id`` takes; sessions the phone starts get one, in one spelling.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
_MESSAGE_ID = re.compile(HELD_MESSAGE_ID)


def session_uuid(raw: str) -> str:
    """``raw`` as a canonical (lower-case) UUID; 422 ``bad_session_id`` when it is not one."""
    if not _UUID.fullmatch(raw):
        raise Unprocessable(
            f"session_id must be a UUID like {new_session_id()} (what `claude --session-id` "
            f"takes), not {raw[:80]!r}; or leave it out and the relay picks one",
            code="bad_session_id",
        )
    return raw.lower()


class PairBody(Body):
    code: str = Field(min_length=4, max_length=64)
    name: str | None = Field(default=None, max_length=100)


class NewSession(Body):
    device_id: str
    cwd: str = Field(min_length=1, max_length=MAX_CWD_CHARS)
    prompt: str | None = None
    permission_mode: PermissionMode | None = None
    model: str | None = Field(default=None, max_length=MAX_MODEL_CHARS)
    session_id: str | None = None  # a UUID (checked by session_uuid: a clear 422)
    allow_all: bool = False  # answer every permission request with "allow" (no dialogs)
    allow_all_for: AllowAllFor = None  # … for this long (seconds, or "session")
    policy: dict[str, Any] | None = None  # first permission rules (relay/features/permissions.py)
    # A new git worktree on a new branch: true (a name of the session's id) or the branch.
    worktree: bool | Annotated[str, Field(min_length=1, max_length=MAX_BRANCH_CHARS)] | None = None


class ForkBody(Body):
    """``POST /api/sessions/{id}/fork``: what may differ from the parent (else the parent's)."""

    prompt: str | None = None
    permission_mode: PermissionMode | None = None
    model: str | None = Field(default=None, max_length=MAX_MODEL_CHARS)
    session_id: str | None = None  # a UUID for the fork (checked by session_uuid)


class SessionPatch(Body):
    title: str | None = Field(default=None, max_length=500)
    group: str | None = Field(default=None, max_length=200)
    locked: bool | None = None
    position: float | None = None
    # A running session's mode and model: the Mac changes them with Claude Code's own controls.
    permission_mode: PermissionMode | None = None
    model: str | None = Field(default=None, pattern=MODEL_NAME)


class MessageBody(Body):
    text: str = Field(min_length=1)
    now: bool = False
    # held: at the next safe point; now: interrupting the turn; after_turn: once the turn ends.
    when: MessageWhen | None = None
    attachments: list[Annotated[str, Field(pattern=ATTACHMENT_ID)]] | None = Field(
        default=None, max_length=MAX_ATTACHMENTS
    )
    # Chosen by the sender and sent again with a retry: the Mac keeps one message per id, so a
    # retry after a lost answer is never typed twice.
    id: str | None = Field(default=None, pattern=SENDER_MESSAGE_ID)


# -- pairing and logins ------------------------------------------------------------------


@router.get("/health")
async def health() -> dict[str, str]:
    """Liveness for service managers; says nothing about accounts."""
    return {"status": "ok"}


@router.post("/pair")
async def pair(body: PairBody, request: Request, state: State) -> Response:
    # The peer's address, or the client's as a trusted proxy names it (relay/app.py
    # ForwardedHeaders): a header a client sends itself never picks its bucket.
    client = request.client.host if request.client else "unknown"
    await state.check_pair_rate(client)
    token, kind, subject_id, name = await state.store.redeem_pair_code(body.code, body.name)
    response = JSONResponse({"token": token, "kind": kind, "id": subject_id, "name": name})
    if kind == "phone":
        response.set_cookie(
            COOKIE_NAME,
            token,
            max_age=int(state.config.float("token_ttl_days") * 86400) or None,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",  # https as seen by a trusted proxy too
            path="/",
        )
    return response


@router.get("/me")
async def me(principal: Phone) -> dict[str, Any]:
    return {"kind": principal.kind, "id": principal.subject_id, "account_id": principal.account_id}


@router.post("/logout")
async def logout(principal: Phone, state: State) -> Response:
    hashes = await state.store.revoke(principal.account_id, "phone", principal.subject_id)
    state.hub.revoke(hashes)
    response = JSONResponse({"ok": True})
    response.delete_cookie(COOKIE_NAME, path="/")
    return response


@router.get("/phones")
async def phones(principal: Phone, state: State) -> dict[str, Any]:
    items = await state.store.list_phones(principal.account_id)
    return {
        "phones": [
            {
                "id": p.id,
                "name": p.name,
                "created_at": iso(p.created_at),
                "last_seen": iso(p.last_seen),
                "revoked": p.revoked,
                "current": p.id == principal.subject_id,
            }
            for p in items
        ]
    }


@router.delete("/phones/{phone_id}")
async def revoke_phone(phone_id: str, principal: Phone, state: State) -> dict[str, Any]:
    hashes = await state.store.revoke(principal.account_id, "phone", phone_id)
    state.hub.revoke(hashes)
    return {"ok": True, "revoked_tokens": len(hashes)}


@router.get("/devices")
async def devices(principal: Phone, state: State) -> dict[str, Any]:
    items = await state.store.list_devices(principal.account_id)
    return {"devices": [state.device_json(d) for d in items]}


@router.delete("/devices/{device_id}")
async def revoke_device(device_id: str, principal: Phone, state: State) -> dict[str, Any]:
    hashes = await state.store.revoke(principal.account_id, "device", device_id)
    link = state.live.link(device_id)
    if link is not None:
        link.fail_pending()
        await link.close(CLOSE_UNAUTHORIZED, "this Mac's token was revoked")
    return {"ok": True, "revoked_tokens": len(hashes)}


# -- sessions ---------------------------------------------------------------------------


@router.get("/sessions")
async def sessions(principal: Phone, state: State) -> dict[str, Any]:
    items = await state.store.list_sessions(principal.account_id)
    extra = await state.hooks.listed(principal.account_id)  # summary, stage, pinned (features)
    listed = [{**state.session_json(s), **extra(s.id)} for s in items]
    return {"sessions": listed, "needs_you": sum(1 for s in listed if s["needs_you"])}


@router.post("/sessions", status_code=201)
async def create_session(body: NewSession, principal: Phone, state: State) -> dict[str, Any]:
    session_id = session_uuid(body.session_id) if body.session_id is not None else None
    if body.policy is not None:
        check_policy(body.policy)  # 400 before anything starts
    devices = {d.id: d for d in await state.store.list_devices(principal.account_id)}
    device = devices.get(body.device_id)
    if device is None:
        raise NotFound(f"no Mac {body.device_id} in this account", code="unknown_device")
    link = state.live.require_link(device.id, device.name)
    if device.info.get("claude_found") is False:
        # Its agent runs, but found no Claude Code: say so and how to install it, at once.
        hint = device.info.get("claude_install_hint")
        raise Conflict(
            f"Claude Code is not installed on the Mac '{device.name}'. "
            + (hint if isinstance(hint, str) and hint else "Install it there, then try again."),
            code="claude_missing",
            device_id=device.id,
        )
    session_id = session_id or new_session_id()
    await state.store.create_session(principal.account_id, device.id, session_id, body.cwd)
    policy = body.policy
    if body.allow_all or (body.policy or {}).get("allow_all") is True:
        # The Mac turns the duration into an end time of its own clock, kept in the policy.
        policy = dict(body.policy or {})
        policy["allow_all"] = True
        if "allow_all_until" not in policy:
            policy.setdefault("allow_all_for", allow_all_for(state, body.allow_all_for))
    args = CreateSessionArgs(
        cwd=body.cwd,
        prompt=body.prompt,
        permission_mode=body.permission_mode,
        model=body.model,
        policy=policy,
        worktree=body.worktree or None,
    )
    return await _start(state, principal, session_id, link, args)


async def _start(
    state: RelayState, principal: Principal, session_id: str, link: Link, args: CreateSessionArgs
) -> dict[str, Any]:
    """Have the Mac start the session just stored; a refusal leaves no trace of it."""
    result = await link.command(session_id, args, state.config.float("command_timeout"))
    if not result.ok:
        # The Mac refused (bad folder, claude missing…): nothing was started, keep no trace.
        await state.store.discard_empty_session(principal.account_id, session_id)
    check_result(result)
    await state.hooks.read_result(session_id, result.data)  # a policy it reports
    placed = {
        key: value
        for key in ("cwd", "branch")
        if isinstance(value := result.data.get(key), str) and value
    }
    if placed:  # a worktree's folder and branch (agent/worktree.py), as the Mac made them
        await state.store.update_session(principal.account_id, session_id, **placed)
    session = await state.store.get_session(principal.account_id, session_id)
    state.publish_session(session)
    return {"id": session.id, "session": state.session_json(session, full=True)}


FORK_SUFFIX = " (fork)"
MAX_FORK_TITLE_CHARS = 500  # as a person's title (PATCH /api/sessions/{id})


def fork_title(title: str | None, cwd: str | None) -> str:
    """A fork's first title: "<parent's title> (fork)" (the folder's name when it has none)."""
    base = (title or "").strip() or PurePath(cwd or "").name
    if not base:
        return ""
    return base[: MAX_FORK_TITLE_CHARS - len(FORK_SUFFIX)] + FORK_SUFFIX


@router.post("/sessions/{session_id}/fork", status_code=201)
async def fork_session(
    session_id: str, body: ForkBody, principal: Phone, state: State
) -> dict[str, Any]:
    """A new session with the parent's history on the parent's Mac, in its folder
    (``claude --resume <its conversation> --fork-session``); the two continue apart."""
    parent = await session_or_404(state, principal, session_id)
    fork_id = session_uuid(body.session_id) if body.session_id is not None else new_session_id()
    await state.hooks.guard(parent)  # an archived session opens read-only: no fork either
    devices = {d.id: d.name for d in await state.store.list_devices(principal.account_id)}
    link = state.live.require_link(parent.device_id, devices.get(parent.device_id, ""))
    await state.store.create_session(
        principal.account_id, parent.device_id, fork_id, parent.cwd, parent_id=parent.id
    )
    if parent.branch:
        await state.store.update_session(principal.account_id, fork_id, branch=parent.branch)
    title = fork_title(parent.title, parent.cwd)
    if title:
        # Its own name from the start, kept until a person renames it (its transcript begins
        # as a copy of the parent's, whose title it would otherwise take).
        await state.store.update_session(principal.account_id, fork_id, title=title)
    args = CreateSessionArgs(
        cwd=parent.cwd or "/",
        prompt=body.prompt,
        permission_mode=body.permission_mode,
        model=body.model,
        fork_of=parent.id,
    )
    return await _start(state, principal, fork_id, link, args)


@router.get("/sessions/{session_id}")
async def session_snapshot(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    body = state.session_json(session, full=True)
    body.update(await state.hooks.snapshot(session))  # summary, stage, pinned (relay/features/)
    return body


@router.patch("/sessions/{session_id}")
async def patch_session(
    session_id: str, body: SessionPatch, principal: Phone, state: State
) -> dict[str, Any]:
    fields = body.model_dump(exclude_unset=True, exclude_none=True)
    if not fields:
        raise BadRequest(
            "nothing to change: send title, group, locked, position, permission_mode or model"
        )
    # Mode and model first, on the Mac (each may be refused with why: 409); then the rest.
    changed: dict[str, Any] = {}
    mode, model = fields.pop("permission_mode", None), fields.pop("model", None)
    if mode is not None or model is not None:
        session = await session_or_404(state, principal, session_id)
        if mode is not None:
            changed.update(await send_command(state, session, SetModeArgs(mode=mode)))
        if model is not None:
            changed.update(await send_command(state, session, SetModelArgs(model=model)))
    if fields:
        session = await state.store.update_session(principal.account_id, session_id, **fields)
    else:
        session = await state.store.get_session(principal.account_id, session_id)
    state.publish_session(session)
    body_out = state.session_json(session, full=True)
    for key in ("permission_mode", "model"):
        if key in changed:
            body_out[key] = changed[key]  # the Mac's answer; its update may still be on its way
    return body_out


@router.get("/sessions/{session_id}/events")
async def session_events_page(
    session_id: str, principal: Phone, state: State, query: Page
) -> Response:
    session = await session_or_404(state, principal, session_id)
    after, before, limit, epoch = query.after, query.before, query.limit, query.epoch
    page_max = state.config.int("catchup_page")
    size = seqrules.check_limit(limit, page_max)
    if after is not None and before is not None:
        raise BadRequest("give after or before, not both", code="bad_after")
    if before is not None:
        page = seqrules.page_before(session.numbering, before, size, epoch)
    else:
        page = seqrules.page_after(session.numbering, after or 0, size, epoch)
    events, has_more = await fetch_page(state, session, page)
    head = json.dumps(
        {
            "session_id": session.id,
            "epoch": session.epoch,
            "last_seq": session.last_seq,
            "oldest_seq": session.oldest_seq,
            "has_more": has_more,
        },
        separators=(",", ":"),
    )[:-1]
    body = head + ',"events":[' + ",".join(data for _, data in events) + "]}"
    return Response(body, media_type="application/json")


def _stream_headers(state: RelayState) -> dict[str, str]:
    # X-CB-Keepalive tells the page how often a byte comes at the least, so it can tell a
    # silent cut (no byte for two intervals) from a quiet session.
    return {
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
        "X-CB-Keepalive": f"{_beat_every(state):g}",
        "X-CB-Heartbeat": f"{state.config.float('stream_heartbeat_interval'):g}",
    }


def _beat_every(state: RelayState) -> float:
    """Seconds between the streams' heartbeats: they are the keep-alive too, so a byte comes at
    least this often."""
    return min(state.config.float("sse_keepalive"), state.config.float("stream_heartbeat_interval"))


@router.get("/sessions/{session_id}/stream")
async def session_stream(
    session_id: str,
    request: Request,
    principal: Phone,
    state: State,
    after: Annotated[int | None, Query()] = None,
    epoch: Annotated[str | None, Query(max_length=64)] = None,
) -> EventSourceResponse:
    session = await session_or_404(state, principal, session_id)
    header_after = last_event_id(request)
    start = header_after if header_after is not None else (after or 0)
    # Validate the position now, so a bad one is a clear 4xx rather than a broken stream.
    seqrules.page_after(session.numbering, start, 1, epoch)
    return EventSourceResponse(
        session_events(state, principal, session, start),
        ping=_beat_every(state),
        ping_message_factory=heartbeat,
        headers=_stream_headers(state),
    )


@router.get("/stream")
async def account_stream(principal: Phone, state: State) -> EventSourceResponse:
    # Each open of the page opens this stream: when each phone was last used (Settings).
    await state.store.phone_seen(principal.subject_id)
    return EventSourceResponse(
        account_updates(state, principal),
        ping=_beat_every(state),
        ping_message_factory=heartbeat,
        headers=_stream_headers(state),
    )


# -- commands that need the Mac -------------------------------------------------------


@router.post("/sessions/{session_id}/messages")
async def send_message(
    session_id: str, body: MessageBody, request: Request, principal: Phone, state: State
) -> dict[str, Any]:
    check_message_length(state, body.text)
    if body.when is not None and body.now and body.when != "now":
        raise BadRequest(f'"now": true and "when": "{body.when}" disagree: send one of them')
    session = await session_or_404(state, principal, session_id)
    extra: dict[str, Any] = {}
    if body.when is not None:
        extra["when"] = body.when
    if body.attachments:
        extra["attachments"] = body.attachments
    args = SendArgs(text=body.text, now=body.now, message_id=body.id, **extra)
    # The card shown as the message was sent: the Mac closes a question or plan card to type
    # it (SPEC §5), which the audit log keeps as a decision.
    live = state.live.sessions.get(session.id)
    card = live.card if live is not None else None
    taken = (
        [log(request, principal, session, card, body.text) for log in state.hooks.message_loggers]
        if card is not None
        else []
    )
    answer = await send_command(state, session, args)
    for done in taken:
        await done(answer)
    return answer


_NAME_PARAM = Query(min_length=1, max_length=MAX_ATTACHMENT_NAME_CHARS)


@router.post("/sessions/{session_id}/attachments", status_code=201)
async def upload_attachment(
    session_id: str,
    request: Request,
    principal: Phone,
    state: State,
    name: Annotated[str, _NAME_PARAM] = "file",
) -> dict[str, Any]:
    """A file for the session's next message: the body is the file itself, its type the
    Content-Type. The Mac keeps it (outside the working folder) and answers with the id the
    message names in ``attachments``."""
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type not in ATTACHMENT_TYPES:
        raise Unprocessable(
            f"{media_type[:80] or 'no type'!r} cannot be attached; the types that can: "
            + ", ".join(ATTACHMENT_TYPES),
            code="bad_attachment_type",
        )
    limit = min(state.config.int("attachment_max_bytes"), MAX_ATTACHMENT_BYTES)
    too_large = PayloadTooLarge(
        f"attachments are limited to {limit:,} bytes", code="attachment_too_large", limit=limit
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    session = await session_or_404(state, principal, session_id)
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > limit:
            raise too_large
    if not data:
        raise BadRequest("the file is empty", code="bad_attachment")
    args = SaveAttachmentArgs.model_validate(
        {"filename": name, "media_type": media_type, "data": base64.b64encode(data).decode()}
    )
    return await send_command(state, session, args)


@router.post("/sessions/{session_id}/cards/{card_id}")
async def answer_card(
    session_id: str,
    card_id: str,
    body: CardAnswer,
    request: Request,
    principal: Phone,
    state: State,
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    answers = [body.key is not None, body.keys is not None, body.text is not None]
    if sum(answers) != 1:
        raise BadRequest('answer with one of {"key": …}, {"keys": […]} or {"text": …}')
    live = state.live.sessions.get(session.id)
    if live is None or live.card is None or live.card.id != card_id:
        raise Conflict("this card is already closed", code="card_closed", card_id=card_id)
    if not live.card.answerable:
        raise Conflict(
            "the dialog is not on the Mac's screen yet; answer once the card says it is",
            code="card_not_ready",
            card_id=card_id,
        )
    # The Mac presses keys only if its screen still shows this card's dialog: else 409
    # card_changed (its new card comes on the stream).
    args = AnswerCardArgs(
        key=body.key, keys=body.keys, text=body.text, always=body.always, card_id=card_id
    )
    # The card as shown is taken now: the Mac's next dialog may replace it meanwhile.
    loggers = state.hooks.answer_loggers
    taken = [log(request, principal, session, live.card, body) for log in loggers]
    answer = await send_command(state, session, args)
    for done in taken:  # only an answer the Mac took is a decision (the audit log)
        await done()
    return answer


@router.post("/sessions/{session_id}/held/{message_id}/cancel")
async def cancel_held(
    session_id: str, message_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    """Take back a message that is still held (one already typed cannot be)."""
    session = await session_or_404(state, principal, session_id)
    if not _MESSAGE_ID.fullmatch(message_id):
        raise NotFound(f"no held message {message_id[:80]!r}", code="unknown_message")
    return await send_command(state, session, CancelHeldArgs(message_id=message_id))


# The id a held message sent now is typed under: its own id with this end (the Mac keeps one
# message per id, so a retry of the same "send now" is never typed twice).
_NOW_SUFFIX = "-now"


@router.post("/sessions/{session_id}/held/{message_id}/now")
async def send_held_now(
    session_id: str, message_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    """Send a held message now, on its own request: it is taken back and sent again as "Send
    now" (the turn is interrupted; the messages held with it are typed with it, as one block)."""
    session = await session_or_404(state, principal, session_id)
    if not _MESSAGE_ID.fullmatch(message_id):
        raise NotFound(f"no held message {message_id[:80]!r}", code="unknown_message")
    live = state.live.sessions.get(session.id)
    held = (
        next((m for m in (live.held or []) if m.id == message_id and m.state == "held"), None)
        if live is not None
        else None
    )
    if held is None:
        raise Conflict(
            "that message is not held any more (already typed or cancelled): nothing to send",
            code="message_gone",
        )
    await send_command(state, session, CancelHeldArgs(message_id=message_id))
    extra: dict[str, Any] = {}
    if held.attachments:
        extra["attachments"] = [a.id for a in held.attachments]
    args = SendArgs(
        text=held.text,
        now=True,
        message_id=message_id[: 64 - len(_NOW_SUFFIX)] + _NOW_SUFFIX,
        **extra,
    )
    return await send_command(state, session, args)


@router.post("/sessions/{session_id}/interrupt")
async def interrupt(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    return await send_command(state, session, InterruptArgs())


@router.post("/sessions/{session_id}/end")
async def end(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    return await _change_life(state, principal, session_id, EndArgs(), mark="ended")


@router.post("/sessions/{session_id}/rest")
async def rest(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    return await _change_life(state, principal, session_id, RestArgs(), mark="resting")


async def _change_life(
    state: RelayState,
    principal: Principal,
    session_id: str,
    args: EndArgs | RestArgs,
    mark: str | None,
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    if session.locked:
        raise Conflict("this session is locked; unlock it first", code="session_locked")
    answer = await send_command(state, session, args)
    session = await state.store.update_session(principal.account_id, session_id, mark=mark)
    state.publish_session(session)
    return answer
