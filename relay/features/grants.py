"""The grants of a session's running claude, from the phone: ``GET /api/sessions/{id}/grants``
and ``DELETE /api/sessions/{id}/grants/{grant_id}``; the full snapshot carries them too
(``grants``).

A grant is a card's "always allow this kind of tool for this session" (agent/grants.py): it
lasts while that claude process runs, so the Mac holds it and reports the whole list in its
``session_update`` (``grants``, wire/protocol.py ``GrantInfo``); the relay keeps nothing of its
own. A session whose claude is not running (ended, Mac offline) lists none. Revoking is a
``revoke_grant`` command to the Mac (409 ``device_offline`` when it is offline; 404
``unknown_grant`` for an id the running claude does not hold).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Depends

from relay.deps import Phone, State, refuse_read_only, send_command, session_or_404
from relay.errors import Conflict, NotFound
from relay.feature import Feature
from relay.state import RelayState, iso
from relay.store import Session
from wire.protocol import GRANT_ID, GrantInfo, RevokeGrantArgs

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])


def running_grants(state: RelayState, session: Session) -> list[dict[str, Any]]:
    """What the Mac last said its running claude holds; none when it is not running."""
    live = state.live.sessions.get(session.id)
    link = state.live.link(session.device_id)
    if live is None or link is None or link.closed or live.state in (None, "ended"):
        return []
    return [_shown(g) for g in live.grants or []]


def _shown(grant: GrantInfo) -> dict[str, Any]:
    return {**grant.model_dump(), "granted": iso(grant.granted_at)}


async def start(state: RelayState) -> None:
    async def fields(session: Session) -> Mapping[str, Any]:
        return {"grants": running_grants(state, session)}

    state.hooks.snapshot_fields.append(fields)


@router.get("/sessions/{session_id}/grants")
async def list_grants(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    link = state.live.link(session.device_id)
    return {
        "session_id": session.id,
        "grants": running_grants(state, session),
        "device_online": link is not None and not link.closed,
    }


@router.delete("/sessions/{session_id}/grants/{grant_id}")
async def revoke_grant(
    session_id: str, grant_id: str, principal: Phone, state: State
) -> dict[str, Any]:
    """End one grant on the session's Mac: the next request of that kind asks again."""
    session = await session_or_404(state, principal, session_id)
    if not re.fullmatch(GRANT_ID, grant_id):
        raise NotFound(f"no grant {grant_id[:40]!r}: grant ids are g_ and 12 hex digits",
                       code="unknown_grant")  # fmt: skip
    try:
        answer = await send_command(state, session, RevokeGrantArgs(grant_id=grant_id))
    except Conflict as exc:
        if exc.code == "unknown_grant":
            raise NotFound(exc.message, code="unknown_grant") from None
        raise
    grants = [GrantInfo.model_validate(g) for g in answer.get("grants", [])]
    return {"ok": True, "revoked": grant_id, "grants": [_shown(g) for g in grants]}


FEATURE = Feature("grants", start=start, router=router)
