"""A session's working folder as the phone reads it: its files and its git changes.

Everything is confined to the folder: a path from the phone is relative, has no ``..`` and no
absolute part, and what it names — after every symlink is resolved — must still lie inside the
folder and outside git's own folder (``.git`` in any spelling macOS takes for it: its config and
hooks are not the page's to read; the Changes view shows the repository's changes). Files larger
than the limit are cut, binary files are named but never shown, and git runs through
agent/git.py (nothing in the folder can make it start a program) with a timeout, without a
pager, prompt or optional locks (a ``git status`` from the phone must never block Claude Code's
own git commands), with literal pathspecs (a path like ``:(top)`` means a file of that name, not
the repository's top).

The parsers (``check_relative``, ``parse_status``, ``looks_binary``) take plain values; the
readers around them touch only the folder they are given.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from agent import git
from agent.errors import CommandFailed
from agent.git import Deadline

SNIFF_BYTES = 8192  # how much of a file is looked at to tell text from binary
MAX_PATH_CHARS = 4096


@dataclass(frozen=True)
class Limits:
    """The settings files_max_file_bytes, files_max_entries, files_max_diff_bytes and
    git_timeout (wire/config.py)."""

    file_bytes: int = 256 * 1024
    entries: int = 1000
    diff_bytes: int = 512 * 1024
    git_timeout: float = 10.0


# -- paths -------------------------------------------------------------------------------------


def check_relative(path: str) -> PurePosixPath:
    """``path`` as a relative path inside a folder ("" and "." are the folder itself), or
    ``bad_path`` when it is absolute, goes up (``..``), starts at a home (``~``) or holds a
    NUL byte. Pure: nothing on disk is looked at."""
    if len(path) > MAX_PATH_CHARS:
        raise CommandFailed("bad_path", f"a path is at most {MAX_PATH_CHARS} characters")
    if "\x00" in path:
        raise CommandFailed("bad_path", "a path cannot hold a NUL byte")
    if path.startswith(("/", "\\", "~")) or (len(path) > 1 and path[1] == ":"):
        raise CommandFailed(
            "bad_path", f"{path[:80]!r} is not inside the session's folder: give a relative path"
        )
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if ".." in parts:
        raise CommandFailed("bad_path", "a path cannot go up a folder ('..')")
    if any(git.is_dotgit(p) for p in parts):
        raise CommandFailed("bad_path", GIT_FOLDER)
    return PurePosixPath(*parts) if parts else PurePosixPath(".")


GIT_FOLDER = "git's own folder (.git) is not shown: the Changes view shows the repository's changes"


def inside(root: Path, path: str) -> Path:
    """The file or folder ``path`` names in ``root``, every symlink resolved, or
    ``outside_folder`` when it resolves outside ``root`` (a symlink out), ``bad_path`` when it
    resolves into a ``.git`` folder."""
    relative = check_relative(path)
    base = root.resolve()
    target = (base / relative).resolve()  # non-strict: a deleted file still has a place
    if target != base and base not in target.parents:
        raise CommandFailed(
            "outside_folder", f"{path[:80]!r} leads outside the session's folder (a symlink out)"
        )
    if in_git_folder(base, target):
        raise CommandFailed("bad_path", f"{path[:80]!r} leads into {GIT_FOLDER}")
    return target


def in_git_folder(base: Path, target: Path) -> bool:
    """``target`` (resolved, inside ``base``) lies in a ``.git`` folder of ``base``."""
    return any(git.is_dotgit(p) for p in target.relative_to(base).parts)


def _name(raw: bytes) -> tuple[str, bool]:
    """A file name for the page and whether it is real UTF-8 (one that is not is shown with
    U+FFFD in its place and cannot be opened by name)."""
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), False


def _join(relative: PurePosixPath, name: str) -> str:
    return name if str(relative) == "." else f"{relative}/{name}"


# -- files -------------------------------------------------------------------------------------


def list_folder(root: Path, path: str, limits: Limits) -> dict[str, Any]:
    """The entries of the folder ``path``: folders first, then files, by name; at most
    ``limits.entries`` of them (``truncated`` and ``total`` say when there were more)."""
    relative = check_relative(path)
    folder = inside(root, path)
    if not folder.exists():
        raise CommandFailed("not_found", f"there is no {path!r} in the session's folder")
    if not folder.is_dir():
        raise CommandFailed("not_a_folder", f"{path!r} is a file, not a folder")
    base = root.resolve()
    entries: list[dict[str, Any]] = []
    with os.scandir(os.fsencode(folder)) as found:
        for entry in found:
            name, readable = _name(entry.name)
            if git.is_dotgit(name):
                continue  # git's own folder: never listed (its changes are the Changes view)
            entries.append(_entry(entry, name, readable, relative, base))
    entries.sort(key=lambda e: (e["kind"] != "dir", e["name"].casefold(), e["name"]))
    total = len(entries)
    return {
        "path": "" if str(relative) == "." else str(relative),
        "entries": entries[: limits.entries],
        "total": total,
        "truncated": total > limits.entries,
    }


def _entry(
    entry: os.DirEntry[bytes], name: str, readable: bool, relative: PurePosixPath, base: Path
) -> dict[str, Any]:
    item: dict[str, Any] = {"name": name, "path": _join(relative, name), "kind": "other"}
    if not readable:
        item["bad_name"] = True
    try:
        info = entry.stat(follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            item["link"] = True
            target = Path(os.fsdecode(entry.path)).resolve()
            if (target != base and base not in target.parents) or in_git_folder(base, target):
                item["kind"] = "outside"  # out of the folder or into .git: named, never followed
                return item
            info = target.stat()
    except OSError:
        item["kind"] = "broken"
        return item
    if stat.S_ISDIR(info.st_mode):
        item["kind"] = "dir"
    elif stat.S_ISREG(info.st_mode):
        item["kind"] = "file"
        item["size"] = info.st_size
    return item


def looks_binary(head: bytes) -> bool:
    """Whether the first bytes of a file are not text: a NUL byte, or not UTF-8 (a multi-byte
    character cut at the end of ``head`` is still text). Pure."""
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(head) - 3  # only a cut last character is forgiven
    return False


def read_text(root: Path, path: str, limits: Limits) -> dict[str, Any]:
    """The text of the file ``path``, cut at ``limits.file_bytes`` (``truncated``); a binary
    file answers ``binary: true`` with its size and no text."""
    relative = check_relative(path)
    if str(relative) == ".":
        raise CommandFailed("not_a_file", "name a file of the session's folder")
    target = inside(root, path)
    try:
        info = target.stat()
    except FileNotFoundError:
        raise CommandFailed("not_found", f"there is no {path!r} in the session's folder") from None
    if stat.S_ISDIR(info.st_mode):
        raise CommandFailed("not_a_file", f"{path!r} is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise CommandFailed("not_a_file", f"{path!r} is not a regular file")
    # The path is resolved already: a symlink put in its place since is not followed, and a
    # FIFO swapped in does not block (it is not a regular file, checked on what was opened).
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise CommandFailed("not_found", f"{path!r} cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise CommandFailed("not_a_file", f"{path!r} is not a regular file")
        data = file.read(limits.file_bytes + 1)
    truncated = len(data) > limits.file_bytes
    data = data[: limits.file_bytes]
    result: dict[str, Any] = {"path": str(relative), "size": info.st_size, "truncated": truncated}
    if looks_binary(data[:SNIFF_BYTES]) or looks_binary(data):
        return {**result, "binary": True, "text": None}
    return {**result, "binary": False, "text": data.decode("utf-8", "replace")}


# -- git ---------------------------------------------------------------------------------------


async def run_git(root: Path, args: list[str], timeout: float, limit: int) -> git.GitResult:
    """``git args`` in the session's folder (agent/git.py): at most ``limit`` bytes of output."""
    return await git.run(root, args, timeout=timeout, limit=limit)


