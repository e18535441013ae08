"""The command write_memory: the facts the person accepted on the phone, written into the
product's own section of a project's ``CLAUDE.local.md`` (the default) or ``CLAUDE.md``.

The relay sends the whole section (every fact accepted for that file, in order) and, first, the
same with ``dry_run`` so the phone shows the diff before the tap. The text outside the section
stays byte for byte (wire/memory_section.py). The file is written only inside the session's
working folder: ``cwd`` must be that folder or a folder in it (every symlink resolved), and the
file itself must not lead out of it. A new file is made 0600 (the product's files are this
user's only); a file that exists keeps its mode (a shared ``CLAUDE.md`` stays as the person made
it). The write is whole or not at all (a temp file beside it, fsync, rename).
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any, Final, Protocol

from agent.commands import Handler
from agent.errors import CommandFailed
from agent.files import write_text
from agent.registry import SessionRecord
from wire.memory_section import SectionError, apply_section, current_facts, unified_diff
from wire.protocol import WriteMemoryArgs

NEW_FILE_MODE: Final = 0o600
MAX_MEMORY_FILE_BYTES: Final = 1024 * 1024  # a bigger CLAUDE.md is not one to edit blindly


class MemoryFilesHost(Protocol):
    """What writing memory needs of the sessions (agent/sessions.py's ``Sessions``)."""

    def record(self, session_id: str) -> SessionRecord: ...


def _inside(root: Path, target: Path) -> bool:
    return target == root or root in target.parents


def memory_path(session_folder: str, cwd: str, file: str) -> Path:
    """The file to write: ``file`` in ``cwd``, which must be the session's folder or inside it,
    and must still be so with every symlink resolved (the file's own too)."""
    root = Path(session_folder).resolve()
    if not root.is_dir():
        raise CommandFailed("not_found", f"the session's folder {session_folder!r} is gone")
    if not os.path.isabs(cwd):
        raise CommandFailed("bad_path", f"{cwd[:80]!r} is not an absolute folder")
    folder = Path(cwd).resolve()
    if not _inside(root, folder):
        raise CommandFailed(
            "outside_folder",
            f"{cwd[:80]!r} is not the session's folder {session_folder!r} nor inside it",
        )
    if not folder.is_dir():
        raise CommandFailed("not_found", f"the folder {cwd[:80]!r} is gone")
    path = folder / file
    if not _inside(root, path.resolve()):
        raise CommandFailed(
            "outside_folder", f"{file} in {cwd[:80]!r} leads outside the session's folder"
        )
    return path


def _read(path: Path) -> tuple[str, int | None]:
    """The file's text and mode (None: no file yet)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return "", None
    if not stat.S_ISREG(info.st_mode):
        raise CommandFailed("not_a_file", f"{path} is not a regular file")
    if info.st_size > MAX_MEMORY_FILE_BYTES:
        raise CommandFailed(
            "file_too_large",
            f"{path} is {info.st_size} bytes, over {MAX_MEMORY_FILE_BYTES}: edit it by hand",
        )
    try:
        with path.open(encoding="utf-8", newline="") as file:
            return file.read(), stat.S_IMODE(info.st_mode)
    except UnicodeDecodeError:
        raise CommandFailed(
            "not_text", f"{path} is not UTF-8 text: it is left alone, fix it by hand"
        ) from None


def write_memory(session_folder: str, args: WriteMemoryArgs) -> dict[str, Any]:
    """Do the command on disk (see the module's docstring); answers ``{diff, path, changed,
    written, facts}``."""
    path = memory_path(session_folder, args.cwd, args.file)
    before, mode = _read(path)
    try:
        after = apply_section(before, args.facts)
    except SectionError as exc:
        raise CommandFailed("memory_section", f"{path}: {exc}") from None
    diff = unified_diff(before, after, args.file)
    changed = after != before
    written = changed and not args.dry_run
    if written:
        write_text(path, after, NEW_FILE_MODE if mode is None else mode)
    return {
        "diff": diff,
        "path": str(path),
        "changed": changed,
        "written": written,
        "facts": current_facts(after),
    }


class MemoryFiles:
    """The command write_memory."""

    def __init__(self, sessions: MemoryFilesHost) -> None:
        self.sessions = sessions

    def handlers(self) -> list[Handler]:
        return [(WriteMemoryArgs, self.write_memory)]

    async def write_memory(self, session_id: str, args: WriteMemoryArgs) -> dict[str, Any]:
        folder = self.sessions.record(session_id).cwd
        return await asyncio.to_thread(write_memory, folder, args)
