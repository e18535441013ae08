"""The phone API: JSON over HTTP, every route behind a login (bearer token or the page's cookie)."""

from __future__ import annotations

import functools
import json
import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from sse_starlette import EventSourceResponse
from starlette.requests import HTTPConnection

from relay import seq as seqrules
from relay import subagents, usage
from relay.auth import COOKIE_NAME, authenticate
from relay.errors import BadRequest, Conflict, NotFound, PayloadTooLarge, Unprocessable
from relay.history import fetch_page
from relay.sse import account_updates, last_event_id, session_events
from relay.state import RelayState, iso
from relay.store import Principal, Session, new_session_id
from wire.policy import MAX_ALLOW_ALL_SECONDS
from wire.protocol import CLOSE_UNAUTHORIZED, CommandName, CommandResult

READ_ONLY_HEADER = "X-CB-Read-Only"


def refuse_read_only(request: HTTPConnection) -> None:
    """A read-only view (the page's ``#/s/<id>/read``, ``claude-bridge open --read-only``) sends
    ``X-CB-Read-Only: 1`` with every request; any change to a session is then refused (409)."""
    if request.scope["type"] != "http" or request.scope["method"] in ("GET", "HEAD", "OPTIONS"):
        return  # the agent link (a WebSocket) and reads are never affected
    path = request.url.path
    if path != "/api/sessions" and not path.startswith("/api/sessions/"):
        return
    if request.headers.get(READ_ONLY_HEADER, "").strip().lower() not in ("1", "true", "yes"):
        return
    assert isinstance(request, Request)
    phone(request)  # a missing or bad login is still 401 / 403 first
    raise Conflict(
        "this is a read-only view: it cannot send to or change a session; "
        "open the session without read-only to do that",
        code="read_only",
    )


router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])


def relay_state(request: Request) -> RelayState:
    state: RelayState = request.app.state.relay
    return state


State = Annotated[RelayState, Depends(relay_state)]


def phone(request: Request) -> Principal:
    return authenticate(request, relay_state(request).store, kind="phone", method=request.method)


Phone = Annotated[Principal, Depends(phone)]


# -- bodies and ids ----------------------------------------------------------------


class Body(BaseModel):
    """The base of every request body: a number must be finite. ``1e999``, ``"Infinity"`` and
    ``NaN`` are refused (422 ``not_finite``): one of them stored would reach every phone of the
    account, whose JSON.parse cannot read it."""

    model_config = ConfigDict(allow_inf_nan=False)


# What ``claude --session-id`` takes; sessions the phone starts get one, in one spelling.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
# Any id a path may name (a session a Mac reported, a held message): a bad one is a clear 404
# before it is looked up or sent anywhere.
_PATH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}")
_MESSAGE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


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


# How long "allow all" lasts: seconds, or "session" (until the session ends); none given, the
# setting allow_all_default_minutes. Never open-ended.
AllowAllFor = (
    Annotated[float, Field(gt=0, le=MAX_ALLOW_ALL_SECONDS, allow_inf_nan=False)]
    | Literal["session"]
    | None
)


def allow_all_for(state: RelayState, given: float | str | None) -> float | str:
    """The duration of an "allow all" turned on: the one given, else the setting's."""
    if given is not None:
        return given
    return state.config.int("allow_all_default_minutes") * 60.0  # seconds


class NewSession(Body):
    device_id: str
    cwd: str = Field(min_length=1, max_length=4096)
    prompt: str | None = None
    permission_mode: (
        Literal["manual", "default", "acceptEdits", "auto", "bypassPermissions", "dontAsk", "plan"]
        | None
    ) = None
    model: str | None = Field(default=None, max_length=200)
    session_id: str | None = None  # a UUID (checked by session_uuid: a clear 422)
    allow_all: bool = False  # answer every permission request with "allow" (no dialogs)
    allow_all_for: AllowAllFor = None  # … for this long (seconds, or "session")
    policy: dict[str, Any] | None = None  # first permission rules (relay/permissions.py)


class SessionPatch(Body):
    title: str | None = Field(default=None, max_length=500)
    group: str | None = Field(default=None, max_length=200)
    locked: bool | None = None
    position: float | None = None


class MessageBody(Body):
    text: str = Field(min_length=1)
    now: bool = False
    # Chosen by the sender and sent again with a retry: the Mac keeps one message per id, so a
    # retry after a lost answer is never typed twice.
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{8,64}$")


class CardAnswer(Body):
    key: str | None = Field(default=None, max_length=32)
    keys: list[str] | None = Field(default=None, max_length=64)
    text: str | None = None
    always: bool = False  # "always allow this category for this session" (permission cards)


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
    state.pair_limiter.check(client)
    token, kind, subject_id = await state.store.redeem_pair_code(body.code, body.name)
    response = JSONResponse({"token": token, "kind": kind, "id": subject_id})
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
    from relay import retention, search  # they import this module

    items = await state.store.list_sessions(principal.account_id)
    summaries = await search.summaries(state.store, principal.account_id)
    stages = await retention.stages(state, principal.account_id)
    listed = []
    for s in items:
        item = state.session_json(s)
        item["summary"] = summaries.get(s.id, "")
        item["stage"], item["pinned"] = stages.get(s.id, ("active", False))
        listed.append(item)
    return {"sessions": listed, "needs_you": sum(1 for s in listed if s["needs_you"])}


