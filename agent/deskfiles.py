"""The command list_conversations: this Mac's Claude Code conversations, read from its disk.

agent/desk.py decides what the files say (pure); here they are found and read, bounded: the
newest ``MAX_FILES`` transcripts under ``<claude home>/projects/<slug>/`` (their first
``HEAD_BYTES`` and last ``TAIL_BYTES``), the status files under ``<claude home>/sessions/``
(which claude runs which conversation; a pid is live when the process exists), and the
conversations the bridge started (the registry's), marked ``by_bridge``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Protocol

from agent import desk
from agent.commands import Handler
from agent.errors import CommandFailed
from agent.registry import SessionRecord
from wire.protocol import ListConversationsArgs, ReadConversationArgs

SESSION_FILE_MAX_BYTES = 64 * 1024


class DeskHost(Protocol):
    def records(self) -> list[SessionRecord]: ...


def _lines(data: bytes, *, head: bool) -> list[str]:
    """The complete lines of a part of a file read from its start (``head``) or its end."""
    text = data.decode("utf-8", "replace")
    parts = text.split("\n")
    # A line cut by the edge of what was read is left out.
    parts = parts[:-1] if head else parts[1:]
    return [line for line in parts if line.strip()]


def read_transcript(slug: str, path: Path) -> desk.TranscriptFile | None:
    try:
        found = path.stat()
        with path.open("rb") as f:
            if found.st_size <= desk.HEAD_BYTES + desk.TAIL_BYTES:
                whole = f.read() + b"\n"
                lines = _lines(whole, head=True)
                return desk.TranscriptFile(slug, path.name, found.st_size, found.st_mtime, lines)
            head = f.read(desk.HEAD_BYTES)
            f.seek(found.st_size - desk.TAIL_BYTES)
            tail = f.read(desk.TAIL_BYTES)
    except OSError:
        return None
    return desk.TranscriptFile(
        slug,
        path.name,
        found.st_size,
        found.st_mtime,
        _lines(head, head=True),
        _lines(tail, head=False),
    )


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def scan(claude_home: Path, bridge_ids: set[str], limit: int) -> desk.DeskListing:
    """Read the disk (in a thread: many small files) and list the conversations."""
    projects = claude_home / "projects"
    listed: list[tuple[float, str, Path]] = []
    with contextlib.suppress(OSError):
        for folder in projects.iterdir():
            if not folder.is_dir() or folder.is_symlink():
                continue
            with contextlib.suppress(OSError):
                for path in folder.glob("*.jsonl"):
                    with contextlib.suppress(OSError):
                        listed.append((path.stat().st_mtime, folder.name, path))
    listed.sort(reverse=True)
    files = [
        found
        for _, slug, path in listed[: desk.MAX_FILES]
        if (found := read_transcript(slug, path)) is not None
    ]
    contents: list[str] = []
    pids: set[int] = set()
    with contextlib.suppress(OSError):
        for path in sorted((claude_home / "sessions").glob("*.json"))[: desk.MAX_SESSION_FILES]:
            with contextlib.suppress(OSError, ValueError):
                if path.stat().st_size > SESSION_FILE_MAX_BYTES:
                    continue
                contents.append(path.read_text(encoding="utf-8"))
                if path.stem.isdigit() and pid_alive(int(path.stem)):
                    pids.add(int(path.stem))
    return desk.list_conversations(files, contents, pids, bridge_ids, limit=limit)


def find_transcript(claude_home: Path, conversation_id: str) -> Path | None:
    """Where Claude Code keeps the conversation (``projects/<any slug>/<id>.jsonl``): the slug is
    lossy, so every project folder is looked in. ``conversation_id`` is a checked UUID."""
    with contextlib.suppress(OSError):
        for folder in (claude_home / "projects").iterdir():
            path = folder / f"{conversation_id}.jsonl"
            if folder.is_dir() and not folder.is_symlink() and path.is_file():
                return path
    return None


def live_pid(claude_home: Path, conversation_id: str) -> int | None:
    """The pid of a claude running the conversation now (its status file names it), or None."""
    with contextlib.suppress(OSError):
        for path in sorted((claude_home / "sessions").glob("*.json"))[: desk.MAX_SESSION_FILES]:
            if not path.stem.isdigit() or not pid_alive(int(path.stem)):
                continue
            with contextlib.suppress(OSError, ValueError):
                if path.stat().st_size > SESSION_FILE_MAX_BYTES:
                    continue
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and data.get("sessionId") == conversation_id:
                    return int(path.stem)
    return None


def read_tail(path: Path, max_bytes: int) -> tuple[list[str], bool]:
    """The whole lines of the file's last ``max_bytes``; whether its start was left out."""
    size = path.stat().st_size
    with path.open("rb") as f:
        if size > max_bytes:
            f.seek(size - max_bytes)
        data = f.read(max_bytes)
    cut = size > max_bytes
    text = data.decode("utf-8", "replace").split("\n")
    lines = text[1:] if cut else text
    return [line for line in lines[:-1] if line.strip()], cut


def listing_json(listing: desk.DeskListing) -> dict[str, Any]:
    return {
        "folders": [
            {"cwd": f.cwd, "conversations": [dataclasses.asdict(c) for c in f.conversations]}
            for f in listing.folders
        ],
        "found": listing.found,
        "truncated": listing.truncated,
    }


class DeskCommands:
    """The command list_conversations."""

    def __init__(self, sessions: DeskHost, claude_home: Path) -> None:
        self.sessions = sessions
        self.claude_home = claude_home

    def handlers(self) -> list[Handler]:
        return [
            (ListConversationsArgs, self.list_conversations),
            (ReadConversationArgs, self.read_conversation),
        ]

    async def read_conversation(
        self, session_id: str, args: ReadConversationArgs
    ) -> dict[str, Any]:
        path = await asyncio.to_thread(find_transcript, self.claude_home, args.conversation_id)
        if path is None:
            raise CommandFailed(
                "unknown_conversation",
                f"this Mac has no Claude Code conversation {args.conversation_id}",
            )
        lines, cut = await asyncio.to_thread(read_tail, path, args.max_bytes)
        pid = await asyncio.to_thread(live_pid, self.claude_home, args.conversation_id)
        return {"lines": lines, "cut": cut, "live": pid is not None}

    async def list_conversations(
        self, session_id: str, args: ListConversationsArgs
    ) -> dict[str, Any]:
        bridge = {c for r in self.sessions.records() for c in [*r.conversation_ids, r.id]}
        listing = await asyncio.to_thread(scan, self.claude_home, bridge, args.limit)
        return listing_json(listing)
