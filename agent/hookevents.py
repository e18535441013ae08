"""What the agent does with each hook Claude Code reports (agent/hookserver.py hears them).

A hook goes to its session's driver (its facts for the state, the requests that may ask); a
SessionStart names the conversation (and its transcript) the session runs now; a
PermissionRequest is answered by the session's permissions (agent/permissions.py); a
PermissionDenied waits for the phone's "allow once" and the PreToolUse of that retry is allowed
(agent/denials.py). Any other hook wakes the transcript reader and the session's screen reads,
since the screen changes right after, and a turn's end types what was held.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, Protocol

from agent import denials
from agent.driver import BURST_SECONDS, SessionDriver
from agent.hookserver import HookAnswer
from agent.registry import SessionRecord

_log = logging.getLogger("agent")

# The hooks after which held messages may be typed (a safe point: agent/held.py).
TURN_POINTS = ("PostToolUse", "PostToolUseFailure", "Stop")


class HookSessions(Protocol):
    """What the hooks need of the sessions (agent/sessions.py's ``Sessions``)."""

    def get(self, session_id: str) -> SessionRecord | None: ...
    def running(self, session_id: str) -> SessionDriver | None: ...
    def transcript_file(self, record: SessionRecord) -> Path: ...
    def changed(self) -> None: ...


class PermissionVerdict(Protocol):
    """Who answers a PermissionRequest (agent/permissions.py's ``Permissions``)."""

    def verdict(self, rt: SessionDriver, payload: dict[str, Any], now: float) -> HookAnswer: ...


class HookEvents:
    """The hook server's two callbacks: the secret of a session, and each report."""

    def __init__(
        self,
        sessions: HookSessions,
        permissions: PermissionVerdict,
        *,
        polling_only: bool,
        wake_transcripts: Callable[[], None],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self.sessions = sessions
        self.permissions = permissions
        self.polling_only = polling_only  # the seed's plain polling: hooks wake nothing
        self.wake_transcripts = wake_transcripts
        self.spawn = spawn

    def secret_for(self, session_id: str) -> str | None:
        record = self.sessions.get(session_id)
        return record.secret if record and record.secret else None

    async def on_hook(self, session_id: str, event: str, payload: dict[str, Any]) -> HookAnswer:
        rt = self.sessions.running(session_id)
        if rt is None:
            return None
        now = time.time()
        rt.note_hook(event, payload, now)
        if event == "SessionStart":
            self._conversation_started(rt, payload)
        if event == "PermissionDenied":
            return rt.note_denial(payload, now)  # auto mode refused a call (agent/denials.py)
        if event == "PreToolUse" and denials.allowed_once(rt.allow_once, payload, now):
            # The retry of a call the phone allowed once: the allowance is spent.
            _log.info("session %s: allowed once: %s", rt.record.id, payload.get("tool_name"))
            rt.allow_once = None
            return denials.allow_output()
        if event == "PermissionRequest":
            return self.permissions.verdict(rt, payload, now)
        if self.polling_only:
            if event in TURN_POINTS:
                self.spawn(rt.deliver_held(reason=event))
            return None
        self.wake_transcripts()
        rt.wake_screen.set()
        # A hook comes just before the screen changes (PermissionRequest before the dialog is
        # drawn): read again shortly after, so a card reaches the phone without waiting a period.
        rt.burst_until = now + BURST_SECONDS
        if event in TURN_POINTS:
            self.spawn(rt.deliver_held(reason=event))
        return None

    def _conversation_started(self, rt: SessionDriver, payload: dict[str, Any]) -> None:
        """SessionStart names the conversation claude runs now (a resume, /clear, a compaction
        may start another) and its transcript: the session follows that one from now on."""
        record = rt.record
        conversation = payload.get("session_id")
        path = payload.get("transcript_path")
        if not isinstance(conversation, str) or not conversation:
            return
        if conversation != record.conversation_id:
            record.conversation_id = conversation
            if conversation not in record.conversation_ids:
                record.conversation_ids.append(conversation)
        record.transcript_path = path if isinstance(path, str) else None
        rt.follower.follow(conversation, self.sessions.transcript_file(record))
        self.sessions.changed()
