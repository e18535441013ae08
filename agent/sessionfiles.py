"""What the page reads of a session on this Mac: its working folder and the files in it, its git
changes (agent/workspace.py, within the ``files_max_*`` bounds), and a whole transcript line the
relay cut (only the session's own transcripts are read: the phone names a line, never a path).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from agent import workspace
from agent.commands import Handler
from agent.driver import SessionDriver
from agent.errors import CommandFailed
from agent.registry import SessionRecord
from agent.transcript import LineTooLarge, find_line, session_files
from wire.config import Config
from wire.protocol import (
    GitDiffArgs,
    GitStatusArgs,
    ListFilesArgs,
    ReadFileArgs,
    TranscriptLineArgs,
)


class SessionFilesHost(Protocol):
    """What reading a session's files needs of the sessions (agent/sessions.py's ``Sessions``)."""

    @property
    def config(self) -> Config: ...
    def record(self, session_id: str) -> SessionRecord: ...
    def running(self, session_id: str) -> SessionDriver | None: ...


class SessionFiles:
    """The commands list_files, read_file, git_status, git_diff and transcript_line."""

    def __init__(self, sessions: SessionFilesHost, claude_home: Path) -> None:
        self.sessions = sessions
        self.claude_home = claude_home

    def handlers(self) -> list[Handler]:
        return [
            (ListFilesArgs, self.list_files),
            (ReadFileArgs, self.read_file),
            (GitStatusArgs, self.git_status),
            (GitDiffArgs, self.git_diff),
            (TranscriptLineArgs, self.transcript_line),
        ]

    def _folder(self, session_id: str) -> tuple[Path, workspace.Limits]:
        """The session's working folder (it must still exist) and the reading limits."""
        folder = Path(self.sessions.record(session_id).cwd)
        if not folder.is_dir():
            raise CommandFailed("not_found", f"the session's folder {str(folder)!r} is gone")
        config = self.sessions.config
        limits = workspace.Limits(
            file_bytes=config.int("files_max_file_bytes"),
            entries=config.int("files_max_entries"),
            diff_bytes=config.int("files_max_diff_bytes"),
            git_timeout=config.float("git_timeout"),
        )
        return folder, limits

    async def list_files(self, session_id: str, args: ListFilesArgs) -> dict[str, Any]:
        folder, limits = self._folder(session_id)
        return await asyncio.to_thread(workspace.list_folder, folder, args.path, limits)

    async def read_file(self, session_id: str, args: ReadFileArgs) -> dict[str, Any]:
        folder, limits = self._folder(session_id)
        return await asyncio.to_thread(workspace.read_text, folder, args.path, limits)

    async def git_status(self, session_id: str, args: GitStatusArgs) -> dict[str, Any]:
        return await workspace.git_status(*self._folder(session_id))

    async def git_diff(self, session_id: str, args: GitDiffArgs) -> dict[str, Any]:
        folder, limits = self._folder(session_id)
        return await workspace.git_diff(folder, args.path, limits)

    async def transcript_line(self, session_id: str, args: TranscriptLineArgs) -> dict[str, Any]:
        """The line of the session's transcripts with this uuid, as Claude Code wrote it."""
        record = self.sessions.record(session_id)
        rt = self.sessions.running(session_id)
        followed = [c.path for c in rt.follower.cursors.values()] if rt is not None else []
        conversations = [*record.conversation_ids, *record.acked]
        if record.conversation_id:
            conversations.insert(0, record.conversation_id)
        paths = session_files(self.claude_home, record.cwd, conversations, followed)
        limit = self.sessions.config.int("full_line_max_bytes")
        try:
            line = await asyncio.to_thread(find_line, paths, args.uuid, limit)
        except LineTooLarge as exc:
            raise CommandFailed(
                "line_too_large", f"{exc} (full_line_max_bytes on the Mac is {limit})"
            ) from None
        if line is None:
            raise CommandFailed(
                "line_not_found", f"no transcript line {args.uuid} of this session is on the Mac"
            )
        return {"line": line.decode("utf-8", errors="replace")}
