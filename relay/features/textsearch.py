"""Search in conversations: the words as written, in every message the relay keeps.

The session search (features/search.py) looks at named fields (title, summary, files, tools…);
when it finds nothing the phone offers this one, in one tap: the stored events' own text, the
person's messages, Claude's answers and tool results alike, matched as typed (case folded, no
word rules). It reads the account's events newest session first and stops at
:data:`MAX_HITS` matches, so its cost is bound by what it answers, not by the whole history
(though a word found nowhere reads all of it once).

    GET /api/search/text?q=words   {"query", "sessions": [{"session_id", "hits": [{"seq",
                                   "kind", "snippet"}]}], "more": bool}

Errors: 400 ``query_too_short`` (under :data:`MIN_QUERY_CHARS` characters), 400
``query_too_long`` (over :data:`MAX_QUERY_CHARS`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query

from relay.deps import Phone, State
from relay.errors import BadRequest
from relay.feature import Feature

router = APIRouter(prefix="/api")

MIN_QUERY_CHARS = 2
MAX_QUERY_CHARS = 200
MAX_HITS = 60  # matching events read at most
HITS_PER_SESSION = 3  # shown under each session
SNIPPET_SIDE = 60  # characters kept on each side of the match
TEXT_KINDS = frozenset({"user", "assistant", "tool_result", "thinking"})
LIKE_ESCAPE = "\\"


def like_pattern(query: str) -> str:
    """``query`` as a LIKE pattern matching it after an event's ``"text"`` key (not in the names of
    the event's fields), its own ``%`` and ``_`` taken literally."""
    escaped = (
        query.lower()
        .replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )
    return f'%"text":"%{escaped}%'


def snippet(text: str, query: str, side: int = SNIPPET_SIDE) -> str | None:
    """The part of ``text`` around the first match of ``query`` (case folded), with "…" where
    cut; None when the text does not hold it (the match was in the event's other fields)."""
    at = text.lower().find(query.lower())
    if at < 0:
        return None
    start = max(0, at - side)
    end = min(len(text), at + len(query) + side)
    part = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + part + ("…" if end < len(text) else "")


def hits_of(rows: list[Any], query: str) -> list[dict[str, Any]]:
    """The matches among stored events ``rows`` (session_id, seq, data), grouped by session in
    the rows' order, each session's first :data:`HITS_PER_SESSION` kept."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    for session_id, seq, data in rows:
        try:
            event = json.loads(data)
        except ValueError:
            continue
        if not isinstance(event, dict) or event.get("kind") not in TEXT_KINDS:
            continue
        text = event.get("text")
        found = snippet(text, query) if isinstance(text, str) else None
        if found is None:
            continue
        hits = sessions.setdefault(str(session_id), [])
        if len(hits) < HITS_PER_SESSION:
            hits.append({"seq": int(seq), "kind": event["kind"], "snippet": found})
    return [{"session_id": sid, "hits": hits} for sid, hits in sessions.items()]


@router.get("/search/text")
async def search_text(
    principal: Phone, state: State, q: Annotated[str, Query()] = ""
) -> dict[str, Any]:
    """The account's messages holding ``q`` as written, newest session first."""
    query = " ".join(q.split())
    if len(query) < MIN_QUERY_CHARS:
        raise BadRequest(
            f"type at least {MIN_QUERY_CHARS} characters to search in conversations",
            code="query_too_short",
        )
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(
            f"a search in conversations is limited to {MAX_QUERY_CHARS} characters",
            code="query_too_long",
        )
    rows = await state.store.read(
        "SELECT e.session_id, e.seq, e.data FROM events e JOIN sessions s ON s.id = e.session_id"
        f" WHERE s.account_id = ? AND LOWER(e.data) LIKE ? ESCAPE '{LIKE_ESCAPE}'"
        " ORDER BY s.updated_at DESC, e.session_id, e.seq DESC LIMIT ?",
        (principal.account_id, like_pattern(query), MAX_HITS + 1),
    )
    more = len(rows) > MAX_HITS
    return {"query": query, "sessions": hits_of(list(rows[:MAX_HITS]), query), "more": more}


FEATURE = Feature("textsearch", router=router)
