"""How ``claude`` is started: its command line, its environment and the version check.

Which conversation a session's claude opens is one pure plan (:func:`plan_launch`): from the
session's record, why it starts (:class:`Start`) and what is on this Mac's disk (:class:`OnDisk`)
it says whether claude starts a conversation afresh under a known id (``--session-id``), resumes
one (``--resume``), forks its parent's (``--resume … --fork-session --session-id``), or is left
to name its own. agent/sessions.py looks at the disk, asks the plan and starts the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Literal, Protocol, get_args

from agent.errors import BadClaudeArgs as BadClaudeArgs
from agent.errors import ClaudeMissing as ClaudeMissing
from agent.errors import CommandFailed
from wire.claude_versions import version_warning as version_warning
from wire.markers import SUMMARY_MARKER, fresh_marker
from wire.protocol import MODEL_NAME, RESUME_SCOPES, ClaudeStanding, PermissionMode, ResumeScope

_log = logging.getLogger("agent")

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


INSTALL_LINE = "npm i -g @anthropic-ai/claude-code"
INSTALL_HINT = (
    f"Install Claude Code on this Mac ({INSTALL_LINE}), or start the agent with "
    "--claude /path/to/claude; a new session starts once it is found."
)
AUTH_TIMEOUT = 10.0  # seconds `claude auth status` may take (it sends no request)


def wanted_claude(explicit: str | None = None) -> str:
    """The claude the agent runs, as given (``--claude``, ``$CB_CLAUDE``, else ``claude``)."""
    return explicit or os.environ.get("CB_CLAUDE") or "claude"


def find_claude(explicit: str | None = None) -> str:
    candidate = wanted_claude(explicit)
    found = shutil.which(candidate)
    if not found:
        raise ClaudeMissing(
            f"cannot find {candidate!r}: install Claude Code ({INSTALL_LINE}) "
            "or pass --claude /path/to/claude"
        )
    return found


async def claude_logged_in(claude: str, env: Mapping[str, str] | None) -> bool | None:
    """``claude auth status`` (2.1.332: JSON with ``loggedIn``; no request with non-essential
    traffic off) run with the sessions' environment: whether a login is there, None when it
    cannot tell (an older claude, no answer)."""
    given = dict(os.environ if env is None else env)
    given["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    try:
        proc = await asyncio.create_subprocess_exec(
            claude, "auth", "status", "--json", env=given,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
    except OSError:
        return None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), AUTH_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return None
    try:
        data = json.loads(out.decode("utf-8", "replace"))
    except ValueError:
        return None
    found = data.get("loggedIn") if isinstance(data, dict) else None
    return found if isinstance(found, bool) else None


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
    except FileNotFoundError as exc:
        raise ClaudeMissing(f"cannot find {claude!r}") from exc
    except (OSError, TimeoutError) as exc:
        raise ClaudeMissing(f"{claude} --version failed: {exc}") from exc
    match = _VERSION.search(out.decode("utf-8", "replace"))
    if proc.returncode != 0 or match is None:
        raise ClaudeMissing(f"{claude} --version did not print a version: {out[:200]!r}")
    return match.group(1)


class ClaudeBinary:
    """The ``claude`` the agent starts and its version. Claude Code may be updated while the
    agent runs (npm, Homebrew): before each launch the binary is looked at (a stat, no process),
    and only a changed one is asked its version again; a new version is told
    (``on_new_version``: the relay, so the phone's band follows it)."""

    def __init__(
        self,
        path: str,
        on_new_version: Callable[[str], Awaitable[None]],
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.path = path
        self.version = ""
        self.found = True  # the binary ran and told its version
        self.logged_in: bool | None = None  # as `claude auth status` said at start
        self._env = env
        self._on_new_version = on_new_version
        self._stamp: tuple[int, ...] | None = None  # the binary whose version that is

    @property
    def standing(self) -> ClaudeStanding:
        """How Claude Code stands on this Mac, as its device record says."""
        if not self.found:
            return "missing"
        if self.logged_in is None:
            return "unknown"
        return "ok" if self.logged_in else "logged_out"

    async def start(self, say_missing: bool = True) -> None:
        """Read the version (and whether it has a login) once, at agent start. A claude that is
        missing is not fatal: the Mac says so (``found``) and each launch looks for it again.
        ``say_missing``: log it (not when the command that started the agent said it already)."""
        self._stamp = binary_stamp(self.path)
        try:
            self.version = await claude_version(self.path)
        except ClaudeMissing as exc:
            self.found = False
            if say_missing:
                _log.warning(
                    "Claude Code: %s; sessions start once it is installed (%s)", exc, INSTALL_LINE
                )
            return
        warning = version_warning(self.version)
        if warning:
            _log.warning(warning)
        self.logged_in = await claude_logged_in(self.path, self._env)

    async def check(self) -> None:
        """Before a launch: the version again, if the binary changed; ``claude_missing`` when
        there is still none."""
        if not self.found:
            if not await self.look_again():
                raise CommandFailed(
                    "claude_missing",
                    f"Claude Code is not installed on this Mac (no {self.path!r} found). "
                    + INSTALL_HINT,
                )
            return
        stamp = binary_stamp(self.path)
        if stamp == self._stamp:
            return
        self._stamp = stamp
        try:
            version = await claude_version(self.path)
        except ClaudeMissing as exc:  # mid-update, say: the launch itself will tell
            _log.warning("%s", exc)
            return
        if version == self.version:
            return
        _log.info("Claude Code is now %s (was %s)", version, self.version or "unknown")
        self.version = version
        warning = version_warning(version)
        if warning:
            _log.warning(warning)
        await self._on_new_version(version)

    async def recheck_login(self) -> bool:
        """Ask ``claude auth status`` again while it said there was no login (the person may
        have logged in at the desk since); the relay hears a change at once. True on a change."""
        if not self.found or self.logged_in is not False:
            return False
        now = await claude_logged_in(self.path, self._env)
        if now is None or now == self.logged_in:
            return False
        self.logged_in = now
        _log.info("Claude Code is logged in now")
        await self._on_new_version(self.version)
        return True

    async def look_again(self) -> bool:
        """Whether Claude Code is here now: it was missing, it may have been installed since (a
        look on PATH, a process only when something is there)."""
        path = shutil.which(self.path)
        if path is None:
            return False
        try:
            version = await claude_version(path)
        except ClaudeMissing:
            return False
        self.path, self.found, self.version = path, True, version
        self._stamp = binary_stamp(path)
        self.logged_in = await claude_logged_in(path, self._env)
        _log.info("Claude Code %s found at %s", version, path)
        await self._on_new_version(version)
        return True


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


# -- which conversation a launch opens -------------------------------------------------------


class Start(Enum):
    """Why a session's claude is started."""

    NEW = "new"  # the session was opened now: its first conversation
    REOPEN = "reopen"  # a message or the phone's reopen: its conversation, when it has one
    REVIVE = "revive"  # the agent came back after the Mac restarted: its conversation
    ARRIVE = "arrive"  # it moved here: its conversation, when its transcript arrived


@dataclass(frozen=True)
class OnDisk:
    """What the plan needs to know of this Mac's disk (agent/sessions.py looks)."""

    conversation: bool  # the record's conversation has its transcript here
    own_transcript: bool  # a transcript named by the session's own id (a fork prompted once)


class LaunchRecord(Protocol):
    """What a plan reads of a session's record (agent/registry.py's ``SessionRecord``)."""

    @property
    def id(self) -> str: ...
    @property
    def conversation_id(self) -> str | None: ...
    @property
    def fork_conversation(self) -> str | None: ...
    @property
    def resume_scope(self) -> str | None: ...
    @property
    def handoff(self) -> str | None: ...
    @property
    def handoff_decisions(self) -> int: ...


COMPACT_COMMAND = "/compact"  # Claude Code's own compaction, typed before held messages


@dataclass(frozen=True)
class ResumeChoice:
    """A one-off scope for this start (the phone's reopen with a scope), instead of the
    session's own; ``new_id``: the id a fresh conversation gets (made by the caller: the plan
    is pure)."""

    scope: ResumeScope | None = None
    handoff: str | None = None
    decisions: int | None = None
    new_id: str | None = None


LaunchHow = Literal["fresh", "resume", "fork", "unnamed"]


@dataclass(frozen=True)
class LaunchPlan:
    """Which conversation claude opens, as its command line says it.

    ``fresh``: a new conversation named ``session_id`` (``--session-id``); ``resume``: the
    conversation ``resume`` (``--resume``); ``fork``: ``resume`` copied into a new conversation
    named ``session_id`` (``--fork-session``); ``unnamed``: neither flag, claude names it and
    its SessionStart hook tells. ``first_conversation``: the conversation this launch starts and
    makes the record's current one (a session that has none yet, or a ``fresh`` resume), else
    None. ``scope``: how a stopped session's conversation comes back (None: not a resume);
    ``lead``: typed alone, in order, before held messages once claude is idle (the handoff, or
    ``/compact``); ``marker``: the bridge's line saying how it came back."""

    how: LaunchHow
    session_id: str | None = None
    resume: str | None = None
    first_conversation: str | None = None
    scope: ResumeScope | None = None
    lead: tuple[str, ...] = ()
    marker: str | None = None

    @property
    def fork(self) -> bool:
        return self.how == "fork"


def resumes(record: LaunchRecord, start: Start, disk: OnDisk) -> bool:
    """Whether claude is asked to resume the record's conversation rather than start one.

    Only a conversation whose transcript is on this Mac's disk is resumed: ``--resume`` of one
    that is not (2.1.332 writes a transcript only at the first prompt, so a claude that ended
    before one, or never started, left none) exits at once with "No conversation found", at
    every later start. Such a conversation starts afresh under its id (``--session-id``), as
    its first start would have. A revived session with no conversation at all resumes claude's
    own (``unnamed``: its SessionStart hook names it)."""
    if start is Start.NEW:
        return False
    if record.conversation_id is None:
        return start is Start.REVIVE
    return disk.conversation


def fork_source(record: LaunchRecord, disk: OnDisk) -> str | None:
    """The conversation a fork resumes as its own (``--fork-session``) until it has a
    transcript: 2.1.332 writes one only at the first prompt, so a fork ended before that is
    forked again when it reopens, under the same id."""
    if not record.fork_conversation or record.conversation_id not in (None, record.id):
        return None
    return None if disk.own_transcript else record.fork_conversation


def scope_or_none(value: object) -> ResumeScope | None:
    """``value`` when it is a resume scope, else None (a registry written by another version)."""
    return next((scope for scope in RESUME_SCOPES if scope == value), None)


def scope_of(record: LaunchRecord, choice: ResumeChoice) -> ResumeScope:
    """The scope a resume uses: this start's, else the session's, else ``full``."""
    if choice.scope is not None:
        return choice.scope
    return scope_or_none(record.resume_scope) or "full"


def resume_plan(record: LaunchRecord, conversation: str, choice: ResumeChoice) -> LaunchPlan:
    """How a stopped session's conversation comes back, by its resume scope:

    * ``full``: ``--resume`` of the whole conversation;
    * ``summary``: ``--resume``, then Claude Code's own ``/compact`` before held messages;
    * ``fresh``: a new conversation (``--session-id <new id>``), a marker line "resumed fresh
      from N decisions", and the handoff as its first message. Without a handoff (the relay
      has not sent one yet) or a new id there is nothing to start fresh from: it resumes in full.
    """
    scope = scope_of(record, choice)
    if scope == "fresh":
        handoff = choice.handoff if choice.handoff is not None else record.handoff
        decisions = choice.decisions if choice.decisions is not None else record.handoff_decisions
        if handoff and handoff.strip() and choice.new_id:
            return LaunchPlan(
                "fresh",
                session_id=choice.new_id,
                first_conversation=choice.new_id,
                scope="fresh",
                lead=(handoff,),
                marker=fresh_marker(decisions),
            )
        scope = "full"
    if scope == "summary":
        return LaunchPlan(
            "resume",
            resume=conversation,
            scope="summary",
            lead=(COMPACT_COMMAND,),
            marker=SUMMARY_MARKER,
        )
    return LaunchPlan("resume", resume=conversation, scope="full")


def plan_launch(
    record: LaunchRecord, start: Start, disk: OnDisk, choice: ResumeChoice | None = None
) -> LaunchPlan:
    """How the session's claude opens its conversation this time (``choice``: a one-off
    resume scope, and the new conversation's id should it start fresh). Pure."""
    resume = resumes(record, start, disk)
    # --session-id names the first conversation of a session that has none yet.
    first = record.id if not resume and record.conversation_id is None else None
    forked = fork_source(record, disk)
    if forked is not None:
        return LaunchPlan("fork", session_id=record.id, resume=forked, first_conversation=first)
    if resume and record.conversation_id is not None:
        return resume_plan(record, record.conversation_id, choice or ResumeChoice())
    if resume:
        return LaunchPlan("unnamed")
    conversation = record.conversation_id or record.id
    return LaunchPlan("fresh", session_id=conversation, first_conversation=first)
