"""What a move laid down in a folder of this Mac, taken back exactly; and the hold a move has on
its folder.

A move's :func:`agent.foldersync.unpack` writes, before each change, what it is about to lay
down — its :class:`Ledger`, ``laid.json`` in the move's own folder (0600) — so that an abort,
even after this Mac restarted, takes back exactly that (:func:`take_back`) and nothing else:

* **a new folder**: the folders made above it (removed only while empty), the building folder
  beside it, and the folder itself — removed only while it is the very folder the move renamed
  into place (the same device and inode) and no other session of this Mac runs in it; an empty
  folder the person had is left empty, with its mode;
* **an existing repository brought forward** (clean, behind): the paths the move created — files
  checked out, patched in or placed, none of which was there before — and the folders made for
  them (while empty), then the repository as it was: its index and files at its old commit
  (``git reset --hard``: it was clean), HEAD on its old branch, the branch the move set back
  where it was. Nothing else is touched: an ignored or untracked file the person had is never
  in the ledger (the move refuses to overwrite one). Left whole when another session of this Mac
  runs in the folder: its work is never reset under it.

Holds (:func:`held_by`): one move at a time lays a folder down; a second move into the same
folder, one inside it or one around it is refused while the first holds it (its journal, which
outlives a restart of the agent).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Literal

from agent import git
from agent.files import write_json

LEDGER = "laid.json"
GIT_TIMEOUT = 300.0  # seconds each git of a take-back may take

_log = logging.getLogger("agent.landing")


@dataclass
class Ledger:
    """What one unpack laid down (or is about to), JSON-able; saved to ``path`` at each change."""

    root: str
    kind: Literal["new", "update"] = "new"
    parents: list[str] = field(default_factory=list)  # folders made above root, deepest first
    builds: list[str] = field(default_factory=list)  # building folders beside root
    inode: list[int] = field(default_factory=list)  # new: [dev, ino] of the tree renamed to root
    mode: int | None = None  # new: root was there, empty, with this mode (it stays, empty)
    # update: the repository as it was, and what the move adds to it
    head: str | None = None
    branch: str | None = None
    moved_branch: str | None = None  # the branch the move checks out
    old_ref: str | None = None  # where that branch was (None: the move makes it)
    created: list[str] = field(default_factory=list)  # paths (relative) that were not there
    folders: list[str] = field(default_factory=list)  # folders (relative) made for them
    touched: bool = False  # the repository's HEAD, index or files may have changed
    path: str = ""  # where the ledger is kept ("" = nowhere: nothing outlives the unpack)

    def save(self) -> None:
        if self.path:
            write_json(Path(self.path), {k: v for k, v in asdict(self).items() if k != "path"})

    def forget(self) -> None:
        """Nothing is left to take back (done, or undone)."""
        if self.path:
            Path(self.path).unlink(missing_ok=True)

    @classmethod
    def load(cls, path: Path) -> Ledger | None:
        """The ledger kept at ``path``, or None when there is none (or it cannot be read)."""
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        known = {f.name for f in fields(cls)} - {"path"}
        try:
            ledger = cls(**{k: v for k, v in data.items() if k in known})
        except TypeError:
            return None
        if not ledger.well_formed():
            return None
        ledger.path = str(path)
        return ledger

    def well_formed(self) -> bool:
        """Every field holds what a ledger this agent wrote would (a ledger is read back from
        disk, where anything may have changed it)."""
        texts = (self.parents, self.builds, self.created, self.folders)
        optional = (self.head, self.branch, self.moved_branch, self.old_ref)
        return (
            isinstance(self.root, str)
            and self.kind in ("new", "update")
            and all(isinstance(t, list) and all(isinstance(x, str) for x in t) for t in texts)
            and all(o is None or isinstance(o, str) for o in optional)
            and isinstance(self.inode, list)
            and all(type(n) is int for n in self.inode)
            and (self.mode is None or type(self.mode) is int)
            and type(self.touched) is bool
        )


def book(path: Path | None, root: Path) -> Ledger:
    """The ledger of an unpack into ``root``, kept at ``path``: what an earlier attempt of the
    same move (before a restart) laid down stays in it."""
    if path is not None:
        earlier = Ledger.load(path)
        if earlier is not None and earlier.root == str(root):
            return earlier
    return Ledger(str(root), path=str(path) if path is not None else "")


# -- holds (pure) -------------------------------------------------------------------------------


def _parts(path: str) -> list[str]:
    return [git.fold(p) for p in Path(os.path.realpath(os.path.expanduser(path))).parts]


def overlaps(a: str, b: str) -> bool:
    """The folders ``a`` and ``b`` are the same, or one is inside the other (as macOS compares
    names: any case)."""
    pa, pb = _parts(a), _parts(b)
    n = min(len(pa), len(pb))
    return pa[:n] == pb[:n]


def held_by(root: str, held: Iterable[tuple[str, str]]) -> str | None:
    """Which of ``held`` (move id, folder) holds ``root``: the same folder, one inside it or
    one around it; None when it is free."""
    for move_id, folder in held:
        if folder and overlaps(root, folder):
            return move_id
    return None


def _runs_in(root: str, busy: Iterable[str]) -> str | None:
    base = _parts(root)
    for cwd in busy:
        if cwd and _parts(cwd)[: len(base)] == base:
            return cwd
    return None


# -- taking back --------------------------------------------------------------------------------


async def take_back(ledger: Ledger, busy: Iterable[str] = ()) -> None:
    """Remove what ``ledger`` says the move laid down, and put the repository it brought forward
    back as it was; ``busy``: the folders other sessions of this Mac run in (never removed nor
    reset). Then the ledger is forgotten."""
    root = Path(ledger.root)
    busy = list(busy)
    for build in ledger.builds:
        shutil.rmtree(build, ignore_errors=True)
    ledger.builds = []
    running = _runs_in(ledger.root, busy)
    if running is not None:
        _log.warning(
            "the move's folder %s is left as it is: another session runs in %s", root, running
        )
    elif ledger.kind == "new":
        _remove_new(root, ledger.inode, ledger.mode)
    elif ledger.touched:
        await _put_back(root, ledger)
    for folder in ledger.parents:  # deepest first; only while empty
        with contextlib.suppress(OSError):
            os.rmdir(folder)
    ledger.forget()


def _remove_new(root: Path, inode: list[int], mode: int | None) -> None:
    if len(inode) != 2:
        return  # never renamed into place: nothing of the move is there
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return
    if [st.st_dev, st.st_ino] != inode:
        _log.warning("the folder %s is not the one the move made: left as it is", root)
        return
    shutil.rmtree(root, ignore_errors=True)
    if mode is not None:  # the person's empty folder the move filled: empty again
        with contextlib.suppress(OSError):
            os.mkdir(root)
            os.chmod(root, mode)


async def _put_back(root: Path, ledger: Ledger) -> None:
    for rel in ledger.created:
        path = root / rel
        with contextlib.suppress(OSError):
            if not path.is_dir() or path.is_symlink():
                path.unlink()
    if ledger.head:
        await _git(root, "reset", "-q", "--hard", ledger.head, "--")
    else:
        await _git(root, "read-tree", "--empty")
    if ledger.branch and ledger.head:
        await _git(root, "checkout", "-q", "-f", ledger.branch, "--")
    elif ledger.head:
        await _git(root, "checkout", "-q", "-f", "--detach", ledger.head, "--")
    elif ledger.branch:
        await _git(root, "symbolic-ref", "HEAD", f"refs/heads/{ledger.branch}")
    moved = ledger.moved_branch
    if moved and moved != ledger.branch:
        if ledger.old_ref:
            await _git(root, "update-ref", f"refs/heads/{moved}", ledger.old_ref)
        else:
            await _git(root, "update-ref", "-d", f"refs/heads/{moved}")
    for rel in ledger.folders:  # deepest first; only while empty
        with contextlib.suppress(OSError):
            os.rmdir(root / rel)


async def _git(root: Path, *args: str) -> None:
    """A git of the take-back: its failure is logged, and the rest goes on."""
    try:
        result = await git.run(root, args, timeout=GIT_TIMEOUT, ceiling=root.parent)
    except Exception as exc:  # the rest of the take-back must still run
        _log.warning("putting %s back: git %s failed (%s)", root, args[0], exc)
        return
    if result.code != 0:
        _log.warning("putting %s back: git %s failed (%s)", root, args[0], result.err[-300:])


__all__ = [
    "LEDGER",
    "Ledger",
    "book",
    "held_by",
    "overlaps",
    "take_back",
]
