"""Files the phone attaches to a message, kept on the Mac until the session is deleted.

Each session's files live in the agent's data folder, ``<data>/attachments/<session id>/``
(0700), never in the working folder: Claude Code is handed them as ``@path`` references in the
typed message (agent/held.py), so the model sees an image as an image. A file is saved under a
name the Mac makes (``a`` + 24 hex digits, and the extension of its declared type), 0600; the
name the phone gave is kept beside it only to be shown. What the bytes are must match the type
the phone declared (an image's magic number, a PDF's header, a text's UTF-8), so nothing is
handed to Claude Code as a picture that is not one. A held message's attachments travel with a
moved session (agent/moving.py): the target keeps them with :func:`adopt`, checked the same way.

What one session keeps is bounded (``attachments_max_per_session`` files,
``attachments_max_bytes_per_session`` bytes). A file past a bound first makes room by removing the
session's oldest files that no message waiting on the Mac names (Claude Code read those when
their message was typed); when that is not enough the upload is refused with
``attachments_full``, naming the setting. A file is written under a temporary name and renamed
into place once whole, with its description last: a full disk (``disk_full``) or a crash leaves
no half-written file that could be handed to Claude Code.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from agent.errors import CommandFailed
from agent.registry import is_session_id
from wire.protocol import ATTACHMENT_TYPES, MAX_ATTACHMENT_BYTES, AttachmentInfo

FOLDER = "attachments"
TEMP_PREFIX = ".part-"  # a file being written; never an attachment (ids start with "a")
# The disk (or the person's quota) is full: the one failure of a write a person can act on.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


@dataclass(frozen=True)
class Room:
    """What one session may keep (0: no bound), and the files it must keep whatever the bound
    (those a message still waiting on the Mac names)."""

    files: int
    total_bytes: int
    needed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Kept:
    """One file the session keeps: its id, size and when it was saved (oldest first)."""

    id: str
    size: int
    saved_at: float


def make_room(kept: list[Kept], incoming: int, room: Room) -> list[str] | str:
    """The ids to remove, oldest first, so one more file of ``incoming`` bytes fits; or why it
    cannot fit (a string naming the setting)."""
    files = sorted(kept, key=lambda k: (k.saved_at, k.id))
    count, total = len(files), sum(k.size for k in files)
    drop: list[str] = []

    def fits() -> bool:
        return (room.files <= 0 or count + 1 <= room.files) and (
            room.total_bytes <= 0 or total + incoming <= room.total_bytes
        )

    for file in files:
        if fits():
            break
        if file.id in room.needed:
            continue
        drop.append(file.id)
        count, total = count - 1, total - file.size
    if fits():
        return drop
    if room.files > 0 and count + 1 > room.files:
        return (
            f"this session keeps {count:,} attached files that messages still waiting on the "
            f"Mac name, and attachments_max_per_session is {room.files:,}: send or cancel "
            "those messages first"
        )
    return (
        f"this file ({incoming:,} bytes) and the {total:,} bytes of files that messages still "
        f"waiting on the Mac name pass attachments_max_bytes_per_session ({room.total_bytes:,}): "
        "send or cancel those messages first"
    )


# The first bytes of each binary type (WebP: RIFF....WEBP).
_MAGIC: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "application/pdf": (b"%PDF-",),
}


def problem(data: bytes, media_type: str, limit: int = MAX_ATTACHMENT_BYTES) -> str | None:
    """Why ``data`` cannot be kept as ``media_type`` (None: it can)."""
    if media_type not in ATTACHMENT_TYPES:
        return f"{media_type[:80]!r} is not a type that can be attached"
    if not data:
        return "the file is empty"
    if len(data) > limit:
        return f"the file is {len(data):,} bytes; attachments are limited to {limit:,}"
    if media_type == "image/webp":
        ok = data[:4] == b"RIFF" and data[8:12] == b"WEBP"
    elif media_type in _MAGIC:
        ok = data.startswith(_MAGIC[media_type])
    else:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return f"the file is not UTF-8 text, as {media_type} must be"
        ok = b"\0" not in data
    return None if ok else f"the file's bytes are not {media_type}"


def shown_name(name: str) -> str:
    """The phone's file name as shown: its last path part, no control characters, 200 at most."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    clean = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip()
    return clean[:200] or "file"


def folder_of(data_dir: Path, session_id: str) -> Path:
    if not is_session_id(session_id):
        raise CommandFailed("bad_session_id", f"{session_id[:80]!r} is not a session id")
    return data_dir / FOLDER / session_id


