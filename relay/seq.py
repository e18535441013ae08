"""Seq, epoch and catch-up rules: pure decisions, no I/O.

Each session's events are numbered 1, 2, 3, … with no gap and no repeat. Each session also has an
*epoch*, a random string: when the relay finds it has lost part of a session's history (the Mac
knows a later seq than the relay, or the session is unknown to the relay), it starts a new epoch
and keeps numbering *after* the highest seq anyone has seen, so a seq is never given twice. A
client holding a position in an old epoch is told to resync, never handed a silent gap — recovery
is all or nothing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from relay.errors import BadRequest, Conflict
from wire.protocol import MAX_SEQ

EPOCH_BYTES = 6


def new_epoch() -> str:
    return secrets.token_hex(EPOCH_BYTES)


@dataclass(frozen=True)
class SessionSeq:
    """What the relay holds of one session's numbering."""

    epoch: str
    last_seq: int  # highest seq given (0 = none yet)
    oldest_seq: int  # lowest seq still stored on the relay (last_seq + 1 when none)


@dataclass(frozen=True)
class Reconciled:
    """Outcome of comparing the Mac's position (from hello) with the relay's."""

    seq: SessionSeq  # the relay's numbering from now on
    new_epoch: bool
    send_after: int | None  # events after this seq go back to the Mac; None = nothing to send


def reconcile(relay: SessionSeq | None, mac_last_seq: int, mac_epoch: str | None) -> Reconciled:
    """Decide what happens when a Mac says hello with its last archived seq for a session."""
    if relay is None:
        # The relay never had, or has lost, this session: new epoch, numbering after the Mac's.
        fresh = SessionSeq(epoch=new_epoch(), last_seq=mac_last_seq, oldest_seq=mac_last_seq + 1)
        return Reconciled(seq=fresh, new_epoch=True, send_after=None)
    if mac_last_seq > relay.last_seq:
        # The Mac has events the relay does not: the relay lost state.
        fresh = SessionSeq(epoch=new_epoch(), last_seq=mac_last_seq, oldest_seq=mac_last_seq + 1)
        return Reconciled(seq=fresh, new_epoch=True, send_after=None)
    send_after = mac_last_seq if mac_last_seq < relay.last_seq else None
    if mac_epoch is not None and mac_epoch != relay.epoch and send_after is None:
        # Same height but another epoch: nothing to send, the Mac just adopts the relay's epoch.
        return Reconciled(seq=relay, new_epoch=False, send_after=None)
    return Reconciled(seq=relay, new_epoch=False, send_after=send_after)


def number(seq: SessionSeq, count: int, kept: int) -> tuple[range, SessionSeq]:
    """Give ``count`` new seq numbers; return them and the numbering after pruning to ``kept``."""
    last = seq.last_seq + count
    oldest = max(seq.oldest_seq, last - kept + 1)
    return range(seq.last_seq + 1, last + 1), SessionSeq(seq.epoch, last, oldest)


@dataclass(frozen=True)
class Page:
    """A validated catch-up request: events with seq in [first, last], newest ``limit`` or oldest."""

    first: int
    last: int
    from_mac: tuple[int, int] | None  # (first, last) part older than the relay keeps
    has_more: bool
    backwards: bool = False  # read from ``last`` down (a ``before`` page): the newest matter


def page_after(seq: SessionSeq, after: int, limit: int, client_epoch: str | None) -> Page:
    """Events after ``after`` (exclusive), oldest first, at most ``limit``."""
    _check_epoch(seq, client_epoch)
    if not 0 <= after <= MAX_SEQ:
        raise BadRequest(f"after must be a seq from 0 to {MAX_SEQ}", code="bad_after")
    if after > seq.last_seq:
        raise Conflict(
            f"after={after} is beyond the last seq {seq.last_seq}: this history was restarted; "
            "reload the session",
            code="after_beyond_last",
            last_seq=seq.last_seq,
            epoch=seq.epoch,
        )
    first = after + 1
    last = min(seq.last_seq, after + limit)
    from_mac = (first, min(last, seq.oldest_seq - 1)) if first < seq.oldest_seq else None
    return Page(first=first, last=last, from_mac=from_mac, has_more=last < seq.last_seq)


def page_before(seq: SessionSeq, before: int, limit: int, client_epoch: str | None) -> Page:
    """Events before ``before`` (exclusive), the newest ``limit`` of them, returned oldest first."""
    _check_epoch(seq, client_epoch)
    if not 1 <= before <= MAX_SEQ + 1:
        raise BadRequest(f"before must be a seq from 1 to {MAX_SEQ + 1}", code="bad_after")
    last = min(before - 1, seq.last_seq)
    first = max(1, last - limit + 1)
    if last < 1:
        return Page(first=1, last=0, from_mac=None, has_more=False, backwards=True)
    from_mac = (first, min(last, seq.oldest_seq - 1)) if first < seq.oldest_seq else None
    return Page(first=first, last=last, from_mac=from_mac, has_more=first > 1, backwards=True)


def check_limit(limit: int | None, page_max: int) -> int:
    if limit is None:
        return page_max
    if limit < 1 or limit > page_max:
        raise BadRequest(f"limit must be between 1 and {page_max}", code="bad_limit")
    return limit


def _check_epoch(seq: SessionSeq, client_epoch: str | None) -> None:
    if client_epoch is not None and client_epoch != seq.epoch:
        raise Conflict(
            "this session's history was restarted since your last visit; reload it",
            code="epoch_mismatch",
            epoch=seq.epoch,
            last_seq=seq.last_seq,
        )
