"""Claude Code's own status file, ``~/.claude/sessions/<pid>.json`` (the third signal, beside
hooks and the screen).

Recent Claude Code (2.1.328 verified) keeps one JSON object per running process:

.. code-block:: json

    {"pid": 8720, "sessionId": "46228304-…", "cwd": "/work/x", "startedAt": 1795987961582,
     "updatedAt": 1795987963911, "statusUpdatedAt": 1795987963911, "status": "busy",
     "name": "…", "messagingSocketPath": "/tmp/cc-socks/8720.sock"}

``status`` is ``idle`` / ``busy`` / ``waiting`` (a permission dialog or the ``/model`` picker is
open). The file appears once claude is past its start-up dialogs, is rewritten as the status
changes, and is removed when claude exits. Beside it sit ``<pid>.<hash>.key`` files, which are
not ours to read. Times are milliseconds since the epoch; they are given here in seconds.

:func:`parse_status` is pure; :func:`read_status` and :func:`find_for_session` are the thin file
shell around it. A file caught half-written reads as None, like an absent one: the next read
will do.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: Numbers above this are milliseconds since the epoch (1e11 s is the year 5138).
_MS_THRESHOLD = 1e11


@dataclass(frozen=True)
class ClaudeStatus:
    pid: int
    session_id: str | None  # Claude Code's conversation id (changes on /clear)
    cwd: str | None
    status: str | None  # idle | busy | waiting, as written (None when absent)
    updated_at: float | None  # seconds since the epoch
    name: str | None
    started_at: float | None = None
    status_updated_at: float | None = None  # when ``status`` took its value
    messaging_socket_path: str | None = None

    @property
    def status_at(self) -> float | None:
        """When the status took its value: what ``state.SessionInputs.status_at`` wants."""
        return self.status_updated_at if self.status_updated_at is not None else self.updated_at


def _seconds(value: Any) -> float | None:
    """Epoch seconds from a number of ms (or s) or an ISO 8601 string; None if unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number) or number < 0:
            return None
        return number / 1000.0 if number > _MS_THRESHOLD else number
    if isinstance(value, str) and value:
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)  # JavaScript writes UTC
        return when.timestamp()
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_status(text: str, pid: int | None = None) -> ClaudeStatus | None:
    """The status in one file's text; None when it is not a whole JSON object with a pid.

    ``pid`` (from the file name) is used when the object itself has none.
    """
    try:
        data = json.loads(text)
    except ValueError:  # includes a file caught half-written
        return None
    if not isinstance(data, dict):
        return None
    raw_pid = data.get("pid", pid)
    if isinstance(raw_pid, bool) or not isinstance(raw_pid, int) or raw_pid <= 0:
        return None
    return ClaudeStatus(
        pid=raw_pid,
        session_id=_text(data.get("sessionId")),
        cwd=_text(data.get("cwd")),
        status=_text(data.get("status")),
        updated_at=_seconds(data.get("updatedAt")),
        name=_text(data.get("name")),
        started_at=_seconds(data.get("startedAt")),
        status_updated_at=_seconds(data.get("statusUpdatedAt")),
        messaging_socket_path=_text(data.get("messagingSocketPath")),
    )


def _read(path: Path, pid: int | None) -> ClaudeStatus | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return parse_status(text, pid)


def read_status(claude_home: Path, pid: int) -> ClaudeStatus | None:
    """``<claude_home>/sessions/<pid>.json`` (claude_home is ``~/.claude``); None if absent."""
    return _read(claude_home / "sessions" / f"{pid}.json", pid)


def find_for_session(claude_home: Path, session_id: str) -> ClaudeStatus | None:
    """The status file whose ``sessionId`` is ``session_id``, whatever its pid.

    claude may run as a child of the pane's shell, so its pid is not always known. When several
    files match (one left behind by a claude that was killed), the most recently updated wins.
    """
    best: ClaudeStatus | None = None
    try:
        paths = sorted((claude_home / "sessions").glob("*.json"))
    except OSError:
        return None
    for path in paths:
        stem_pid = int(path.stem) if path.stem.isdigit() else None
        found = _read(path, stem_pid)
        if found is None or found.session_id != session_id:
            continue
        if best is None or (found.updated_at or 0.0) > (best.updated_at or 0.0):
            best = found
    return best