def save(
    data_dir: Path,
    session_id: str,
    name: str,
    media_type: str,
    data: bytes,
    limit: int,
    room: Room | None = None,
) -> AttachmentInfo:
    """Keep ``data`` for the session; answered with what the phone sends back with the message."""
    why = problem(data, media_type, min(limit, MAX_ATTACHMENT_BYTES))
    if why is not None:
        raise CommandFailed("bad_attachment", why)
    folder = folder_of(data_dir, session_id)
    folder.mkdir(parents=True, exist_ok=True)
    for part in (data_dir / FOLDER, folder):
        os.chmod(part, 0o700)
    _drop_parts(folder)  # what a write cut short (a crash) left
    if room is not None:
        planned = make_room(kept(data_dir, session_id), len(data), room)
        if isinstance(planned, str):
            raise CommandFailed("attachments_full", planned)
        for attachment_id in planned:
            _remove(folder, attachment_id)
    info = AttachmentInfo(
        id="a" + secrets.token_hex(12),
        name=shown_name(name),
        media_type=media_type,  # type: ignore[arg-type]  # checked by problem()
        size=len(data),
    )
    content = folder / (info.id + ATTACHMENT_TYPES[media_type])
    described = folder / (info.id + ".json")
    try:
        # The description last: a file is an attachment (find, kept) only once both are whole.
        _write_private(content, data)
        _write_private(described, info.model_dump_json().encode())
    except OSError as exc:
        content.unlink(missing_ok=True)
        if exc.errno in _FULL:
            raise CommandFailed(
                "disk_full",
                f"the Mac's disk is full: the file ({len(data):,} bytes) was not kept and "
                "nothing of it was left behind; free some space on the Mac, then attach it again",
            ) from None
        raise
    return info


def kept(data_dir: Path, session_id: str) -> list[Kept]:
    """The files the session keeps now (each with its description), oldest first."""
    folder = folder_of(data_dir, session_id)
    if not folder.is_dir():
        return []
    found = []
    for described in folder.glob("a*.json"):
        try:
            info = AttachmentInfo.model_validate(json.loads(described.read_text(encoding="utf-8")))
            saved_at = described.stat().st_mtime
        except (OSError, ValueError):
            continue
        if described.stem == info.id:
            found.append(Kept(info.id, info.size, saved_at))
    return sorted(found, key=lambda k: (k.saved_at, k.id))


def find(data_dir: Path, session_id: str, ids: list[str]) -> list[tuple[AttachmentInfo, Path]]:
    """The session's attachments of these ids, in that order; ``unknown_attachment`` for an id
    this Mac does not hold for the session."""
    folder = folder_of(data_dir, session_id)
    found = []
    for attachment_id in ids:
        try:
            info = AttachmentInfo.model_validate(
                json.loads((folder / (attachment_id + ".json")).read_text(encoding="utf-8"))
            )
        except (OSError, ValueError):
            info = None
        path = path_of(data_dir, session_id, info) if info else None
        if info is None or info.id != attachment_id or path is None or not path.is_file():
            raise CommandFailed(
                "unknown_attachment",
                f"this Mac holds no attachment {attachment_id[:40]!r} for the session: "
                "upload it again",
            )
        found.append((info, path))
    return found


def path_of(data_dir: Path, session_id: str, info: AttachmentInfo) -> Path:
    """Where an attachment of the session is kept."""
    return folder_of(data_dir, session_id) / (info.id + ATTACHMENT_TYPES[info.media_type])


def adopt(
    data_dir: Path, session_id: str, info: AttachmentInfo, data: bytes, limit: int
) -> AttachmentInfo:
    """Keep the attachment of a held message that arrived with a moved session (agent/moving.py)
    under its id, as a new one is kept: its bytes checked against its type and its declared size,
    the name shown made plain again. Another Mac sent it: ``bad_attachment`` when it is not what
    it says. Placed again (a move asked twice), it replaces the copy it left."""
    why = problem(data, info.media_type, min(limit, MAX_ATTACHMENT_BYTES))
    if why is None and len(data) != info.size:
        why = f"the file is {len(data):,} bytes, not the {info.size:,} it was saved with"
    if why is not None:
        raise CommandFailed(
            "bad_attachment", f"the attachment {shown_name(info.name)!r} of a held message: {why}"
        )
    folder = folder_of(data_dir, session_id)
    folder.mkdir(parents=True, exist_ok=True)
    for part in (data_dir / FOLDER, folder):
        os.chmod(part, 0o700)
    kept = info.model_copy(update={"name": shown_name(info.name)})
    _write_private(path_of(data_dir, session_id, kept), data)
    _write_private(folder / (kept.id + ".json"), kept.model_dump_json().encode())
    return kept


def delete_for(data_dir: Path, session_id: str) -> bool:
    """Remove the session's attachments (the session was deleted); True when there were any."""
    folder = folder_of(data_dir, session_id)
    if not folder.exists():
        return False
    shutil.rmtree(folder)
    return True


def _remove(folder: Path, attachment_id: str) -> None:
    """One kept file and its description (the description first: never half an attachment)."""
    (folder / (attachment_id + ".json")).unlink(missing_ok=True)
    for path in folder.glob(attachment_id + ".*"):
        path.unlink(missing_ok=True)


def _drop_parts(folder: Path) -> None:
    for part in folder.glob(TEMP_PREFIX + "*"):
        part.unlink(missing_ok=True)


def _write_private(path: Path, data: bytes) -> None:
    """``data`` at ``path`` (0600) whole or not at all: written under a temporary name, flushed
    to the disk, then renamed into place."""
    part = path.with_name(TEMP_PREFIX + secrets.token_hex(6) + "-" + path.name)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
