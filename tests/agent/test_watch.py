"""agent/watch.py: the "something changed under this tree" watcher, on real files in tmp_path with
real inotify (Linux), and its watchfiles fallback. Timeouts are generous bounds, not speed tests."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import shutil
import struct
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from agent import watch
from agent.watch import IN_CREATE, IN_ISDIR, IN_MODIFY, IN_Q_OVERFLOW, Event, changes, parse_events

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


def aio(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an async test under ``asyncio.run`` (pytest still sees its fixtures)."""

    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


WAIT = 5.0  # the longest a wake may take before the test fails
SETTLE = 0.2  # let the wakes of earlier file operations arrive before the one under test


class Wakes:
    """Runs ``changes(root, …)`` in a task and counts its wakes."""

    def __init__(self, root: Path, **kwargs: Any) -> None:
        self.stop = asyncio.Event()
        self.count = 0
        self._woken = asyncio.Event()
        self.task = asyncio.create_task(self._run(root, kwargs))

    async def _run(self, root: Path, kwargs: dict[str, Any]) -> None:
        async for _ in changes(root, self.stop, **kwargs):
            self.count += 1
            self._woken.set()

    async def started(self) -> None:
        # One loop turn runs the task up to its first wait: the inotify watches are then in place.
        await asyncio.sleep(0)
        assert not self.task.done(), self.task

    async def woken(self) -> None:
        """Wait for a wake (since the last woken() / settle())."""
        await asyncio.wait_for(self._woken.wait(), WAIT)
        self._woken.clear()

    async def settle(self) -> None:
        await asyncio.sleep(SETTLE)
        self._woken.clear()
        self.count = 0

    async def close(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, WAIT)


def append(path: Path, text: str = '{"type":"user"}\n') -> None:
    with path.open("a") as f:
        f.write(text)


def inotify_fds() -> set[int]:
    """The inotify descriptors this process holds (to see that the watcher closes its own; those
    of watchfiles close a moment after it ends, by its own thread)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                found.add(int(fd))
        except OSError:
            continue
    return found


# -- the pure parser ------------------------------------------------------------------------


def raw_event(wd: int, mask: int, name: bytes = b"", pad_to: int = 0) -> bytes:
    padded = name + b"\0" * (max(pad_to, len(name) + 1 if name else 0) - len(name))
    return struct.pack("iIII", wd, mask, 0, len(padded)) + padded


def test_parse_events_reads_names_padding_and_overflow() -> None:
    data = (
        raw_event(1, IN_MODIFY, b"abc.jsonl", pad_to=16)
        + raw_event(-1, IN_Q_OVERFLOW)
        + raw_event(2, IN_CREATE | IN_ISDIR, b"subagents", pad_to=32)
        + raw_event(3, IN_MODIFY, "é.jsonl".encode())
    )
    assert parse_events(data) == [
        Event(1, IN_MODIFY, "abc.jsonl"),
        Event(-1, IN_Q_OVERFLOW, ""),
        Event(2, IN_CREATE | IN_ISDIR, "subagents"),
        Event(3, IN_MODIFY, "é.jsonl"),
    ]


def test_parse_events_ignores_a_truncated_tail() -> None:
    whole = raw_event(1, IN_MODIFY, b"a.jsonl", pad_to=16)
    second = raw_event(2, IN_CREATE, b"b.jsonl", pad_to=16)
    assert parse_events(b"") == []
    assert parse_events(whole[:7]) == []  # half a header
    assert parse_events(whole + second[:10]) == [Event(1, IN_MODIFY, "a.jsonl")]
    assert parse_events(whole + second[:20]) == [Event(1, IN_MODIFY, "a.jsonl")]  # half a name
    assert isinstance(parse_events(b"\xff" + whole), list)  # misaligned: garbage, no exception


# -- inotify ----------------------------------------------------------------------------


@linux_only
@aio
async def test_a_write_to_an_existing_file_wakes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agent.watch")
    transcript = tmp_path / "-work-x" / "c1.jsonl"
    transcript.parent.mkdir()
    transcript.touch()
    wakes = Wakes(tmp_path)
    await wakes.started()
    assert "with inotify" in caplog.text
    append(transcript)
    await wakes.woken()
    await wakes.close()


@linux_only
@pytest.mark.parametrize("how", ["at once", "one by one"])
@aio
async def test_a_file_in_folders_made_after_the_start_wakes(tmp_path: Path, how: str) -> None:
    wakes = Wakes(tmp_path)
    await wakes.started()
    subagents = tmp_path / "-work-x" / "c1" / "subagents"
    if how == "at once":  # all made before the watcher sees the first: its listing finds them
        subagents.mkdir(parents=True)
        await wakes.woken()
    else:  # each one's creation event adds its watch
        for folder in [subagents.parent.parent, subagents.parent, subagents]:
            folder.mkdir()
            await wakes.woken()
    await wakes.settle()
    append(subagents / "agent-x.jsonl")
    await wakes.woken()
    append(subagents / "agent-x.jsonl")  # a plain write there, too
    await wakes.woken()
    await wakes.close()


@linux_only
@aio
async def test_a_burst_of_writes_gives_few_wakes(tmp_path: Path) -> None:
    folder = tmp_path / "-work-x"
    folder.mkdir()
    wakes = Wakes(tmp_path)
    await wakes.started()
    for i in range(100):  # two files in turn, so the kernel cannot merge repeated events
        append(folder / f"c{i % 2}.jsonl")
    await wakes.woken()
    await asyncio.sleep(SETTLE)
    assert 1 <= wakes.count < 10
    await wakes.close()


@linux_only
@aio
async def test_a_lost_event_queue_rescans_and_wakes(tmp_path: Path) -> None:
    """More events than the kernel queues (IN_Q_OVERFLOW): the folder made meanwhile, whose
    creation event was dropped, is found by the rescan."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"max_queued_events is {limit}")
    folder = tmp_path / "-work-x"
    folder.mkdir()
    wakes = Wakes(tmp_path)
    await wakes.started()
    fds = [os.open(folder / f"c{i}.jsonl", os.O_WRONLY | os.O_CREAT) for i in range(2)]
    try:
        for i in range(limit + 10):  # no loop turn meanwhile: nothing is read
            os.write(fds[i % 2], b"x")
    finally:
        for fd in fds:
            os.close(fd)
    late = tmp_path / "-work-late"
    late.mkdir()  # its IN_CREATE is lost
    await wakes.woken()
    await wakes.settle()
    append(late / "c9.jsonl")
    await wakes.woken()
    await wakes.close()


