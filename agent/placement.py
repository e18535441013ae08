"""Where a Mac's Claude Code finds a conversation for a folder, so a moved session resumes it.

Claude Code keeps a conversation in ``<claude home>/projects/<slug>/<conversation id>.jsonl``
(slug: agent/transcript.py's ``project_slug`` of the folder) and everything that belongs to it
in the folder beside it, ``<slug>/<conversation id>/``: its subagents' transcripts
(``subagents/agent-<id>.jsonl``) with their ``.meta.json``, and whatever else the version keeps
there. Beside them is the project's ``memory/`` folder (2.1.332 makes it, empty until Claude
writes a memory): its files travel too, but never replace a memory file the target has.

On another Mac the conversation must be placed under the slug of its new folder: that is where
``claude --resume <id>`` run there finds it and goes on writing, and where the agent follows it
(``transcript_path`` of the new folder). (2.1.332 run with an id also finds a conversation kept
under another folder's slug of the same home, and then appends to that file.)

The lines themselves are not rewritten: their ``cwd`` fields (and the environment attachment's
``workingDirectory``) keep the folder the lines were written in, as Claude Code itself leaves
them, and ``--resume`` in the new folder shows the whole conversation and continues it there
(new lines carry the new ``cwd``) — checked with the real binary (tests/agent/test_placement.py).

:func:`pack_conversation` writes the files into one archive (gzip'd tar, 0600) with a
:class:`ConversationManifest`; :func:`place_conversation` checks it and puts the files in place
on the target, each written whole (a temp file and a rename) and private. A conversation the
target already has is left as it is when it is the same or a beginning of the one arriving (the
arriving one replaces it), and refused otherwise (``conversation_exists``): two different
histories under one id are never merged or overwritten.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from agent.errors import CommandFailed
from agent.transcript import project_slug, transcript_path

MAX_FILES = 10_000
MEMORY = "memory"  # the project's own memory folder beside its conversations
MAX_NAME = 255
_CONVERSATION = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COPY = 1024 * 1024


class PlacementError(CommandFailed):
    """A conversation could not be packed or placed: ``code`` (``no_conversation``,
    ``bad_archive``, ``conversation_exists``, ``disk_full``) and ``message``."""


def check_conversation_id(conversation_id: str) -> str:
    """A conversation id (a lower-case UUID) or ``ValueError``: it names files. Pure."""
    if not isinstance(conversation_id, str) or not _CONVERSATION.match(conversation_id):
        raise ValueError(f"{str(conversation_id)[:80]!r} is not a conversation id")
    return conversation_id


def project_folder(claude_home: Path, cwd: str) -> Path:
    """The folder where Claude Code keeps the conversations of ``cwd``."""
    return claude_home / "projects" / project_slug(cwd)


def conversation_files(claude_home: Path, cwd: str, conversation_id: str) -> list[Path]:
    """The conversation's transcript and every file of its own folder (subagents' transcripts
    and their meta files …), transcript first; only regular files, never through a symlink.
    [] when the transcript is not there."""
    check_conversation_id(conversation_id)
    main = transcript_path(claude_home, cwd, conversation_id)
    if not main.is_file() or main.is_symlink():
        return []
    found = [main]
    for folder in (main.with_suffix(""), main.parent / MEMORY):
        if folder.is_dir() and not folder.is_symlink():
            for parent, dirs, names in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if not (Path(parent) / d).is_symlink())
                for name in sorted(names):
                    path = Path(parent) / name
                    if path.is_file() and not path.is_symlink():
                        found.append(path)
    return found[:MAX_FILES]


def relative_name(claude_home: Path, cwd: str, path: Path) -> str:
    """``path``'s name inside the project folder (``<id>.jsonl``, ``<id>/subagents/…``)."""
    return path.relative_to(project_folder(claude_home, cwd)).as_posix()


def check_name(name: str, conversation_id: str) -> PurePosixPath:
    """A file name from an archive: the transcript ``<id>.jsonl`` or a path under ``<id>/``,
    with no ``..``, absolute or empty part. ``ValueError`` otherwise. Pure."""
    if not isinstance(name, str) or "\x00" in name or "\\" in name:
        raise ValueError("a file name with a NUL or a backslash")
    if name == f"{conversation_id}.jsonl":
        return PurePosixPath(name)
    parts = name.split("/")
    if (
        len(parts) < 2
        or parts[0] not in (conversation_id, MEMORY)
        or any(p in ("", ".", "..") or len(p) > MAX_NAME for p in parts)
    ):
        raise ValueError(f"{name[:120]!r} is not a file of conversation {conversation_id}")
    return PurePosixPath(name)


