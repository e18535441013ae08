"""The settings file the agent passes to ``claude --settings <data>/hooks.json``.

It registers ``/bin/sh <path>/hooks/cb-hook <Event>`` for every hook event the bridge listens to,
in the form Claude Code 2.1.328 was seen to run
(``tests/fixtures/screens/a_startup_trust/hooks-settings.json``): tool events carry ``"matcher": "*"``, the others no matcher. The person's own
``~/.claude/settings.json`` is never touched; ``--settings`` adds these hooks beside theirs.

The hook only reports when ``CB_HOOK`` is set (``hook_env``), which the agent does only in the
terminals it launches.

Timeouts, from the inside out (all seconds):

* the hook server answers a PermissionRequest within its ``decision_timeout`` (2) or says "ask";
* cb-hook waits ``CB_HOOK_WAIT`` (5) for that answer, ``CB_HOOK_MAX_TIME`` (1) for other events,
  and 0.2 to connect;
* Claude Code kills the hook after the ``timeout`` written here: ``permission_timeout_s`` for
  PermissionRequest (keep it above ``CB_HOOK_WAIT``), ``event_timeout_s`` (5) for the rest.
"""

from __future__ import annotations

import contextlib
import importlib.util
import re
import secrets
import shlex
import stat
from pathlib import Path
from typing import Any

from agent.files import write_json
from agent.hookserver import HOOK_EVENTS

TOOL_EVENTS = frozenset(
    {"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied"}
)
"""Events that take a tool-name matcher; ``*`` = every tool."""

EVENT_TIMEOUT_S = 5
PERMISSION_TIMEOUT_S = 10
PERMISSION_WAIT_S = 5.0
"""Default ``CB_HOOK_WAIT``: how long cb-hook waits for a PermissionRequest decision."""

HOOK_COMMAND = "cb-hook"
"""The hook command's file name inside the ``hooks`` package."""
HOOK_SHELL = "/bin/sh"
"""What runs it: the POSIX shell its first line names, on macOS and Linux alike."""

_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def hook_command_path() -> Path:
    """The absolute path of the installed ``hooks/cb-hook`` (package data of ``hooks``).

    The package is located, not imported. The settings run it through ``/bin/sh``, so it needs no
    execute bit (an install may drop it, or be read-only); it is still made executable where it
    can be, for a person or a benchmark running it by hand.
    """
    spec = importlib.util.find_spec("hooks")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the hook command is not installed (no package 'hooks' beside the agent); "
            "reinstall claude-bridge (`pipx reinstall claude-bridge`, or `scripts/setup` in a clone)"
        )
    path = Path(next(iter(spec.submodule_search_locations))).resolve() / HOOK_COMMAND
    if not path.is_file():
        raise FileNotFoundError(
            f"the hook command {path} is missing; reinstall claude-bridge "
            "(`pipx reinstall claude-bridge`, or `scripts/setup` in a clone)"
        )
    mode = path.stat().st_mode
    wanted = mode | ((mode & 0o444) >> 2)  # execute wherever it is readable
    if wanted != mode:
        with contextlib.suppress(OSError):  # not ours to change: /bin/sh runs it all the same
            path.chmod(stat.S_IMODE(wanted))
    return path


def build_settings(
    hook_path: Path,
    permission_timeout_s: int = PERMISSION_TIMEOUT_S,
    *,
    event_timeout_s: int = EVENT_TIMEOUT_S,
    denial_timeout_s: int | None = None,
) -> dict[str, Any]:
    """The ``--settings`` document: one ``/bin/sh <hook_path> <Event>`` command per hook event."""
    if not hook_path.is_absolute():
        raise ValueError(f"the hook command path must be absolute, not {str(hook_path)!r}")
    if permission_timeout_s < 1 or event_timeout_s < 1:
        raise ValueError("hook timeouts are whole seconds, at least 1")
    # Through the shell by path: no execute bit needed, and still no Python process per call.
    command = f"{HOOK_SHELL} {shlex.quote(str(hook_path))}"
    hooks: dict[str, list[dict[str, Any]]] = {}
    for event in HOOK_EVENTS:
        timeout = permission_timeout_s if event == "PermissionRequest" else event_timeout_s
        if event == "PermissionDenied" and denial_timeout_s is not None:
            timeout = max(timeout, denial_timeout_s)  # it waits for the phone's "allow once"
        entry: dict[str, Any] = {
            "hooks": [{"type": "command", "command": f"{command} {event}", "timeout": timeout}]
        }
        if event in TOOL_EVENTS:
            entry["matcher"] = "*"
        hooks[event] = [entry]
    return {"hooks": hooks}


def write_settings(path: Path, settings: dict[str, Any]) -> None:
    """Write ``settings`` as JSON to ``path`` atomically (temp file in the same folder + rename)."""
    write_json(path, settings)


def new_secret() -> str:
    """A fresh per-session hook secret: 43 URL-safe characters (256 bits)."""
    return secrets.token_urlsafe(32)


def hook_env(
    session_id: str,
    secret: str,
    port: int,
    *,
    permission_wait_s: float | None = None,
    denial_wait_s: float | None = None,
) -> dict[str, str]:
    """The environment that makes cb-hook report: ``CB_HOOK=<session id>:<secret>:<port>``.

    Session id and secret may hold only ``A-Z a-z 0-9 _ -`` (cb-hook ignores anything else).
    ``permission_wait_s`` sets ``CB_HOOK_WAIT`` (how long a PermissionRequest waits for the
    agent's decision; cb-hook's default is 5 s).
    """
    for name, value in (("session id", session_id), ("secret", secret)):
        if not _TOKEN.fullmatch(value):
            raise ValueError(f"the hook {name} may hold only A-Z a-z 0-9 _ -: {value!r}")
    if not 0 < port < 65536:
        raise ValueError(f"not a TCP port: {port}")
    env = {"CB_HOOK": f"{session_id}:{secret}:{port}"}
    if permission_wait_s is not None:
        if not permission_wait_s > 0:
            raise ValueError("permission_wait_s must be positive")
        env["CB_HOOK_WAIT"] = f"{permission_wait_s:.3f}"
    if denial_wait_s is not None and denial_wait_s > 0:
        env["CB_HOOK_DENIAL_WAIT"] = f"{denial_wait_s:.3f}"  # PermissionDenied: "allow once"
    return env
