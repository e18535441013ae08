"""Folder sync: what a move spends packing a working folder on one Mac and making it on another.

Makes a git repository of about ``--mb`` MB (default 50): text files (source-like lines, which
compress well) and incompressible files (random bytes: images, archives), committed over several
commits, then some files changed and staged, some changed and not, and some untracked (text and
random), plus a ``node_modules`` that is not ignored and never travels. Then, with
agent/foldersync.py as a move runs it: ``pack`` once with the history in loose objects (as fresh
commits are), then, after ``git gc`` (as a clone's history is), ``pack`` (a full bundle: the target has nothing),
``unpack`` into a new folder, and ``pack`` again for a target that has the repository at the
second-to-last commit (a thin bundle); each timed (wall clock, one run each after the repository
is made; ``--repeat`` for more). Printed: the sizes, the times and the archive bytes, the figures
a move's note quotes (the transfer through the relay comes on top).

    .venv/bin/python -m bench.foldersync [--mb 50] [--repeat 1] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent import foldersync

ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}  # fmt: skip
MB = 1_000_000
WORDS = [
    "def",
    "class",
    "return",
    "import",
    "self",
    "value",
    "items",
    "result",
    "print",
    "for",
    "while",
    "if",
    "else",
    "None",
    "True",
]


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, env=ENV, check=True, capture_output=True)
    return done.stdout.decode()


def text(rng: random.Random, size: int) -> bytes:
    lines = []
    total = 0
    while total < size:
        line = "    " * rng.randint(0, 3) + " ".join(rng.choices(WORDS, k=rng.randint(3, 12)))
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


def make_repository(root: Path, mb: int, seed: int = 7) -> dict[str, int]:
    """A repository of about ``mb`` MB (half text, half random) with history and changes."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("*.log\n")
    budget = mb * MB
    per_commit = budget * 8 // 10 // 5  # 80 % committed over 5 commits
    n = 0
    for commit in range(5):
        written = 0
        while written < per_commit:
            n += 1
            folder = root / f"pkg{n % 12}"
            folder.mkdir(exist_ok=True)
            if n % 2:
                data = text(rng, rng.randint(2_000, 120_000))
                (folder / f"mod{n}.py").write_bytes(data)
            else:
                data = os.urandom(rng.randint(50_000, 900_000))
                (folder / f"asset{n}.bin").write_bytes(data)
            written += len(data)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"commit {commit}")
    tracked = [p for p in git(root, "ls-files").splitlines() if p.endswith(".py")]
    for name in tracked[:40]:  # changed and staged
        (root / name).write_bytes((root / name).read_bytes() + text(rng, 3000))
    git(root, "add", *tracked[:40])
    for name in tracked[40:80]:  # changed, not staged
        (root / name).write_bytes(text(rng, 4000) + (root / name).read_bytes())
    untracked = root / "new work"
    untracked.mkdir()
    left = budget - sum(
        p.stat().st_size for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
    )
    i = 0
    while left > 0:
        i += 1
        data = text(rng, 60_000) if i % 2 else os.urandom(400_000)
        (untracked / f"draft {i}.{'txt' if i % 2 else 'bin'}").write_bytes(data)
        left -= len(data)
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "index.js").write_bytes(text(rng, 2_000_000))
    (root / "debug.log").write_bytes(text(rng, 500_000))
    tree = sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and ".git" not in p.parts)
    history = int(git(root, "count-objects", "-v").split("size-pack: ")[1].split()[0]) * 1024
    loose = int(git(root, "count-objects", "-v").split("size: ")[1].split()[0]) * 1024
    return {"tree bytes": tree, "git objects bytes": history + loose, "untracked files": i}


def timed(coro_factory: object) -> tuple[float, object]:
    start = time.perf_counter()
    result = asyncio.run(coro_factory())  # type: ignore[operator]
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="make everything in this folder and keep it")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="cb-bench-foldersync-"))
    try:
        repo = base / "source" / "project"
        start = time.perf_counter()
        sizes = make_repository(repo, args.mb)
        made = time.perf_counter() - start
        print(
            f"repository made in {made:.1f} s: " + ", ".join(f"{k} {v:,}" for k, v in sizes.items())
        )
        limit = 10 * args.mb * MB
        rows: dict[str, list[float]] = {}
        archive_bytes: dict[str, int] = {}
        # Fresh commits sit in loose objects: the bundle compresses and deltas them all.
        took, loose = timed(lambda: foldersync.pack(repo, base / "loose.tgz", limit=limit))
        assert isinstance(loose, foldersync.FolderManifest)
        rows["pack (full bundle, history in loose objects)"] = [took]
        archive_bytes["loose"] = loose.bytes
        (base / "loose.tgz").unlink()
        git(repo, "gc", "-q")  # as a clone's or an older repository's history is: packed
        for attempt in range(args.repeat):
            archive = base / f"full-{attempt}.tgz"
            took, manifest = timed(lambda a=archive: foldersync.pack(repo, a, limit=limit))
            assert isinstance(manifest, foldersync.FolderManifest)
            rows.setdefault("pack (full bundle, history packed)", []).append(took)
            archive_bytes["full"] = manifest.bytes
            target = base / f"target-{attempt}" / "project"
            took, _ = timed(lambda t=target, a=archive, m=manifest: foldersync.unpack(a, t, m))
            rows.setdefault("unpack into a new folder", []).append(took)
            same = git(target, "status", "--porcelain") == git(
                repo, "status", "--porcelain"
            ).replace("?? node_modules/\n", "")
            old = base / f"old-{attempt}"
            git(base, "clone", "-q", "--no-local", str(repo), str(old))
            git(old, "remote", "remove", "origin")
            git(old, "reset", "-q", "--hard", "HEAD~1")
            have = asyncio.run(foldersync.have_commits(old))
            thin_archive = base / f"thin-{attempt}.tgz"
            took, thin = timed(
                lambda a=thin_archive, h=have: foldersync.pack(repo, a, limit=limit, have=h)
            )
            assert isinstance(thin, foldersync.FolderManifest)
            rows.setdefault("pack (thin: target one commit behind)", []).append(took)
            archive_bytes["thin"] = thin.bytes
            took, _ = timed(lambda o=old, a=thin_archive, m=thin: foldersync.unpack(a, o, m))
            rows.setdefault("unpack into the older repository", []).append(took)
            if not args.keep:
                for path in (archive, thin_archive):
                    path.unlink()
                shutil.rmtree(target.parent)
                shutil.rmtree(old)
        assert isinstance(manifest, foldersync.FolderManifest)
        print(f"same git status on the target: {same}; files untracked in the archive: "
              f"{manifest.files}; skipped: {', '.join(manifest.skipped)}")  # fmt: skip
        print(f"archive bytes: full {archive_bytes['full']:,} ({archive_bytes['full'] / MB:.1f} MB), "
              f"thin {archive_bytes['thin']:,} ({archive_bytes['thin'] / MB:.1f} MB)")  # fmt: skip
        print("| step | seconds (median) | runs |")
        print("|---|---|---|")
        for name, runs in rows.items():
            print(f"| {name} | {statistics.median(runs):.2f} | {len(runs)} |")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
