"""Reading a page of a session's history: from the relay's store, and from the Mac for older parts.

The relay keeps the latest ``events_kept`` events of each session; anything older lives in the
Mac's archive and is fetched over the link, checked before a phone sees it. A page may stop early
(``has_more``) at ``max_page_bytes`` or where the older history cannot be read (the Mac offline,
late, or refusing); when not even its first event can be read the answer is a clear
``history_unavailable`` error naming the oldest seq the relay has — never a gap the relay cannot
explain, never an empty page that says more follow. (Gaps in the Mac's own archive, see
docs/protocol.md §8, are what the Mac answered: those events do not exist anywhere.)
"""

from __future__ import annotations

from relay import seq as seqrules
from relay.errors import Conflict, RelayError
from relay.state import RelayState
from relay.store import Session
from wire.protocol import NumberedEvent

Events = list[tuple[int, str]]  # (seq, NumberedEvent JSON), oldest first


async def fetch_page(
    state: RelayState,
    session: Session,
    page: seqrules.Page,
    *,
    max_bytes: int | None = None,
    whole: bool = False,
) -> tuple[Events, bool]:
    """Events of ``page`` as (seq, JSON), oldest first, and whether more follow in its direction.

    At most ``max_bytes`` of JSON (default ``max_page_bytes``; at least one event). ``whole``:
    no size bound, and ``history_unavailable`` rather than a page cut short where the Mac could
    not be read (for callers that pick events out of the page themselves)."""
    if page.last < page.first:
        return [], page.has_more
    limit = (
        None if whole else state.config.int("max_page_bytes") if max_bytes is None else max_bytes
    )
    budget = _Budget(limit)
    stored_first = max(page.first, session.oldest_seq)
    mac_part = page.from_mac
    if not page.backwards:
        older: Events = []
        if mac_part is not None:
            older, complete = await _older(state, session, *mac_part, budget, whole=whole)
            if not complete:
                return older, True
        stored = budget.fit(
            await state.store.read_events(
                session.id, stored_first, page.last, max_bytes=budget.left
            )
        )
        events = older + stored
        if not events:
            raise _unavailable(session, f"the relay has no events {page.first}..{page.last}")
        return events, page.has_more or events[-1][0] < page.last
    # Backwards: the newest events matter most, so the stored part (the newest) goes first.
    stored = []
    if stored_first <= page.last:
        stored = budget.fit(
            await state.store.read_events(
                session.id, stored_first, page.last, max_bytes=budget.left, newest=True
            ),
            newest=True,
        )
        if not stored:
            raise _unavailable(session, f"the relay has no events {stored_first}..{page.last}")
        if stored[0][0] > stored_first or mac_part is None or budget.spent:
            return stored, page.has_more or stored[0][0] > page.first
    assert mac_part is not None
    try:
        older, _ = await _older(state, session, *mac_part, budget, backwards=True, whole=whole)
    except RelayError:
        if not stored or whole:
            raise
        return stored, True  # the next page (before the first of these) says why
    events = older + stored
    return events, page.has_more or events[0][0] > page.first


class _Budget:
    """Bytes of JSON left for a page; the first event always fits."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.used = 0
        self.count = 0
        self.spent = False  # an event was left out for want of room

    @property
    def left(self) -> int | None:
        return None if self.limit is None else max(1, self.limit - self.used)

    def fit(self, events: Events, newest: bool = False) -> Events:
        """The events that fit, taken from the oldest (or with ``newest`` from the newest)."""
        if self.limit is None:
            return events
        ordered = reversed(events) if newest else iter(events)
        kept: Events = []
        for seq, data in ordered:
            size = (len(data) if data.isascii() else len(data.encode())) + 1
            if self.count and self.used + size > self.limit:
                self.spent = True
                break
            self.used += size
            self.count += 1
            kept.append((seq, data))
        if newest:
            kept.reverse()
        return kept


def _unavailable(session: Session, why: str) -> Conflict:
    return Conflict(
        f"older history cannot be read now: {why}",
        code="history_unavailable",
        oldest_seq=session.oldest_seq,
    )


async def _older(
    state: RelayState,
    session: Session,
    first: int,
    last: int,
    budget: _Budget,
    *,
    backwards: bool = False,
    whole: bool = False,
) -> tuple[Events, bool]:
    """Events of ``first..last`` (older than the relay keeps), and whether that is all there is.

    Events kept from before a new epoch are read from the store, the rest asked of the Mac. What
    the Mac answered is all there is (its archive may have gaps, §8 of docs/protocol.md). When
    the Mac cannot be asked, only the unbroken run the store has from ``first`` (or with
    ``backwards`` down from ``last``) is given, never a page with a hole the relay cannot
    explain. Raises ``history_unavailable`` when not one event can be read."""
    found = dict(
        await state.store.read_events(
            session.id, first, last, max_bytes=budget.left, newest=backwards
        )
    )
    missing = [s for s in range(first, last + 1) if s not in found]
    failure: RelayError | None = None
    if missing:
        try:
            for event in await _from_mac(state, session, missing[0], missing[-1]):
                found.setdefault(event.seq, event.model_dump_json(exclude_none=True))
        except RelayError as exc:
            if whole:
                raise
            failure = exc
    if failure is None:
        run = sorted(found.items())
    else:
        run = []
        for seq in range(last, first - 1, -1) if backwards else range(first, last + 1):
            if seq not in found:
                break
            run.append((seq, found[seq]))
        if backwards:
            run.reverse()
    kept = budget.fit(run, newest=backwards)
    if not kept:
        if failure is not None:
            raise failure
        raise _unavailable(session, f"the Mac has none of events {first}..{last}")
    return kept, failure is None and len(kept) == len(run)


async def _from_mac(
    state: RelayState, session: Session, first: int, last: int
) -> list[NumberedEvent]:
    """Events ``first..last`` from the Mac's archive, checked: this session's, of this epoch (or,
    below the epoch's start, of an earlier one), in the range asked, in increasing order with no
    repeat. A Mac that answers otherwise is not believed at all."""
    link = state.live.link(session.device_id)
    if link is None or link.closed:
        raise Conflict(
            f"events before seq {session.oldest_seq} are kept only on the Mac, which is offline; "
            "they will be readable when it reconnects",
            code="history_unavailable",
            oldest_seq=session.oldest_seq,
        )
    try:
        answer = await link.history(
            session.id,
            before=last + 1,
            limit=last - first + 1,
            timeout=state.config.float("history_timeout"),
        )
    except RelayError as exc:
        raise Conflict(
            f"the Mac did not send events before seq {session.oldest_seq} in time ({exc.message})",
            code="history_unavailable",
            oldest_seq=session.oldest_seq,
        ) from None
    if answer.error:
        raise _unavailable(session, f"the Mac could not read older history: {answer.error}")
    previous = first - 1
    for event in answer.events:
        problem = None
        if event.session_id != session.id:
            problem = f"an event of another session ({event.session_id})"
        elif event.epoch != session.epoch and event.seq >= session.epoch_start:
            problem = f"seq {event.seq} is of epoch {event.epoch}, not {session.epoch}"
        elif not first <= event.seq <= last:
            problem = f"seq {event.seq} is outside the {first}..{last} asked"
        elif event.seq <= previous:
            problem = f"seq {event.seq} repeated or out of order"
        if problem is not None:
            raise _unavailable(session, f"the Mac's answer was refused: {problem}")
        previous = event.seq
        # Below the epoch's start an earlier epoch is the history this one continues (seqs are
        # never given twice): it is shown as this epoch's, which is what the page reads.
        event.epoch = session.epoch
    return answer.events