@linux_only
@aio
async def test_a_deleted_folder_is_forgotten_and_the_rest_still_wakes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agent.watch")
    gone, kept = tmp_path / "-work-gone", tmp_path / "-work-kept"
    (gone / "c1" / "subagents").mkdir(parents=True)
    kept.mkdir()
    wakes = Wakes(tmp_path)
    await wakes.started()
    shutil.rmtree(gone)  # IN_DELETE_SELF and IN_IGNORED for each of its three watches
    await wakes.woken()
    await wakes.settle()
    append(kept / "c2.jsonl")
    await wakes.woken()
    assert "gave up" not in caplog.text
    await wakes.close()


@linux_only
@aio
async def test_the_root_removed_falls_back_to_watchfiles(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="agent.watch")
    root = tmp_path / "projects"
    root.mkdir()
    wakes = Wakes(root)
    await wakes.started()
    root.rmdir()
    await wakes.woken()  # the change is reported, then watchfiles is asked and finds no root
    with pytest.raises(FileNotFoundError):
        await asyncio.wait_for(wakes.task, WAIT)
    assert "inotify gave up" in caplog.text
    assert f"{root} was removed" in caplog.text


def inotify_fds_watching(folder: Path) -> set[int]:
    """The inotify descriptors of this process that watch ``folder`` (by its inode, from
    /proc/self/fdinfo): another test's descriptor closing meanwhile cannot be mistaken for it,
    even when the number is reused."""
    inode = f"ino:{os.stat(folder).st_ino:x} "
    found = set()
    for fd in inotify_fds():
        try:
            with open(f"/proc/self/fdinfo/{fd}", encoding="ascii") as info:
                if any(line.startswith("inotify ") and inode in line for line in info):
                    found.add(fd)
        except OSError:
            continue
    return found


@linux_only
@pytest.mark.parametrize("end", ["stop", "cancel"])
@aio
async def test_stop_or_cancel_ends_it_and_closes_the_descriptor(tmp_path: Path, end: str) -> None:
    assert inotify_fds_watching(tmp_path) == set()
    wakes = Wakes(tmp_path)
    await wakes.started()
    mine = inotify_fds_watching(tmp_path)
    assert len(mine) == 1
    if end == "stop":
        await wakes.close()  # fails on a timeout if the iterator does not end
    else:
        wakes.task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(wakes.task, WAIT)
    assert not mine & inotify_fds_watching(tmp_path)


# -- the fallback -----------------------------------------------------------------------


@pytest.mark.parametrize("forced_by", ["argument", "module switch"])
@aio
async def test_watchfiles_is_used_when_inotify_is_off(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    forced_by: str,
) -> None:
    caplog.set_level(logging.INFO, logger="agent.watch")
    if forced_by == "argument":
        wakes = Wakes(tmp_path, inotify=False)
    else:
        monkeypatch.setattr(watch, "USE_INOTIFY", False)
        wakes = Wakes(tmp_path)
    await wakes.started()
    assert "with watchfiles" in caplog.text
    assert "with inotify" not in caplog.text
    folder = tmp_path / "-work-x" / "c1" / "subagents"
    folder.mkdir(parents=True)

    async def keep_writing() -> None:  # watchfiles' thread starts in its own time: write until seen
        while True:
            append(folder / "agent-x.jsonl")
            await asyncio.sleep(0.05)

    writer = asyncio.create_task(keep_writing())
    try:
        await wakes.woken()
    finally:
        writer.cancel()
    await wakes.close()
