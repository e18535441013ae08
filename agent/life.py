"""The commands of a session's life: open one (new, a fork of another, in a worktree of its own),
end it, rest it, reopen it, and delete it when the relay deleted it.

What these do to a session is agent/sessions.py's (``Sessions``); here is what the phone asked,
checked, and the session's first record: its folder, mode, model, policy and first message, a
fork's history, a worktree.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import time
from pathlib import Path
from typing import Any, Protocol

from agent import deskfiles
from agent import held as heldrules
from agent import worktree as worktrees
from agent.commands import Handler
from agent.driver import SessionDriver, policy_of, set_policy
from agent.errors import CommandFailed
from agent.launch import ResumeChoice, Start
from agent.registry import SessionRecord, is_session_id
from wire import pastetext
from wire import policy as policyrules
from wire.config import Config
from wire.protocol import (
    CreateSessionArgs,
    DeleteHistoryArgs,
    EndArgs,
    ReopenArgs,
    RestArgs,
    SetResumeArgs,
)

_log = logging.getLogger("agent")


class LifeHost(Protocol):
    """What the life commands need of the sessions (agent/sessions.py's ``Sessions``)."""

    @property
    def config(self) -> Config: ...
    def get(self, session_id: str) -> SessionRecord | None: ...
    def record(self, session_id: str) -> SessionRecord: ...
    def add(self, record: SessionRecord, *, reported: bool = True) -> None: ...
    def transcript_file(self, record: SessionRecord) -> Path: ...
    def copy_of(self, session_id: str, conversation_id: str) -> Path: ...
    async def launch(
        self, record: SessionRecord, start: Start, choice: ResumeChoice | None = None
    ) -> SessionDriver: ...
    @property
    def claude_home(self) -> Path: ...
    async def reopen(self, record: SessionRecord, choice: ResumeChoice | None = None) -> None: ...
    async def end(self, record: SessionRecord, *, resting: bool) -> None: ...
    async def forget(self, session_id: str) -> SessionRecord | None: ...
    def offer_folders(self) -> None: ...
    def save(self) -> None: ...


def check_session_id(session_id: str) -> None:
    """Nothing but a UUID is recorded as a session (agent/registry.py's is_session_id)."""
    if not is_session_id(session_id):
        raise CommandFailed(
            "bad_session_id",
            f"{session_id[:80]!r} is not a session id: ids are UUIDs "
            "(like 123e4567-e89b-12d3-a456-426614174000)",
        )


def copy_lines(source: Path, target: Path) -> None:
    """``source``'s complete lines (up to its last newline) into ``target``, private."""
    data = source.read_bytes()
    data = data[: data.rfind(b"\n") + 1]
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(target.parent.parent, 0o700)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


class SessionLife:
    """The commands that open, end, rest, reopen and delete a session."""

    def __init__(self, sessions: LifeHost) -> None:
        self.sessions = sessions

    def handlers(self) -> list[Handler]:
        return [
            (CreateSessionArgs, self.create),
            (EndArgs, self.end),
            (RestArgs, self.rest),
            (ReopenArgs, self.reopen),
            (SetResumeArgs, self.set_resume),
            (DeleteHistoryArgs, self.delete_history),
        ]

    async def create(self, session_id: str, args: CreateSessionArgs) -> dict[str, Any]:
        sessions = self.sessions
        check_session_id(session_id)  # before anything is recorded
        parent = sessions.record(args.fork_of) if args.fork_of else None
        cwd = parent.cwd if parent is not None else str(Path(args.cwd).expanduser())
        if not Path(cwd).is_dir():
            raise CommandFailed("bad_folder", f"there is no folder {cwd!r} on this Mac")
        if sessions.get(session_id) is not None:
            raise CommandFailed("session_exists", f"session {session_id} already exists here")
        if args.desk_conversation and (parent is not None or args.worktree):
            raise CommandFailed(
                "bad_args", "a conversation from the desk goes on in its own folder, not a fork's"
            )
        if parent is not None and args.worktree:
            raise CommandFailed(
                "bad_args",
                "a fork runs in its parent's folder: it cannot have a worktree of its own",
            )
        record = SessionRecord(
            id=session_id,
            cwd=os.path.realpath(cwd),
            created_at=time.time(),
            permission_mode=args.permission_mode,
            model=args.model,
        )
        try:
            policy = policyrules.Policy.from_json(args.policy)
        except policyrules.PolicyError as exc:
            raise CommandFailed("bad_args", f"policy: {exc}") from exc
        if parent is not None:
            await self._fork(record, parent, keep_policy=args.policy is None)
            if args.policy is None:
                policy = policy_of(record)
        git_timeout = sessions.config.float("git_timeout")
        made: worktrees.Made | None = None
        if args.worktree:
            made = await worktrees.make(Path(record.cwd), args.worktree, session_id, git_timeout)
            record.cwd, record.worktree, record.branch = str(made.cwd), str(made.root), made.branch
        if args.allow_all:
            policy = dataclasses.replace(policy, allow_all=True)
        set_policy(record, policy)
        start, choice = Start.NEW, None
        if args.desk_conversation:
            start, choice = await self._desk(record, args)
        if args.prompt is not None and pastetext.has_text(args.prompt):
            record.held.append(heldrules.new_message(args.prompt))  # typed once the prompt is up
        sessions.add(record)
        try:
            rt = await sessions.launch(record, start, choice)
        except BaseException:
            await sessions.forget(record.id)  # the relay keeps no trace of it either
            if made is not None:
                await worktrees.undo(made, git_timeout)
            raise
        await rt.send_update(force=True)
        # The next hello offers this folder first (the page also has it from the session).
        sessions.offer_folders()
        return {
            "cwd": record.cwd,
            "policy": policy_of(record).to_json(),
            "branch": record.branch,
            "worktree": record.worktree,
            "parent_id": record.parent_id,
        }

    async def _desk(
        self, record: SessionRecord, args: CreateSessionArgs
    ) -> tuple[Start, ResumeChoice | None]:
        """The session goes on with a conversation begun at the desk: resumed as its own (by the
        scope given), or forked (``--resume … --fork-session``: its lines copied as the first
        history). A conversation a claude runs now only as a fork or fresh: two processes on one
        conversation corrupt it."""
        cid = args.desk_conversation
        assert cid is not None
        home = self.sessions.claude_home
        path = await asyncio.to_thread(deskfiles.find_transcript, home, cid)
        if path is None:
            raise CommandFailed(
                "unknown_conversation", f"this Mac has no Claude Code conversation {cid}"
            )
        pid = await asyncio.to_thread(deskfiles.live_pid, home, cid)
        if pid is not None and not args.desk_fork and args.resume_scope != "fresh":
            raise CommandFailed(
                "conversation_live",
                f"a claude at the desk runs this conversation now (pid {pid}): two processes on "
                "one conversation corrupt it. Continue it as a fork, or fresh from its decisions",
            )
        if args.desk_fork:
            record.fork_conversation = cid
            copy = self.sessions.copy_of(record.id, cid)
            await asyncio.to_thread(copy_lines, path, copy)
            record.fork_copy = str(copy)
            return Start.NEW, None
        record.conversation_id = cid
        record.conversation_ids = [cid]
        record.transcript_path = str(path)
        scope = args.resume_scope or "full"
        return Start.REOPEN, ResumeChoice(
            scope=scope, handoff=args.handoff, decisions=args.decisions
        )

    async def _fork(
        self, record: SessionRecord, parent: SessionRecord, *, keep_policy: bool
    ) -> None:
        """A fork takes its parent's folder (and worktree), mode, model and policy rules (not
        "allow all", a grant of that process), and a copy of the conversation it forks as it
        is now: its lines are the fork's first history, until claude writes the fork's own
        transcript (the same lines, which the relay keeps once, by uuid)."""
        source = self.sessions.transcript_file(parent) if parent.conversation_id else None
        if source is None or not source.is_file():
            raise CommandFailed(
                "nothing_to_fork",
                f"session {parent.id} has no conversation yet: send it a message first",
            )
        assert parent.conversation_id is not None
        record.parent_id = parent.id
        record.fork_conversation = parent.conversation_id
        record.worktree, record.branch = parent.worktree, parent.branch
        record.permission_mode = record.permission_mode or parent.permission_mode
        record.model = record.model or parent.model
        if keep_policy:
            set_policy(record, policy_of(parent).without_allow_all())
        copy = self.sessions.copy_of(record.id, parent.conversation_id)
        await asyncio.to_thread(copy_lines, source, copy)
        record.fork_copy = str(copy)

    async def end(self, session_id: str, args: EndArgs) -> dict[str, Any]:
        await self.sessions.end(self.sessions.record(session_id), resting=False)
        return {}

    async def rest(self, session_id: str, args: RestArgs) -> dict[str, Any]:
        await self.sessions.end(self.sessions.record(session_id), resting=True)
        return {}

    async def reopen(self, session_id: str, args: ReopenArgs) -> dict[str, Any]:
        record = self.sessions.record(session_id)
        choice = ResumeChoice(scope=args.scope, handoff=args.handoff, decisions=args.decisions)
        await self.sessions.reopen(record, choice)
        return {}

    async def set_resume(self, session_id: str, args: SetResumeArgs) -> dict[str, Any]:
        """The session's resume scope and handoff, kept for its every start (saved at once:
        a revive after a reboot reads them)."""
        record = self.sessions.record(session_id)
        record.resume_scope = args.scope
        record.handoff = args.handoff
        record.handoff_decisions = args.decisions
        self.sessions.save()
        return {"scope": args.scope or "full", "handoff": args.handoff is not None}

    async def delete_history(self, session_id: str, args: DeleteHistoryArgs) -> dict[str, Any]:
        """The relay deleted the session (retention, or a person's DELETE): stop its claude,
        drop its event archive and the transcript copies kept for it, and forget it.

        Idempotent (the relay resends it until it gets ok): a session this Mac no longer knows
        answers ok with ``deleted: false``. Claude Code's own transcripts (~/.claude) and a
        worktree the session ran in are left alone: they are the person's.
        """
        record = await self.sessions.forget(session_id)
        if record is not None:
            _log.info("session %s deleted by the relay (retention or a person)", session_id)
        return {"deleted": record is not None}
