"""A session's working folder, packed on one Mac and made again on another (a move, SPEC §8).

What travels is ONE archive file (a tar, mode 0600) and a small :class:`FolderManifest` that
says what it holds and its sha256. Its members are stored as they are — the bundle is compressed
already — except the files, which go in a gzip'd tar of their own, ``files.tgz``:

* **a git repository** — ``bundle``: a ``git bundle`` of the branch and HEAD, less what the
  target already has (its refs, from :func:`have_commits`, as ``^commit``); ``staged.patch``
  (index against HEAD) and ``unstaged.patch`` (work tree against the index), both
  ``git diff --binary``, so the target's ``git status`` shows the same staged and unstaged
  changes; ``files.tgz``: the untracked files that are not ignored
  (``git ls-files --others --exclude-standard``). Ignored files never travel. When the session's
  folder is a subfolder of a repository the whole repository travels and ``subdir`` says where
  the folder is in it.
* **a plain folder** — ``files.tgz``: its files, folders and symlinks.

Either way some folders never travel, whether ignored or not (:data:`SKIP_FOLDERS`, the setting
``move_skip_folders``): dependency and cache folders that are made again from the project
(``node_modules``, ``.venv``, ``__pycache__``, ``.tox`` …), any virtualenv (a folder holding
``pyvenv.cfg``), a repository inside the folder (``.git`` of a nested repository; in a git
folder the nested repository is left out whole), and symlinks that point outside the folder.
Each is named in the manifest's ``skipped``. Build outputs (``dist``, ``build``, ``target``) are
not skipped by name: in a repository they are normally ignored, and in a plain folder they may
be the person's own files.

The size limit (``move_max_bytes``) is checked against an estimate made before anything is
written (the history's size on disk from ``git rev-list --disk-usage``, the sizes of changed
and untracked files) and again on the archive made: a folder too big raises
:class:`FolderTooBig` naming its size, the limit and its biggest parts.

On the target, :func:`describe` says what the folder holds now and :func:`differences` (pure)
whether the archive may be laid down there: into an absent or empty folder, over the same
state (nothing to do), or into the same repository when it is clean and behind (its HEAD is
one the session's history contains): nothing on the target is lost. Compared with the
manifest, cheapest first — HEAD and branch, the count of files and folders (a walk that stops
once it has seen more), their sizes, their shape (``shape``: paths, kinds, sizes), the first
bytes of a few (``sample``) — a folder that differs is told in seconds whatever its size;
only one that matches all of them is read whole (``changes``).

:func:`unpack` checks the sha256 and the folder again, then lays the tree down — a new folder
is built beside its place and renamed into it (an empty one there keeps its mode), so a
failure leaves nothing half made; a repository brought forward in place never gets a file over
one it does not track (an ignored ``.env``: ``folder_differs``) and is put back as it was on
failure. Before each change it writes what it lays down to the move's ledger
(agent/landing.py), from which an abort takes back exactly that. Its work in threads stops
when the move is given up (cancelled), before the cancel returns.

The manifest lists the Claude Code project files that can run programs in the state it makes
(``claude_files``, agent/projecttrust.py), so a target whose Claude Code trusts the folder can
refuse at once; :func:`unpack` hands its caller every path it would lay down or change, read from
the archive itself, before any is in the folder (``before_laying``).

An archive is treated as hostile: only regular files, folders and symlinks; no path out of the
folder (``..``, absolute, through a symlink); each symlink judged by where it resolves through
all that is laid down (chains included): never out of the folder nor into a ``.git``; nothing
written into a ``.git`` in any spelling macOS folds to it; no folder git would take for a
repository's own (``HEAD`` beside ``objects``, ``refs`` or ``config``) at the top or on the
way to the session's subfolder; executable bits kept and set-id bits dropped; file times that
are times; no more files, folders or bytes than the manifest declares (each file, symlink and
folder costs :data:`ENTRY_BYTES` beyond its bytes); remotes only with a URL git reaches
without a program of its own (no ``<transport>::``, known schemes). Every git runs through
agent/git.py (nothing of a repository can make it start a program), on the target never in a
repository around the folder (``GIT_CEILING_DIRECTORIES``), and the bundle is read with
``git bundle unbundle`` (no transport at all).

Errors are :class:`FolderSyncError` (a ``CommandFailed``: ``code`` and ``message``): ``too_big``,
``folder_differs``, ``disk_full``, ``bad_archive``, ``git_missing``, ``git_failed``,
``git_timeout``, ``unsafe_repository``, ``folder_changed``, ``not_a_folder``,
``unpack_failed``, ``stopped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import math
import os
import re
import shutil
import stat
import tarfile
import tempfile
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar, copy_context
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, TypeVar

from agent import git, landing, projecttrust
from agent.errors import CommandFailed
from agent.git import is_dotgit

SKIP_FOLDERS: tuple[str, ...] = (
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".parcel-cache",
    ".next",
    ".nuxt",
    ".gradle",
)


def skip_folders(setting: str) -> tuple[str, ...]:
    """The setting ``move_skip_folders`` (comma-separated names) as names. Pure."""
    return tuple(dict.fromkeys(n.strip() for n in setting.split(",") if n.strip() and "/" not in n))


COMPRESS_LEVEL = 1  # gzip level of files.tgz (the bundle, compressed already, is stored as is)
MAX_HAVE = 1000  # most target commits a pack excludes (a thin bundle needs only a few)
MAX_SKIPPED = 50
MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255  # of one name in a path (APFS and HFS+ take no longer)
MAX_REF_CHARS = 255
MAX_REMOTES = 20
MAX_COUNT = 2**53  # JSON's safe integers
BUNDLE, STAGED, UNSTAGED, FILES = "bundle", "staged.patch", "unstaged.patch", "files.tgz"
_BLOCK = tarfile.BLOCKSIZE
_HEX = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # a SHA-1 or SHA-256 object name
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_HELPER_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*::")
_SCHEME_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SCHEMES = frozenset({"http", "https", "ssh", "git", "git+ssh", "ssh+git", "file", "ftp", "ftps"})
_COPY = 1024 * 1024
ENTRY_BYTES = 512  # what each file, symlink and folder of files.tgz costs beyond its bytes
MAX_MTIME = 2**34  # a file time past this (year 2514), NaN or below 0 is not a file's
SAMPLE_FILES = 32  # files whose first SAMPLE_BYTES a move's cheap comparison reads
SAMPLE_BYTES = 64 * 1024
GIT_TIMEOUT = 30 * 60.0  # seconds one git of a move may take (a bundle of a long history)
GIT_OUTPUT = 256 * 1024 * 1024  # most bytes of one git's output a move reads (else too_big)
MAX_BLOCKERS = 5  # files named when a move would overwrite the target's own
MAX_CLAUDE_FILES = 1000  # Claude Code project files a manifest may list


class FolderSyncError(CommandFailed):
    """The folder could not be packed or made again; ``code`` says which way, ``message`` why
    and what to do."""


class FolderTooBig(FolderSyncError):
    """The working folder is larger than ``move_max_bytes``: refused before it is packed."""

    def __init__(self, message: str) -> None:
        super().__init__("too_big", message)


# -- what travels and what is there -------------------------------------------------------------


@dataclass(frozen=True)
class FolderManifest:
    """What an archive holds. JSON-able (:meth:`to_json`, :meth:`from_json`)."""

    kind: Literal["git", "plain"]
    branch: str | None  # git: the checked-out branch (None when detached)
    head: str | None  # git: HEAD commit (None in a repository with no commit yet)
    files: int  # files and symlinks under files/ (untracked ones, or the plain folder's)
    bytes: int  # size of the archive file
    sha256: str  # of the archive file
    # What the archive's members come to before compression: their bytes, and ENTRY_BYTES for
    # each file, symlink and folder of files.tgz (a cap on unpack).
    content_bytes: int = 0
    folders: int = 0  # folders files.tgz makes, named or as a file's parents (a cap on unpack)
    subdir: str = ""  # the session's folder inside the repository ("" = its top)
    bundle: bool = False  # the archive holds a git bundle (False: the target has HEAD already)
    based_on: tuple[str, ...] = ()  # target commits the session's HEAD contains (bundle's base)
    staged: bool = False  # the archive holds staged.patch
    unstaged: bool = False  # the archive holds unstaged.patch
    changes: str = ""  # digest of the uncommitted state (git) or of the whole tree (plain)
    skipped: tuple[str, ...] = ()  # what was left out and why, e.g. "node_modules/ (…)"
    remotes: tuple[tuple[str, str], ...] = ()  # git remotes (name, url) for a new repository
    # Cheap to compare on the target before ``changes``: a digest of the files' (untracked
    # ones', for git) paths, kinds and sizes, and one of a few of them's first bytes.
    shape: str = ""
    sample: str = ""
    # The Claude Code project files that can run programs (agent/projecttrust.py) in the state
    # the archive makes, each with what it holds: a target whose Claude Code trusts the folder
    # refuses at once a move that would change them (and checks the archive itself on unpack).
    claude_files: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "branch": self.branch,
            "head": self.head,
            "files": self.files,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "content_bytes": self.content_bytes,
            "folders": self.folders,
            "subdir": self.subdir,
            "bundle": self.bundle,
            "based_on": list(self.based_on),
            "staged": self.staged,
            "unstaged": self.unstaged,
            "changes": self.changes,
            "skipped": list(self.skipped),
            "remotes": [list(r) for r in self.remotes],
            "shape": self.shape,
            "sample": self.sample,
            "claude_files": [list(f) for f in self.claude_files],
        }

    @classmethod
    def from_json(cls, data: Any) -> FolderManifest:
        """A manifest from the wire: every field type- and range-checked (``ValueError``)."""
        d = _mapping(data, "folder manifest")
        kind = d.get("kind")
        if kind not in ("git", "plain"):
            raise ValueError("folder manifest: kind must be 'git' or 'plain'")
        based_on = _list(d.get("based_on", []), "based_on", MAX_HAVE)
        remotes = _list(d.get("remotes", []), "remotes", MAX_REMOTES)
        manifest = cls(
            kind=kind,
            branch=_ref(d.get("branch"), "branch"),
            head=_object(d.get("head"), "head"),
            files=_count(d.get("files"), "files"),
            bytes=_count(d.get("bytes"), "bytes"),
            sha256=_digest(d.get("sha256"), "sha256"),
            content_bytes=_count(d.get("content_bytes", 0), "content_bytes"),
            folders=_count(d.get("folders", 0), "folders"),
            subdir=_subdir(d.get("subdir", "")),
            bundle=_flag(d.get("bundle", False), "bundle"),
            based_on=tuple(_object(c, "based_on") or "" for c in based_on),
            staged=_flag(d.get("staged", False), "staged"),
            unstaged=_flag(d.get("unstaged", False), "unstaged"),
            changes=_changes(d.get("changes", "")),
            skipped=tuple(
                _text(s, "skipped", 500)
                for s in _list(d.get("skipped", []), "skipped", MAX_SKIPPED)
            ),
            remotes=tuple(_remote(r) for r in remotes),
            shape=_changes(d.get("shape", "")),
            sample=_changes(d.get("sample", "")),
            claude_files=tuple(
                _claude_file(f)
                for f in _list(d.get("claude_files", []), "claude_files", MAX_CLAUDE_FILES)
            ),
        )
        if "" in manifest.based_on:
            raise ValueError("folder manifest: based_on holds an empty commit")
        if kind == "plain" and (manifest.head or manifest.branch or manifest.bundle):
            raise ValueError("folder manifest: a plain folder has no branch, head or bundle")
        if manifest.bundle and manifest.head is None:
            raise ValueError("folder manifest: a bundle needs a head")
        return manifest


@dataclass(frozen=True)
class FolderState:
    """What a folder on the target holds now (:func:`describe`). JSON-able."""

    exists: bool
    kind: Literal["git", "plain", "absent"]
    head: str | None = None
    branch: str | None = None
    dirty: bool = False  # git: uncommitted changes or untracked files that are not ignored
    # Digest as in FolderManifest.changes, worked out only against a manifest (describe);
    # else "" (clean, empty, or a plain folder not compared), or one that never equals one.
    changes: str = ""
    entries: int = 0  # entries in the folder itself (0 = empty; -1 = it is not a folder)

    @property
    def empty(self) -> bool:
        return self.exists and self.kind == "plain" and self.entries == 0

    def to_json(self) -> dict[str, Any]:
        return {
            "exists": self.exists,
            "kind": self.kind,
            "head": self.head,
            "branch": self.branch,
            "dirty": self.dirty,
            "changes": self.changes,
            "entries": self.entries,
        }

    @classmethod
    def from_json(cls, data: Any) -> FolderState:
        d = _mapping(data, "folder state")
        kind = d.get("kind")
        if kind not in ("git", "plain", "absent"):
            raise ValueError("folder state: kind must be 'git', 'plain' or 'absent'")
        exists = _flag(d.get("exists"), "exists")
        if exists == (kind == "absent"):
            raise ValueError("folder state: exists and kind disagree")
        entries = d.get("entries", 0)
        if type(entries) is not int or not -1 <= entries < MAX_COUNT:
            raise ValueError("folder state: entries must be a whole number from -1")
        return cls(
            exists=exists,
            kind=kind,
            head=_object(d.get("head"), "head"),
            branch=_ref(d.get("branch"), "branch"),
            dirty=_flag(d.get("dirty", False), "dirty"),
            changes=_changes(d.get("changes", "")),
            entries=entries,
        )


# -- checks of values from the wire (pure) ------------------------------------------------------


def _mapping(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError(f"{what}: expected an object")
    return data


def _list(value: Any, name: str, most: int) -> list[Any]:
    if not isinstance(value, list) or len(value) > most:
        raise ValueError(f"folder manifest: {name} must be a list of at most {most}")
    return value


def _flag(value: Any, name: str) -> bool:
    if type(value) is not bool:
        raise ValueError(f"{name} must be true or false")
    return value


def _count(value: Any, name: str) -> int:
    if type(value) is not int or not 0 <= value < MAX_COUNT:
        raise ValueError(f"folder manifest: {name} must be a whole number from 0")
    return value


def _text(value: Any, name: str, most: int) -> str:
    if not isinstance(value, str) or len(value) > most or "\x00" in value:
        raise ValueError(f"{name} must be text of at most {most} characters")
    return value


def _digest(value: Any, name: str) -> str:
    if not isinstance(value, str) or not _SHA256.match(value):
        raise ValueError(f"folder manifest: {name} must be 64 lower-case hex digits")
    return value


def _changes(value: Any) -> str:
    if value == "":
        return ""
    return _digest(value, "changes")


def _object(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _HEX.match(value):
        raise ValueError(f"{name} must be a git object name (40 or 64 lower-case hex digits)")
    return value


def _ref(value: Any, name: str) -> str | None:
    if value is None:
        return None
    text = _text(value, name, MAX_REF_CHARS)
    if not valid_branch(text):
        raise ValueError(f"{name}: {text[:80]!r} is not a branch name")
    return text


def valid_branch(name: str) -> bool:
    """``name`` is a branch name git accepts (the rules of ``git check-ref-format``). Pure."""
    if not name or len(name) > MAX_REF_CHARS or name.startswith(("-", "/")) or name == "@":
        return False
    if name.endswith(("/", ".", ".lock")) or ".." in name or "@{" in name or "//" in name:
        return False
    if any(c in name for c in " ~^:?*[\\\x7f") or any(ord(c) < 32 for c in name):
        return False
    return not any(part.startswith(".") or part.endswith(".lock") for part in name.split("/"))


def _subdir(value: Any) -> str:
    text = _text(value, "subdir", MAX_PATH_BYTES)
    if text and check_member(text) != text:
        raise ValueError(f"subdir: {text[:80]!r} is not a relative path inside the folder")
    return text


def _remote(value: Any) -> tuple[str, str]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("folder manifest: a remote is [name, url]")
    name, url = (_text(v, "remote", 2000) for v in value)
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,100}", name) or name.startswith((".", "-")):
        raise ValueError(f"folder manifest: {name[:80]!r} is not a remote name")
    if not url or any(ord(c) < 32 or c == "\x7f" for c in url) or url.startswith("-"):
        raise ValueError("folder manifest: a remote's url is one line")
    helper = _HELPER_URL.match(url)
    scheme = _SCHEME_URL.match(url)
    if helper or (scheme and scheme.group(1).lower() not in _SCHEMES):
        # "<transport>::…" and an unknown "<scheme>://" make git run a program to reach it.
        raise ValueError(f"folder manifest: {url[:80]!r} is not a git url this Mac takes")
    return name, url


def _claude_file(value: Any) -> tuple[str, str]:
    if not isinstance(value, list) or len(value) != 2:
        raise ValueError("folder manifest: a Claude Code file is [path, sha256]")
    path = _text(value[0], "claude_files", MAX_PATH_BYTES)
    if check_member(path) != path:
        raise ValueError(f"claude_files: {path[:80]!r} is not a relative path inside the folder")
    return path, _digest(value[1], "claude_files")


def check_member(path: str) -> str:
    """A relative path inside the folder, normalised (``a/b``), or ``ValueError``: absolute,
    ``..``, empty parts, NUL, a ``.git`` part (:func:`agent.git.is_dotgit`: nothing from an
    archive may be written there), too long. Pure."""
    if not path or "\x00" in path or len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise ValueError("an empty, too long or NUL-holding path")
    if path.startswith("/"):
        raise ValueError(f"{path[:80]!r} is absolute")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if not parts:
        raise ValueError(f"{path[:80]!r} names the folder itself")
    for part in parts:
        if part == "..":
            raise ValueError(f"{path[:80]!r} goes up a folder")
        if is_dotgit(part):
            raise ValueError(f"{path[:80]!r} writes into a .git folder")
        if len(os.fsencode(part)) > MAX_NAME_BYTES:
            raise ValueError(f"{path[:80]!r} holds a name longer than {MAX_NAME_BYTES} bytes")
    return "/".join(parts)


def link_stays_inside(path: str, target: str) -> bool:
    """A symlink at ``path`` (relative, checked) pointing at ``target`` stays inside the
    folder when read lexically: not absolute, never above the folder. Pure."""
    if not target or target.startswith("/") or "\x00" in target:
        return False
    depth = len(PurePosixPath(path).parts) - 1  # folders above the link inside the folder
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


# -- deciding (pure) ----------------------------------------------------------------------------


def _short(commit: str | None) -> str:
    return commit[:7] if commit else "no commit yet"


def _where(head: str | None, branch: str | None) -> str:
    return f"{_short(head)} on {branch}" if branch else f"{_short(head)} (detached)"


def same_state(manifest: FolderManifest, target: FolderState) -> bool:
    """The target folder already holds exactly what the archive would make. Pure."""
    if manifest.kind == "plain":
        return target.kind == "plain" and (
            target.changes == manifest.changes or (target.empty and manifest.files == 0)
        )
    return (
        target.kind == "git"
        and target.head == manifest.head
        and target.branch == manifest.branch
        and target.changes == manifest.changes
    )


def differences(manifest: FolderManifest, target: FolderState) -> list[str]:
    """What in the target folder stops the archive being laid down there, one line each; ``[]``
    when the folder is absent or empty, already holds this state, or is the same repository,
    clean, at a commit the session's history contains (its HEAD is the session's HEAD or one
    of ``manifest.based_on``). Pure."""
    if not target.exists or target.empty or same_state(manifest, target):
        return []
    if target.entries == -1:
        return ["the folder's path is a file, not a folder"]
    if manifest.kind == "plain":
        if target.kind == "git":
            return [
                f"the folder is a git repository at {_where(target.head, target.branch)}, "
                "the session's is a plain folder"
            ]
        return [f"the folder exists and is not empty ({_entries(target.entries)})"]
    if target.kind != "git":
        return [
            f"the folder exists, is not empty ({_entries(target.entries)}) and is not a git "
            f"repository; the session's is a git repository at "
            f"{_where(manifest.head, manifest.branch)}"
        ]
    lines = []
    behind = target.head is None or target.head == manifest.head or target.head in manifest.based_on
    if not behind:
        lines.append(
            f"the folder is a git repository at {_where(target.head, target.branch)}, "
            f"the session's is at {_where(manifest.head, manifest.branch)}"
        )
    if target.dirty:
        lines.append("the folder has uncommitted changes or untracked files")
    return lines


def _entries(n: int) -> str:
    return "1 entry" if n == 1 else f"{n} entries"


def expected_state(manifest: FolderManifest) -> FolderState:
    """The state :func:`describe` finds once :func:`unpack` laid the archive down. Pure."""
    if manifest.kind == "plain":
        return FolderState(True, "plain", changes=manifest.changes, entries=max(manifest.files, 1))
    return FolderState(
        True,
        "git",
        head=manifest.head,
        branch=manifest.branch,
        dirty=bool(manifest.changes),
        changes=manifest.changes,
        entries=1,
    )


def tree_root(cwd: str, subdir: str) -> str:
    """Where the tree goes for a session folder ``cwd`` ``subdir`` deep in its repository: ``cwd``
    less ``subdir`` when it ends with it, else ``cwd`` itself (the session then works in
    ``cwd/subdir``). Pure."""
    if not subdir:
        return cwd
    path, tail = PurePosixPath(cwd), PurePosixPath(subdir)
    n = len(tail.parts)
    if len(path.parts) > n and path.parts[-n:] == tail.parts:
        return str(PurePosixPath(*path.parts[:-n]))
    return cwd


def too_big_message(total: int, limit: int, parts: Iterable[tuple[str, int]]) -> str:
    """The ``too_big`` message: the size, the limit, the three biggest parts. Pure."""
    biggest = sorted(parts, key=lambda p: (-p[1], p[0]))[:3]
    named = ", ".join(f"{name} {human(size)}" for name, size in biggest if size > 0)
    return (
        f"the working folder is {human(total)} to copy, more than the limit of {human(limit)} "
        f"(setting move_max_bytes)"
        + (f"; biggest parts: {named}" if named else "")
        + ". Commit and push big files elsewhere, ignore them in .gitignore, or raise the limit."
    )


def human(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


# -- git ----------------------------------------------------------------------------------------


async def _git(
    cwd: Path,
    *args: str,
    check: bool = True,
    stdin: bytes | None = None,
    limit: int = GIT_OUTPUT,
    ceiling: Path | None = None,
) -> git.GitResult:
    """``git args`` in ``cwd`` through agent/git.py (no program of the repository runs); a
    failure (when ``check``) is ``git_failed`` with git's last words, or ``disk_full``; more
    output than ``limit`` is ``too_big``. ``ceiling``: git finds no repository above it."""
    try:
        run = await git.run(
            cwd, args, timeout=GIT_TIMEOUT, limit=limit, stdin=stdin, ceiling=ceiling
        )
    except CommandFailed as exc:
        raise FolderSyncError(exc.code, exc.message) from None
    if run.cut:
        raise FolderSyncError(
            "too_big", f"git {args[0]} gave more than {human(limit)}: the folder is too big to move"
        )
    text = run.err
    if check and run.code != 0:
        if "No space left" in text or "Disk quota" in text:
            raise FolderSyncError("disk_full", f"the disk of this Mac is full ({text[-200:]})")
        last = text.splitlines()[-1] if text else f"exit {run.code}"
        raise FolderSyncError("git_failed", f"git {args[0]} failed: {last[:300]}")
    return run


async def _top(root: Path, ceiling: Path | None = None) -> Path | None:
    """The top of the work tree ``root`` is in, or None when it is in none."""
    run = await _git(root, "rev-parse", "--show-toplevel", check=False, ceiling=ceiling)
    if run.code != 0 or not run.out.strip():
        return None
    return Path(os.fsdecode(run.out.rstrip(b"\n")))


async def _head(root: Path, ceiling: Path | None = None) -> tuple[str | None, str | None]:
    head = await _git(
        root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False, ceiling=ceiling
    )
    branch = await _git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False, ceiling=ceiling)
    commit = head.out.decode().strip() if head.code == 0 else None
    name = os.fsdecode(branch.out.strip()) if branch.code == 0 else None
    return commit or None, name or None


@dataclass(frozen=True)
class Located:
    """Where a session's folder lies: ``root`` is the tree that travels (a repository's top,
    or the folder), ``subdir`` the folder inside it."""

    root: Path
    subdir: str
    kind: Literal["git", "plain"]


async def locate(cwd: Path) -> Located:
    """The tree a session working in ``cwd`` moves: its repository (when it is in one) or the
    folder itself."""
    if not cwd.is_dir():
        raise FolderSyncError("not_a_folder", f"{cwd} is not a folder")
    if shutil.which("git") is None:
        return Located(cwd, "", "plain")
    top = await _top(cwd)
    if top is None:
        return Located(cwd, "", "plain")
    here, there = cwd.resolve(), top.resolve()
    subdir = "" if here == there else here.relative_to(there).as_posix()
    return Located(there, subdir, "git")


async def have_commits(root: Path) -> list[str]:
    """The commits the repository at ``root`` has at its refs and HEAD ([] when it is not the
    top of a repository): the source leaves them out of the bundle."""
    if not root.is_dir() or shutil.which("git") is None:
        return []
    ceiling = root.parent  # the target's folder itself, never a repository around it
    top = await _top(root, ceiling)
    if top is None or top.resolve() != root.resolve():
        return []
    run = await _git(
        root,
        "for-each-ref",
        "--format=%(objecttype) %(objectname) %(*objectname)",
        check=False,
        ceiling=ceiling,
    )
    found: dict[str, None] = {}
    head, _ = await _head(root, ceiling)
    if head:
        found[head] = None
    for line in run.out.decode().splitlines():
        kind, name, *peeled = line.split(" ")
        commit = name if kind == "commit" else (peeled[0] if peeled and peeled[0] else "")
        if _HEX.match(commit):
            found[commit] = None
    return list(found)[:MAX_HAVE]


# -- work in a thread, stopped with the move --------------------------------------------------

_STOP: ContextVar[threading.Event | None] = ContextVar("foldersync_stop", default=None)
_T = TypeVar("_T")


async def _in_thread(work: Callable[..., _T], *args: Any) -> _T:
    """``work(*args)`` in a thread; cancelled (a move given up), the thread is told to stop
    (:func:`_going_on`) and waited for: nothing of a failed move goes on after it."""
    stop = threading.Event()

    def call() -> _T:
        _STOP.set(stop)
        return work(*args)

    # The thread's own future (no task): shielded, so a cancel reaches the thread as ``stop``.
    running = asyncio.get_running_loop().run_in_executor(None, copy_context().run, call)
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        stop.set()
        while not running.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait([running])
        if not running.cancelled():
            running.exception()  # it stopped (FolderSyncError "stopped"): seen, and dropped
        raise


def _going_on() -> None:
    """In a thread of :func:`_in_thread`: stop here when the move was given up."""
    stop = _STOP.get()
    if stop is not None and stop.is_set():
        raise FolderSyncError("stopped", "the move was given up")


# -- what a tree holds ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    path: str  # relative, "/"-separated
    kind: Literal["file", "link", "dir"]
    size: int = 0
    executable: bool = False
    link: str = ""


def _is_venv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file()


def _classify(root: Path, rel: str) -> _Entry | str | None:
    """An entry for ``rel``, None when it is not a file, folder or symlink, or the reason a
    symlink is left out."""
    try:
        st = os.lstat(root / rel)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(root / rel)
        if not link_stays_inside(rel, target):
            return "a symlink pointing outside the folder"
        return _Entry(rel, "link", len(os.fsencode(target)), link=target)
    if stat.S_ISREG(st.st_mode):
        return _Entry(rel, "file", st.st_size, bool(st.st_mode & 0o111))
    if stat.S_ISDIR(st.st_mode):
        return _Entry(rel, "dir")
    return None


def _plain_entries(
    root: Path, skip: frozenset[str], most: tuple[int, int] | None = None
) -> tuple[list[_Entry], list[str], bool]:
    """Every file, folder and symlink of a plain folder, less the skipped folders; with ``most``
    (files, folders) the walk stops once it has seen more of either (then ``True``)."""
    entries: list[_Entry] = []
    skipped: list[str] = []
    files = folders = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        _going_on()
        base = Path(folder)
        rel_base = base.relative_to(root).as_posix()
        keep = []
        for name in sorted(dirs):
            rel = name if rel_base == "." else f"{rel_base}/{name}"
            path = base / name
            if path.is_symlink():
                names.append(name)  # a symlink to a folder travels as a symlink
            elif name in skip or _is_venv(path):
                skipped.append(f"{rel}/ (made again from the project)")
            elif is_dotgit(name):
                skipped.append(f"{rel}/ (a repository inside the folder: its history stays)")
            else:
                keep.append(name)
                entries.append(_Entry(rel, "dir"))
                folders += 1
        dirs[:] = keep
        for name in sorted(names):
            rel = name if rel_base == "." else f"{rel_base}/{name}"
            found = _classify(root, rel)
            if isinstance(found, str):
                skipped.append(f"{rel} ({found})")
            elif found is not None and found.kind != "dir":
                entries.append(found)
                files += 1
        if most is not None and (files > most[0] or folders > most[1]):
            return entries, skipped, True
    return entries, skipped, False


def _skipped_by_name(rel: str, root: Path, skip: frozenset[str]) -> str | None:
    """The skipped folder ``rel`` lies in (``a/node_modules``), or None."""
    parts = rel.split("/")
    for i, part in enumerate(parts[:-1]):
        if part in skip or _is_venv(root.joinpath(*parts[: i + 1])):
            return "/".join(parts[: i + 1])
    return None


async def _untracked(
    root: Path, skip: frozenset[str], ceiling: Path | None = None
) -> tuple[list[_Entry], list[str]]:
    """The untracked files of a repository that are not ignored, less the skipped folders."""
    run = await _git(root, "ls-files", "-z", "--others", "--exclude-standard", ceiling=ceiling)
    entries: list[_Entry] = []
    skipped: dict[str, None] = {}
    for raw in run.out.split(b"\x00"):
        if not raw:
            continue
        rel = os.fsdecode(raw)
        if rel.endswith("/"):  # git names a repository inside the folder, never its files
            skipped[f"{rel} (a repository inside the folder)"] = None
            continue
        if (name := _skipped_by_name(rel, root, skip)) is not None:
            skipped[f"{name}/ (made again from the project)"] = None
            continue
        found = _classify(root, rel)
        if isinstance(found, str):
            skipped[f"{rel} ({found})"] = None
        elif found is not None and found.kind != "dir":
            entries.append(found)
    entries.sort(key=lambda e: e.path)
    return entries, list(skipped)


def _folders_of(entries: Sequence[_Entry]) -> int:
    """The folders unpacking ``entries`` makes: the named ones and every file's parents."""
    made: set[str] = set()
    for e in entries:
        parts = e.path.split("/")
        made.update("/".join(parts[:i]) for i in range(1, len(parts)))
        if e.kind == "dir":
            made.add(e.path)
    return len(made)


