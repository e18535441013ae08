"""The relay's running parts, held together for routes and the link, and the snapshots they show."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from relay.auth import RateLimiter
from relay.errors import NotFound
from relay.hookspecs import Hooks
from relay.hub import Hub
from relay.live import DeviceLink, Live
from relay.peers import Peers
from relay.store import Device, Session, Store
from wire.claude_versions import claude_standing
from wire.config import Config
from wire.protocol import SessionInfo
from wire.tasks import TaskSet

_log = logging.getLogger("relay")

P = TypeVar("P")


def iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# What a change of is worth storing in ``last_known`` (the activity line changes too often).
_KNOWN_KEYS = ("state", "needs_you", "card_kind", "failure")


def known_of(info: SessionInfo) -> dict[str, Any] | None:
    """A session's ``last_known`` from what its Mac said; None before it said a state."""
    if not info.state:
        return None
    known: dict[str, Any] = {
        "state": info.state,
        "activity": info.activity,
        "needs_you": info.card is not None,
        "card_kind": info.card.kind if info.card else None,
    }
    if info.failure is not None:
        known["failure"] = info.failure.model_dump()  # still said while the Mac is offline
    return known


def first_message_pending(last_seq: int, live: SessionInfo | None) -> bool:
    """Whether a session is still starting for the person: nothing in its history yet and a
    message (the prompt it was started with) still waiting to be typed. Claude Code shows its
    prompt (the Mac says "idle") a moment before the first message is typed."""
    if last_seq > 0 or live is None:
        return False
    return any(m.state in ("held", "typing") for m in live.held or [])


