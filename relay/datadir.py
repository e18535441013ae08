"""The relay's data folder: readable and writable by the relay's user only, whatever the umask.

It holds every account's tokens (hashed), transcripts and the push key. The folder is made 0700
and every file the relay keeps in it 0600; the database is created 0600 before SQLite opens it,
so its ``-wal`` and ``-shm`` files (which SQLite makes with the database's own mode) are private
from the start.
A folder or file found looser (made by hand, or by an older relay) is tightened, and the relay
says so once.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

_log = logging.getLogger("relay")

FOLDER_MODE = 0o700
FILE_MODE = 0o600
DATABASE = "relay.db"
# Every file the relay writes here (SQLite's own, features/push.py's and their temporary copies):
# only these are tightened, so a folder shared with other files (--data ~) keeps theirs as is.
RELAY_FILES = frozenset(
    {
        DATABASE,
        f"{DATABASE}-wal",
        f"{DATABASE}-shm",
        f"{DATABASE}-journal",
        "vapid.pem",
        "vapid.tmp",
        "push.json",
        "push.tmp",
        "cli-token",  # relay/localtoken.py
        "access.log",  # `up`'s (cli/up.py)
        "cli-token.tmp",
    }
)


def _tighten(path: Path, mode: int, private: int) -> bool:
    """Clear group and other bits (``~private``); True when there were any."""
    loose = stat.S_IMODE(mode) & ~private
    if not loose:
        return False
    path.chmod(stat.S_IMODE(mode) & private)
    return True


def make_private_folder(folder: Path) -> None:
    """``folder``, made 0700 when missing, and so is every folder above it that this makes (the
    first run's ``~/.claude-bridge`` for ``~/.claude-bridge/relay``; ``mkdir(parents=True)``
    would leave those to the umask, 0755). A folder that exists is left as it is."""
    missing: list[Path] = []
    here = folder
    while not here.exists() and here != here.parent:
        missing.append(here)
        here = here.parent
    for part in reversed(missing):
        try:
            part.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue  # made meanwhile by another process: its own mode stands
        part.chmod(FOLDER_MODE)


def secure_folder(folder: Path) -> list[str]:
    """Make ``folder`` and the relay's files in it private; return what had to be tightened."""
    make_private_folder(folder)
    tightened = []
    if _tighten(folder, folder.stat().st_mode, FOLDER_MODE):
        tightened.append(f"{folder}/")
    database = folder / DATABASE
    if not database.exists():
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    for name in sorted(RELAY_FILES):
        entry = folder / name
        try:
            info = entry.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode) and _tighten(entry, info.st_mode, FILE_MODE):
            tightened.append(entry.name)
    if tightened:
        _log.warning(
            "tightened the relay's data in %s to its user only (folder 0700, files 0600): %s",
            folder,
            ", ".join(tightened),
        )
    return tightened
