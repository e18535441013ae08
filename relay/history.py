"""Reading a page of a session's history: from the relay's store, and from the Mac for older parts.

The relay keeps the latest ``events_kept`` events of each session; anything older lives in the
Mac's archive and is fetched over the link. When the Mac is offline the answer is a clear
``history_unavailable`` error naming the oldest seq the relay has — never a silent gap.
"""

from __future__ import annotations

from relay import seq as seqrules
from relay.errors import Conflict, RelayError
from relay.state import RelayState
from relay.store import Session


async def fetch_page(
    state: RelayState, session: Session, page: seqrules.Page
) -> tuple[list[tuple[int, str]], bool]:
    """Events of ``page`` as (seq, JSON), oldest first, and whether more follow in its direction."""
    if page.last < page.first:
        return [], page.has_more
    older: list[tuple[int, str]] = []
    if page.from_mac is not None:
        older = await _from_mac(state, session, *page.from_mac)
    stored_first = max(page.first, session.oldest_seq)
    stored = await state.store.read_events(session.id, stored_first, page.last)
    return older + stored, page.has_more


async def _from_mac(
    state: RelayState, session: Session, first: int, last: int
) -> list[tuple[int, str]]:
    unavailable = Conflict(
        f"events before seq {session.oldest_seq} are kept only on the Mac, which is offline; "
        "they will be readable when it reconnects",
        code="history_unavailable",
        oldest_seq=session.oldest_seq,
    )
    link = state.live.link(session.device_id)
    if link is None or link.closed:
        raise unavailable
    try:
        answer = await link.history(
            session.id,
            before=last + 1,
            limit=last - first + 1,
            timeout=float(state.config.history_timeout),
        )
    except RelayError as exc:
        raise Conflict(
            f"the Mac did not send events before seq {session.oldest_seq} in time ({exc.message})",
            code="history_unavailable",
            oldest_seq=session.oldest_seq,
        ) from None
    if answer.error:
        raise Conflict(
            f"the Mac could not read older history: {answer.error}",
            code="history_unavailable",
            oldest_seq=session.oldest_seq,
        )
    events = sorted((e for e in answer.events if first <= e.seq <= last), key=lambda e: e.seq)
    return [(e.seq, e.model_dump_json(exclude_none=True)) for e in events]
