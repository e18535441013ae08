"""The captured screens of real Claude Code, one labelled set per tested version.

``tests/fixtures/screens/`` itself holds 2.1.328's (the first captured, which most tests cut
their screens from); each later version has its own folder ``tests/fixtures/screens/<version>/``
with the same scenario folders and its own ``labels.tsv``.
"""

from __future__ import annotations

import re
from pathlib import Path

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"
FIRST = "2.1.328"  # the version whose screens sit at the top of SCREENS


def screen_sets() -> dict[str, Path]:
    """Claude Code version → the folder holding its labelled screens."""
    sets = {FIRST: SCREENS}
    for folder in sorted(SCREENS.iterdir()):
        if folder.is_dir() and re.fullmatch(r"\d+\.\d+\.\d+", folder.name):
            sets[folder.name] = folder
    return sets


def screen_name(path: Path) -> str:
    """A screen's name as labels.tsv files and test ids give it: relative to SCREENS, no suffix."""
    rel = path.relative_to(SCREENS).as_posix()
    return re.sub(r"\.screen_(plain|ansi)\.txt$", "", rel)


def labels() -> list[tuple[str, list[str], str]]:
    """Every labelled screen of every version: (name relative to SCREENS, kinds, busy)."""
    rows = []
    for folder in screen_sets().values():
        prefix = folder.relative_to(SCREENS).as_posix()
        for line in (folder / "labels.tsv").read_text(encoding="utf-8").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            name, kinds, busy = line.split("\t")
            rows.append((f"{prefix}/{name}" if prefix != "." else name, kinds.split("|"), busy))
    return rows


def captures(folder: Path, twin: str = "plain") -> list[Path]:
    """The screens of one version's set (scenario folders one level down)."""
    return sorted(folder.glob(f"*/*.screen_{twin}.txt"))
