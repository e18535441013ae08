"""The profiling launcher of the benchmarks (bench/profiled.py): every thread's work is in the
one stats file, and a summary leaves out where idle threads sleep."""

from __future__ import annotations

import threading
from pathlib import Path

from bench.profiled import WAITS, ThreadProfiles, summary


def spin_in_main() -> int:
    return sum(i * i for i in range(20_000))


def spin_in_a_thread() -> int:
    return sum(i * 3 for i in range(20_000))


def test_the_work_of_every_thread_is_in_the_stats(tmp_path: Path) -> None:
    profiles = ThreadProfiles()
    profiles.install()
    try:
        worker = threading.Thread(target=spin_in_a_thread)
        worker.start()
        worker.join()
        idle = threading.Event()
        sleeper = threading.Thread(target=idle.wait, args=(0.05,))
        sleeper.start()
        sleeper.join()
        spin_in_main()
    finally:
        out = tmp_path / "run.prof"
        profiles.write(out)
    text = summary(out, top=200)
    assert "spin_in_a_thread" in text
    assert "spin_in_main" in text
    assert "'acquire' of '_thread.lock'" not in text  # the sleeper's wait is left out
    assert "<method 'acquire' of '_thread.lock' objects>" in WAITS


def test_threads_started_after_writing_are_not_profiled(tmp_path: Path) -> None:
    profiles = ThreadProfiles()
    profiles.install()
    profiles.write(tmp_path / "run.prof")
    seen: list[object] = []
    worker = threading.Thread(target=lambda: seen.append(threading.getprofile()))
    worker.start()
    worker.join()
    assert seen == [None]
    assert profiles.others == []
