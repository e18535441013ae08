"""A running session's own controls, from the phone: Esc (interrupt the turn), the permission
mode (Shift+Tab, until the mode line shows it) and the model (``/model``).

Each is driven through Claude Code's own keys by the session's driver (agent/driver.py; the
rules of each step are agent/modes.py's); a stopped session keeps a mode or model for its next
start.
"""

from __future__ import annotations

from typing import Any, Protocol

from agent.commands import Handler
from agent.driver import SessionDriver
from agent.registry import SessionRecord
from wire.protocol import InterruptArgs, SetModeArgs, SetModelArgs


class ControlsHost(Protocol):
    """What the controls need of the sessions (agent/sessions.py's ``Sessions``)."""

    def record(self, session_id: str) -> SessionRecord: ...
    def driver(self, record: SessionRecord) -> SessionDriver: ...


class Controls:
    """The commands interrupt, set_mode and set_model."""

    def __init__(self, sessions: ControlsHost) -> None:
        self.sessions = sessions

    def handlers(self) -> list[Handler]:
        return [
            (InterruptArgs, self.interrupt),
            (SetModeArgs, self.set_mode),
            (SetModelArgs, self.set_model),
        ]

    def _driver(self, session_id: str) -> SessionDriver:
        return self.sessions.driver(self.sessions.record(session_id))

    async def interrupt(self, session_id: str, args: InterruptArgs) -> dict[str, Any]:
        await self._driver(session_id).interrupt()
        return {}

    async def set_mode(self, session_id: str, args: SetModeArgs) -> dict[str, Any]:
        return await self._driver(session_id).set_mode(args.mode)

    async def set_model(self, session_id: str, args: SetModelArgs) -> dict[str, Any]:
        return await self._driver(session_id).set_model(args.model)
