"""What a request needs, for every router (the core's and the features'): the running relay
(``State``), the phone's login (``Phone``), the read-only guard, the base of request bodies, a
session by id (``session_or_404``) and a command sent to its Mac (``send_command``).

Features import these from here, never from ``relay/routes.py``: routes is one router among
others, and nothing imports it but the app.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import Depends, Query, Request
from pydantic import Field
from starlette.requests import HTTPConnection

from relay.auth import authenticate
from relay.bodies import Body, CardAnswer
from relay.errors import BadRequest, Conflict, NotFound, PayloadTooLarge
from relay.state import RelayState
from relay.store import Principal, Session
from wire.policy import MAX_ALLOW_ALL_SECONDS, Policy, PolicyError
from wire.protocol import MAX_MESSAGE_CHARS, CommandArgs, CommandResult

__all__ = [
    "READ_ONLY_HEADER",
    "AllowAllFor",
    "Body",
    "CardAnswer",
    "Phone",
    "State",
    "allow_all_for",
    "check_policy",
    "check_result",
    "phone",
    "refuse_read_only",
    "relay_state",
    "send_command",
    "session_or_404",
]

READ_ONLY_HEADER = "X-CB-Read-Only"

# Any id a path may name (a session a Mac reported, a held message): a bad one is a clear 404
# before it is looked up or sent anywhere.
PATH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}")


def relay_state(request: Request) -> RelayState:
    state: RelayState = request.app.state.relay
    return state


State = Annotated[RelayState, Depends(relay_state)]


def phone(request: Request) -> Principal:
    return authenticate(request, relay_state(request).store, kind="phone", method=request.method)


Phone = Annotated[Principal, Depends(phone)]


@dataclass(frozen=True)
class PageQuery:
    """Where a history page starts: ``?after=`` or ``?before=``, ``?limit=``, ``?epoch=`` (their
    ranges are checked by the seq rules, relay/seq.py)."""

    after: int | None
    before: int | None
    limit: int | None
    epoch: str | None


def page_query(
    after: Annotated[int | None, Query()] = None,
    before: Annotated[int | None, Query()] = None,
    limit: Annotated[int | None, Query()] = None,
    epoch: Annotated[str | None, Query(max_length=64)] = None,
) -> PageQuery:
    return PageQuery(after, before, limit, epoch)


Page = Annotated[PageQuery, Depends(page_query)]


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


def check_policy(data: Any) -> Policy:
    """A policy from a request body, or 400 ``bad_request`` saying what is wrong."""
    try:
        return Policy.from_json(data)
    except PolicyError as exc:
        raise BadRequest(f"policy: {exc}") from None


# -- sessions and commands ---------------------------------------------------------------------


def check_message_length(state: RelayState, text: str) -> None:
    """A message to a Mac, sent now or queued: longer than the link's send args take
    (MAX_MESSAGE_CHARS) or the ``max_message_chars`` setting, it could never be sent."""
    limit = min(state.config.int("max_message_chars"), MAX_MESSAGE_CHARS)
    if len(text) > limit:
        raise PayloadTooLarge(
            f"a message is limited to {limit:,} characters", code="text_too_large"
        )


async def session_or_404(state: RelayState, principal: Principal, session_id: str) -> Session:
    """The account's session ``session_id``; 404 ``unknown_session`` when there is none."""
    if not PATH_ID.fullmatch(session_id):
        raise NotFound(
            f"no session {session_id[:80]!r}: session ids are UUIDs", code="unknown_session"
        )
    return await state.store.get_session(principal.account_id, session_id)


def check_result(result: CommandResult) -> None:
    """A Mac's refusal as 409, with the Mac's own code and message."""
    if not result.ok:
        raise Conflict(
            result.error or "the Mac refused the command", code=result.code or "command_failed"
        )


async def send_command(state: RelayState, session: Session, args: CommandArgs) -> dict[str, Any]:
    """Send the command of ``args`` to the session's Mac and answer with what it did.

    The features' command guards run first (an archived session is read-only: 409) and their
    result readers see the Mac's answer (a policy it reports), as ``RelayState`` holds them."""
    await state.hooks.guard(session)
    devices = {d.id: d.name for d in await state.store.list_devices(session.account_id)}
    link = state.live.require_link(session.device_id, devices.get(session.device_id, ""))
    result = await link.command(session.id, args, state.config.float("command_timeout"))
    check_result(result)
    await state.hooks.read_result(session.id, result.data)
    if result.data.get("reopened") is True and session.mark is not None:
        # The Mac reopened an ended or resting session to carry this out (a message to it):
        # it runs again, so the mark goes, as after POST …/reopen.
        session = await state.store.update_session(session.account_id, session.id, mark=None)
        state.publish_session(session)
    return {"ok": True, **result.data}
