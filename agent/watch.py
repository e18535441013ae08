"""Wait for changes under a folder tree: ``async for _ in changes(root, stop): ...``.

:func:`changes` yields ``None`` each time something under ``root`` (any depth) was written,
created or moved in, until ``stop`` is set (or the task is cancelled). It says *that* something
changed, not what: the caller re-reads what it follows. Bursts are coalesced: one yield per batch
of file events read, and however many batches arrived while the caller was busy, one yield.
Folders created later (a new project folder, a ``<conversation>/subagents`` folder) are watched
as they appear.

* On Linux it uses inotify through ctypes: one watch per folder, the inotify descriptor read with
  ``loop.add_reader``. Idle, it costs nothing (no thread, no timer) and it wakes as soon as a file
  is written. :func:`parse_events` (bytes → events) is the pure part.
* Elsewhere (macOS), when inotify is unavailable, or when it gives up (the watch limit
  ``fs.inotify.max_user_watches`` is reached, ``root`` itself is deleted or moved), it falls back
  to ``watchfiles.awatch``, whose Rust thread checks every 5 ms. A log line says which is used.

Errors from watchfiles (``OSError``, ``RuntimeError``: e.g. ``root`` is gone) propagate: the
caller decides what to do without file events (the agent polls).

``USE_INOTIFY`` (module switch) or the ``inotify=`` argument forces the fallback, for tests.
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import logging
import os
import struct
import sys
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import NamedTuple

from wire.tasks import TaskSet

_log = logging.getLogger("agent.watch")

#: False: always use watchfiles (tests set it, or pass ``inotify=False`` to :func:`changes`).
USE_INOTIFY = sys.platform.startswith("linux")

# <sys/inotify.h>
IN_MODIFY = 0x00000002
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000
IN_ISDIR = 0x40000000

# IN_MODIFY fires on each write (Claude Code appends lines), IN_CREATE / IN_MOVED_TO on new files
# and folders (the latter also for atomic rename-into-place). IN_CLOSE_WRITE is left out: after an
# append it would only bring a second, empty wake. IN_ONLYDIR: a file that replaced a folder in
# the meantime is not watched. IN_DELETE_SELF: a watched folder was removed; IN_IGNORED (its
# watch is gone) follows, and always comes, unasked.
_MASK = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_ONLYDIR
# The root alone also reports being moved away: its path then no longer leads to what we watch.
# It may be a symlink (a moved ~/.claude), so it is followed; folders inside are not, like the walk.
_ROOT_MASK = _MASK | IN_MOVE_SELF
_SUB_MASK = _MASK | IN_DONT_FOLLOW

_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then name[len]
_READ_SIZE = 65536  # many events per read (one needs at most 16 + NAME_MAX + 1 bytes)


class Event(NamedTuple):
    wd: int  # watch descriptor (-1 for IN_Q_OVERFLOW)
    mask: int
    name: str  # the entry inside the watched folder; "" for events about the folder itself


def parse_events(data: bytes) -> list[Event]:
    """The inotify events in ``data`` (what a read of the descriptor returned). The kernel only
    returns whole events; a truncated tail is ignored rather than misread."""
    events: list[Event] = []
    offset, size = 0, len(data)
    while offset + _HEADER.size <= size:
        wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
        start = offset + _HEADER.size
        if start + length > size:
            break
        raw = data[start : start + length].split(b"\0", 1)[0]  # name is NUL-padded
        events.append(Event(wd, mask, os.fsdecode(raw)))
        offset = start + length
    return events


class _Libc:
    """inotify_init1 and inotify_add_watch from the C library; OSError if there are none."""

    def __init__(self) -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            self._init1 = libc.inotify_init1
            self._add_watch = libc.inotify_add_watch
        except (OSError, AttributeError) as exc:
            raise OSError(errno.ENOSYS, f"no inotify in the C library ({exc})") from None
        self._init1.argtypes = [ctypes.c_int]
        self._init1.restype = ctypes.c_int
        self._add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        self._add_watch.restype = ctypes.c_int

    def init(self) -> int:
        # IN_NONBLOCK / IN_CLOEXEC are O_NONBLOCK / O_CLOEXEC (they differ between architectures)
        return self._check(self._init1(os.O_NONBLOCK | os.O_CLOEXEC), None)

    def add_watch(self, fd: int, path: Path, mask: int) -> int:
        return self._check(self._add_watch(fd, os.fsencode(path), mask), path)

    @staticmethod
    def _check(result: int, path: Path | None) -> int:
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), None if path is None else str(path))
        return result


_LIMIT = "the inotify watch limit (fs.inotify.max_user_watches) is reached"


class _GiveUp(Exception):
    """inotify cannot follow the tree any more (watch limit, root gone): fall back."""


class _Inotify:
    """One inotify instance with a watch on every folder of the tree under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.libc = _Libc()
        self.fd = self.libc.init()
        self.paths: dict[int, Path] = {}  # watch descriptor → the folder it watches
        self.root_wd = -1
        try:
            self._watch_tree(root)
        except (OSError, _GiveUp):
            os.close(self.fd)
            raise

    def _watch_tree(self, top: Path) -> None:
        """Watch ``top`` and every folder under it. A folder is listed *after* its watch is in
        place, so one created in between is either seen by the listing or reported as an event.
        OSError if the root cannot be watched; _GiveUp at the watch limit."""
        stack = [top]
        while stack:
            path = stack.pop()
            is_root = path == self.root
            try:
                wd = self.libc.add_watch(self.fd, path, _ROOT_MASK if is_root else _SUB_MASK)
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    raise _GiveUp(_LIMIT) from None
                if is_root:
                    raise
                continue  # gone again, or not a folder (any more): nothing to watch
            if is_root:
                self.root_wd = wd
            self.paths[wd] = path  # an already-watched folder gives its wd again: path refreshed
            try:
                with os.scandir(path) as entries:
                    stack.extend(Path(e.path) for e in entries if e.is_dir(follow_symlinks=False))
            except OSError:
                continue

    def handle(self, events: list[Event]) -> None:
        """Keep the watches in step with the tree. Raises _GiveUp."""
        rescan = False
        for wd, mask, name in events:
            if mask & IN_Q_OVERFLOW:  # events were dropped, new folders among them perhaps
                rescan = True
            elif mask & IN_IGNORED:  # watch removed: its folder was deleted or unmounted
                self.paths.pop(wd, None)
                if wd == self.root_wd:
                    raise _GiveUp(f"{self.root} was removed")
            elif wd == self.root_wd and mask & IN_MOVE_SELF:
                raise _GiveUp(f"{self.root} was moved")
            elif mask & IN_ISDIR and mask & (IN_CREATE | IN_MOVED_TO):
                parent = self.paths.get(wd)
                if parent is not None and name:
                    self._watch_tree(parent / name)
        if rescan:
            try:
                self._watch_tree(self.root)
            except OSError as exc:
                raise _GiveUp(f"{self.root} cannot be watched any more ({exc})") from None

    async def run(self, stop: asyncio.Event) -> AsyncGenerator[None, None]:
        """Yield once per batch of events (coalesced while the consumer is busy). Ends when
        ``stop`` is set, or raises _GiveUp. Closes the descriptor in every case."""
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        trouble: list[_GiveUp] = []

        def readable() -> None:
            # Read and follow new folders right away, even while the consumer is busy: the
            # sooner a new folder is watched, the less it relies on the listing in _watch_tree.
            try:
                data = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                return
            except OSError as exc:
                trouble.append(_GiveUp(f"reading inotify failed ({exc})"))
            else:
                try:
                    self.handle(parse_events(data))
                except _GiveUp as exc:
                    trouble.append(exc)
            if trouble:
                loop.remove_reader(self.fd)
            wake.set()

        async def wake_on_stop() -> None:
            await stop.wait()
            wake.set()

        tasks = TaskSet("file watch", _log)
        tasks.start(wake_on_stop(), name="stop")
        loop.add_reader(self.fd, readable)
        try:
            while True:
                await wake.wait()
                wake.clear()
                if stop.is_set():
                    return
                if trouble:
                    raise trouble[0]
                yield
        finally:
            loop.remove_reader(self.fd)
            os.close(self.fd)
            await tasks.close()


async def changes(
    root: Path, stop: asyncio.Event, *, inotify: bool | None = None
) -> AsyncGenerator[None, None]:
    """Yield once per batch of changes under ``root`` until ``stop`` is set; see the module
    docstring. ``root`` must exist. ``inotify=False`` forces the watchfiles fallback (default:
    ``USE_INOTIFY``, true on Linux)."""
    if USE_INOTIFY if inotify is None else inotify:
        try:
            watcher = _Inotify(root)
        except (OSError, _GiveUp) as exc:
            _log.info("inotify unavailable for %s (%s): watching with watchfiles", root, exc)
        else:
            _log.info("watching %s with inotify", root)
            try:
                # aclosing: closed with us, the inner generator closes its descriptor at once
                async with aclosing(watcher.run(stop)) as batches:
                    async for _ in batches:
                        yield
                return  # stopped
            except _GiveUp as exc:
                _log.warning("inotify gave up (%s): watching %s with watchfiles", exc, root)
            yield  # things may have changed while switching over
    else:
        _log.info("watching %s with watchfiles", root)
    from watchfiles import awatch

    async with aclosing(awatch(root, debounce=5, step=5, stop_event=stop)) as batches:
        async for _ in batches:
            yield