async def repo_prefix(root: Path, deadline: Deadline) -> str:
    """The folder's place in its repository ("" at the top, else ``sub/dir/``), or
    ``not_a_repo``."""
    result = await run_git(root, ["rev-parse", "--show-prefix"], deadline.left(), 65536)
    if result.code != 0:
        if "not a git repository" in result.err.lower():
            raise CommandFailed("not_a_repo", "the session's folder is not in a git repository")
        raise CommandFailed("git_failed", result.err[:300] or f"git exited {result.code}")
    return result.out.decode("utf-8", "replace").strip()


STATUS_LABELS = {
    "M": "modified",
    "T": "modified",
    "A": "added",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "U": "conflict",
    "?": "untracked",
}


def parse_status(data: bytes, prefix: str = "") -> list[dict[str, Any]]:
    """``git status --porcelain=v1 -z`` output as entries: ``path`` (relative to the folder,
    ``prefix`` removed), ``staged`` / ``unstaged`` (a label, or None), ``untracked``, ``from``
    for a rename, ``bad_name`` for a name that is not UTF-8. Pure."""
    fields = data.split(b"\x00")
    entries: list[dict[str, Any]] = []
    i = 0
    while i < len(fields):
        field = fields[i]
        i += 1
        if len(field) < 4:
            continue
        x, y = chr(field[0]), chr(field[1])
        name, readable = _name(field[3:])
        entry: dict[str, Any] = {"path": name.removeprefix(prefix)}
        if x in "RC" and i < len(fields):
            entry["from"] = _name(fields[i])[0].removeprefix(prefix)
            i += 1
        if x == "?":
            entry.update(staged=None, unstaged="untracked", untracked=True)
        elif x == "!":
            continue
        else:
            conflict = "U" in (x, y) or (x, y) in (("A", "A"), ("D", "D"))
            entry.update(
                staged="conflict" if conflict else STATUS_LABELS.get(x),
                unstaged="conflict" if conflict else STATUS_LABELS.get(y),
                untracked=False,
            )
        if not readable:
            entry["bad_name"] = True
        entries.append(entry)
    return entries


