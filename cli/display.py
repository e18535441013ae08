"""How sessions and events read in a terminal: states, costs, times, folders, events as lines.

A library, not a command, and pure: the session commands print what these return.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime

from cli.client import Event, SearchItem, SessionSnapshot


def state_of(session: SessionSnapshot | SearchItem) -> str:
    """What a person calls its state: the mark (ended, resting, offline) or the live state."""
    mark = session.get("mark")
    return str(mark) if mark else str(session.get("state") or "ended")


RUNNING_STATES = {"starting", "idle", "busy", "waiting"}


def is_running(session: SessionSnapshot) -> bool:
    """Whether the session's claude runs now, as the relay last heard."""
    return session.get("state") in RUNNING_STATES and session.get("mark") not in (
        "ended",
        "resting",
    )


def trouble_lines(session: Mapping[str, object], indent: str = "  ") -> list[str]:
    """What went wrong with a session and what to do, as the page says it: a claude that ended
    before the session was live (its reason, then the action), else the session's error."""
    failure = session.get("failure")
    if isinstance(failure, dict) and failure:
        said = failure.get("reason") or failure.get("code") or "Claude Code ended"
        action = failure.get("action")
        return [f"{indent}Did not start: {said}", *([f"{indent}→ {action}"] if action else [])]
    error = session.get("error")
    return [f"{indent}Error: {error}"] if error else []


def usd_text(usd: object, unknown: str = "unknown") -> str:
    """An amount in USD: to the hundredth of a cent below a dollar, to the cent above;
    ``unknown`` when there is no amount."""
    if isinstance(usd, int | float) and not isinstance(usd, bool):
        return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"
    return unknown


def cost_text(session: Mapping[str, object]) -> str:
    """The USD a session cost so far (a snapshot, or a row of `claude-bridge sessions`)."""
    cost = session.get("cost")
    return usd_text(cost.get("usd") if isinstance(cost, dict) else None, unknown="—")


def when(iso: str | None) -> str:
    """``2026-11-29T21:33:33.197Z`` → ``2026-11-29 22:33`` in local time."""
    if not iso:
        return "—"
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def short_folder(path: str) -> str:
    """A folder under the home folder as ``~/…``."""
    home = os.path.expanduser("~")
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


def named(session: SessionSnapshot) -> str:
    """A session as a sentence names it: its id, and its title when it has one."""
    title = session.get("title")
    return f'{session["id"]} ("{title}")' if title else str(session["id"])


def describe(event: Event) -> str:
    """One event as a terminal line (or a few): ``#12  claude: Delegating to a subagent.``"""
    kind = event.get("kind")
    text = str(event.get("text") or "")
    if kind == "user":
        body = f"you: {text}"
    elif kind == "assistant":
        body = f"claude: {text}"
    elif kind == "thinking":
        body = f"(thinking) {clip(first_line(text), 120)}"
    elif kind == "tool_use":
        body = f"{event.get('tool') or 'tool'}: {event.get('summary') or ''}".rstrip(": ")
    elif kind == "tool_result":
        lines = text.count("\n") + 1 if text else 0
        more = f" (+{lines - 1} lines)" if lines > 1 else ""
        error = " [error]" if event.get("is_error") else ""
        body = f"  → {clip(first_line(text), 160)}{more}{error}"
    else:
        body = f"· {text}"
    agent = event.get("agent_id")
    if agent:
        body = f"[subagent {str(agent)[:8]}] {body}"
    prefix = f"#{event.get('seq', '?')}".ljust(6)
    return prefix + body.replace("\n", "\n" + " " * 6)


def first_line(text: str) -> str:
    """The first line of ``text``, stripped."""
    return text.strip().split("\n", 1)[0]


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in … when it was longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
