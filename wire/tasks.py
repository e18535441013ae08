"""One owner for a part's background tasks (after Textual's ``WorkerManager``).

A task started with :meth:`TaskSet.start` has a name, is kept until it finishes, and has its
unexpected exception logged with that name (an exception in a task nobody awaits is otherwise
lost until the garbage collector complains). :meth:`TaskSet.close` cancels every task and waits
for them, each for at most ``grace`` seconds: stopping never hangs on one stuck task, and the
ones left behind are named in the log and returned. A closed set starts nothing more. A task of
the set that closes it (a command that stops its own link) is neither cancelled nor waited for:
it is the one doing the closing, and goes on to its end.

Every part that runs work beside its caller (the agent's loops and spawned steps, a relay
feature's sweeper and per-event jobs, the cluster's listeners) owns one set, so stopping that
part stops all of its work::

    tasks = TaskSet("push", log)
    tasks.start(send(subscription), name=f"push {phone_id}")
    ...
    await tasks.close()
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

CLOSE_GRACE = 5.0  # seconds close() waits for the cancelled tasks before naming them stuck


class TaskSetClosed(RuntimeError):
    """A task was started on a set that is closing or closed: its work would never be stopped."""


class TaskSet:
    """The background tasks of one part: started by name, logged when they fail, closed
    together."""

    def __init__(self, owner: str, log: logging.Logger) -> None:
        self.owner = owner
        self._log = log
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False

    def start(self, coro: Coroutine[Any, Any, T], *, name: str) -> asyncio.Task[T]:
        """Run ``coro`` as a task called ``name``, kept until it finishes. Refused with
        :class:`TaskSetClosed` (and the coroutine closed, never run) once the set closes."""
        if self._closed:
            coro.close()
            raise TaskSetClosed(f"{self.owner} is stopping: {name} was not started")
        task = asyncio.get_running_loop().create_task(coro, name=f"{self.owner}: {name}")
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._log.error("%s failed: %s", task.get_name(), exc, exc_info=exc)

    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(list(self._tasks))

    def names(self) -> list[str]:
        """The names of the tasks still running, sorted."""
        return sorted(task.get_name() for task in self._tasks)

    @property
    def closed(self) -> bool:
        return self._closed

    async def wait(self, timeout: float | None = None) -> bool:
        """Wait until every task running now has finished; False when ``timeout`` ran out
        first. Their exceptions are logged, not raised."""
        running = list(self._tasks)
        if not running:
            return True
        _, pending = await asyncio.wait(running, timeout=timeout)
        return not pending

    async def close(self, grace: float = CLOSE_GRACE) -> list[str]:
        """Start nothing more, cancel every task (but the one calling) and wait for them up to
        ``grace`` seconds. Returns the names of the tasks that did not end (each also logged as
        left behind)."""
        self._closed = True
        closing = asyncio.current_task()
        running = [task for task in self._tasks if task is not closing]
        for task in running:
            task.cancel()
        if not running:
            return []
        _, stuck = await asyncio.wait(running, timeout=grace)
        names = sorted(task.get_name() for task in stuck)
        for name in names:
            self._log.warning("stopping: %s did not end in %.0f s; left behind", name, grace)
        return names
