"""Workspace speed: what the Mac spends answering the page's files and changes view.

Run against a real git folder (by default a throw-away copy of this repository's tracked files,
committed once, then a few files changed, one staged, one untracked, so status and diff have
something to show): ``list_folder`` of the top folder, ``read_text`` of the largest tracked text
file, ``git_status`` and ``git_diff`` of a changed file (agent/workspace.py, the functions the
agent's ``list_files``, ``read_file``, ``git_status`` and ``git_diff`` commands run). Wall-clock
time per call, ``--iterations`` calls each after one warm-up; the link's round trip comes on top
(see the e2e latency benchmark).

    .venv/bin/python -m bench.workspace_speed [--iterations 30] [--folder PATH] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent import workspace

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}  # fmt: skip


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True)
    return done.stdout.decode()


def make_copy(into: Path) -> tuple[Path, str]:
    """This repository's tracked files in a new repository, with changes; the changed file."""
    files = git(REPO, "ls-files", "-z").split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, into / name)
    git(into, "init", "-q", "-b", "main")
    git(into, "add", ".")
    git(into, "commit", "-q", "-m", "copy")
    changed = "agent/workspace.py"
    path = into / changed
    path.write_text(path.read_text().replace("def ", "def  ", 20))
    (into / "README.md").write_text((into / "README.md").read_text() + "\nstaged\n")
    git(into, "add", "README.md")
    (into / "notes.txt").write_text("untracked\n")
    return into, changed


def time_calls(call: Callable[[], Any], iterations: int) -> list[float]:
    call()
    took = []
    for _ in range(iterations):
        start = time.perf_counter()
        call()
        took.append((time.perf_counter() - start) * 1000)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--folder", type=Path, help="a git folder to read instead of a copy")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    iterations = 5 if args.quick else args.iterations
    limits = workspace.Limits()
    with tempfile.TemporaryDirectory(prefix="cb-bench-ws-") as temp:
        if args.folder:
            root, changed = args.folder.resolve(), ""
        else:
            root, changed = make_copy(Path(temp))
        tracked = [p for p in git(root, "ls-files").splitlines() if (root / p).is_file()]
        largest = max(tracked, key=lambda p: (root / p).stat().st_size)

        def run(coro: Callable[[], Awaitable[Any]]) -> Callable[[], Any]:
            return lambda: asyncio.run(coro())  # type: ignore[arg-type]

        cases: list[tuple[str, Callable[[], Any]]] = [
            ("list_files (top folder)", lambda: workspace.list_folder(root, "", limits)),
            (f"read_file ({largest}, {(root / largest).stat().st_size:,} B)",
             lambda: workspace.read_text(root, largest, limits)),
            ("git_status", run(lambda: workspace.git_status(root, limits))),
        ]  # fmt: skip
        if changed:
            cases.append(
                (f"git_diff ({changed})", run(lambda: workspace.git_diff(root, changed, limits)))
            )
        print(f"folder: {root if args.folder else 'a copy of this repository'} "
              f"({len(tracked):,} tracked files); {iterations} calls each")  # fmt: skip
        print("| call | p50 ms | p95 ms | max ms |")
        print("|---|---|---|---|")
        for name, call in cases:
            took = sorted(time_calls(call, iterations))
            p95 = took[min(len(took) - 1, int(len(took) * 0.95))]
            print(f"| {name} | {statistics.median(took):.1f} | {p95:.1f} | {took[-1]:.1f} |")


if __name__ == "__main__":
    main()
