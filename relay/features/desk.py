"""Conversations started at the desk: ``GET /api/devices/{id}/conversations`` lists a Mac's
Claude Code conversations — the bridge's and the ones begun in a terminal — newest first, per
folder, each marked ``live`` when a claude runs it now (agent/desk.py, agent/deskfiles.py).
The Mac reads its own disk (``list_conversations``); nothing is stored here.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from relay.deps import Phone, State, check_result
from relay.errors import NotFound
from relay.feature import Feature
from wire.protocol import MAX_DESK_CONVERSATIONS, ListConversationsArgs

router = APIRouter(prefix="/api")

NO_SESSION = ""  # the command is about the Mac, not one session


@router.get("/devices/{device_id}/conversations")
async def conversations(
    device_id: str,
    principal: Phone,
    state: State,
    limit: Annotated[int, Query(ge=1, le=MAX_DESK_CONVERSATIONS)] = 200,
) -> dict[str, Any]:
    devices = {d.id: d.name for d in await state.store.list_devices(principal.account_id)}
    if device_id not in devices:
        raise NotFound(f"no Mac {device_id[:80]!r} in this account", code="unknown_device")
    link = state.live.require_link(device_id, devices[device_id])
    result = await link.command(
        NO_SESSION, ListConversationsArgs(limit=limit), state.config.float("command_timeout")
    )
    check_result(result)
    return {"device_id": device_id, **result.data}


FEATURE = Feature(name="desk", router=router)
