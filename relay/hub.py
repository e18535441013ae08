"""In-process fan-out of live things to SSE subscribers.

Two kinds of subscription: one session's numbered events (``/api/sessions/{id}/stream``) and an
account's unnumbered updates (``/api/stream``: session list, states, cards, previews, devices).
Each subscriber has a bounded buffer; a subscriber that falls too far behind is sent ``resync``
and closed rather than silently skipped. Frames are encoded once per event, not once per client.

One login (token) holds at most ``streams_per_token`` streams of both kinds together; a new one
past it closes that login's oldest with ``closed`` (``too_many_streams``) instead of being
refused. A phone that loses its network and reconnects leaves streams whose sockets nobody has
noticed are dead yet: refusing the new one would lock that phone out of its own live view until
they time out, while the oldest is almost always one of those dead ones. Another tab still
reading an old stream opens it again after its pause, as after any cut.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Protocol

from relay.jsontext import dumps


def sse_frame(data: str, *, event: str | None = None, id: int | None = None) -> bytes:
    """One Server-Sent Events frame. ``data`` must not contain newlines (compact JSON doesn't)."""
    head = ""
    if id is not None:
        head += f"id: {id}\n"
    if event is not None:
        head += f"event: {event}\n"
    return f"{head}data: {data}\n\n".encode()


@dataclass(frozen=True)
class Close:
    """Tells a stream to end: ``event`` is sent to the client first (resync, revoked…)."""

    event: str
    data: dict[str, Any]


class Forward(Protocol):
    """What the hub tells the other relay nodes (relay/cluster.py ``Cluster``)."""

    def forward_account(self, account_id: str, event: str, data: dict[str, Any]) -> None: ...

    def forward_resync(self, session_id: str, reason: str) -> None: ...

    def forward_revoke(self, token_hashes: list[str]) -> None: ...


Frames = list[tuple[int, bytes]]  # (seq, frame); seq 0 for unnumbered frames
Item = Frames | Close


@dataclass(eq=False)
class Subscriber:
    limit: int
    token_hash: str
    queue: asyncio.Queue[Item] = field(default_factory=asyncio.Queue)
    buffered: int = 0
    closed: bool = False
    key: tuple[str, str] = ("", "")  # ("session" | "account", id): where it is registered

    def offer(self, frames: Frames) -> None:
        if self.closed:
            return
        self.buffered += len(frames)
        if self.buffered > self.limit:
            self.close(
                "resync",
                {"reason": "too_slow", "message": "this stream fell too far behind; reload"},
            )
            return
        self.queue.put_nowait(frames)

    def close(self, event: str, data: dict[str, Any]) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(Close(event, data))

    async def next(self, timeout: float) -> Item | None:
        """The next item, or None when ``timeout`` passes first."""
        # The fast path matters with many subscribers: no task and no timer per item.
        if not self.queue.empty():
            item = self.queue.get_nowait()
        else:
            try:
                async with asyncio.timeout(timeout):
                    item = await self.queue.get()
            except TimeoutError:
                return None
        if isinstance(item, list):
            self.buffered -= len(item)
        return item


TOO_MANY_STREAMS = "too_many_streams"


class Hub:
    def __init__(self, queue_limit: int, streams_per_token: int = 0) -> None:
        self.queue_limit = queue_limit
        self.streams_per_token = streams_per_token  # 0: no limit
        self._sessions: dict[str, set[Subscriber]] = defaultdict(set)
        self._accounts: dict[str, set[Subscriber]] = defaultdict(set)
        # Each login's open streams, oldest first (closed ones leave as they are closed).
        self._tokens: dict[str, list[Subscriber]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        # The newest seq published per session that has viewers (relay/cluster.py reads on
        # from it when a notification is too large to carry the events).
        self.latest: dict[str, int] = {}
        # Where account updates, resyncs and revocations go beyond this process (the other
        # relay nodes: relay/cluster.py); None on one node.
        self.forward: Forward | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    # -- subscriptions -----------------------------------------------------------

    def subscribe_session(self, session_id: str, token_hash: str) -> Subscriber:
        sub = Subscriber(self.queue_limit, token_hash, key=("session", session_id))
        self._sessions[session_id].add(sub)
        self._count(sub)
        return sub

    def subscribe_account(self, account_id: str, token_hash: str) -> Subscriber:
        sub = Subscriber(self.queue_limit, token_hash, key=("account", account_id))
        self._accounts[account_id].add(sub)
        self._count(sub)
        return sub

    def _count(self, sub: Subscriber) -> None:
        """Count the new stream against its login, closing the login's oldest past the limit."""
        mine = [s for s in self._tokens.get(sub.token_hash, []) if not s.closed]
        while self.streams_per_token > 0 and len(mine) >= self.streams_per_token:
            oldest = mine.pop(0)
            oldest.close(
                "closed",
                {
                    "reason": TOO_MANY_STREAMS,
                    "message": f"this login opened more than {self.streams_per_token} streams "
                    "(sse_max_streams_per_token), so its oldest was closed; reload to read here "
                    "again",
                },
            )
        mine.append(sub)
        self._tokens[sub.token_hash] = mine

    def streams_of(self, token_hash: str) -> int:
        """The streams a login holds open here."""
        return sum(1 for s in self._tokens.get(token_hash, []) if not s.closed)

    def unsubscribe(self, sub: Subscriber) -> None:
        mine = self._tokens.get(sub.token_hash)
        if mine is not None:
            left = [s for s in mine if s is not sub and not s.closed]
            if left:
                self._tokens[sub.token_hash] = left
            else:
                del self._tokens[sub.token_hash]
        kind, ident = sub.key
        table = self._sessions if kind == "session" else self._accounts
        subs = table.get(ident)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del table[ident]
                if kind == "session":
                    self.latest.pop(ident, None)

    def has_viewers(self, session_id: str) -> bool:
        return bool(self._sessions.get(session_id))

    def viewed_sessions(self) -> list[str]:
        return list(self._sessions)

    def subscriber_count(self) -> int:
        return sum(len(s) for s in self._sessions.values()) + sum(
            len(s) for s in self._accounts.values()
        )

    # -- publishing ----------------------------------------------------------------

    def publish_events_threadsafe(
        self, account_id: str, session_id: str, events: list[tuple[int, str]]
    ) -> None:
        """Called by the store's writer after COMMIT; hops onto the event loop in order."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self.publish_events, session_id, events)

    def publish_events(self, session_id: str, events: list[tuple[int, str]]) -> None:
        subs = self._sessions.get(session_id)
        if not subs or not events:
            return
        self.latest[session_id] = max(self.latest.get(session_id, 0), events[-1][0])
        frames = [(seq, sse_frame(data, event="event", id=seq)) for seq, data in events]
        for sub in list(subs):
            sub.offer(frames)

    def publish_account(
        self, account_id: str, event: str, data: dict[str, Any], *, forward: bool = True
    ) -> None:
        """To the account's streams here, and (``forward``) on the other relay nodes."""
        if forward and self.forward is not None:
            self.forward.forward_account(account_id, event, data)
        subs = self._accounts.get(account_id)
        if not subs:
            return
        frames = [(0, sse_frame(dumps(data), event=event))]  # never NaN / Infinity
        for sub in list(subs):
            sub.offer(frames)

    def resync_session(self, session_id: str, reason: str, *, forward: bool = True) -> None:
        """The session's history was restarted (new epoch): every viewer must reload."""
        if forward and self.forward is not None:
            self.forward.forward_resync(session_id, reason)
        for sub in list(self._sessions.get(session_id, ())):
            sub.close(
                "resync", {"reason": reason, "message": "this session's history restarted; reload"}
            )

    def resync_accounts(self, reason: str) -> None:
        """Every account stream here must start again from a snapshot (updates were missed)."""
        for subs in self._accounts.values():
            for sub in list(subs):
                sub.close("resync", {"reason": reason, "message": "reconnect for a fresh list"})

    def revoke(self, token_hashes: list[str], *, forward: bool = True) -> None:
        if forward and self.forward is not None:
            self.forward.forward_revoke(token_hashes)
        wanted = set(token_hashes)
        for table in (self._sessions, self._accounts):
            for subs in table.values():
                for sub in list(subs):
                    if sub.token_hash in wanted:
                        sub.close("revoked", {"message": "this login was revoked; pair again"})
