"""A session's working folder, packed on one Mac and made again on another (a move, SPEC §8).

What travels is ONE archive file (a gzip'd tar, mode 0600) and a small :class:`FolderManifest`
that says what it holds and its sha256:

* **a git repository** — ``bundle``: a ``git bundle`` of the branch and HEAD, less what the
  target already has (its refs, from :func:`have_commits`, as ``^commit``); ``staged.patch``
  (index against HEAD) and ``unstaged.patch`` (work tree against the index), both
  ``git diff --binary``, so the target's ``git status`` shows the same staged and unstaged
  changes; ``files/…``: the untracked files that are not ignored
  (``git ls-files --others --exclude-standard``). Ignored files never travel. When the session's
  folder is a subfolder of a repository the whole repository travels and ``subdir`` says where
  the folder is in it.
* **a plain folder** — ``files/…``: its files, folders and symlinks.

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
one the session's history contains): nothing on the target is lost. :func:`unpack` checks the
sha256 and the folder again, then builds the tree — a new folder is built beside its place and
renamed into it, so a failure leaves nothing half made; a repository updated in place is put
back as it was. An archive is treated as hostile: only regular files, folders and symlinks, no
path out of the folder (``..``, absolute, through a symlink), no symlink pointing out, nothing
written into a ``.git``, executable bits kept and set-id bits dropped, no more bytes than the
manifest declares.

Errors are :class:`FolderSyncError` (a ``CommandFailed``: ``code`` and ``message``): ``too_big``,
``folder_differs``, ``disk_full``, ``bad_archive``, ``git_missing``, ``git_failed``,
``folder_changed``, ``not_a_folder``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import os
import re
import shutil
import stat
import tarfile
import tempfile
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, cast

from agent.errors import CommandFailed

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


COMPRESS_LEVEL = 1  # gzip level of the archive: most of a repository is its (compressed) bundle
MAX_HAVE = 1000  # most target commits a pack excludes (a thin bundle needs only a few)
MAX_SKIPPED = 50
MAX_PATH_BYTES = 4096
MAX_REF_CHARS = 255
MAX_REMOTES = 20
MAX_COUNT = 2**53  # JSON's safe integers
BUNDLE, STAGED, UNSTAGED, FILES = "bundle", "staged.patch", "unstaged.patch", "files"
_HEX = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # a SHA-1 or SHA-256 object name
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_HFS_IGNORED = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)  # code points macOS drops from names: ".g\u200cit" is ".git" there
_COPY = 1024 * 1024


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
    content_bytes: int = 0  # bytes of the archive's members before compression (a cap on unpack)
    subdir: str = ""  # the session's folder inside the repository ("" = its top)
    bundle: bool = False  # the archive holds a git bundle (False: the target has HEAD already)
    based_on: tuple[str, ...] = ()  # target commits the session's HEAD contains (bundle's base)
    staged: bool = False  # the archive holds staged.patch
    unstaged: bool = False  # the archive holds unstaged.patch
    changes: str = ""  # digest of the uncommitted state (git) or of the whole tree (plain)
    skipped: tuple[str, ...] = ()  # what was left out and why, e.g. "node_modules/ (…)"
    remotes: tuple[tuple[str, str], ...] = ()  # git remotes (name, url) for a new repository

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "branch": self.branch,
            "head": self.head,
            "files": self.files,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "content_bytes": self.content_bytes,
            "subdir": self.subdir,
            "bundle": self.bundle,
            "based_on": list(self.based_on),
            "staged": self.staged,
            "unstaged": self.unstaged,
            "changes": self.changes,
            "skipped": list(self.skipped),
            "remotes": [list(r) for r in self.remotes],
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
    changes: str = ""  # digest as in FolderManifest.changes ("" when clean or empty)
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
    if not url or any(c in url for c in "\r\n") or url.startswith("-"):
        raise ValueError("folder manifest: a remote's url is one line")
    return name, url


def is_dotgit(name: str) -> bool:
    """``name`` is ``.git`` as macOS's file system sees it (any case, ignorable code points
    dropped): nothing from an archive may be written there. Pure."""
    folded = unicodedata.normalize("NFC", name.translate(_HFS_IGNORED)).casefold()
    return folded.rstrip(". ") == ".git"


def check_member(path: str) -> str:
    """A relative path inside the folder, normalised (``a/b``), or ``ValueError``: absolute,
    ``..``, empty parts, NUL, a ``.git`` part, too long. Pure."""
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


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        LC_ALL="C",
    )
    return env


@dataclass(frozen=True)
class _Run:
    code: int
    out: bytes
    err: str


async def _git(
    cwd: Path,
    *args: str,
    check: bool = True,
    stdout: int | None = None,
    stdin: bytes | None = None,
) -> _Run:
    """``git args`` in ``cwd``, without hooks, pager, prompt or fsmonitor; a failure (when
    ``check``) is ``git_failed`` with git's last words, or ``disk_full``."""
    try:
        proc = await asyncio.create_subprocess_exec(
            "git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
            "-c", "core.quotepath=off", "-c", "color.ui=never", "-c", "gc.auto=0", *args,
            cwd=cwd, env=_git_env(),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=stdout if stdout is not None else asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    except FileNotFoundError:
        raise FolderSyncError("git_missing", "git is not installed on this Mac") from None
    try:
        out, err = await proc.communicate(stdin)
    except BaseException:  # cancelled (a move given up): git must not run on unseen
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await asyncio.shield(proc.wait())
        raise
    text = err.decode("utf-8", "replace").strip()
    run = _Run(proc.returncode or 0, out or b"", text)
    if check and run.code != 0:
        if "No space left" in text or "Disk quota" in text:
            raise FolderSyncError("disk_full", f"the disk of this Mac is full ({text[-200:]})")
        last = text.splitlines()[-1] if text else f"exit {run.code}"
        raise FolderSyncError("git_failed", f"git {args[0]} failed: {last[:300]}")
    return run


async def _top(root: Path) -> Path | None:
    """The top of the work tree ``root`` is in, or None when it is in none."""
    run = await _git(root, "rev-parse", "--show-toplevel", check=False)
    if run.code != 0 or not run.out.strip():
        return None
    return Path(os.fsdecode(run.out.rstrip(b"\n")))


async def _head(root: Path) -> tuple[str | None, str | None]:
    head = await _git(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False)
    branch = await _git(root, "symbolic-ref", "-q", "--short", "HEAD", check=False)
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
    top = await _top(root)
    if top is None or top.resolve() != root.resolve():
        return []
    run = await _git(
        root, "for-each-ref", "--format=%(objecttype) %(objectname) %(*objectname)", check=False
    )
    found: dict[str, None] = {}
    head, _ = await _head(root)
    if head:
        found[head] = None
    for line in run.out.decode().splitlines():
        kind, name, *peeled = line.split(" ")
        commit = name if kind == "commit" else (peeled[0] if peeled and peeled[0] else "")
        if _HEX.match(commit):
            found[commit] = None
    return list(found)[:MAX_HAVE]


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


def _plain_entries(root: Path, skip: frozenset[str]) -> tuple[list[_Entry], list[str]]:
    """Every file, folder and symlink of a plain folder, less the skipped folders."""
    entries: list[_Entry] = []
    skipped: list[str] = []
    for folder, dirs, names in os.walk(root, followlinks=False):
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
        dirs[:] = keep
        for name in sorted(names):
            rel = name if rel_base == "." else f"{rel_base}/{name}"
            found = _classify(root, rel)
            if isinstance(found, str):
                skipped.append(f"{rel} ({found})")
            elif found is not None and found.kind != "dir":
                entries.append(found)
    return entries, skipped


def _skipped_by_name(rel: str, root: Path, skip: frozenset[str]) -> str | None:
    """The skipped folder ``rel`` lies in (``a/node_modules``), or None."""
    parts = rel.split("/")
    for i, part in enumerate(parts[:-1]):
        if part in skip or _is_venv(root.joinpath(*parts[: i + 1])):
            return "/".join(parts[: i + 1])
    return None


async def _untracked(root: Path, skip: frozenset[str]) -> tuple[list[_Entry], list[str]]:
    """The untracked files of a repository that are not ignored, less the skipped folders."""
    run = await _git(root, "ls-files", "-z", "--others", "--exclude-standard")
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


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_COPY):
            h.update(chunk)
    return h.hexdigest()


