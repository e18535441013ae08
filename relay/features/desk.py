"""Conversations started at the desk (agent/desk.py, agent/deskfiles.py): the Mac reads its own
disk; nothing is stored here until one is continued.

* ``GET /api/devices/{id}/conversations`` — a Mac's Claude Code conversations, the bridge's and
  the ones begun in a terminal, newest first, per folder, each ``live`` when a claude runs it now.
* ``GET /api/devices/{id}/conversations/{cid}?before=&limit=`` — one, read only: its events as a
  session's (relay/convert.py), numbered 1..n over the lines the Mac sent (its last ones, ``cut``
  when its start was left out), paged like a session's: the newest ``limit`` (≤
  ``catchup_page``) with seq < ``before``, oldest first, ``has_more`` when older ones remain.
  What the Mac sends is untrusted: at most ``MAX_DESK_LINES`` lines, each a string of at most
  ``MAX_DESK_LINE_CHARS``, the rest left out (``cut``).
* ``POST /api/devices/{id}/conversations/{cid}/continue {"scope"?, "fork"?, "permission_mode"?}``
  — a bridge session goes on with it (201 with the session): resumed as its own by the scope
  (the account's by default; ``fresh`` types a handoff of its decisions, built here from its
  lines), or forked (``fork: true``). A live one only as a fork or fresh (409
  ``conversation_live`` says why: two processes on one conversation corrupt it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import count
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel, ConfigDict

from relay.convert import convert_line
from relay.deps import Phone, State, check_result, refuse_read_only
from relay.errors import BadRequest, Conflict, NotFound
from relay.feature import Feature
from relay.features.resume import DEFAULT_SCOPE, ResumeState
from relay.handoff import HANDOFF_MIN_TOKENS, build_handoff
from relay.ledger_rules import build_ledger
from relay.live import Link
from relay.recent_work import files_touched, last_exchange
from relay.seq import check_limit
from relay.state import RelayState
from relay.store import Principal, new_session_id
from wire.protocol import (
    CONVERSATION_ID,
    MAX_DESK_CONVERSATIONS,
    MAX_SEQ,
    CommandArgs,
    CreateSessionArgs,
    ListConversationsArgs,
    NumberedEvent,
    PermissionMode,
    ReadConversationArgs,
    ResumeScope,
)

router = APIRouter(prefix="/api")

NO_SESSION = ""  # the command is about the Mac, not one session


DESK_EPOCH = "desk"  # the numbering of a conversation read here (not a session's)
_CONVERSATION_RE = re.compile(CONVERSATION_ID)
MAX_DESK_LINES = 20_000  # lines of a conversation's read taken from the Mac, its last ones
MAX_DESK_LINE_CHARS = 1024 * 1024  # a longer line is not one Claude Code writes: left out
DESK_PAGE = 100  # events of a read without ``limit``


@dataclass(frozen=True)
class DeskPage:
    """A page of a conversation's events: the newest ``limit`` before ``before``, oldest first."""

    events: list[NumberedEvent]
    last_seq: int  # of the whole read
    has_more: bool  # older events than the page's remain


def checked_lines(raw: Any) -> tuple[list[str], bool]:
    """The Mac's lines, untrusted: strings only, each at most ``MAX_DESK_LINE_CHARS``, the last
    ``MAX_DESK_LINES``; whether any were left out."""
    if not isinstance(raw, list):
        return [], raw is not None
    kept = [line for line in raw[-MAX_DESK_LINES:] if isinstance(line, str)]
    kept = [line for line in kept if len(line) <= MAX_DESK_LINE_CHARS]
    return kept, len(kept) < len(raw)


def page_of(events: list[NumberedEvent], before: int | None, limit: int) -> DeskPage:
    """The newest ``limit`` events with seq < ``before`` (all when None), oldest first."""
    last = events[-1].seq if events else 0
    older = [e for e in events if before is None or e.seq < before]
    shown = older[-limit:] if limit > 0 else []
    return DeskPage(shown, last, len(older) > len(shown))


async def _link(state: RelayState, principal: Principal, device_id: str) -> Link:
    devices = {d.id: d.name for d in await state.store.list_devices(principal.account_id)}
    if device_id not in devices:
        raise NotFound(f"no Mac {device_id[:80]!r} in this account", code="unknown_device")
    return state.live.require_link(device_id, devices[device_id])


async def _ask(state: RelayState, link: Link, args: CommandArgs) -> dict[str, Any]:
    result = await link.command(NO_SESSION, args, state.config.float("command_timeout"))
    check_result(result)
    return dict(result.data)


def _conversation_id(raw: str) -> str:
    if not _CONVERSATION_RE.fullmatch(raw):
        raise NotFound(f"no conversation {raw[:80]!r}", code="unknown_conversation")
    return raw


