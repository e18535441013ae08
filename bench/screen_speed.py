"""Screen speed: what the agent spends to read one 120×40 Claude Code screen.

Every captured ANSI screen (tests/fixtures/screens/*/*.screen_ansi.txt, as ``tmux capture-pane
-e -p`` prints them, 80×24) is placed into a 120×40 capture the way the agent's panes are sized:
16 blank rows above it (the prompt box stays at the bottom, as on a full terminal) and every row
padded with spaces to 120 columns (a worst case: tmux itself trims trailing blanks). One
"classification" is what the agent's screen loop does per read: ``agent.screen.render`` of the
capture at 120×40, then ``agent.cards.read_screen`` of the result.

Timed one call at a time, cycling through all screens, ``--iterations`` calls per path (default
2,000, i.e. 25 per screen) after one untimed warm-up pass. The figures are the CPU time of the
calling thread (``time.thread_time_ns``), so what other processes do on the machine does not
count (garbage-collection pauses do); the wall-clock p99 of the same calls is printed beside.

* the normal path — ``render`` takes its SGR-only quick path for every captured screen;
* the pyte path — the fallback ``render`` uses for anything else (cursor moves, tabs, rows wider
  than the screen, …), forced by making the quick path decline (``agent.screen._render_fast``
  patched to return None for the run, restored afterwards); timed again with the cyclic garbage
  collector off, to show how much of its tail is GC pauses (pyte allocates a Char per cell).

    .venv/bin/python -m bench.screen_speed [--iterations 2000] [--quick]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO, Row, log, markdown_table, percentile

GOAL_MS = 2.0
WIDTH, HEIGHT = 120, 40
SCREENS = REPO / "tests" / "fixtures" / "screens"
_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_SIZE = re.compile(r"_(\d+)x(\d+)\.screen_ansi\.txt$")


@dataclass
class Captured:
    name: str
    capture: str  # placed into 120×40
    original: str
    width: int
    height: int


def placed(text: str, width: int = WIDTH, height: int = HEIGHT) -> str:
    """A capture put into a larger pane: blank rows above, rows padded with spaces."""
    from agent import screen as screen_mod

    rows = screen_mod._split_rows(text)
    padded = []
    for row in rows:
        cells = screen_mod._cells(_SGR.sub("", row))
        padded.append(row + " " * max(0, width - cells))
    blank = [" " * width] * max(0, height - len(rows))
    return "\n".join(blank + padded)


def load_screens() -> list[Captured]:
    out = []
    for path in sorted(SCREENS.glob("*/*.screen_ansi.txt")):
        text = path.read_text(encoding="utf-8")
        m = _SIZE.search(path.name)
        width, height = (int(m.group(1)), int(m.group(2))) if m else (80, 24)
        name = f"{path.parent.name}/{path.name.split('.')[0]}"
        out.append(Captured(name, placed(text), text, width, height))
    if not out:
        raise RuntimeError(f"no captured screens under {SCREENS}")
    return out


@contextlib.contextmanager
def forced_pyte() -> Iterator[None]:
    from agent import screen as screen_mod

    original = screen_mod._render_fast
    screen_mod._render_fast = lambda rows, width, height: None
    try:
        yield
    finally:
        screen_mod._render_fast = original


@dataclass
class PathResult:
    path: str
    render_ms: list[float] = field(default_factory=list)
    read_ms: list[float] = field(default_factory=list)
    total_ms: list[float] = field(default_factory=list)
    wall_ms: list[float] = field(default_factory=list)  # the same calls by the wall clock
    per_screen: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    seconds: float = 0.0


def time_path(screens: list[Captured], iterations: int, label: str) -> PathResult:
    from agent.cards import read_screen
    from agent.screen import render

    result = PathResult(label)
    for s in screens:  # warm-up: caches, first imports
        read_screen(render(s.capture, WIDTH, HEIGHT))
    clock = time.thread_time_ns  # CPU time of this thread: other processes' load is not counted
    wall = time.perf_counter_ns
    started = time.perf_counter()
    for i in range(iterations):
        s = screens[i % len(screens)]
        w0 = wall()
        t0 = clock()
        screen = render(s.capture, WIDTH, HEIGHT)
        t1 = clock()
        read_screen(screen)
        t2 = clock()
        w1 = wall()
        result.render_ms.append((t1 - t0) / 1e6)
        result.read_ms.append((t2 - t1) / 1e6)
        result.total_ms.append((t2 - t0) / 1e6)
        result.wall_ms.append((w1 - w0) / 1e6)
        result.per_screen[s.name].append((t2 - t0) / 1e6)
    result.seconds = time.perf_counter() - started
    return result


def check_paths(screens: list[Captured]) -> tuple[int, int, list[str]]:
    """(quick path taken, same facts as at the captured size, names that differ)."""
    from agent import screen as screen_mod
    from agent.cards import read_screen
    from agent.screen import render

    fast = 0
    differ = []
    for s in screens:
        rows = screen_mod._split_rows(s.capture)
        if screen_mod._render_fast(rows, WIDTH, HEIGHT) is not None:
            fast += 1
        big = read_screen(render(s.capture, WIDTH, HEIGHT))
        small = read_screen(render(s.original, s.width, s.height))
        if (
            (big.card is None) != (small.card is None)
            or big.busy != small.busy
            or (
                big.card is not None and small.card is not None and big.card.kind != small.card.kind
            )
        ):
            differ.append(s.name)
    return fast, len(screens) - len(differ), differ


def _line(r: PathResult) -> str:
    def fmt(values: list[float]) -> str:
        return f"{statistics.median(values):.3f} / {percentile(values, 99):.3f}"

    worst = max(r.per_screen.items(), key=lambda kv: statistics.median(kv[1]))
    return (f"| {r.path} | {fmt(r.total_ms)} | {fmt(r.render_ms)} | {fmt(r.read_ms)} | "
            f"{max(r.total_ms):.3f} | {percentile(r.wall_ms, 99):.3f} | "
            f"{worst[0]} ({statistics.median(worst[1]):.3f}) |")  # fmt: skip


def run(quick: bool = False, iterations: int | None = None) -> list[Row]:
    count = iterations or (400 if quick else 2000)
    screens = load_screens()
    fast, same, differ = check_paths(screens)
    log(f"[screen_speed] {len(screens)} screens, {count} timed classifications per path")
    normal = time_path(screens, count, "normal (SGR quick path)")
    with forced_pyte():
        pyte_path = time_path(screens, count, "pyte fallback (forced)")
        gc.collect()
        gc.disable()  # how much of the fallback's tail is the cyclic GC (its Char churn)
        try:
            pyte_nogc = time_path(screens, count, "pyte fallback (forced), GC off")
        finally:
            gc.enable()
    print(f"screen classification at {WIDTH}×{HEIGHT}: {len(screens)} captured screens "
          f"({fast} take the quick path), {count} timed calls per path, one at a time")  # fmt: skip
    print(f"(facts at {WIDTH}×{HEIGHT} equal to the captured size for {same}/{len(screens)} screens"
          + (f"; differ: {', '.join(differ)}" if differ else "") + ")")  # fmt: skip
    print("CPU time per call in ms (median / p99):")
    print("| path | render + read_screen | render | read_screen | max | wall-clock p99 | "
          "slowest screen (median) |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(_line(normal))
    print(_line(pyte_path))
    print(_line(pyte_nogc))
    print(flush=True)
    med, p99 = statistics.median(normal.total_ms), percentile(normal.total_ms, 99)
    pmed, pp99 = statistics.median(pyte_path.total_ms), percentile(pyte_path.total_ms, 99)
    return [
        Row(f"agent: classify one {WIDTH}×{HEIGHT} screen (render + read_screen)",
            f"median {med:.3f} ms, p99 {p99:.3f} ms (CPU time)", f"≤ {GOAL_MS:g} ms",
            p99 <= GOAL_MS),
        Row(f"agent: classify one {WIDTH}×{HEIGHT} screen, pyte fallback forced",
            f"median {pmed:.3f} ms, p99 {pp99:.3f} ms (CPU time)"),
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=None,
                        help="timed classifications per path (2000; --quick: 400)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="400 per path")
    args = parser.parse_args(argv)
    rows = run(args.quick, args.iterations)
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