@dataclass(frozen=True)
class ConversationManifest:
    """What a conversation archive holds. JSON-able."""

    conversation_id: str
    names: tuple[str, ...]  # relative to the project folder, transcript first
    bytes: int  # size of the archive
    sha256: str  # of the archive
    content_bytes: int  # the files' bytes together

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation_id": self.conversation_id,
            "names": list(self.names),
            "bytes": self.bytes,
            "sha256": self.sha256,
            "content_bytes": self.content_bytes,
        }

    @classmethod
    def from_json(cls, data: Any) -> ConversationManifest:
        if not isinstance(data, dict):
            raise ValueError("conversation manifest: expected an object")
        conversation_id = check_conversation_id(data.get("conversation_id", ""))
        names = data.get("names")
        if not isinstance(names, list) or not 1 <= len(names) <= MAX_FILES:
            raise ValueError(f"conversation manifest: names must be a list of 1 to {MAX_FILES}")
        for name in names:
            check_name(name, conversation_id)
        if names[0] != f"{conversation_id}.jsonl" or len(set(names)) != len(names):
            raise ValueError("conversation manifest: the transcript first, each name once")
        size, content = data.get("bytes"), data.get("content_bytes")
        for value in (size, content):
            if type(value) is not int or not 0 <= value < 2**53:
                raise ValueError("conversation manifest: sizes must be whole numbers from 0")
        assert isinstance(size, int) and isinstance(content, int)
        sha = data.get("sha256")
        if not isinstance(sha, str) or not _SHA256.match(sha):
            raise ValueError("conversation manifest: sha256 must be 64 lower-case hex digits")
        return cls(conversation_id, tuple(names), size, sha, content)


def pack_conversation(
    claude_home: Path, cwd: str, conversation_id: str, out: Path
) -> ConversationManifest:
    """Write the conversation's files (:func:`conversation_files`) into one archive at ``out``
    (0600); ``no_conversation`` when its transcript is not there."""
    files = conversation_files(claude_home, cwd, conversation_id)
    if not files:
        raise PlacementError(
            "no_conversation",
            f"conversation {conversation_id} has no transcript for {cwd} on this Mac",
        )
    names = [relative_name(claude_home, cwd, p) for p in files]
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    content = 0
    try:
        with (
            os.fdopen(fd, "wb") as raw,
            tarfile.open(
                fileobj=raw, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT
            ) as tar,
        ):
            for name, path in zip(names, files, strict=True):
                with path.open("rb") as f:
                    info = tarfile.TarInfo(name)
                    # Claude Code may still append: carry the size seen now, whole lines only.
                    info.size = _complete_size(f)
                    info.mode, info.mtime = 0o600, int(os.fstat(f.fileno()).st_mtime)
                    tar.addfile(info, f)
                    content += info.size
    except OSError as exc:
        out.unlink(missing_ok=True)
        raise _os_error(exc, "packing the conversation") from None
    return ConversationManifest(
        conversation_id, tuple(names), out.stat().st_size, _sha256(out), content
    )


def _complete_size(f: Any) -> int:
    """The size of a file up to the end of its last complete line (all of it when it ends in
    a newline or holds none, e.g. a meta file)."""
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        return 0
    f.seek(size - 1)
    if f.read(1) == b"\n":
        f.seek(0)
        return size
    back = min(size, _COPY)
    f.seek(size - back)
    tail = f.read(back)
    f.seek(0)
    cut = tail.rfind(b"\n")
    return size if cut < 0 else size - back + cut + 1


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_COPY):
            h.update(chunk)
    return h.hexdigest()


def _os_error(exc: OSError, doing: str) -> PlacementError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return PlacementError("disk_full", f"the disk of this Mac is full while {doing}")
    return PlacementError("place_failed", f"{doing} failed: {exc}")


