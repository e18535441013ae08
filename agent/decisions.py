"""Permission requests this Mac answered by itself, told to the relay's audit log (relay/audit.py).

When a PermissionRequest hook is answered by the session's policy — a tool's or a category's rule,
or "allow all" — or by a grant of the running claude process (agent/grants.py), no card is ever shown, so the relay cannot see the decision: the agent sends a
``decision`` link message (wire/protocol.py) naming the rule that made it and a digest of the
tool input. Decisions wait here (and in ``decisions.json`` in the data folder, across restarts)
until the relay acknowledges them; each has its own id, so one sent twice is kept once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agent.errors import NotLinked
from agent.files import write_json
from agent.grants import Grant
from agent.seams import AgentLink
from agent.state import RunningTool
from wire.policy import Verdict
from wire.protocol import Decision, DecisionAck, input_digest
from wire.tasks import TaskSet
from wire.tools import summarize_tool_input

_log = logging.getLogger("agent.decisions")

KEPT = 1000  # decisions waiting for the relay; the oldest go first when more pile up
RETRY = 1.0  # seconds before sending again after the link dropped mid-send
RESEND_AFTER = 10.0  # seconds a sent decision waits for its ack before it is sent again
SUMMARY_CHARS = 500


def rule_text(
    verdict: Verdict,
    tool: str | None,
    allow_all_until: float | None = None,
    grant: Grant | None = None,
) -> str:
    """The rule that decided, as the audit log shows it."""
    if verdict.source == "grant" and grant is not None:
        return f"grant {grant.id} (this claude process): {grant.describe()}: allow"
    if verdict.source == "tool":
        return f"tool {tool}: {verdict.rule}"
    if verdict.source == "category":
        return f"category {verdict.category}: {verdict.rule}"
    if verdict.source == "allow_all":
        if allow_all_until is None:
            return "allow all"
        until = datetime.fromtimestamp(allow_all_until, UTC).isoformat(timespec="seconds")
        return f"allow all until {until.replace('+00:00', 'Z')}"
    return f"{verdict.source}: {verdict.rule}"


def decision_for(
    session_id: str,
    verdict: Verdict,
    payload: Mapping[str, Any],
    *,
    allow_all_until: float | None = None,
    running: Sequence[RunningTool] = (),
    now: float | None = None,
    grant: Grant | None = None,
) -> Decision | None:
    """The ``decision`` message for a hook the policy answered; None when it asks the person.

    Claude Code's PermissionRequest payload has no ``tool_use_id``; the PreToolUse just before
    it has: the newest running tool of that name (``running``, the main agent's) is the one."""
    if verdict.rule not in ("allow", "deny"):
        return None
    tool = payload.get("tool_name")
    tool = tool if isinstance(tool, str) else None
    tool_input = payload.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else None
    tool_use_id = payload.get("tool_use_id")
    if not isinstance(tool_use_id, str) and "agent_id" not in payload:
        tool_use_id = next((t.tool_use_id for t in reversed(running) if t.name == tool), None)
    summary = summarize_tool_input(tool, tool_input) if tool and tool_input is not None else ""
    return Decision(
        id=f"dec_{secrets.token_hex(12)}",
        session_id=session_id,
        at=time.time() if now is None else now,
        source="allow_all" if verdict.source == "allow_all" else "policy",
        rule=rule_text(verdict, tool, allow_all_until, grant)[:500],
        decision="allow" if verdict.rule == "allow" else "deny",
        tool=tool[:200] if tool else None,
        tool_use_id=tool_use_id[:200] if isinstance(tool_use_id, str) else None,
        input_digest=input_digest(tool_input),
        summary=summary[:SUMMARY_CHARS],
    )


class DecisionLog:
    """The decisions the relay has not acknowledged yet, kept on disk, and the task that sends
    them.

    A decision leaves this log only when the relay answers ``decision_ack`` (stored now or
    before, or refused for good): one sent on a link that dropped, or still waiting when the
    agent stopped, is sent again, and the relay keeps it once."""

    def __init__(self, link: AgentLink, path: Path | None = None) -> None:
        self.link = link
        self.path = path
        self.pending: dict[str, Decision] = {}
        self._sent_at: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._tasks = TaskSet("decisions", _log)  # the sender
        self._sender: asyncio.Task[None] | None = None
        link.on_decision_ack = self._acknowledged
        self._load()

    def note(
        self,
        session_id: str,
        verdict: Verdict,
        payload: Mapping[str, Any],
        running: Sequence[RunningTool] = (),
        allow_all_until: float | None = None,
        grant: Grant | None = None,
    ) -> None:
        """A hook was answered by the policy or a grant: tell the relay (soon, or once it is
        back)."""
        decision = decision_for(
            session_id, verdict, payload, allow_all_until=allow_all_until, running=running,
            grant=grant,
        )  # fmt: skip
        if decision is None:
            return
        self.pending[decision.id] = decision
        while len(self.pending) > KEPT:  # the oldest go first when the relay is away for long
            dropped = next(iter(self.pending))
            del self.pending[dropped]
            _log.warning("dropped decision %s: more than %d wait for the relay", dropped, KEPT)
        self._save()
        self.start()

    def start(self) -> None:
        """Send what is waiting (decisions kept from before a restart, too); once the log is
        closed, what is noted waits on disk for the next start."""
        self._wake.set()
        if (self._sender is None or self._sender.done()) and not self._tasks.closed:
            self._sender = self._tasks.start(self._run(), name="sender")

    def _acknowledged(self, ack: DecisionAck) -> None:
        if ack.id not in self.pending:
            return
        if not ack.stored:
            _log.warning("the relay's audit log refused decision %s: %s", ack.id, ack.code)
        del self.pending[ack.id]
        self._sent_at.pop(ack.id, None)
        self._save()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), RESEND_AFTER)
            self._wake.clear()
            await self.link.linked.wait()
            now = time.monotonic()
            for decision in list(self.pending.values()):
                sent = self._sent_at.get(decision.id)
                if sent is not None and now - sent < RESEND_AFTER:
                    continue  # its ack may still be on the way
                try:
                    await self.link.send(decision)
                except NotLinked:
                    await asyncio.sleep(RETRY)
                    self._wake.set()
                    break
                self._sent_at[decision.id] = now

    def _load(self) -> None:
        if self.path is None or not self.path.exists():
            return
        try:
            items = json.loads(self.path.read_text(encoding="utf-8"))
            kept = [Decision.model_validate(item) for item in items]
        except (OSError, ValueError) as exc:  # ValidationError is a ValueError
            _log.warning("cannot read %s (%s): its decisions are not sent", self.path, exc)
            return
        self.pending = {d.id: d for d in kept[-KEPT:]}
        if self.pending:
            _log.info("%d decisions from before wait for the relay's audit log", len(kept))

    def _save(self) -> None:
        if self.path is not None:
            write_json(self.path, [d.model_dump(mode="json") for d in self.pending.values()])

    async def close(self) -> None:
        await self._tasks.close()
        self._sender = None
        if self.pending:
            _log.info("%d decisions wait for the relay's audit log (kept)", len(self.pending))
