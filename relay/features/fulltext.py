"""The whole text of an event the relay cut ("Show all" on a long tool result).

The relay keeps at most ``tool_result_max_chars`` of a text in its events (relay/convert.py).
For the rest it asks the session's Mac for the event's transcript line, by the line's uuid
(``transcript_line``, wire/protocol.py), converts it again without the cut and answers the text
of the same event. Nothing is kept: the line is read each time.

    GET /api/sessions/{id}/events/{seq}/full   the event's whole text and its length

Errors: 404 ``event_not_found`` (no such seq stored), 404 ``no_source_line`` (the event comes from
no transcript line, or the line no longer gives it), 404 ``line_not_found`` (the Mac no longer has
the line), 409 ``line_too_large`` (over the Mac's ``full_line_max_bytes``), 409
``device_offline`` when the Mac is offline.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter

from relay.convert import convert_line
from relay.deps import Phone, State, send_command, session_or_404
from relay.errors import Conflict, NotFound
from relay.feature import Feature
from wire.protocol import DisplayEvent, TranscriptLineArgs

router = APIRouter(prefix="/api")


def same_event(stored: dict[str, Any], event: DisplayEvent) -> bool:
    """Whether ``event`` (converted again) is the stored one: same kind, marker and tool use."""
    return (
        event.kind == stored.get("kind")
        and event.marker == stored.get("marker")
        and event.tool_use_id == stored.get("tool_use_id")
    )


@router.get("/sessions/{session_id}/events/{seq}/full")
async def full_text(session_id: str, seq: int, principal: Phone, state: State) -> dict[str, Any]:
    """The whole text of event ``seq``, read again from its Mac."""
    session = await session_or_404(state, principal, session_id)
    rows = await state.store.read_events(session.id, seq, seq)
    if not rows:
        raise NotFound(f"session {session.id} has no event {seq}", code="event_not_found")
    stored = json.loads(rows[0][1])
    uuid = stored.get("uuid") if isinstance(stored, dict) else None
    if not isinstance(uuid, str) or not uuid:
        raise NotFound(f"event {seq} comes from no transcript line", code="no_source_line")
    try:
        result = await send_command(state, session, TranscriptLineArgs(uuid=uuid))
    except Conflict as exc:
        if exc.code == "line_not_found":  # the transcript was deleted or rewritten on the Mac
            raise NotFound(exc.message, code="line_not_found") from None
        raise
    conversion = convert_line(str(result.get("line", "")), cut=False)
    for event in conversion.events:
        if same_event(stored, event):
            text = event.text or ""
            return {"session_id": session.id, "seq": seq, "text": text, "full_length": len(text)}
    raise NotFound(f"the transcript line of event {seq} no longer gives it", code="no_source_line")


FEATURE = Feature("fulltext", router=router)