def place_conversation(
    claude_home: Path,
    new_cwd: str,
    conversation_id: str,
    files: Path | Mapping[str, Path],
    manifest: ConversationManifest | None = None,
) -> list[Path]:
    """Put the conversation where Claude Code looks for it in ``new_cwd``: ``files`` is the
    archive :func:`pack_conversation` made (with its ``manifest``, checked first), or the files
    themselves by name (``<id>.jsonl``, ``<id>/subagents/…``). Returns the paths placed."""
    check_conversation_id(conversation_id)
    with tempfile.TemporaryDirectory(prefix="cb-conversation-") as temp:
        if isinstance(files, Path):
            if manifest is None or manifest.conversation_id != conversation_id:
                raise PlacementError(
                    "bad_archive", "the conversation's archive has no manifest for it"
                )
            sources = _unpack(files, manifest, Path(temp))
        else:
            sources = {str(check_name(n, conversation_id)): p for n, p in files.items()}
        if f"{conversation_id}.jsonl" not in sources:
            raise PlacementError("bad_archive", "the conversation's transcript is missing")
        return _place(project_folder(claude_home, new_cwd), sources)


def _unpack(archive: Path, manifest: ConversationManifest, into: Path) -> dict[str, Path]:
    if (
        not archive.is_file()
        or archive.stat().st_size != manifest.bytes
        or _sha256(archive) != manifest.sha256
    ):
        raise PlacementError(
            "bad_archive", "the conversation's archive does not match its manifest"
        )
    wanted = set(manifest.names)
    out: dict[str, Path] = {}
    budget = manifest.content_bytes
    try:
        with tarfile.open(archive, mode="r|gz") as tar:
            for info in tar:
                if info.name not in wanted or info.name in out or not info.isreg():
                    raise PlacementError(
                        "bad_archive", f"the conversation's archive holds {info.name[:120]!r}"
                    )
                budget -= info.size
                if budget < 0:
                    raise PlacementError(
                        "bad_archive", "the conversation's archive holds more than it declares"
                    )
                source = tar.extractfile(info)
                assert source is not None
                path = into / f"{len(out)}.part"
                with path.open("wb") as f:
                    shutil.copyfileobj(source, f, _COPY)
                out[info.name] = path
    except (tarfile.TarError, EOFError) as exc:
        raise PlacementError(
            "bad_archive", f"the conversation's archive is not readable ({exc})"
        ) from None
    if set(out) != wanted:
        raise PlacementError(
            "bad_archive", "the conversation's archive lacks files its manifest names"
        )
    return out


def _same_or_longer(existing: Path, arriving: Path) -> bool:
    """The file already there is the arriving one or a beginning of it."""
    size = existing.stat().st_size
    if size > arriving.stat().st_size:
        return False
    with existing.open("rb") as a, arriving.open("rb") as b:
        left = size
        while left > 0:
            n = min(left, _COPY)
            if a.read(n) != b.read(n):
                return False
            left -= n
    return True


def _place(folder: Path, sources: Mapping[str, Path]) -> list[Path]:
    sources = dict(sources)
    for name, source in list(sources.items()):
        target = folder / name
        if name.startswith(MEMORY + "/") and (target.exists() or target.is_symlink()):
            del sources[name]  # the project's memory on this Mac stays as it is
            continue
        if target.is_symlink() or (target.exists() and not target.is_file()):
            raise PlacementError("conversation_exists", f"{target} is in the way")
        if target.exists() and not _same_or_longer(target, source):
            raise PlacementError(
                "conversation_exists",
                f"this Mac already has a different conversation {name.split('/')[0].removesuffix('.jsonl')} "
                f"for the folder ({target}); it was left as it is",
            )
    placed: list[Path] = []
    try:
        # Subagents' files first, the transcript last: once it is there the conversation is whole.
        for name in sorted(sources, key=lambda n: (n.endswith(".jsonl") and "/" not in n, n)):
            target = folder / name
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
            try:
                with os.fdopen(fd, "wb") as out, sources[name].open("rb") as src:
                    shutil.copyfileobj(src, out, _COPY)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temp, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
            placed.append(target)
    except OSError as exc:
        raise _os_error(exc, "placing the conversation") from None
    return placed


def placed_names(paths: Sequence[Path], claude_home: Path, cwd: str) -> list[str]:
    """The placed files' names inside the project folder (for a log line or a reply)."""
    return [relative_name(claude_home, cwd, p) for p in paths]