def _content_bytes(entries: Sequence[_Entry]) -> int:
    """What files.tgz's ``entries`` cost unpacked: their bytes and ENTRY_BYTES for each of
    them and of the folders they make."""
    return sum(e.size for e in entries) + ENTRY_BYTES * (
        sum(e.kind != "dir" for e in entries) + _folders_of(entries)
    )


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_COPY):
            _going_on()
            h.update(chunk)
    return h.hexdigest()


def _digest_of(parts: Iterable[bytes], entries: Sequence[_Entry], root: Path) -> str:
    """One digest of a state: the patches' bytes and each entry (path, kind, bit, content)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    for e in sorted(entries, key=lambda e: e.path):
        _going_on()
        content = _file_digest(root / e.path) if e.kind == "file" else e.link
        h.update(
            f"{e.path}\x00{e.kind}\x00{int(e.executable)}\x00{content}\x00".encode(
                errors="surrogateescape"
            )
        )
    return h.hexdigest()


def _shape(entries: Sequence[_Entry]) -> str:
    """A digest of what the entries are without reading a file: each one's path, kind, bit,
    size and link. It never equals a :func:`_digest_of` (another prefix)."""
    h = hashlib.sha256(b"shape\x00")
    for e in sorted(entries, key=lambda e: e.path):
        h.update(
            f"{e.path}\x00{e.kind}\x00{int(e.executable)}\x00{e.size}\x00{e.link}\x00".encode(
                errors="surrogateescape"
            )
        )
    return h.hexdigest()


def _sample(entries: Sequence[_Entry], root: Path) -> str:
    """A digest of the first SAMPLE_BYTES of at most SAMPLE_FILES files, chosen by their paths
    alone (the same on both Macs): a bounded read."""
    chosen = sorted(
        (e for e in entries if e.kind == "file"),
        key=lambda e: hashlib.sha256(e.path.encode(errors="surrogateescape")).digest(),
    )[:SAMPLE_FILES]
    h = hashlib.sha256(b"sample\x00")
    for e in chosen:
        _going_on()
        try:
            with (root / e.path).open("rb") as f:
                head = f.read(SAMPLE_BYTES)
        except OSError:
            head = b"\x00unreadable"
        h.update(e.path.encode(errors="surrogateescape") + b"\x00" + hashlib.sha256(head).digest())
    return h.hexdigest()


def _seen(what: bytes) -> str:
    """A digest of a state told apart cheaply (git's status): never equal to a manifest's."""
    return hashlib.sha256(b"seen\x00" + what).hexdigest()


async def _patches(
    root: Path, ceiling: Path | None = None, limit: int = GIT_OUTPUT
) -> tuple[bytes, bytes]:
    diff = ("diff", "--binary", "--full-index", "--no-color", "--no-renames")
    staged = await _git(root, *diff, "--cached", ceiling=ceiling, limit=limit)
    unstaged = await _git(root, *diff, ceiling=ceiling, limit=limit)
    return staged.out, unstaged.out


async def describe(
    root: Path, *, skip: Sequence[str] = SKIP_FOLDERS, against: FolderManifest | None = None
) -> FolderState:
    """What the folder ``root`` (on the target) holds now. Git runs in ``root`` only, never in
    a repository around it. ``changes`` is compared with ``against``'s, and so worked out only
    with it, cheapest first (:func:`_changes_of_repository`, :func:`_changes_of_folder`): a
    folder that differs is told in seconds, whatever its size; without it a dirty repository's
    ``changes`` only tells it from a clean one, and a plain folder's is ``""``."""
    if not root.exists() and not root.is_symlink():
        return FolderState(False, "absent")
    if not root.is_dir():
        return FolderState(True, "plain", entries=-1)
    entries = len(os.listdir(root))
    skipping = frozenset(skip)
    ceiling = root.parent
    if (
        shutil.which("git") is not None
        and (top := await _top(root, ceiling)) is not None
        and top.resolve() == root.resolve()
    ):
        head, branch = await _head(root, ceiling)
        status = await _git(root, "status", "--porcelain=v1", "-z", ceiling=ceiling)
        dirty = bool(status.out.strip(b"\x00"))
        changes = _seen(status.out) if dirty else ""
        if dirty and against is not None and (head, branch) == (against.head, against.branch):
            changes = await _changes_of_repository(root, skipping, against, changes)
        return FolderState(True, "git", head, branch, dirty, changes, entries)
    if entries == 0:
        return FolderState(True, "plain", entries=0)
    changes = ""
    if against is not None and against.kind == "plain":
        changes = await _in_thread(_changes_of_folder, root, skipping, against)
    return FolderState(True, "plain", changes=changes, entries=entries)


async def claude_files_here(root: Path, state: FolderState) -> dict[str, str]:
    """The Claude Code project files that can run programs a move into ``root`` (in ``state``,
    which :func:`differences` let through) would replace or remove, and what each holds: a
    repository's tracked ones; none in an absent or empty folder."""
    if state.kind != "git":
        return {}
    run = await _git(root, "ls-files", "-z", ceiling=root.parent)
    paths = [os.fsdecode(p) for p in run.out.split(b"\x00") if p]
    return await _in_thread(projecttrust.program_files, root, paths)


async def _changes_of_repository(
    root: Path, skip: frozenset[str], manifest: FolderManifest, differs: str
) -> str:
    """The uncommitted state's digest of a repository at the manifest's HEAD, or ``differs``
    as soon as a cheaper look tells them apart: the untracked files' count, their shape, a
    sample of them, patches larger than all the archive holds."""
    try:
        untracked, _ = await _untracked(root, skip, root.parent)
        if len(untracked) != manifest.files:
            return differs
        if manifest.shape and _shape(untracked) != manifest.shape:
            return differs
        if manifest.sample and await _in_thread(_sample, untracked, root) != manifest.sample:
            return differs
        staged, unstaged = await _patches(root, root.parent, limit=manifest.content_bytes + 1)
    except FolderSyncError as exc:
        if exc.code == "too_big":  # more than all the archive holds: not its state
            return differs
        raise
    return await _in_thread(_digest_of, [staged, unstaged], untracked, root)


def _changes_of_folder(root: Path, skip: frozenset[str], manifest: FolderManifest) -> str:
    """A plain folder's digest, or its shape's as soon as a cheaper look tells it from the
    manifest's: more files or folders than it holds (the walk stops there), other sizes, another
    shape, another sample."""
    entries, _, over = _plain_entries(root, skip, (manifest.files, manifest.folders))
    differs = _shape(entries)
    files = sum(e.kind != "dir" for e in entries)
    if over or files != manifest.files or _folders_of(entries) != manifest.folders:
        return differs
    if _content_bytes(entries) != manifest.content_bytes:
        return differs
    if manifest.shape and differs != manifest.shape:
        return differs
    if manifest.sample and _sample(entries, root) != manifest.sample:
        return differs
    return _digest_of([], entries, root)


# -- packing ------------------------------------------------------------------------------------


def _no_space(exc: OSError) -> bool:
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)