def _digest_of(parts: Iterable[bytes], entries: Sequence[_Entry], root: Path) -> str:
    """One digest of a state: the patches' bytes and each entry (path, kind, bit, content)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    for e in sorted(entries, key=lambda e: e.path):
        content = _file_digest(root / e.path) if e.kind == "file" else e.link
        h.update(
            f"{e.path}\x00{e.kind}\x00{int(e.executable)}\x00{content}\x00".encode(
                errors="surrogateescape"
            )
        )
    return h.hexdigest()


async def _patches(root: Path) -> tuple[bytes, bytes]:
    diff = (
        "diff",
        "--binary",
        "--full-index",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--ignore-submodules=none",
    )
    staged = await _git(root, *diff, "--cached")
    unstaged = await _git(root, *diff)
    return staged.out, unstaged.out


async def describe(root: Path, *, skip: Sequence[str] = SKIP_FOLDERS) -> FolderState:
    """What the folder ``root`` (on the target) holds now."""
    if not root.exists() and not root.is_symlink():
        return FolderState(False, "absent")
    if not root.is_dir():
        return FolderState(True, "plain", entries=-1)
    entries = len(os.listdir(root))
    skipping = frozenset(skip)
    if (
        shutil.which("git") is not None
        and (top := await _top(root)) is not None
        and top.resolve() == root.resolve()
    ):
        head, branch = await _head(root)
        status = await _git(root, "status", "--porcelain=v1", "-z", "--ignore-submodules=none")
        dirty = bool(status.out.strip(b"\x00"))
        changes = ""
        if dirty:
            staged, unstaged = await _patches(root)
            untracked, _ = await _untracked(root, skipping)
            changes = await asyncio.to_thread(_digest_of, [staged, unstaged], untracked, root)
        return FolderState(True, "git", head, branch, dirty, changes, entries)
    if entries == 0:
        return FolderState(True, "plain", entries=0)
    tree, _ = await asyncio.to_thread(_plain_entries, root, skipping)
    changes = await asyncio.to_thread(_digest_of, [], tree, root)
    return FolderState(True, "plain", changes=changes, entries=entries)


# -- packing ------------------------------------------------------------------------------------


class _HashingWriter:
    """A file that hashes and counts what goes through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.hash = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


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
    entries, skipped = await asyncio.to_thread(_plain_entries, root, skip)
    total = sum(e.size for e in entries)
    if total > limit:
        sizes: dict[str, int] = {}
        for e in entries:
            sizes[_top_part(e.path)] = sizes.get(_top_part(e.path), 0) + e.size
        raise FolderTooBig(too_big_message(total, limit, sizes.items()))
    changes = await asyncio.to_thread(_digest_of, [], entries, root)
    manifest = FolderManifest(
        "plain", None, None, sum(e.kind != "dir" for e in entries), 0, "0" * 64,
        content_bytes=total, changes=changes, skipped=tuple(skipped[:MAX_SKIPPED]),
    )  # fmt: skip
    return await asyncio.to_thread(_write_archive, out, manifest, root, entries, {}, limit)


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
        for commit in known:
            if (
                await _git(root, "merge-base", "--is-ancestor", commit, head, check=False)
            ).code == 0:
                based_on.append(commit)
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
        root, "diff", "--name-only", "-z", "--no-renames", "HEAD" if head else "--cached"
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
        staged, unstaged = await _patches(root)
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
        changes = await asyncio.to_thread(_digest_of, [staged, unstaged], untracked, root)
        dirty = bool(staged or unstaged or untracked)
        manifest = FolderManifest(
            "git", branch, head, len(untracked), 0, "0" * 64,
            content_bytes=sum(p.stat().st_size for p in blobs.values()) + sum(e.size for e in untracked),
            subdir=located.subdir, bundle=BUNDLE in blobs, based_on=tuple(based_on),
            staged=bool(staged), unstaged=bool(unstaged), changes=changes if dirty else "",
            skipped=tuple(skipped[:MAX_SKIPPED]), remotes=remotes,
        )  # fmt: skip
        return await asyncio.to_thread(_write_archive, out, manifest, root, untracked, blobs, limit)
    finally:
        shutil.rmtree(work, ignore_errors=True)


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