def events_of(conversation_id: str, lines: list[Any]) -> list[NumberedEvent]:
    """A conversation's lines as the events a session would show, numbered from 1."""
    seq = count(1)
    return [
        NumberedEvent(
            **event.model_dump(), session_id=conversation_id, seq=next(seq), epoch=DESK_EPOCH
        )
        for line in lines
        if isinstance(line, str)
        for event in convert_line(line).events
    ]


@router.get("/devices/{device_id}/conversations")
async def conversations(
    device_id: str,
    principal: Phone,
    state: State,
    limit: Annotated[int, Query(ge=1, le=MAX_DESK_CONVERSATIONS)] = 200,
) -> dict[str, Any]:
    link = await _link(state, principal, device_id)
    found = await _ask(state, link, ListConversationsArgs(limit=limit))
    return {"device_id": device_id, **found}


@router.get("/devices/{device_id}/conversations/{conversation_id}")
async def conversation(
    device_id: str,
    conversation_id: str,
    principal: Phone,
    state: State,
    before: Annotated[int | None, Query()] = None,
    limit: Annotated[int | None, Query()] = None,
) -> dict[str, Any]:
    cid = _conversation_id(conversation_id)
    page_max = state.config.int("catchup_page")
    size = check_limit(limit, page_max) if limit is not None else min(DESK_PAGE, page_max)
    if before is not None and not 1 <= before <= MAX_SEQ + 1:
        raise BadRequest(f"before must be a seq from 1 to {MAX_SEQ + 1}", code="bad_after")
    link = await _link(state, principal, device_id)
    read = await _ask(state, link, ReadConversationArgs(conversation_id=cid))
    lines, left_out = checked_lines(read.get("lines"))
    page = page_of(events_of(cid, lines), before, size)
    return {
        "device_id": device_id,
        "conversation_id": cid,
        "live": read.get("live") is True,
        "cut": read.get("cut") is True or left_out,
        "epoch": DESK_EPOCH,
        "last_seq": page.last_seq,
        "oldest_seq": 1 if page.last_seq else 0,
        "has_more": page.has_more,
        "events": [e.model_dump(mode="json") for e in page.events],
    }


class ContinueBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scope: ResumeScope | None = None
    fork: bool = False
    permission_mode: PermissionMode | None = None


@router.post(
    "/devices/{device_id}/conversations/{conversation_id}/continue",
    status_code=201,
    dependencies=[Depends(refuse_read_only)],
)
async def continue_conversation(
    device_id: str, conversation_id: str, body: ContinueBody, principal: Phone, state: State
) -> dict[str, Any]:
    cid = _conversation_id(conversation_id)
    link = await _link(state, principal, device_id)
    listed = await _ask(state, link, ListConversationsArgs(limit=MAX_DESK_CONVERSATIONS))
    found = next(
        (
            c
            for folder in listed.get("folders") or []
            for c in folder.get("conversations") or []
            if c.get("id") == cid
        ),
        None,
    )
    if found is None:
        raise NotFound(f"the Mac has no conversation {cid}", code="unknown_conversation")
    cwd = found.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        raise Conflict("the conversation's folder is not known", code="no_folder")
    part = state.part(ResumeState)
    account = await part.account_scope(principal.account_id) if part is not None else None
    scope = body.scope or account or DEFAULT_SCOPE
    if found.get("live") and not body.fork and scope != "fresh":
        raise Conflict(
            "a claude at the desk runs this conversation now: two processes on one conversation "
            "corrupt it. Continue it as a fork, or fresh from its decisions",
            code="conversation_live",
        )
    args = CreateSessionArgs(
        cwd=cwd,
        permission_mode=body.permission_mode,
        desk_conversation=cid,
        desk_fork=body.fork,
        resume_scope=None if body.fork else scope,
    )
    if scope == "fresh" and not body.fork:
        read = await _ask(state, link, ReadConversationArgs(conversation_id=cid))
        events = events_of(cid, checked_lines(read.get("lines"))[0])
        budget = max(HANDOFF_MIN_TOKENS, state.config.int("handoff_max_tokens"))
        handoff = build_handoff(
            build_ledger(events), files_touched(events), last_exchange(events), budget
        )
        args = args.model_copy(update={"handoff": handoff.text, "decisions": handoff.decisions})
    session_id = new_session_id()
    await state.store.create_session(principal.account_id, device_id, session_id, cwd)
    result = await link.command(session_id, args, state.config.float("command_timeout"))
    if not result.ok:
        await state.store.discard_empty_session(principal.account_id, session_id)
    check_result(result)
    session = await state.store.get_session(principal.account_id, session_id)
    state.publish_session(session)
    return {
        "id": session.id,
        "scope": None if body.fork else scope,
        "fork": body.fork,
        "session": state.session_json(session, full=True),
    }


FEATURE = Feature(name="desk", router=router)