def _top_part(rel: str) -> str:
    head, _, rest = rel.partition("/")
    return f"{head}/" if rest else head


async def pack(
    root: Path,
    out: Path,
    *,
    limit: int,
    have: Sequence[str] = (),
    skip: Sequence[str] = SKIP_FOLDERS,
) -> FolderManifest:
    """Write the archive of the session's folder ``root`` to ``out`` (0600) and say what it
    holds. ``have``: the target's commits (:func:`have_commits`), left out of the bundle.
    Larger than ``limit`` bytes: :class:`FolderTooBig`, before anything big is written."""
    located = await locate(root)
    skipping = frozenset(skip)
    if located.kind == "plain":
        return await _pack_plain(located.root, out, limit, skipping)
    return await _pack_git(located, out, limit, have, skipping)


async def _pack_plain(root: Path, out: Path, limit: int, skip: frozenset[str]) -> FolderManifest:
    entries, skipped, _ = await _in_thread(_plain_entries, root, skip)
    total = sum(e.size for e in entries)
    if total > limit:
        sizes: dict[str, int] = {}
        for e in entries:
            sizes[_top_part(e.path)] = sizes.get(_top_part(e.path), 0) + e.size
        raise FolderTooBig(too_big_message(total, limit, sizes.items()))
    changes = await _in_thread(_digest_of, [], entries, root)
    paths = [e.path for e in entries if e.kind != "dir"]
    manifest = FolderManifest(
        "plain", None, None, sum(e.kind != "dir" for e in entries), 0, "0" * 64,
        content_bytes=_content_bytes(entries), folders=_folders_of(entries), changes=changes,
        skipped=tuple(skipped[:MAX_SKIPPED]), shape=_shape(entries),
        sample=await _in_thread(_sample, entries, root),
        claude_files=await _in_thread(_claude_files, root, paths),
    )  # fmt: skip
    return await _in_thread(_write_archive, out, manifest, root, entries, {}, limit)