def _write_archive(
    out: Path,
    manifest: FolderManifest,
    root: Path,
    entries: Sequence[_Entry],
    blobs: dict[str, Path],
    limit: int,
) -> FolderManifest:
    """The archive at ``out``: the blobs (bundle, patches) first, then ``files/…``."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    try:
        with os.fdopen(fd, "wb") as raw:
            writer = _HashingWriter(raw)
            with tarfile.open(
                fileobj=cast(IO[bytes], writer),
                mode="w:gz",
                compresslevel=COMPRESS_LEVEL,
                format=tarfile.PAX_FORMAT,
                encoding="utf-8",
                errors="surrogateescape",
            ) as tar:
                for name in (BUNDLE, STAGED, UNSTAGED):
                    if name in blobs:
                        tar.add(blobs[name], arcname=name, recursive=False, filter=_plain_member)
                for entry in entries:
                    info = _tarinfo(f"{FILES}/{entry.path}", entry)
                    if entry.kind != "file":
                        tar.addfile(info)
                        continue
                    with (root / entry.path).open("rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        if size != entry.size:
                            raise FolderSyncError(
                                "folder_changed",
                                f"{entry.path} changed while the folder was packed; try again",
                            )
                        tar.addfile(info, f)
                    if writer.size > limit:
                        raise FolderTooBig(
                            too_big_message(writer.size, limit, [(entry.path, entry.size)])
                        )
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
    if writer.size > limit:
        out.unlink(missing_ok=True)
        raise FolderTooBig(too_big_message(writer.size, limit, [("the archive", writer.size)]))
    return replace(manifest, bytes=writer.size, sha256=writer.hash.hexdigest())


def _plain_member(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mode = 0o600
    return info


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


def _open_dir(parent: int, name: str, create: bool) -> int:
    """The folder ``name`` in the folder ``parent`` (never through a symlink), made if asked."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(name, flags, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
        os.mkdir(name, 0o777, dir_fd=parent)
        return os.open(name, flags, dir_fd=parent)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(f"{name!r} is not a folder (a symlink or a file)") from None
        raise


