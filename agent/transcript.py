"""Reading a session's transcripts: complete new lines only, from where the relay last stored.

Claude Code writes ``~/.claude/projects/<slug>/<conversation id>.jsonl`` (slug = the absolute
folder with every character that is not a letter or digit turned into ``-``) and, for subagents,
``<slug>/<conversation id>/subagents/agent-<id>.jsonl``. Each file is followed from the offset of
the last line the relay acknowledged: lines are sent again after a reconnect or an agent restart
and the relay drops the ones it has (by conversation id + offset), so nothing is lost or doubled.
A line is read only once it ends in a newline, so a line being written is never cut.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from wire.protocol import LineRecord
from wire.transcript import READ_CHUNK, read_complete_lines

_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def project_slug(cwd: str) -> str:
    return _NOT_ALNUM.sub("-", cwd)


def transcript_path(claude_home: Path, cwd: str, conversation_id: str) -> Path:
    return claude_home / "projects" / project_slug(cwd) / f"{conversation_id}.jsonl"


MODEL_TAIL_BYTES = 256 * 1024  # how much of a transcript's end is read for its model


def tail_lines(path: Path) -> list[str]:
    """The complete lines of the last MODEL_TAIL_BYTES of a file ([] when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - MODEL_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").split("\n")
    return lines[1:] if size > MODEL_TAIL_BYTES else lines


def subagent_conversation(path: Path) -> str:
    """``agent-<id>.jsonl`` → the conversation id the relay files it under."""
    return path.stem


@dataclass
class FileCursor:
    conversation_id: str
    path: Path
    resume: int  # offset of the last line the relay stored (-1: none yet)
    sent: int = 0  # where reading continues (start of the first line not yet sent)
    pending: set[int] = field(default_factory=set)  # starts of lines sent, not yet acknowledged

    def __post_init__(self) -> None:
        self.rewind()

    def rewind(self) -> None:
        """Go back to the last acknowledged line (after a reconnect): the relay drops repeats."""
        self.sent = max(self.resume, 0)
        self.pending.clear()


class TranscriptFollower:
    """The files of one session: its current conversation and its subagents'."""

    def __init__(self, acked: dict[str, int]) -> None:
        self.acked = acked  # shared with the registry record: conversation id → last stored offset
        self.cursors: dict[str, FileCursor] = {}
        self.main: str | None = None

    def follow(self, conversation_id: str, path: Path) -> None:
        """Read this conversation (a new one after /clear starts from its beginning)."""
        self.main = conversation_id
        if conversation_id not in self.cursors:
            self.cursors[conversation_id] = FileCursor(
                conversation_id, path, self.acked.get(conversation_id, -1)
            )
        else:
            self.cursors[conversation_id].path = path

    def discover_subagents(self) -> None:
        if self.main is None:
            return
        folder = self.cursors[self.main].path.with_suffix("") / "subagents"
        if not folder.is_dir():
            return
        for path in sorted(folder.glob("agent-*.jsonl")):
            conversation_id = subagent_conversation(path)
            if conversation_id not in self.cursors:
                self.cursors[conversation_id] = FileCursor(
                    conversation_id, path, self.acked.get(conversation_id, -1)
                )

    def poll(self, max_bytes: int = READ_CHUNK) -> list[tuple[str, list[LineRecord]]]:
        """New complete lines of every followed file (marked as sent, not yet acknowledged)."""
        self.discover_subagents()
        batches: list[tuple[str, list[LineRecord]]] = []
        for cursor in self.cursors.values():
            try:
                size = cursor.path.stat().st_size
            except FileNotFoundError:
                continue
            if size < cursor.sent:
                cursor.resume = -1  # the file was replaced: read it again from the start
                cursor.rewind()
            if size == cursor.sent:
                continue
            records, after = read_complete_lines(cursor.path, cursor.sent, max_bytes)
            if not records:
                continue
            # The relay already has the line at `resume`; skip it unless the file is new to it.
            if records[0].offset == cursor.resume:
                records = records[1:]
            for record in records:
                cursor.pending.add(record.offset)
            cursor.sent = after
            if records:
                batches.append((cursor.conversation_id, records))
        return batches

    def ack(self, conversation_id: str, through_offset: int) -> bool:
        """The relay stored this conversation up to the line at ``through_offset``."""
        cursor = self.cursors.get(conversation_id)
        if cursor is None or through_offset <= cursor.resume:
            return False
        cursor.resume = through_offset
        cursor.pending = {s for s in cursor.pending if s > through_offset}
        self.acked[conversation_id] = through_offset
        return True

    def rewind(self) -> None:
        for cursor in self.cursors.values():
            cursor.rewind()

    def behind(self) -> int:
        """Lines sent but not yet acknowledged (for status and tests)."""
        return sum(len(c.pending) for c in self.cursors.values())


class LineTooLarge(Exception):
    """The line asked for is longer than the Mac sends back whole."""


def session_files(
    claude_home: Path, cwd: str, conversation_ids: list[str], followed: list[Path]
) -> list[Path]:
    """Every transcript file of a session, the ones followed now first: each conversation it had
    (``/clear`` starts a new one) and their subagents' files. Only files that exist."""
    paths = list(followed)
    for conversation_id in conversation_ids:
        main = transcript_path(claude_home, cwd, conversation_id)
        paths.append(main)
        paths.extend(sorted((main.with_suffix("") / "subagents").glob("agent-*.jsonl")))
    seen: set[Path] = set()
    out: list[Path] = []
    for path in paths:
        if path not in seen and path.is_file():
            seen.add(path)
            out.append(path)
    return out


def find_line(paths: list[Path], uuid: str, max_bytes: int) -> bytes | None:
    """The complete line whose ``uuid`` is ``uuid``, as written (without its newline), from the
    first file holding it; None when no file does.

    Memory stays within ``max_bytes``: a longer line is read in pieces only to learn whether it
    is the one asked for, and then raises LineTooLarge.
    """
    needle = f'"uuid":"{uuid}"'.encode()
    for path in paths:
        try:
            handle = path.open("rb")
        except (FileNotFoundError, IsADirectoryError):
            continue
        with handle:
            while line := handle.readline(max_bytes + 1):
                if not line.endswith(b"\n"):
                    if len(line) <= max_bytes:
                        break  # the last line, still being written
                    if _rest_holds(handle, line, needle):
                        raise LineTooLarge(f"the line is over {max_bytes} bytes")
                    continue
                if needle in line and _uuid_of(line) == uuid:
                    return line[:-1]
    return None


def _rest_holds(handle: BinaryIO, start: bytes, needle: bytes) -> bool:
    """Read the rest of a too-long line; whether ``needle`` is anywhere in it."""
    found = needle in start
    tail = start[-len(needle) :]
    while piece := handle.readline(READ_CHUNK):
        found = found or needle in tail + piece
        tail = (tail + piece)[-len(needle) :]
        if piece.endswith(b"\n"):
            break
    return found


def _uuid_of(line: bytes) -> str | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    found = value.get("uuid") if isinstance(value, dict) else None
    return found if isinstance(found, str) else None
