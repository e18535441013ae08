"""Hooks: read the ``--settings`` file, build the payloads, run the commands.

Payload keys come in the order the real program wrote them (``tests/fixtures/hooks/*.log``).
Each command runs as ``sh -c <command>`` in the project folder with the JSON payload on
stdin, one after the other, and is killed after its ``timeout`` (seconds, default 60).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_TIMEOUT_S = 60.0
TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})

# Key order per event after session_id, transcript_path, cwd (as captured).
ORDER: dict[str, list[str]] = {
    "SessionStart": [
        "prompt_id",
        "hook_event_name",
        "source",
        "model",
        "seconds_since_last_response",
        "context_tokens",
        "prompt_cache_likely_expired",
        "estimated_cache_write_usd",
    ],
    "SessionEnd": ["prompt_id", "hook_event_name", "reason"],
    "UserPromptSubmit": ["prompt_id", "permission_mode", "hook_event_name", "prompt"],
    "PreToolUse": [
        "prompt_id",
        "permission_mode",
        "agent_id",
        "agent_type",
        "effort",
        "hook_event_name",
        "tool_name",
        "tool_input",
        "tool_use_id",
    ],
    "PermissionRequest": [
        "prompt_id",
        "permission_mode",
        "effort",
        "hook_event_name",
        "tool_name",
        "tool_input",
        "permission_suggestions",
    ],
    "PostToolUse": [
        "prompt_id",
        "permission_mode",
        "agent_id",
        "agent_type",
        "effort",
        "hook_event_name",
        "tool_name",
        "tool_input",
        "tool_response",
        "tool_use_id",
        "duration_ms",
    ],
    "PostToolUseFailure": [
        "prompt_id",
        "permission_mode",
        "effort",
        "hook_event_name",
        "tool_name",
        "tool_input",
        "tool_use_id",
        "error",
        "is_interrupt",
        "duration_ms",
    ],
    "Notification": ["prompt_id", "hook_event_name", "message", "notification_type"],
    "Stop": [
        "prompt_id",
        "permission_mode",
        "effort",
        "hook_event_name",
        "stop_hook_active",
        "last_assistant_message",
        "background_tasks",
        "session_crons",
    ],
    "SubagentStart": ["prompt_id", "agent_id", "agent_type", "hook_event_name"],
    "SubagentStop": [
        "prompt_id",
        "permission_mode",
        "agent_id",
        "agent_type",
        "effort",
        "hook_event_name",
        "stop_hook_active",
        "agent_transcript_path",
        "last_assistant_message",
        "background_tasks",
        "session_crons",
    ],
    "PreCompact": ["prompt_id", "hook_event_name", "trigger", "custom_instructions"],
}

_MISSING = object()


@dataclass
class Context:
    """What every payload carries about the session."""

    session_id: str
    transcript_path: str
    cwd: str
    prompt_id: str | None
    permission_mode: str


def payload(event: str, ctx: Context, **fields: Any) -> dict[str, Any]:
    """The JSON object a hook of ``event`` gets on stdin."""
    out: dict[str, Any] = {
        "session_id": ctx.session_id,
        "transcript_path": ctx.transcript_path,
        "cwd": ctx.cwd,
    }
    implicit = {
        "prompt_id": ctx.prompt_id if ctx.prompt_id is not None else _MISSING,
        "permission_mode": ctx.permission_mode,
        "effort": {"level": "medium"},
        "hook_event_name": event,
    }
    for key in ORDER[event]:
        value = fields.pop(key, implicit.get(key, _MISSING))
        if value is not _MISSING:
            out[key] = value
    out.update(fields)
    return out


@dataclass
class Result:
    command: str
    exit_code: int | None  # None: killed after its timeout
    stdout: str
    stderr: str
    duration_ms: int


def _matches(matcher: str | None, tool_name: str | None) -> bool:
    if not matcher or matcher == "*" or tool_name is None:
        return True
    try:
        return re.fullmatch(matcher, tool_name) is not None
    except re.error:
        return matcher == tool_name


class Hooks:
    """The hooks of ``~/.claude/settings.json`` and of the ``--settings`` file, run on demand."""

    def __init__(self, settings_file: str | None, home: Path, cwd: str) -> None:
        self.cwd = cwd
        self.config: dict[str, list[dict[str, Any]]] = {}
        for path in (home / ".claude" / "settings.json", settings_file):
            if path:
                self._load(str(path))

    def _load(self, path: str) -> None:
        try:
            text = (
                Path(path).read_text(encoding="utf-8")
                if not path.lstrip().startswith("{")
                else path
            )
            data = json.loads(text)
        except (OSError, ValueError):
            return
        for event, groups in (data.get("hooks") or {}).items():
            self.config.setdefault(event, []).extend(groups if isinstance(groups, list) else [])

    def commands(self, event: str, tool_name: str | None = None) -> list[tuple[str, float]]:
        out = []
        for group in self.config.get(event, []):
            if event in TOOL_EVENTS and not _matches(group.get("matcher"), tool_name):
                continue
            for hook in group.get("hooks", []):
                if hook.get("type", "command") == "command" and hook.get("command"):
                    out.append((hook["command"], float(hook.get("timeout") or DEFAULT_TIMEOUT_S)))
        return out

    def run(self, event: str, data: dict[str, Any], tool_name: str | None = None) -> list[Result]:
        body = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()
        env = dict(os.environ, CLAUDE_PROJECT_DIR=self.cwd)
        # Own session: a hook still running when the terminal hangs up (tmux kill-server) must
        # not get its SIGHUP, or SessionEnd(reason "other") would be lost.
        results = []
        for command, timeout in self.commands(event, tool_name):
            start = time.monotonic()
            child = subprocess.Popen(
                ["sh", "-c", command],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.cwd,
                env=env,
                start_new_session=True,
            )
            code: int | None
            try:
                out, err = child.communicate(body, timeout=timeout)
                code = child.returncode
            except subprocess.TimeoutExpired:  # killed after its timeout, with its children
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                out, err = child.communicate()
                code = None
            ms = int((time.monotonic() - start) * 1000)
            results.append(
                Result(
                    command, code, out.decode(errors="replace"), err.decode(errors="replace"), ms
                )
            )
        return results


def permission_decision(results: list[Result]) -> tuple[str, str] | None:
    """``("allow", "")`` or ``("deny", message)`` from PermissionRequest hook output, else None."""
    decision = None
    for result in results:
        if result.exit_code != 0:
            continue
        try:
            data = json.loads(result.stdout.strip() or "null")
            got = data["hookSpecificOutput"]["decision"]
        except (ValueError, TypeError, KeyError):
            continue
        if got.get("behavior") == "deny":
            return "deny", str(got.get("message") or "Denied by PermissionRequest hook")
        if got.get("behavior") == "allow":
            decision = ("allow", "")
    return decision