@contextlib.contextmanager
def _parent_of(root_fd: int, rel: str) -> Iterator[tuple[int, str]]:
    """The open folder that holds ``rel`` inside ``root_fd`` (its folders made as needed, none
    of them a symlink), and ``rel``'s last name."""
    *folders, name = rel.split("/")
    fds: list[int] = []
    current = root_fd
    try:
        for folder in folders:
            current = _open_dir(current, folder, create=True)
            fds.append(current)
        yield current, name
    finally:
        for fd in fds:
            os.close(fd)


def _extract(archive: Path, staging: Path, tree: Path, manifest: FolderManifest) -> list[str]:
    """Every member of the (checked) archive: the blobs into ``staging``, ``files/…`` into
    ``tree`` (never over something there). Returns the paths written in ``tree``."""
    written: list[str] = []
    budget = manifest.content_bytes
    allowed = {BUNDLE: manifest.bundle, STAGED: manifest.staged, UNSTAGED: manifest.unstaged}
    seen: set[str] = set()
    files = 0
    tree_fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with tarfile.open(archive, mode="r|gz") as tar:
            for info in tar:
                name = info.name
                if name in allowed:
                    if not allowed[name] or name in seen or not info.isreg():
                        raise _refuse(f"an unexpected {name}")
                    seen.add(name)
                    budget -= info.size
                    if budget < 0:
                        raise _refuse("more bytes than its manifest declares")
                    source = tar.extractfile(info)
                    assert source is not None
                    fd = os.open(staging / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    with os.fdopen(fd, "wb") as f:
                        shutil.copyfileobj(source, f, _COPY)
                    continue
                if not name.startswith(FILES + "/"):
                    raise _refuse(f"an unexpected member {name[:80]!r}")
                try:
                    rel = check_member(name[len(FILES) + 1 :])
                except ValueError as exc:
                    raise _refuse(str(exc)) from None
                if info.isdir():
                    with _parent_of(tree_fd, rel) as (parent, last):
                        os.close(_open_dir(parent, last, create=True))
                    continue
                files += 1
                if files > manifest.files:
                    raise _refuse("more files than its manifest declares")
                if info.issym():
                    if not link_stays_inside(rel, info.linkname):
                        raise _refuse(f"the symlink {rel[:80]!r} points outside the folder")
                    with _parent_of(tree_fd, rel) as (parent, last):
                        os.symlink(info.linkname, last, dir_fd=parent)
                    written.append(rel)
                    continue
                if not info.isreg():
                    raise _refuse(f"{rel[:80]!r} is not a file, folder or symlink")
                budget -= info.size
                if budget < 0:
                    raise _refuse("more bytes than its manifest declares")
                source = tar.extractfile(info)
                assert source is not None
                mode = 0o777 if info.mode & 0o111 else 0o666  # the umask applies; no set-id bits
                with _parent_of(tree_fd, rel) as (parent, last):
                    fd = os.open(
                        last,
                        os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                        mode,
                        dir_fd=parent,
                    )
                    written.append(rel)
                    with os.fdopen(fd, "wb") as f:
                        shutil.copyfileobj(source, f, _COPY)
                        if os.utime in os.supports_fd:
                            os.utime(f.fileno(), (info.mtime, info.mtime))
    except FileExistsError:
        raise _refuse("it holds the same path twice") from None
    except (tarfile.TarError, EOFError, UnicodeError) as exc:
        raise _refuse(f"it is not a readable archive ({exc})") from None
    finally:
        os.close(tree_fd)
    for name, wanted in allowed.items():
        if wanted and name not in seen:
            raise _refuse(f"its {name} is missing")
    return written


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


def _make_parents(folder: Path) -> list[Path]:
    """Make ``folder``'s missing parents; the ones made, deepest first (to remove on failure)."""
    made: list[Path] = []
    for parent in reversed([folder, *folder.parents]):
        if not parent.exists():
            parent.mkdir()
            made.append(parent)
    return made[::-1]


async def unpack(archive: Path, root: Path, manifest: FolderManifest) -> None:
    """Make ``root`` the tree the archive holds (for git, ``root`` is the repository's top).
    Checks the sha256 and the folder again first; on failure nothing it made is left."""
    await asyncio.to_thread(check_archive, archive, manifest)
    if manifest.kind == "git" and shutil.which("git") is None:
        raise FolderSyncError(
            "git_missing",
            "git is not installed on this Mac: the session's folder is a git repository",
        )
    state = await describe(root)
    lines = differences(manifest, state)
    if lines:
        raise FolderSyncError("folder_differs", "; ".join(lines))
    if same_state(manifest, state):
        return
    _check_space(_nearest(root), manifest.content_bytes * 2 + (1 << 20))
    try:
        if state.kind == "git":
            await _unpack_into_repository(archive, root, manifest, state)
        else:
            await _unpack_new(archive, root, manifest)
    except OSError as exc:
        if _no_space(exc):
            raise FolderSyncError(
                "disk_full", f"the disk of this Mac filled up while the folder was made: {exc}"
            ) from None
        raise FolderSyncError("unpack_failed", f"the folder could not be made: {exc}") from None


async def _unpack_new(archive: Path, root: Path, manifest: FolderManifest) -> None:
    """Build the tree beside ``root``, then rename it into place (``root`` absent or empty)."""
    made = _make_parents(root.parent)
    build = Path(tempfile.mkdtemp(prefix=f".{root.name}.cb-move-", dir=root.parent))
    staging = build / "archive"
    tree = build / "tree"
    staging.mkdir(0o700)
    tree.mkdir()
    try:
        await asyncio.to_thread(_extract, archive, staging, tree, manifest)
        if manifest.kind == "git":
            await _git(tree, "init", "-q")
            await _lay_git(tree, staging, manifest)
            for name, url in manifest.remotes:
                await _git(tree, "remote", "add", name, url)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tree, 0o777 & ~umask)
        if root.exists():
            os.rmdir(root)  # empty, as differences() found it
        os.rename(tree, root)
    except BaseException:
        for folder in made:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(build, ignore_errors=True)


