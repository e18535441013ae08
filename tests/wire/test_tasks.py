"""wire/tasks.py: a part's background tasks, named, logged when they fail, closed together."""

from __future__ import annotations

import asyncio
import logging

import pytest

from wire.tasks import TaskSet, TaskSetClosed

LOG = logging.getLogger("tests.tasks")


async def _forever() -> None:
    await asyncio.Event().wait()


async def _stubborn(released: asyncio.Event) -> None:
    """Ignores its first cancellation, as a step stuck in a peer's close would."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        await released.wait()


def test_a_started_task_is_named_after_its_owner_and_kept_until_it_ends() -> None:
    async def run() -> None:
        tasks = TaskSet("push", LOG)
        done = asyncio.Event()
        task = tasks.start(done.wait(), name="phone 1")
        assert task.get_name() == "push: phone 1"
        assert tasks.names() == ["push: phone 1"] and len(tasks) == 1
        done.set()
        await task
        await asyncio.sleep(0)  # the done callback runs on the next turn of the loop
        assert len(tasks) == 0 and tasks.names() == []

    asyncio.run(run())


def test_an_unexpected_exception_is_logged_with_the_task_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def boom() -> None:
        raise ValueError("the disk said no")

    async def run() -> None:
        tasks = TaskSet("outbox", LOG)
        tasks.start(boom(), name="flush s1")
        assert await tasks.wait(timeout=1)

    with caplog.at_level(logging.ERROR, logger="tests.tasks"):
        asyncio.run(run())
    [record] = [r for r in caplog.records if r.name == "tests.tasks"]
    assert "outbox: flush s1 failed: the disk said no" in record.getMessage()
    assert record.exc_info is not None and record.exc_info[0] is ValueError


def test_a_cancelled_task_is_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> None:
        tasks = TaskSet("agent", LOG)
        task = tasks.start(_forever(), name="watch")
        await asyncio.sleep(0)
        task.cancel()
        assert await tasks.wait(timeout=1)

    with caplog.at_level(logging.DEBUG, logger="tests.tasks"):
        asyncio.run(run())
    assert [r for r in caplog.records if r.name == "tests.tasks"] == []


def test_close_cancels_every_task_and_starts_nothing_more() -> None:
    async def run() -> None:
        tasks = TaskSet("relay", LOG)
        running = [tasks.start(_forever(), name=f"loop {i}") for i in range(3)]
        await asyncio.sleep(0)
        assert await tasks.close(grace=1) == []
        assert all(task.cancelled() for task in running) and tasks.closed
        ran = False

        async def late() -> None:
            nonlocal ran
            ran = True

        with pytest.raises(TaskSetClosed, match="relay is stopping: late was not started"):
            tasks.start(late(), name="late")
        await asyncio.sleep(0)
        assert not ran  # the refused coroutine was closed, never run (and no warning about it)

    asyncio.run(run())


def test_close_never_hangs_on_a_stuck_task_and_names_it(caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> list[str]:
        tasks = TaskSet("agent", LOG)
        released = asyncio.Event()
        stuck = tasks.start(_stubborn(released), name="the relay link")
        tasks.start(_forever(), name="screens")
        await asyncio.sleep(0)
        left = await tasks.close(grace=0.05)
        assert not stuck.done()
        released.set()
        await stuck
        return left

    with caplog.at_level(logging.WARNING, logger="tests.tasks"):
        left = asyncio.run(run())
    assert left == ["agent: the relay link"]
    assert any("agent: the relay link did not end" in r.getMessage() for r in caplog.records)


def test_wait_reports_a_timeout() -> None:
    async def run() -> None:
        tasks = TaskSet("agent", LOG)
        tasks.start(_forever(), name="forever")
        assert not await tasks.wait(timeout=0.01)
        assert await tasks.close(grace=1) == []
        assert await tasks.wait(timeout=0.01)

    asyncio.run(run())


def test_a_task_that_closes_its_own_set_goes_on_to_its_end() -> None:
    # A command that stops its own link closes the set it runs in: it must not cancel itself
    # half-way through the stop, nor wait for its own end.
    async def run() -> tuple[list[str], bool, bool]:
        tasks = TaskSet("mac link", LOG)
        other = tasks.start(_forever(), name="reader")
        done = asyncio.Event()

        async def stop_the_link() -> list[str]:
            left = await tasks.close(grace=1.0)
            done.set()
            return left

        closing = tasks.start(stop_the_link(), name="command end")
        left = await asyncio.wait_for(closing, 2.0)
        return left, done.is_set(), other.cancelled()

    left, finished, other_cancelled = asyncio.run(run())
    assert left == [] and finished and other_cancelled
