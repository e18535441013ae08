"""The agent's session registry: ``<data>/sessions.json``.

Everything the agent must remember across its own restarts and the Mac's reboots: which sessions
exist, where they run, their conversation, how far each transcript was acknowledged by the relay,
their held messages and permission settings. The multiplexer server outlives the agent, so a new
agent reads this file and carries on with the sessions still running; after a reboot it revives
the recent ones. Written atomically (temp file + rename), never half.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agent.errors import RegistryDamaged as RegistryDamaged
from agent.files import write_json
from wire.protocol import HeldMessage

REGISTRY_VERSION = 1


def is_session_id(value: str) -> bool:
    """Session ids are UUIDs: the first conversation's ``claude --session-id`` takes only those,
    and the id also names the session's terminal, hook token and archive file."""
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


@dataclass
class SessionRecord:
    id: str
    cwd: str
    created_at: float
    conversation_id: str | None = None
    transcript_path: str | None = None
    conversation_ids: list[str] = field(default_factory=list)
    permission_mode: str | None = None
    model: str | None = None
    secret: str = ""
    # Life: `alive` means the person wants it running (launched and not ended or rested).
    alive: bool = True
    last_alive_at: float = 0.0
    ended_by_person: bool = False
    resting: bool = False
    launched_at: float = 0.0
    # How far each conversation file was stored by the relay: the offset of the last stored line.
    acked: dict[str, int] = field(default_factory=dict)
    held: list[HeldMessage] = field(default_factory=list)
    allow_all: bool = False  # kept in step with policy["allow_all"] (older files had only it)
    policy: dict[str, Any] = field(default_factory=dict)  # wire/policy.py's JSON form
    grants: list[dict[str, Any]] = field(default_factory=list)  # agent/grants.py: this claude's
    marker_seq: int = 0  # offsets of the bridge's own marker lines
    pending_markers: list[dict[str, Any]] = field(default_factory=list)  # not yet stored
    # A fork (POST …/fork): the session it came from, the conversation claude forked
    # (``--resume <it> --fork-session`` until the fork has a transcript of its own) and the copy
    # of that conversation as it was, whose lines the relay shows first (the fork's history).
    parent_id: str | None = None
    fork_conversation: str | None = None
    fork_copy: str | None = None
    # A session in a git worktree of its own (agent/worktree.py): its top and its branch.
    worktree: str | None = None
    branch: str | None = None
    # The Mac (its name) this session's folder arrived from with a move, until the person
    # trusted the folder here: Claude Code's trust dialog is theirs to answer on the phone,
    # never passed by the agent (agent/autopass.py), at every start until then.
    arrived_from: str | None = None
    # How the stopped session starts again (set_resume; agent/launch.py's plan_launch): its
    # resume scope (None: full), the handoff a fresh start types first and the count of
    # decisions it holds; ``lead``: what is typed, alone and in order, before held messages
    # once the started claude is idle (the handoff, or ``/compact``), kept till it is typed.
    resume_scope: str | None = None
    handoff: str | None = None
    handoff_decisions: int = 0
    lead: list[str] = field(default_factory=list)
    resumed_scope: str | None = None  # the scope its latest start used (None: not a resume)
    # Why its claude ended before it was live (wire's StartFailureInfo as JSON), kept across
    # the agent's restarts until a start works.
    start_failure: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["held"] = [h.model_dump() for h in self.held]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SessionRecord:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["held"] = [HeldMessage.model_validate(h) for h in data.get("held", [])]
        return cls(**values)


class Registry:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.sessions: dict[str, SessionRecord] = {}

    def load(self) -> Registry:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return self
        except (OSError, ValueError) as exc:
            # Keep the damaged file for a person to look at; start empty rather than crash.
            broken = self.path.with_suffix(f".broken-{int(time.time())}")
            with contextlib.suppress(OSError):
                self.path.rename(broken)
            raise RegistryDamaged(
                f"{self.path} could not be read ({exc}); it was kept as {broken.name}"
            ) from exc
        for item in raw.get("sessions", []):
            record = SessionRecord.from_json(item)
            self.sessions[record.id] = record
        return self

    def save(self) -> None:
        data = {
            "version": REGISTRY_VERSION,
            "sessions": [r.to_json() for r in self.sessions.values()],
        }
        write_json(self.path, data)

    def add(self, record: SessionRecord) -> SessionRecord:
        self.sessions[record.id] = record
        self.save()
        return record

    def get(self, session_id: str) -> SessionRecord | None:
        return self.sessions.get(session_id)


def revive_candidates(
    records: list[SessionRecord], now: float, window_hours: float, limit: int
) -> list[SessionRecord]:
    """Sessions to reopen after a reboot: alive within the window, newest first, at most limit.

    Sessions alive until the reboot were last seen alive at the same moment (the registry is
    saved for all at once): then the most recently created comes first."""
    cutoff = now - window_hours * 3600
    recent = [
        r
        for r in records
        if r.alive and not r.ended_by_person and not r.resting and r.last_alive_at >= cutoff
    ]
    recent.sort(key=lambda r: (r.last_alive_at, r.created_at), reverse=True)
    return recent[:limit]