async def _lay_git(tree: Path, staging: Path, manifest: FolderManifest) -> None:
    """In the repository ``tree``: take the bundle's commits, check out the branch at HEAD,
    apply the staged and the unstaged changes."""
    if manifest.bundle:
        bundle = str(staging / BUNDLE)
        verify = await _git(tree, "bundle", "verify", "-q", bundle, check=False)
        if verify.code != 0:
            raise FolderSyncError(
                "bad_archive",
                f"the repository's bundle does not fit this folder: {verify.err[-300:]}",
            )
        await _git(tree, "fetch", "-q", "--no-tags", "--no-write-fetch-head", bundle, "HEAD")
    if manifest.head:
        has = await _git(tree, "cat-file", "-e", f"{manifest.head}^{{commit}}", check=False)
        if has.code != 0:
            raise FolderSyncError(
                "bad_archive",
                f"commit {_short(manifest.head)} is neither in the bundle nor in the folder",
            )
        if manifest.branch:
            await _git(tree, "checkout", "-q", "-B", manifest.branch, manifest.head)
        else:
            await _git(tree, "checkout", "-q", "--detach", manifest.head)
    elif manifest.branch:
        await _git(tree, "symbolic-ref", "HEAD", f"refs/heads/{manifest.branch}")
    if manifest.staged:
        await _git(
            tree, "apply", "--index", "--binary", "--whitespace=nowarn", str(staging / STAGED)
        )
    if manifest.unstaged:
        await _git(tree, "apply", "--binary", "--whitespace=nowarn", str(staging / UNSTAGED))