@router.post("/sessions", status_code=201)
async def create_session(body: NewSession, principal: Phone, state: State) -> dict[str, Any]:
    from relay import permissions  # it imports this module

    session_id = session_uuid(body.session_id) if body.session_id is not None else None
    if body.policy is not None:
        permissions.check(body.policy)  # 400 before anything starts
    devices = {d.id: d for d in await state.store.list_devices(principal.account_id)}
    device = devices.get(body.device_id)
    if device is None:
        raise NotFound(f"no Mac {body.device_id} in this account", code="unknown_device")
    link = state.live.require_link(device.id, device.name)
    session_id = session_id or new_session_id()
    session = await state.store.create_session(
        principal.account_id, device.id, session_id, body.cwd
    )
    args = body.model_dump(
        exclude={"device_id", "session_id", "allow_all", "allow_all_for"}, exclude_defaults=True
    )
    if body.allow_all or (body.policy or {}).get("allow_all") is True:
        # The Mac turns the duration into an end time of its own clock, kept in the policy.
        policy = dict(body.policy or {})
        policy["allow_all"] = True
        if "allow_all_until" not in policy:
            policy.setdefault("allow_all_for", allow_all_for(state, body.allow_all_for))
        args["policy"] = policy
    result = await link.command(
        "create_session", session_id, args, state.config.float("command_timeout")
    )
    if not result.ok:
        # The Mac refused (bad folder, claude missing…): nothing was started, keep no trace.
        await state.store.discard_empty_session(principal.account_id, session_id)
    _check(result)
    await permissions.remember_from_result(state, session_id, result.data)
    session = await state.store.get_session(principal.account_id, session_id)
    state.publish_session(session)
    return {"id": session.id, "session": state.session_json(session, full=True)}


async def _session(state: RelayState, principal: Principal, session_id: str) -> Session:
    if not _PATH_ID.fullmatch(session_id):
        raise NotFound(
            f"no session {session_id[:80]!r}: session ids are UUIDs", code="unknown_session"
        )
    return await state.store.get_session(principal.account_id, session_id)


