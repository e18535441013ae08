"""Waiting for a condition instead of sleeping: poll until a check returns something truthy."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx

T = TypeVar("T")


def wait_for(check: Callable[[], Any], timeout: float = 30, what: str = "condition") -> Any:
    """Poll until ``check`` returns something truthy; fail with what was last seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (httpx.HTTPError, KeyError, IndexError, TypeError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}; last seen: {last!r}")


def wait_until(check: Callable[[], T | None], timeout: float = 5.0, what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


async def await_until(
    check: Callable[[], Awaitable[T | None]], timeout: float = 5.0, what: str = "condition"
) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
