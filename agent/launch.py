"""How ``claude`` is started: its command line, its environment and the version check."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from collections.abc import Mapping
from typing import get_args

from agent.errors import BadClaudeArgs as BadClaudeArgs
from agent.errors import ClaudeMissing as ClaudeMissing
from wire.claude_versions import version_warning as version_warning
from wire.protocol import MODEL_NAME, PermissionMode

PERMISSION_MODES = frozenset(get_args(PermissionMode))
_VERSION = re.compile(r"(\d+\.\d+\.\d+)")
# Variables that belong to the agent's own terminal, not to the session's.
_DROP = ("TMUX", "TMUX_PANE", "CB_HOOK", "CB_HOOK_WAIT", "CB_HOOK_MAX_TIME")


# Flags the agent sets itself for every session, or that would take the session out of its
# hands (print mode, skipping every permission for all sessions at once).
OWN_FLAGS = frozenset(
    {
        "--settings", "--session-id", "--resume", "-r", "--continue", "-c", "--fork-session",
        "--permission-mode", "--model", "--print", "-p", "--output-format", "--input-format",
        "--dangerously-skip-permissions", "--allow-dangerously-skip-permissions",
        "--version", "-v", "--help", "-h",
    }
)  # fmt: skip


def check_claude_args(args: list[str]) -> list[str]:
    """Extra arguments for every ``claude`` the agent starts (``agent --claude-arg``), e.g.
    ``--chrome``, ``--add-dir DIR``, ``--mcp-config FILE``: checked, returned as given.

    Refused: a first word that is not a flag (it would become the first prompt), and the flags
    the agent sets per session (OWN_FLAGS: settings, conversation, permission mode, model…).
    """
    if args and not args[0].startswith("-"):
        raise BadClaudeArgs(f"{args[0]!r} is not a flag: extra claude arguments start with one")
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in OWN_FLAGS:
            raise BadClaudeArgs(
                f"{flag} is set by claude-bridge for each session; choose it per session "
                "(permission mode and model when opening one) instead"
            )
        if "\n" in arg or "\0" in arg:
            raise BadClaudeArgs(f"{arg[:40]!r}: an argument cannot hold a newline")
    return list(args)


def find_claude(explicit: str | None = None) -> str:
    candidate = explicit or os.environ.get("CB_CLAUDE") or "claude"
    found = shutil.which(candidate)
    if not found:
        raise ClaudeMissing(
            f"cannot find {candidate!r}: install Claude Code (npm i -g @anthropic-ai/claude-code) "
            "or pass --claude /path/to/claude"
        )
    return found


def binary_stamp(claude: str) -> tuple[int, ...] | None:
    """What changes when the ``claude`` binary is replaced (an update): the file it resolves to,
    its size and time. None when it cannot be read."""
    try:
        found = os.stat(os.path.realpath(shutil.which(claude) or claude))
    except OSError:
        return None
    return found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns


async def claude_version(claude: str) -> str:
    try:
        proc = await asyncio.create_subprocess_exec(
            claude, "--version",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    except (OSError, TimeoutError) as exc:
        raise ClaudeMissing(f"{claude} --version failed: {exc}") from exc
    match = _VERSION.search(out.decode("utf-8", "replace"))
    if proc.returncode != 0 or match is None:
        raise ClaudeMissing(f"{claude} --version did not print a version: {out[:200]!r}")
    return match.group(1)


def claude_argv(
    claude: str,
    settings: str,
    *,
    session_id: str | None = None,
    resume: str | None = None,
    permission_mode: str | None = None,
    model: str | None = None,
    extra: tuple[str, ...] | list[str] = (),
    fork: bool = False,
) -> list[str]:
    """``claude --settings …`` plus a new conversation id or the one to resume, then the
    person's own extra arguments (checked by :func:`check_claude_args`). ``fork``: resume
    ``resume`` as a new conversation named ``session_id`` (``--fork-session --session-id``:
    2.1.332 takes both, and writes the new transcript, the old messages copied in, at the
    first prompt)."""
    argv = [claude, "--settings", settings]
    if fork:
        if not resume or not session_id:
            raise ValueError("a fork resumes a conversation under a new id: give both")
        argv += ["--resume", resume, "--fork-session", "--session-id", session_id]
    elif resume:
        argv += ["--resume", resume]
    elif session_id:
        argv += ["--session-id", session_id]
    if permission_mode:
        if permission_mode not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode {permission_mode!r}")
        argv += ["--permission-mode", permission_mode]
    if model:
        if not re.fullmatch(MODEL_NAME, model):
            # Only a name: no control character can reach claude's command line (and screen).
            raise BadClaudeArgs(f"{model[:40]!r} is not a model name claude takes")
        argv += ["--model", model]
    return argv + list(extra)


def session_env(base: Mapping[str, str], hook_env: Mapping[str, str]) -> dict[str, str]:
    """The agent's environment (PATH, API keys, ANTHROPIC_BASE_URL …) plus the hook variables."""
    env = {k: v for k, v in base.items() if k not in _DROP}
    env.setdefault("TERM", "xterm-256color")
    env.update(hook_env)
    return env