async def _pack_git(
    located: Located, out: Path, limit: int, have: Sequence[str], skip: frozenset[str]
) -> FolderManifest:
    root = located.root
    head, branch = await _head(root)
    untracked, skipped = await _untracked(root, skip)
    # The target's commits this repository knows, and which of them HEAD contains.
    known: list[str] = []
    based_on: list[str] = []
    wanted = [c for c in dict.fromkeys(have) if _HEX.match(c)][:MAX_HAVE]
    if wanted and head:
        check = await _git(
            root,
            "cat-file",
            "--batch-check=%(objectname) %(objecttype)",
            stdin="\n".join(wanted).encode() + b"\n",
        )
        known = [
            line.split(" ")[0]
            for line in check.out.decode().splitlines()
            if line.endswith(" commit")
        ]
        if known:  # which of them HEAD contains: one walk of the history, not one per commit
            history_of_head = set((await _git(root, "rev-list", head)).out.decode().split())
            based_on = [c for c in known if c in history_of_head]
    exclude = [f"^{c}" for c in known]
    history = 0
    missing = 0
    if head:
        usage = await _git(
            root, "rev-list", "--objects", "--disk-usage", head, *exclude, check=False
        )
        history = int(usage.out.strip() or 0) if usage.code == 0 else 0
        count = await _git(root, "rev-list", "--count", head, *exclude)
        missing = int(count.out.strip() or 0)
    changed = await _git(
        root, "diff", "--name-only", "-z", "--no-renames", "HEAD" if head else "--cached", "--"
    )
    changed_sizes = []
    for raw in changed.out.split(b"\x00"):
        if raw:
            with contextlib.suppress(OSError):
                changed_sizes.append(
                    (_top_part(os.fsdecode(raw)), os.lstat(root / os.fsdecode(raw)).st_size)
                )
    estimate = history + sum(s for _, s in changed_sizes) + sum(e.size for e in untracked)
    if estimate > limit:
        parts: dict[str, int] = {"the git history": history}
        for name, size in [*changed_sizes, *((_top_part(e.path), e.size) for e in untracked)]:
            parts[name] = parts.get(name, 0) + size
        raise FolderTooBig(too_big_message(estimate, limit, parts.items()))
    remotes = await _remotes(root)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".cb-pack-", dir=out.parent))
    try:
        staged, unstaged = await _patches(root, limit=limit)
        blobs: dict[str, Path] = {}
        if staged:
            blobs[STAGED] = _write_private(work / STAGED, staged)
        if unstaged:
            blobs[UNSTAGED] = _write_private(work / UNSTAGED, unstaged)
        if missing:
            refs = [f"refs/heads/{branch}", "HEAD"] if branch else ["HEAD"]
            await _git(root, "bundle", "create", "-q", str(work / BUNDLE), "--stdin",
                       stdin="\n".join([*refs, *exclude]).encode() + b"\n")  # fmt: skip
            blobs[BUNDLE] = work / BUNDLE
        changes = await _in_thread(_digest_of, [staged, unstaged], untracked, root)
        dirty = bool(staged or unstaged or untracked)
        tracked = await _git(root, "ls-files", "-z")
        paths = [os.fsdecode(p) for p in tracked.out.split(b"\x00") if p]
        paths += [e.path for e in untracked]
        manifest = FolderManifest(
            "git", branch, head, len(untracked), 0, "0" * 64,
            content_bytes=sum(p.stat().st_size for p in blobs.values()) + _content_bytes(untracked),
            folders=_folders_of(untracked),
            subdir=located.subdir, bundle=BUNDLE in blobs, based_on=tuple(based_on),
            staged=bool(staged), unstaged=bool(unstaged), changes=changes if dirty else "",
            skipped=tuple(skipped[:MAX_SKIPPED]), remotes=remotes, shape=_shape(untracked),
            sample=await _in_thread(_sample, untracked, root),
            claude_files=await _in_thread(_claude_files, root, paths),
        )  # fmt: skip
        return await _in_thread(_write_archive, out, manifest, root, untracked, blobs, limit)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _claude_files(root: Path, paths: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The manifest's ``claude_files``: the Claude Code project files among ``paths`` that can
    run programs, and what each holds (agent/projecttrust.py)."""
    found = projecttrust.program_files(root, paths)
    return tuple(sorted(found.items()))[:MAX_CLAUDE_FILES]


async def _remotes(root: Path) -> tuple[tuple[str, str], ...]:
    run = await _git(root, "config", "-z", "--get-regexp", r"^remote\..*\.url$", check=False)
    found: list[tuple[str, str]] = []
    for item in run.out.split(b"\x00"):
        key, _, url = os.fsdecode(item).partition("\n")
        name = key.removeprefix("remote.").removesuffix(".url")
        with contextlib.suppress(ValueError):
            found.append(_remote([name, url]))
    return tuple(found[:MAX_REMOTES])


def _write_private(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def _tarinfo(name: str, entry: _Entry) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if entry.kind == "dir":
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    elif entry.kind == "link":
        info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, entry.link
    else:
        info.size, info.mode = entry.size, 0o755 if entry.executable else 0o644
    return info


def _header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.uid, info.gid = size, 0o600, 0, 0
    return info.tobuf(tarfile.GNU_FORMAT, "utf-8", "strict")  # one block: short name, any size


def _pad(raw: IO[bytes], size: int) -> None:
    raw.write(b"\0" * (-size % _BLOCK))


def _write_archive(
    out: Path,
    manifest: FolderManifest,
    root: Path,
    entries: Sequence[_Entry],
    blobs: dict[str, Path],
    limit: int,
) -> FolderManifest:
    """The archive at ``out``, a tar of: the blobs (bundle, patches) as they are, then
    ``files.tgz``, a gzip'd tar of the files (its header written once its size is known)."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    try:
        with os.fdopen(fd, "wb") as raw:
            for name in (BUNDLE, STAGED, UNSTAGED):
                if name in blobs:
                    size = blobs[name].stat().st_size
                    raw.write(_header(name, size))
                    with blobs[name].open("rb") as f:
                        shutil.copyfileobj(f, raw, _COPY)
                    _pad(raw, size)
            if entries:
                at = raw.tell()
                raw.write(b"\0" * _BLOCK)
                with tarfile.open(
                    fileobj=raw,
                    mode="w:gz",
                    compresslevel=COMPRESS_LEVEL,
                    format=tarfile.PAX_FORMAT,
                    encoding="utf-8",
                    errors="surrogateescape",
                ) as tar:
                    for entry in entries:
                        _going_on()
                        _add(tar, root, entry)
                        if raw.tell() > limit:
                            raise FolderTooBig(
                                too_big_message(raw.tell(), limit, [(entry.path, entry.size)])
                            )
                end = raw.tell()
                raw.seek(at)
                raw.write(_header(FILES, end - at - _BLOCK))
                raw.seek(end)
                _pad(raw, end - at - _BLOCK)
            raw.write(b"\0" * (2 * _BLOCK))
            raw.flush()
            os.fsync(raw.fileno())
    except OSError as exc:
        out.unlink(missing_ok=True)
        if _no_space(exc):
            raise FolderSyncError(
                "disk_full", f"the disk of this Mac is full while packing: {exc}"
            ) from None
        raise FolderSyncError(
            "folder_changed", f"the folder changed while it was packed ({exc}); try again"
        ) from None
    except BaseException:
        out.unlink(missing_ok=True)
        raise
    size = out.stat().st_size
    if size > limit:
        out.unlink(missing_ok=True)
        raise FolderTooBig(too_big_message(size, limit, [("the archive", size)]))
    return replace(manifest, bytes=size, sha256=_file_digest(out))


def _add(tar: tarfile.TarFile, root: Path, entry: _Entry) -> None:
    info = _tarinfo(entry.path, entry)
    if entry.kind != "file":
        tar.addfile(info)
        return
    with (root / entry.path).open("rb") as f:
        if os.fstat(f.fileno()).st_size != entry.size:
            raise FolderSyncError(
                "folder_changed", f"{entry.path} changed while the folder was packed; try again"
            )
        tar.addfile(info, f)


# -- unpacking ----------------------------------------------------------------------------------


def check_archive(archive: Path, manifest: FolderManifest) -> None:
    """The archive is the one the manifest names (its size and sha256), else ``bad_archive``."""
    try:
        size = archive.stat().st_size
    except FileNotFoundError:
        raise FolderSyncError("bad_archive", "the folder's archive is missing") from None
    if size != manifest.bytes:
        raise FolderSyncError(
            "bad_archive",
            f"the folder's archive is {size} bytes, not {manifest.bytes}: it was cut or changed",
        )
    if _file_digest(archive) != manifest.sha256:
        raise FolderSyncError(
            "bad_archive",
            "the folder's archive does not match its sha256: it was damaged or changed on the way",
        )


def _refuse(why: str) -> FolderSyncError:
    return FolderSyncError("bad_archive", f"the folder's archive is refused: {why}")


def _check_time(info: tarfile.TarInfo) -> None:
    """A member's time is a file's: a number from 0 to MAX_MTIME (not NaN, not huge)."""
    when = info.mtime
    if not isinstance(when, int | float) or math.isnan(when) or not 0 <= when < MAX_MTIME:
        raise _refuse(f"{info.name[:80]!r} has a time no file has ({str(when)[:40]})")


@dataclass
class _Laying:
    """What an unpack may still lay down (the manifest's budgets) and what it laid down."""

    bytes: int
    files: int
    folders: int
    written: list[str] = field(default_factory=list)  # files and symlinks (relative)
    links: list[str] = field(default_factory=list)  # the symlinks of them

    @classmethod
    def of(cls, manifest: FolderManifest) -> _Laying:
        return cls(manifest.content_bytes, manifest.files, manifest.folders)

    def spend(self, size: int) -> None:
        self.bytes -= size
        if self.bytes < 0:
            raise _refuse("more bytes than its manifest declares")

    def file(self) -> None:
        self.files -= 1
        if self.files < 0:
            raise _refuse("more files than its manifest declares")

    def folder(self) -> None:
        self.folders -= 1
        if self.folders < 0:
            raise _refuse("more folders than its manifest declares")
        self.spend(ENTRY_BYTES)


def _open_dir(parent: int, name: str, create: bool, laying: _Laying | None = None) -> int:
    """The folder ``name`` in the folder ``parent`` (never through a symlink), made if asked
    (and paid for from ``laying``)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        if laying is not None:
            laying.folder()
        os.mkdir(name, 0o777, dir_fd=parent)
        return os.open(name, flags, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(f"{name!r} is not a folder (a symlink or a file)") from None
        raise


@contextlib.contextmanager
def _parent_of(root_fd: int, rel: str, laying: _Laying | None = None) -> Iterator[tuple[int, str]]:
    """The open folder that holds ``rel`` inside ``root_fd`` (its folders made as needed, none
    of them a symlink), and ``rel``'s last name."""
    *folders, name = rel.split("/")
    fds: list[int] = []
    current = root_fd
    try:
        for folder in folders:
            current = _open_dir(current, folder, True, laying)
            fds.append(current)
        yield current, name
    finally:
        for fd in fds:
            os.close(fd)


def _copy(source: IO[bytes], target: IO[bytes]) -> None:
    while chunk := source.read(_COPY):
        _going_on()
        target.write(chunk)


def _extract_blobs(archive: Path, staging: Path, manifest: FolderManifest, laying: _Laying) -> None:
    """The archive's own members into ``staging``: the bundle and the patches (paid for from
    ``laying``), and files.tgz as it is (its files are laid down by :func:`_extract_files`)."""
    allowed = {BUNDLE: manifest.bundle, STAGED: manifest.staged, UNSTAGED: manifest.unstaged}
    seen: set[str] = set()
    try:
        with tarfile.open(archive, mode="r:") as outer:
            for info in outer:
                _going_on()
                name = info.name
                if name in seen or not info.isreg() or not (allowed.get(name) or name == FILES):
                    raise _refuse(f"an unexpected member {name[:80]!r}")
                seen.add(name)
                if name != FILES:
                    laying.spend(info.size)
                source = outer.extractfile(info)
                assert source is not None
                fd = os.open(staging / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    _copy(source, f)
    except (tarfile.TarError, EOFError, UnicodeError, zlib.error) as exc:
        raise _refuse(f"it is not a readable archive ({exc})") from None
    for name, wanted in allowed.items():
        if wanted and name not in seen:
            raise _refuse(f"its {name} is missing")


def _extract_files(files: Path, tree: Path, laying: _Laying) -> None:
    """The files, folders and symlinks of ``files`` (files.tgz) into ``tree``, never over
    anything there nor through a symlink, each paid for from ``laying`` (folders made for a
    file's path too). What was laid down goes in ``laying``."""
    if not files.exists():
        return
    tree_fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with tarfile.open(files, mode="r|gz") as tar:
            for info in tar:
                _going_on()
                _extract_member(tar, info, tree_fd, laying)
    except FileExistsError:
        raise _refuse("it holds the same path twice, or one the repository has already") from None
    except (tarfile.TarError, EOFError, UnicodeError, zlib.error) as exc:
        raise _refuse(f"it is not a readable archive ({exc})") from None
    finally:
        os.close(tree_fd)


def _extract_member(
    tar: tarfile.TarFile, info: tarfile.TarInfo, tree_fd: int, laying: _Laying
) -> None:
    try:
        rel = check_member(info.name)
    except ValueError as exc:
        raise _refuse(str(exc)) from None
    _check_time(info)
    if info.isdir():
        with _parent_of(tree_fd, rel, laying) as (parent, last):
            os.close(_open_dir(parent, last, True, laying))
        return
    laying.file()
    if info.issym():
        if not link_stays_inside(rel, info.linkname):
            raise _refuse(f"the symlink {rel[:80]!r} points outside the folder")
        laying.spend(len(os.fsencode(info.linkname)) + ENTRY_BYTES)
        with _parent_of(tree_fd, rel, laying) as (parent, last):
            os.symlink(info.linkname, last, dir_fd=parent)
        laying.written.append(rel)
        laying.links.append(rel)
        return
    if not info.isreg():
        raise _refuse(f"{rel[:80]!r} is not a file, folder or symlink")
    laying.spend(info.size + ENTRY_BYTES)
    source = tar.extractfile(info)
    assert source is not None
    mode = 0o777 if info.mode & 0o111 else 0o666  # the umask applies; no set-id bits
    with _parent_of(tree_fd, rel, laying) as (parent, last):
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(last, flags, mode, dir_fd=parent)
        laying.written.append(rel)
        with os.fdopen(fd, "wb") as f:
            _copy(source, f)
            if os.utime in os.supports_fd:
                os.utime(f.fileno(), (info.mtime, info.mtime))


def _judge(root: Path, links: Sequence[str], subdir: str, before: Sequence[str] | None) -> None:
    """What was laid down in ``root``, judged where it now stands: each symlink ``links`` names
    by where it resolves through everything there (chains of symlinks, a symlink to a folder and
    a file through it) — inside the folder and outside any ``.git``; and the folder's top and
    each folder down to ``subdir`` (where git will run) not laid out like a repository's own
    folder, which git would take for a bare repository (``before``: the top's names before,
    for a repository the person had)."""
    base = os.path.realpath(root)
    for rel in links:
        _going_on()
        target = os.path.realpath(root / rel)
        if target != base and not target.startswith(base + os.sep):
            raise _refuse(f"the symlink {rel[:80]!r} resolves outside the folder")
        if any(is_dotgit(p) for p in os.path.relpath(target, base).split(os.sep)):
            raise _refuse(f"the symlink {rel[:80]!r} resolves into a .git folder")
    folder = root
    for part in ["", *(subdir.split("/") if subdir else [])]:
        folder = folder / part if part else folder
        if folder.is_symlink() or not folder.is_dir():
            return
        names = os.listdir(folder)
        if git.looks_like_git_dir(names) and not (
            not part and before is not None and git.looks_like_git_dir(before)
        ):
            where = "its top" if not part else f"{folder.relative_to(root).as_posix()!r}"
            raise _refuse(
                f"{where} is laid out like a git repository's own folder (HEAD beside objects, "
                "refs or config): git would take it for a repository and do what its config says"
            )


def _check_space(where: Path, needed: int) -> None:
    free = shutil.disk_usage(where).free
    if free < needed:
        raise FolderSyncError(
            "disk_full",
            f"the disk of this Mac has {human(free)} free, the folder needs about {human(needed)}",
        )


def _nearest(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path


def _missing(folder: Path) -> list[Path]:
    """``folder`` and its parents that do not exist, deepest first."""
    return [p for p in [folder, *folder.parents] if not p.exists()]


async def unpack(
    archive: Path,
    root: Path,
    manifest: FolderManifest,
    *,
    ledger: Path | None = None,
    skip: Sequence[str] = SKIP_FOLDERS,
    before_laying: Callable[[list[str]], None] | None = None,
) -> None:
    """Make ``root`` the tree the archive holds (for git, ``root`` is the repository's top).
    Checks the sha256 and the folder again first; on failure nothing it made is left. What it
    lays down is written to ``ledger`` before it is (agent/landing.py): an abort of the move
    takes back exactly that. ``before_laying`` is given every path (inside the tree) the unpack
    would lay down or change, read from the archive itself, before any of them is in the
    folder: raising refuses the move, and nothing stays."""
    await _in_thread(check_archive, archive, manifest)
    if manifest.kind == "git" and shutil.which("git") is None:
        raise FolderSyncError(
            "git_missing",
            "git is not installed on this Mac: the session's folder is a git repository",
        )
    state = await describe(root, skip=skip, against=manifest)
    lines = differences(manifest, state)
    if lines:
        raise FolderSyncError("folder_differs", "; ".join(lines))
    if same_state(manifest, state):
        return
    _check_space(_nearest(root), manifest.content_bytes * 2 + (1 << 20))
    book = landing.book(ledger, root)
    try:
        if state.kind == "git":
            await _unpack_into_repository(archive, root, manifest, state, book, before_laying)
        else:
            await _unpack_new(archive, root, manifest, book, before_laying)
    except OSError as exc:
        if _no_space(exc):
            raise FolderSyncError(
                "disk_full", f"the disk of this Mac filled up while the folder was made: {exc}"
            ) from None
        raise FolderSyncError("unpack_failed", f"the folder could not be made: {exc}") from None


def _build(root: Path, book: landing.Ledger) -> tuple[Path, Path, Path]:
    """A building folder beside ``root`` (in the ledger first): it, its staging and its tree."""
    build = Path(tempfile.mkdtemp(prefix=f".{root.name}.cb-move-", dir=root.parent))
    book.builds.append(str(build))
    book.save()
    staging, tree = build / "archive", build / "tree"
    staging.mkdir(0o700)
    tree.mkdir()
    return build, staging, tree


def _built(build: Path, book: landing.Ledger) -> None:
    shutil.rmtree(build, ignore_errors=True)
    book.builds = [b for b in book.builds if b != str(build)]
    book.save()


async def _unpack_new(
    archive: Path,
    root: Path,
    manifest: FolderManifest,
    book: landing.Ledger,
    before_laying: Callable[[list[str]], None] | None = None,
) -> None:
    """Build the tree beside ``root``, then rename it into place (``root`` absent, or empty:
    then it keeps its mode). Everything in it is laid down: ``before_laying`` sees it all
    before the rename."""
    mode = stat.S_IMODE(os.stat(root).st_mode) if root.is_dir() else None
    missing = _missing(root.parent)
    book.kind, book.inode, book.mode = "new", [], mode
    book.parents = [*dict.fromkeys([*map(str, missing), *book.parents])]
    book.save()
    for folder in reversed(missing):
        folder.mkdir()
    build, staging, tree = _build(root, book)
    laying = _Laying.of(manifest)
    try:
        await _in_thread(_extract_blobs, archive, staging, manifest, laying)
        if manifest.kind == "git":
            await _git(tree, "init", "-q", ceiling=build)
            await _lay_git(tree, staging, manifest, build)
            for name, url in manifest.remotes:
                await _git(tree, "remote", "add", name, url, ceiling=build)
        await _in_thread(_extract_files, staging / FILES, tree, laying)
        await _in_thread(_judge, tree, laying.links, manifest.subdir, None)
        if before_laying is not None:
            before_laying(await _in_thread(_tree_paths, tree))
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o777 & ~umask
        os.chmod(tree, mode)
        st = os.lstat(tree)
        book.inode = [st.st_dev, st.st_ino]
        book.save()
        os.rename(tree, root)  # over an empty folder too, at once
    except BaseException:
        book.inode = []
        await landing.take_back(book)
        raise
    _built(build, book)


async def _take_bundle(repository: Path, staging: Path, ceiling: Path) -> None:
    """The bundle's commits into ``repository`` (``git bundle unbundle``: no transport, no
    URL rewriting, no refs changed)."""
    bundle = str(staging / BUNDLE)
    verify = await _git(repository, "bundle", "verify", "-q", bundle, check=False, ceiling=ceiling)
    if verify.code != 0:
        raise FolderSyncError(
            "bad_archive", f"the repository's bundle does not fit this folder: {verify.err[-300:]}"
        )
    await _git(repository, "bundle", "unbundle", bundle, ceiling=ceiling)


async def _lay_git(tree: Path, staging: Path, manifest: FolderManifest, ceiling: Path) -> None:
    """In the repository ``tree``: take the bundle's commits, check out the branch at HEAD,
    apply the staged and the unstaged changes."""
    if manifest.bundle:
        await _take_bundle(tree, staging, ceiling)
    if manifest.head:
        has = await _git(
            tree, "cat-file", "-e", f"{manifest.head}^{{commit}}", check=False, ceiling=ceiling
        )
        if has.code != 0:
            raise FolderSyncError(
                "bad_archive",
                f"commit {_short(manifest.head)} is neither in the bundle nor in the folder",
            )
        if manifest.branch:
            await _git(
                tree, "checkout", "-q", "-B", manifest.branch, manifest.head, "--", ceiling=ceiling
            )
        else:
            await _git(tree, "checkout", "-q", "--detach", manifest.head, "--", ceiling=ceiling)
    elif manifest.branch:
        await _git(tree, "symbolic-ref", "HEAD", f"refs/heads/{manifest.branch}", ceiling=ceiling)
    if manifest.staged:
        await _git(
            tree, "apply", "--index", "--binary", "--whitespace=nowarn", str(staging / STAGED),
            ceiling=ceiling,
        )  # fmt: skip
    if manifest.unstaged:
        await _git(
            tree, "apply", "--binary", "--whitespace=nowarn", str(staging / UNSTAGED),
            ceiling=ceiling,
        )  # fmt: skip


async def _unpack_into_repository(
    archive: Path,
    root: Path,
    manifest: FolderManifest,
    state: FolderState,
    book: landing.Ledger,
    before_laying: Callable[[list[str]], None] | None = None,
) -> None:
    """Bring the same repository (clean, behind) to the archive's state, never over a file it
    does not track (an ignored ``.env``, an untracked note: ``folder_differs``); on failure put
    it back as it was."""
    ceiling = root.parent
    old_branch = None
    if manifest.branch:
        ref = await _git(
            root, "rev-parse", "-q", "--verify", f"refs/heads/{manifest.branch}^{{commit}}",
            check=False, ceiling=ceiling,
        )  # fmt: skip
        old_branch = ref.out.decode().strip() if ref.code == 0 else None
    before = os.listdir(root)
    book.kind, book.touched = "update", False
    build, staging, tree = _build(root, book)
    laying = _Laying.of(manifest)
    try:
        await _in_thread(_extract_blobs, archive, staging, manifest, laying)
        await _in_thread(_extract_files, staging / FILES, tree, laying)
        if manifest.bundle:
            await _take_bundle(root, staging, ceiling)
        if manifest.head:
            has = await _git(
                root, "cat-file", "-e", f"{manifest.head}^{{commit}}", check=False,
                ceiling=ceiling,
            )  # fmt: skip
            if has.code != 0:
                raise FolderSyncError(
                    "bad_archive",
                    f"commit {_short(manifest.head)} is neither in the bundle nor in the folder",
                )
        if old_branch and manifest.head and old_branch != state.head:
            contained = await _git(
                root, "merge-base", "--is-ancestor", old_branch, manifest.head, check=False,
                ceiling=ceiling,
            )  # fmt: skip
            if contained.code != 0:
                raise FolderSyncError(
                    "folder_differs",
                    f"the folder's branch {manifest.branch} is at {_short(old_branch)}, which the session's history does not contain",
                )
        created, folders, changed = await _landing_plan(
            root, state.head, manifest, laying.written, staging
        )
        if before_laying is not None:
            before_laying(changed)  # the work tree is as it was until now
        book.head, book.branch = state.head, state.branch
        book.moved_branch, book.old_ref = manifest.branch, old_branch
        book.created, book.folders, book.touched = created, folders, True
        book.save()
        await _lay_git(root, staging, replace(manifest, bundle=False), ceiling)
        await _in_thread(_place, tree, root)
        await _in_thread(_judge, root, laying.links, manifest.subdir, before)
    except BaseException:
        await landing.take_back(book)
        raise
    _built(build, book)


async def _landing_plan(
    root: Path, old: str | None, manifest: FolderManifest, untracked: Sequence[str], staging: Path
) -> tuple[list[str], list[str], list[str]]:
    """What bringing the repository at ``root`` from ``old`` to the manifest's state creates:
    the paths that are not there now, the folders made for them (deepest first), and every
    path it changes (added, changed, removed, or laid down untracked). ``folder_differs`` when
    one it creates is there already and the repository does not track it (git would overwrite
    an ignored file without a word)."""
    ceiling = root.parent
    paths: set[str] = set(untracked)
    touched: set[str] = set(untracked)
    if manifest.head and old:
        diff = await _git(
            root, "diff", "--name-status", "-z", "--no-renames", old, manifest.head, "--",
            ceiling=ceiling,
        )  # fmt: skip
        fields = diff.out.split(b"\x00")[:-1]  # status, path, status, path … each ended by NUL
        statuses = list(zip(fields[0::2], fields[1::2], strict=True))
        paths.update(os.fsdecode(path) for kind, path in statuses if kind == b"A")
        touched.update(os.fsdecode(path) for _, path in statuses)
    elif manifest.head:
        tree = await _git(
            root, "ls-tree", "-r", "-z", "--name-only", manifest.head, ceiling=ceiling
        )
        paths.update(os.fsdecode(p) for p in tree.out.split(b"\x00") if p)
        touched.update(paths)
    for name, wanted in ((STAGED, manifest.staged), (UNSTAGED, manifest.unstaged)):
        if wanted:
            numstat = await _git(
                root, "apply", "--numstat", "-z", str(staging / name), ceiling=ceiling
            )
            for record in numstat.out.split(b"\x00"):
                parts = record.split(b"\t", 2)
                if len(parts) == 3 and parts[2]:
                    paths.add(os.fsdecode(parts[2]))
                    touched.add(os.fsdecode(parts[2]))
    listed = await _git(root, "ls-files", "-z", ceiling=ceiling)
    tracked = {os.fsdecode(p) for p in listed.out.split(b"\x00") if p}
    created, folders, blocked = await _in_thread(_in_the_way, root, sorted(paths), tracked)
    if blocked:
        shown = ", ".join(blocked[:MAX_BLOCKERS]) + (" …" if len(blocked) > MAX_BLOCKERS else "")
        raise FolderSyncError(
            "folder_differs",
            f"the folder on this Mac has files the session's repository would overwrite, which "
            f"it does not track there (ignored or untracked): {shown}. Move them away, or pick "
            "another folder",
        )
    return created, folders, sorted(touched)


def _in_the_way(
    root: Path, paths: Sequence[str], tracked: set[str]
) -> tuple[list[str], list[str], list[str]]:
    """For each path a move lays down in the repository at ``root``: created (not there now, or
    a tracked file it replaces), the folders made for it, or blocked — it, or a folder of its
    path, is there and the repository does not track it."""
    created: list[str] = []
    folders: set[str] = set()
    blocked: list[str] = []
    for rel in paths:
        _going_on()
        parts = rel.split("/")
        clear = True
        for i in range(1, len(parts)):
            folder = "/".join(parts[:i])
            try:
                st = os.lstat(root / folder)
            except FileNotFoundError:
                folders.update("/".join(parts[:j]) for j in range(i, len(parts)))
                break
            if stat.S_ISDIR(st.st_mode):
                continue
            if folder not in tracked:
                blocked.append(folder)
                clear = False
            break
        if not clear:
            continue
        try:
            os.lstat(root / rel)
        except (FileNotFoundError, NotADirectoryError):
            created.append(rel)
            continue
        if rel in tracked:
            created.append(rel)  # a tracked file the move replaces: the put-back restores it
        else:
            blocked.append(rel)
    deepest_first = sorted(folders, key=lambda f: (-f.count("/"), f))
    return created, deepest_first, list(dict.fromkeys(blocked))


def _tree_paths(tree: Path) -> list[str]:
    """Every file and symlink of a tree just built (relative; its own ``.git`` left out)."""
    found: list[str] = []
    for folder, dirs, names in os.walk(tree):
        _going_on()
        base = Path(folder)
        if base == tree:
            dirs[:] = [d for d in dirs if not is_dotgit(d)]
        for name in [*names, *(d for d in dirs if (base / d).is_symlink())]:
            found.append((base / name).relative_to(tree).as_posix())
    return sorted(found)


def _place(tree: Path, root: Path) -> list[str]:
    """Move every file and symlink of ``tree`` (ours) into ``root``, never over anything and
    never through a symlink. Returns what was placed."""
    placed: list[str] = []
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder, dirs, names in os.walk(tree):
            dirs.sort()
            base = Path(folder)
            for name in sorted(names + [d for d in dirs if (base / d).is_symlink()]):
                _going_on()
                rel = (base / name).relative_to(tree).as_posix()
                with _parent_of(root_fd, rel) as (parent, last):
                    try:
                        os.lstat(last, dir_fd=parent)
                    except FileNotFoundError:
                        pass
                    else:
                        raise FolderSyncError("folder_differs", f"{rel} is already in the folder")
                    os.rename(base / name, last, dst_dir_fd=parent)
                    placed.append(rel)
    finally:
        os.close(root_fd)
    return placed


__all__ = [
    "SKIP_FOLDERS",
    "FolderManifest",
    "FolderState",
    "FolderSyncError",
    "FolderTooBig",
    "Located",
    "check_archive",
    "check_member",
    "claude_files_here",
    "describe",
    "differences",
    "expected_state",
    "have_commits",
    "is_dotgit",
    "link_stays_inside",
    "locate",
    "pack",
    "same_state",
    "skip_folders",
    "too_big_message",
    "tree_root",
    "unpack",
    "valid_branch",
]
