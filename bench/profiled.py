"""Run a ``claude-bridge`` command under cProfile, every thread of it, and write one stats file.

cProfile watches only the thread that enables it; the relay does its database work in its
writer thread (relay/writer.py) and in ``asyncio.to_thread`` workers. This launcher gives every
thread its own profiler as it starts and merges them all when the command returns:

    python -m bench.profiled OUT.prof relay --data … --port …

:func:`summary` prints the merged file's top functions (bench/ingest.py ``--profile``).
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOP_FUNCTIONS = 30  # functions printed in a summary
# Where an idle thread waits (the event loop's poll, the writer's queue, a worker's lock): their
# "own time" is time asleep, so a summary leaves them out.
WAITS = frozenset(
    {
        "<method 'acquire' of '_thread.lock' objects>",
        "<method 'get' of '_queue.SimpleQueue' objects>",
        "<method 'poll' of 'select.epoll' objects>",
        "<method 'select' of 'select.epoll' objects>",
        "<built-in method time.sleep>",
    }
)


class ThreadProfiles:
    """A cProfile profiler in each thread started after :meth:`install`, and the main one."""

    def __init__(self) -> None:
        self.main = cProfile.Profile()
        self.others: list[cProfile.Profile] = []
        self._lock = threading.Lock()

    def _start_here(self, frame: FrameType, event: str, arg: Any) -> None:
        # The first profile event of a new thread: hand the thread to its own profiler.
        sys.setprofile(None)
        profile = cProfile.Profile()
        with self._lock:
            self.others.append(profile)
        profile.enable()

    def install(self) -> None:
        threading.setprofile(self._start_here)
        self.main.enable()

    def write(self, path: Path) -> None:
        """Stop profiling (the main thread's profiler first) and write the merged stats."""
        self.main.disable()
        threading.setprofile(None)
        stats = pstats.Stats(self.main)
        with self._lock:
            others = list(self.others)
        for profile in others:
            stats.add(profile)
        stats.dump_stats(str(path))


def summary(path: Path, top: int = TOP_FUNCTIONS, sort: str = "tottime") -> str:
    """The ``top`` functions of a stats file, by ``sort`` (pstats' names: tottime, cumulative)."""
    out = io.StringIO()
    stats = pstats.Stats(str(path), stream=out)
    table: dict[tuple[str, int, str], Any] = stats.stats  # type: ignore[attr-defined]
    for key in [k for k in table if k[2] in WAITS]:
        del table[key]
    stats.strip_dirs().sort_stats(sort).print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if not words:
        print("usage: python -m bench.profiled OUT.prof COMMAND [ARGS…]", file=sys.stderr)
        return 2
    out, command = Path(words[0]), words[1:]
    from cli.main import main as cli_main

    profiles = ThreadProfiles()
    profiles.install()
    try:
        return cli_main(command)
    finally:
        profiles.write(out)


if __name__ == "__main__":
    raise SystemExit(main())