async def git_status(root: Path, limits: Limits) -> dict[str, Any]:
    """The folder's changes: staged, unstaged and untracked files (at most ``limits.entries``),
    and the branch."""
    deadline = Deadline(limits.git_timeout)
    prefix = await repo_prefix(root, deadline)
    result = await run_git(
        root,
        ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--", "."],
        deadline.left(),
        limits.diff_bytes,
    )
    if result.code != 0:
        raise CommandFailed("git_failed", result.err[:300] or f"git exited {result.code}")
    entries = parse_status(result.out, prefix)
    branch = await run_git(root, ["rev-parse", "--abbrev-ref", "HEAD"], deadline.left(), 4096)
    entries.sort(key=lambda e: e["path"])
    return {
        "branch": branch.out.decode("utf-8", "replace").strip() if branch.code == 0 else None,
        "entries": entries[: limits.entries],
        "total": len(entries),
        "truncated": result.cut or len(entries) > limits.entries,
    }


async def git_diff(root: Path, path: str, limits: Limits) -> dict[str, Any]:
    """The unified diffs of one file of the folder: ``unstaged`` (work tree against the
    index), ``staged`` (index against HEAD), or for an untracked file the whole of it as
    added. Each is cut at ``limits.diff_bytes`` (``truncated``); a binary change is named by
    git ("Binary files … differ") and ``binary`` is set."""
    relative = check_relative(path)
    if str(relative) == ".":
        raise CommandFailed("not_a_file", "name a changed file of the session's folder")
    inside(root, path)  # a symlink out is refused before git reads anything
    deadline = Deadline(limits.git_timeout)
    await repo_prefix(root, deadline)
    name = str(relative)
    base = ["diff", "--no-color", "--find-renames"]  # no external diff nor textconv (git.py)
    unstaged = await run_git(root, [*base, "--", name], deadline.left(), limits.diff_bytes)
    staged = await run_git(
        root, [*base, "--cached", "--", name], deadline.left(), limits.diff_bytes
    )
    if unstaged.code != 0 or staged.code != 0:
        raise CommandFailed("git_failed", (unstaged.err or staged.err)[:300] or "git diff failed")
    untracked = False
    if not unstaged.out and not staged.out:
        listed = await run_git(
            root, ["ls-files", "--others", "--exclude-standard", "-z", "--", name],
            deadline.left(), 65536,
        )  # fmt: skip
        if listed.out.strip(b"\x00"):
            untracked = True
            # --no-index exits 1 when the files differ, which they do.
            unstaged = await run_git(
                root, ["diff", "--no-color", "--no-index", "--", os.devnull, name],
                deadline.left(), limits.diff_bytes,
            )  # fmt: skip
    texts = {
        "unstaged": unstaged.out.decode("utf-8", "replace"),
        "staged": staged.out.decode("utf-8", "replace"),
    }
    binary = any(
        line.startswith("Binary files ") for text in texts.values() for line in text.splitlines()
    )
    return {
        "path": name,
        **texts,
        "untracked": untracked,
        "binary": binary,
        "truncated": unstaged.cut or staged.cut,
    }


# -- the folders a Mac knows -------------------------------------------------------------------


def recent_folders(sessions: list[tuple[str, float]], limit: int) -> list[str]:
    """The distinct working folders of ``(cwd, when)`` pairs, the most recent first, at most
    ``limit``. Pure."""
    newest: dict[str, float] = {}
    for cwd, when in sessions:
        if cwd and when >= newest.get(cwd, float("-inf")):
            newest[cwd] = when
    return sorted(newest, key=lambda cwd: -newest[cwd])[:limit]