@dataclass
class RelayState:
    """The core's running parts: the store, the hub, the live side, the cluster. What the
    features add to the core is on ``hooks`` (relay/hookspecs.py); a feature's own state is on
    its running part (``part``), never here."""

    config: Config
    store: Store
    hub: Hub
    live: Live = field(default_factory=Live)
    pair_limiter: RateLimiter = field(init=False)
    started_at: float = field(default_factory=time.time)
    # What the features registered at start-up (relay/feature.py), by extension point.
    hooks: Hooks = field(default_factory=Hooks)
    # Each feature's running part, by its class: ``state.part(Retention)``.
    parts: dict[type, object] = field(default_factory=dict)
    # What each session's Mac last said (``last_known``), as stored: read at start-up so a
    # session of a Mac that is offline across a relay restart still shows it.
    last_known: dict[str, dict[str, Any]] = field(default_factory=dict)
    # This node's part in a cluster of relay nodes on PostgreSQL (relay/cluster.py); None when
    # the relay is one process (SQLite).
    cluster: Peers | None = None
    # The core's own background tasks (each linked Mac's token watch), closed as the relay stops.
    tasks: TaskSet = field(default_factory=lambda: TaskSet("relay", _log))

    def __post_init__(self) -> None:
        self.pair_limiter = RateLimiter(self.config.int("pair_attempts_per_minute"))

    def add_part(self, part: object) -> None:
        self.parts[type(part)] = part

    def part(self, kind: type[P]) -> P | None:
        """The running part of class ``kind`` a feature registered, None when there is none."""
        found = self.parts.get(kind)
        return found if isinstance(found, kind) else None

    # -- snapshots -------------------------------------------------------------

    def device_json(self, device: Device) -> dict[str, Any]:
        link = self.live.link(device.id)
        online = link is not None and not link.closed
        return {
            "id": device.id,
            "name": device.name,
            "online": online,
            "last_seen": iso(time.time() if online else device.last_seen),
            "info": device.info,
            "claude_standing": claude_standing(device.info),
        }

    def session_json(self, session: Session, *, full: bool = False) -> dict[str, Any]:
        live = self.live.sessions.get(session.id)
        online = self.live.link(session.device_id) is not None
        mark = session.mark
        if not online and mark is None:
            mark = "offline"
        state = live.state if (live and online and live.state) else "ended"
        if state == "idle" and first_message_pending(session.last_seq, live):
            state = "starting"  # claude is up, but what it was started with is not typed yet
        body: dict[str, Any] = {
            "id": session.id,
            "device_id": session.device_id,
            "cwd": session.cwd,
            "title": session.title,
            "group": session.group,
            # A position stored before numbers were checked may be infinite: JSON has no such
            # number (the whole list would fail to encode), so it reads as 0, the default.
            "position": session.position if math.isfinite(session.position) else 0.0,
            "locked": session.locked,
            "mark": mark,
            "state": state,
            "activity": live.activity if live and online else None,
            "card": live.card.model_dump() if live and online and live.card else None,
            "needs_you": bool(live and online and live.card),
            "error": live.error if live and online else None,  # the Mac could not start it
            # claude ended before the session was live: {code, reason, action, last_lines …}
            "failure": self._failure(session.id, live, online),
            # What the Mac last said, kept while it is offline: its state is unknown, not stopped.
            "last_known": None if online else self._last_known(session.id, live),
            "created_at": iso(session.created_at),
            "updated_at": iso(session.updated_at),
            "conversation_id": session.conversation_id,
            "permission_mode": (live.permission_mode if live and live.permission_mode else None)
            or session.permission_mode,
            "last_seq": session.last_seq,
            "oldest_seq": session.oldest_seq,
            "epoch": session.epoch,
            "parent_id": session.parent_id,  # a fork's parent session
            "branch": session.branch,  # the branch of its own git worktree
            # Usage and cost (relay/features/usage.py): {"usd", "tokens", "source"}; usd None =
            # unknown price; None when the relay does not count usage.
            "cost": None,
        }
        for fields in self.hooks.session_fields:
            body.update(fields(session))
        if full:
            body["conversation_ids"] = session.conversation_ids
            body["held"] = [h.model_dump() for h in live.held or []] if live and online else []
            body["preview"] = live.preview if live and online else None
            body["model"] = live.model if live else None
        return body

    def _failure(
        self, session_id: str, live: SessionInfo | None, online: bool
    ) -> dict[str, Any] | None:
        if online:
            return live.failure.model_dump() if live and live.failure else None
        known = self._last_known(session_id, live) or {}
        failure = known.get("failure")
        return failure if isinstance(failure, dict) else None

    def _last_known(self, session_id: str, live: SessionInfo | None) -> dict[str, Any] | None:
        known = known_of(live) if live is not None else None
        return known or self.last_known.get(session_id)

    async def keep_last_known(self, session_id: str, info: SessionInfo) -> None:
        """Store what the Mac now says of a session when its state or card changed (not every
        activity line): what an offline Mac's session shows, even after a relay restart."""
        known = known_of(info)
        kept = self.last_known.get(session_id)
        if known is None or (kept and all(kept.get(k) == known.get(k) for k in _KNOWN_KEYS)):
            return
        self.last_known[session_id] = known
        await self.store.save_last_known(session_id, known)

    # -- publishing to /api/stream -----------------------------------------------

    def publish_session(self, session: Session) -> None:
        body = self.session_json(session)
        for fields in self.hooks.event_fields:
            body.update(fields(session))
        self.hub.publish_account(session.account_id, "session", body)

    async def check_pair_rate(self, client: str) -> None:
        """Pairing attempts per client address: counted by every node together in a cluster."""
        if self.cluster is not None:
            await self.cluster.check_rate(
                f"pair:{client}", self.config.int("pair_attempts_per_minute"), 60.0
            )
        else:
            self.pair_limiter.check(client)

    def publish_device(
        self,
        account_id: str,
        device_id: str,
        info: dict[str, Any] | None = None,
        *,
        forward: bool = True,
    ) -> None:
        """``info``: what the Mac's hello just said about itself (its Claude Code version too)."""
        link = self.live.link(device_id)
        body: dict[str, Any] = {
            "id": device_id,
            "online": link is not None,
            "last_seen": iso(time.time()),
        }
        if info is not None:
            body["info"] = info
            body["claude_standing"] = claude_standing(info)
            if info.get("name"):
                body["name"] = info["name"]  # a new Mac shows by its name at once
        self.hub.publish_account(account_id, "device", body, forward=forward)

    async def session_update(self, link: DeviceLink, info: SessionInfo) -> None:
        try:
            session = await self.store.get_session(link.account_id, info.session_id)
        except NotFound:
            return  # an update for a session the relay has not stored yet: lines will create it
        before = self.live.sessions.get(info.session_id)
        merged = self.live.update(info)
        preview_only = info.model_fields_set <= {"session_id", "preview"}
        if self.cluster is not None:
            self.cluster.share_live(link.account_id, link.device_id, merged, keep=not preview_only)
        await self.keep_last_known(session.id, merged)
        self.hooks.watch(link.account_id, session, before, merged)
        if preview_only:
            # A preview alone: send just the text, not the whole session.
            self.hub.publish_account(
                link.account_id, "preview", {"session_id": info.session_id, "text": merged.preview}
            )
            return
        self.publish_session(session)
