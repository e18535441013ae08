"""Auto mode's classifier refusing a call, and the phone's "allow once" — pure rules, no I/O.

What Claude Code 2.1.332 does (tests/fixtures/auto_mode/2.1.332/notes.md): in auto mode the
server's classifier judges each tool call; a call it flags is not run, no dialog is drawn, and
the ``PermissionDenied`` hook fires with ``{tool_name, tool_input, tool_use_id, reason}``. That
hook may answer ``{"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": true}}``:
Claude Code then tells the model it may make the call once more, and the retry goes through the
same check — which flags it again, unless a ``PreToolUse`` hook answers ``permissionDecision:
"allow"`` for it, which runs it.

So "allow once" is built on that: while the hook waits (``denial_wait`` seconds; Claude Code
shows the call as running meanwhile), the phone gets a ``denied`` card (the session needs the
person); "Allow once" answers the hook with ``retry`` and arms one ``PreToolUse`` allow for that
very call (same tool, same input), used by the retry and by nothing else. "Keep it blocked", or
no answer in time, lets the refusal stand. The conversation shows the refusal either way (a
``denial`` event, relay/convert.py, from the transcript).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wire.protocol import Card, CardOption
from wire.tools import one_line

ALLOW_ONCE = "allow_once"
KEEP_BLOCKED = "keep_blocked"
TITLE = "Blocked by auto mode"
OPTIONS = (
    CardOption(key=ALLOW_ONCE, label="Allow once"),
    CardOption(key=KEEP_BLOCKED, label="Keep it blocked"),
)
ALLOW_ONCE_FOR = 120.0  # seconds an armed "allow once" waits for the retry


@dataclass(frozen=True)
class Denial:
    tool: str
    tool_input: dict[str, Any]
    tool_use_id: str | None
    reason: str
    at: float

    def card(self, card_id: str) -> Card:
        return Card(
            id=card_id,
            kind="denied",
            title=TITLE,
            text=self.reason,
            options=list(OPTIONS),
            tool=self.tool,
            tool_input=self.tool_input,
            tool_use_id=self.tool_use_id,
            source="hook",
        )

    def same_call(self, payload: Mapping[str, Any]) -> bool:
        """Is this PreToolUse the retry of the refused call (same tool, same input)?"""
        return payload.get("tool_name") == self.tool and _canonical(
            payload.get("tool_input")
        ) == _canonical(self.tool_input)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def from_hook(payload: Mapping[str, Any], now: float) -> Denial | None:
    """The refusal a PermissionDenied payload reports; None when it names no tool."""
    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not tool:
        return None
    tool_input = payload.get("tool_input")
    tool_use_id = payload.get("tool_use_id")
    reason = payload.get("reason")
    return Denial(
        tool=tool[:200],
        tool_input=dict(tool_input) if isinstance(tool_input, dict) else {},
        tool_use_id=tool_use_id[:200] if isinstance(tool_use_id, str) and tool_use_id else None,
        reason=one_line(reason, 500) if isinstance(reason, str) and reason else "no reason given",
        at=now,
    )


def retry_output() -> str:
    """The PermissionDenied hook's answer that lets Claude Code make the call once more."""
    output = {"hookSpecificOutput": {"hookEventName": "PermissionDenied", "retry": True}}
    return json.dumps(output, separators=(",", ":"))


def allow_output() -> str:
    """The PreToolUse hook's answer that runs the retried call past the classifier."""
    output = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "allowed once from the phone (claude-bridge)",
        }
    }
    return json.dumps(output, separators=(",", ":"))


def allowed_once(armed: Denial | None, payload: Mapping[str, Any], now: float) -> bool:
    """Does the armed "allow once" answer this PreToolUse (the retry, in time)?"""
    return armed is not None and now - armed.at <= ALLOW_ONCE_FOR and armed.same_call(payload)