@router.get("/sessions/{session_id}")
async def session_snapshot(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    from relay import retention, search  # they import this module

    session = await _session(state, principal, session_id)
    body = state.session_json(session, full=True)
    body["summary"] = await search.summary_of(state.store, session.id)
    body["stage"], body["pinned"], _ = await retention.stage_of(state, session.id)
    return body


@router.patch("/sessions/{session_id}")
async def patch_session(
    session_id: str, body: SessionPatch, principal: Phone, state: State
) -> dict[str, Any]:
    fields = body.model_dump(exclude_unset=True, exclude_none=True)
    if not fields:
        raise BadRequest("nothing to change: send title, group, locked or position")
    session = await state.store.update_session(principal.account_id, session_id, **fields)
    state.publish_session(session)
    return state.session_json(session, full=True)


@router.get("/sessions/{session_id}/events")
async def session_events_page(
    session_id: str,
    principal: Phone,
    state: State,
    after: Annotated[int | None, Query()] = None,
    before: Annotated[int | None, Query()] = None,
    limit: Annotated[int | None, Query()] = None,
    epoch: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    session = await _session(state, principal, session_id)
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


@router.get("/sessions/{session_id}/subagents")
async def session_subagents(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """One summary line per subagent: type, task, outcome, cost (relay/subagents.py)."""
    session = await _session(state, principal, session_id)
    costs: dict[str, dict[str, Any]] = {}
    if usage.tracker_for(state.store) is not None:  # per subagent, by agent id (relay/usage.py)
        report = await usage.session_costs(state.store, principal.account_id, [session.id])
        costs = report.get(session.id, {}).get("by_agent", {})
    listed = await subagents.summaries(state.store, session.id, costs)
    return {"session_id": session.id, "subagents": listed}


@router.get("/sessions/{session_id}/subagents/{agent_id}/events")
async def subagent_events_page(
    session_id: str,
    agent_id: Annotated[str, Path(max_length=200)],
    principal: Phone,
    state: State,
    after: Annotated[int | None, Query()] = None,
    before: Annotated[int | None, Query()] = None,
    limit: Annotated[int | None, Query()] = None,
    epoch: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """A page of one subagent's events, by the session's seqs, like the session's own events."""
    session = await _session(state, principal, session_id)
    body = await subagents.page(
        state.store,
        session,
        agent_id,
        after=after,
        before=before,
        limit=limit,
        epoch=epoch,
        page_max=state.config.int("catchup_page"),
        # The subagent page picks its events out of what is fetched: all of it or an error.
        fetch=functools.partial(fetch_page, state, whole=True),
    )
    return Response(body, media_type="application/json")


@router.get("/sessions/{session_id}/stream")
async def session_stream(
    session_id: str,
    request: Request,
    principal: Phone,
    state: State,
    after: Annotated[int | None, Query()] = None,
    epoch: Annotated[str | None, Query(max_length=64)] = None,
) -> EventSourceResponse:
    session = await _session(state, principal, session_id)
    header_after = last_event_id(request)
    start = header_after if header_after is not None else (after or 0)
    # Validate the position now, so a bad one is a clear 4xx rather than a broken stream.
    seqrules.page_after(session.numbering, start, 1, epoch)
    return EventSourceResponse(
        session_events(state, principal, session, start),
        ping=state.config.float("sse_keepalive"),
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.get("/stream")
async def account_stream(principal: Phone, state: State) -> EventSourceResponse:
    return EventSourceResponse(
        account_updates(state, principal),
        ping=state.config.float("sse_keepalive"),
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


# -- commands that need the Mac -------------------------------------------------------


def _check(result: CommandResult) -> None:
    if not result.ok:
        raise Conflict(
            result.error or "the Mac refused the command", code=result.code or "command_failed"
        )


async def _command(
    state: RelayState, session: Session, name: CommandName, args: dict[str, Any]
) -> dict[str, Any]:
    from relay import permissions, retention  # they import this module

    await retention.refuse_if_archived(state, session)  # 409 session_archived: read-only
    devices = {d.id: d.name for d in await state.store.list_devices(session.account_id)}
    link = state.live.require_link(session.device_id, devices.get(session.device_id, ""))
    result = await link.command(name, session.id, args, state.config.float("command_timeout"))
    _check(result)
    await permissions.remember_from_result(state, session.id, result.data)  # "always allow"
    if result.data.get("reopened") is True and session.mark is not None:
        # The Mac reopened an ended or resting session to carry this out (a message to it):
        # it runs again, so the mark goes, as after POST …/reopen.
        session = await state.store.update_session(session.account_id, session.id, mark=None)
        state.publish_session(session)
    return {"ok": True, **result.data}


@router.post("/sessions/{session_id}/messages")
async def send_message(
    session_id: str, body: MessageBody, principal: Phone, state: State
) -> dict[str, Any]:
    limit = state.config.int("max_message_chars")
    if len(body.text) > limit:
        raise PayloadTooLarge(
            f"a message is limited to {limit:,} characters", code="text_too_large"
        )
    session = await _session(state, principal, session_id)
    args: dict[str, Any] = {"text": body.text, "now": body.now}
    if body.id is not None:
        args["message_id"] = body.id
    return await _command(state, session, "send", args)


@router.post("/sessions/{session_id}/cards/{card_id}")
async def answer_card(
    session_id: str,
    card_id: str,
    body: CardAnswer,
    request: Request,
    principal: Phone,
    state: State,
) -> dict[str, Any]:
    session = await _session(state, principal, session_id)
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
    args = body.model_dump(exclude_none=True)
    args["card_id"] = card_id
    from relay import audit  # the audit log (it imports this module): who answered which card how

    entry = audit.of_answer(request, principal, session, live.card, body)
    return await audit.recorded(state, entry, _command(state, session, "answer_card", args))


@router.post("/sessions/{session_id}/held/{message_id}/cancel")
async def cancel_held(
    session_id: str, message_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    """Take back a message that is still held (one already typed cannot be)."""
    session = await _session(state, principal, session_id)
    if not _MESSAGE_ID.fullmatch(message_id):
        raise NotFound(f"no held message {message_id[:80]!r}", code="unknown_message")
    return await _command(state, session, "cancel_held", {"message_id": message_id})


@router.post("/sessions/{session_id}/interrupt")
async def interrupt(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    session = await _session(state, principal, session_id)
    return await _command(state, session, "interrupt", {})


@router.post("/sessions/{session_id}/end")
async def end(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    return await _change_life(state, principal, session_id, "end", mark="ended")


@router.post("/sessions/{session_id}/rest")
async def rest(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    return await _change_life(state, principal, session_id, "rest", mark="resting")


@router.post("/sessions/{session_id}/reopen")
async def reopen(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    return await _change_life(state, principal, session_id, "reopen", mark=None)


async def _change_life(
    state: RelayState, principal: Principal, session_id: str, name: CommandName, mark: str | None
) -> dict[str, Any]:
    session = await _session(state, principal, session_id)
    if session.locked and name in ("end", "rest"):
        raise Conflict("this session is locked; unlock it first", code="session_locked")
    answer = await _command(state, session, name, {})
    session = await state.store.update_session(principal.account_id, session_id, mark=mark)
    state.publish_session(session)
    return answer