async def _unpack_into_repository(
    archive: Path, root: Path, manifest: FolderManifest, state: FolderState
) -> None:
    """Bring the same repository (clean, behind) to the archive's state; on failure put its
    branch, HEAD and files back as they were."""
    old_branch = None
    if manifest.branch:
        ref = await _git(
            root,
            "rev-parse",
            "-q",
            "--verify",
            f"refs/heads/{manifest.branch}^{{commit}}",
            check=False,
        )
        old_branch = ref.out.decode().strip() if ref.code == 0 else None
    build = Path(tempfile.mkdtemp(prefix=f".{root.name}.cb-move-", dir=root.parent))
    staging = build / "archive"
    tree = build / "tree"
    staging.mkdir(0o700)
    tree.mkdir()
    placed: list[str] = []
    try:
        await asyncio.to_thread(_extract, archive, staging, tree, manifest)
        if manifest.bundle:
            await _git(
                root,
                "fetch",
                "-q",
                "--no-tags",
                "--no-write-fetch-head",
                str(staging / BUNDLE),
                "HEAD",
            )
        if old_branch and manifest.head and old_branch != state.head:
            contained = await _git(
                root, "merge-base", "--is-ancestor", old_branch, manifest.head, check=False
            )
            if contained.code != 0:
                raise FolderSyncError(
                    "folder_differs",
                    f"the folder's branch {manifest.branch} is at {_short(old_branch)}, which the session's history does not contain",
                )
        await _lay_git(root, staging, replace(manifest, bundle=False))
        placed = await asyncio.to_thread(_place, tree, root)
    except BaseException:
        await _put_back(root, state, manifest.branch, old_branch, placed)
        raise
    finally:
        shutil.rmtree(build, ignore_errors=True)


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


async def _put_back(
    root: Path, state: FolderState, branch: str | None, old_branch: str | None, placed: list[str]
) -> None:
    for rel in reversed(placed):
        with contextlib.suppress(OSError):
            os.unlink(root / rel)
    with contextlib.suppress(FolderSyncError):
        if state.head:
            await _git(root, "reset", "-q", "--hard", state.head)
        if state.branch:
            await _git(root, "checkout", "-q", "-f", state.branch)
        elif state.head:
            await _git(root, "checkout", "-q", "-f", "--detach", state.head)
        if branch and branch != state.branch:
            if old_branch:
                await _git(root, "update-ref", f"refs/heads/{branch}", old_branch)
            else:
                await _git(root, "update-ref", "-d", f"refs/heads/{branch}")


__all__ = [
    "SKIP_FOLDERS",
    "FolderManifest",
    "FolderState",
    "FolderSyncError",
    "FolderTooBig",
    "Located",
    "check_archive",
    "check_member",
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
