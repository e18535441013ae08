"""agent.screen: tmux captures rendered into text lines."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from agent import screen as screen_mod
from agent.screen import Screen, from_plain, render
from tests.support.paths import SCREENS
from tests.support.screens import captures, screen_name, screen_sets
from wire.claude_versions import TESTED_VERSIONS

# every tested Claude Code version's captures (tests/support/screens.py)
ANSI = [p for folder in screen_sets().values() for p in captures(folder, "ansi")]


def _size(path: Path) -> tuple[int, int]:
    m = re.search(r"_(\d+)x(\d+)\.screen_", path.name)
    assert m, path.name
    return int(m.group(1)), int(m.group(2))


def _plain_twin(path: Path) -> Path:
    return path.with_name(path.name.replace(".screen_ansi.txt", ".screen_plain.txt"))


def test_fixtures_are_there() -> None:
    assert len(ANSI) >= 60 * len(TESTED_VERSIONS)
    assert all(_plain_twin(p).exists() for p in ANSI)


def test_every_tested_version_has_its_screens_captured() -> None:
    """A version joins TESTED_VERSIONS only with its 80x24 screens labelled (wire/claude_versions.py);
    screens of other sizes may be added beside them."""
    sets = screen_sets()
    for version in TESTED_VERSIONS:
        assert version in sets, f"no captured screens for Claude Code {version}"
        folder = sets[version]
        assert (folder / "labels.tsv").exists()
        shots = captures(folder, "ansi")
        assert sum(_size(p) == (80, 24) for p in shots) >= 60, version
        assert any(f"Claude Code v{version}" in _plain_twin(p).read_text() for p in shots)


@pytest.mark.parametrize("path", ANSI, ids=screen_name)
def test_render_matches_plain_twin(path: Path) -> None:
    width, height = _size(path)
    got = render(path.read_text(encoding="utf-8"), width, height)
    want = _plain_twin(path).read_text(encoding="utf-8").split("\n")[:height]
    assert (got.width, got.height) == (width, height)
    assert len(got.lines) == height
    assert list(got.lines) == [r.rstrip() for r in want]


@pytest.mark.parametrize("path", ANSI, ids=screen_name)
def test_pyte_path_agrees_with_fast_path(path: Path) -> None:
    width, height = _size(path)
    rows = screen_mod._split_rows(path.read_text(encoding="utf-8"))
    fast = screen_mod._render_fast(rows, width, height)
    assert fast is not None  # plain SGR captures take the quick path
    assert screen_mod._render_pyte(rows, width, height) == fast


def test_highlights_mark_the_current_tab() -> None:
    path = SCREENS / "f_ask_question" / "07_ask2_q2_toggled_1_3_80x24.screen_ansi.txt"
    got = render(path.read_text(encoding="utf-8"), 80, 24)
    tab_row = next(i for i, line in enumerate(got.lines) if "☒ Toppings" in line)
    marked = [got.lines[y][s:e] for y, s, e in got.highlights if y == tab_row]
    assert marked == [" ☒ Toppings "]


def test_rows_start_at_column_zero_without_carriage_returns() -> None:
    got = render("abc\ndef\n", 10, 3)
    assert got.lines == ("abc", "def", "")


def test_trailing_newline_does_not_scroll() -> None:
    capture = "\n".join(f"row {i}" for i in range(5)) + "\n"
    got = render(capture, 20, 5)
    assert got.lines[0] == "row 0"
    assert got.lines[4] == "row 4"


def test_more_rows_than_the_screen_keeps_the_last_ones() -> None:
    capture = "\n".join(f"row {i}" for i in range(8))
    for lines in (
        render(capture, 20, 5).lines,
        tuple(screen_mod._render_pyte(screen_mod._split_rows(capture), 20, 5)[0]),
    ):
        assert lines == ("row 3", "row 4", "row 5", "row 6", "row 7")


def test_escapes_other_than_sgr_go_through_pyte() -> None:
    # cursor addressing, erase line, a tab: a real terminal emulator is needed
    capture = "\x1b[2;3Hhello\x1b[1;1Hxy\tz\x1b[3;1Habcdef\x1b[3;4H\x1b[K"
    got = render(capture, 20, 4)
    assert got.lines == ("xy      z", "  hello", "abc", "")


def test_wide_characters_and_overlong_rows() -> None:
    got = render("日本語 ok\n" + "x" * 12, 10, 3)
    assert got.lines[0] == "日本語 ok"
    assert got.lines[1:] == ("x" * 10, "xx")  # wrapped like a terminal does


def test_zero_width_characters_do_not_eat_the_row() -> None:
    got = render("⏸\ufe0f manual mode on", 30, 1)
    assert got.lines[0] == "⏸ manual mode on"


def test_reverse_video_and_background_are_highlights() -> None:
    got = render(
        "a \x1b[7mcur\x1b[27m b \x1b[48;5;153mtab\x1b[49m c \x1b[38;5;153mfg\x1b[0m", 30, 1
    )
    assert [got.lines[0][s:e] for _, s, e in got.highlights] == ["cur", "tab"]


def test_from_plain() -> None:
    got = from_plain("❯ hi  \n\nend\n")
    assert got.lines == ("❯ hi", "", "end")
    assert (got.width, got.height) == (4, 3)
    bigger = from_plain("x\n", width=100, height=30)
    assert (bigger.width, bigger.height, len(bigger.lines)) == (100, 30, 30)


def test_screen_is_frozen() -> None:
    s = Screen(("a",), 1, 1)
    with pytest.raises(AttributeError):
        s.lines = ("b",)  # type: ignore[misc]


def test_bad_size() -> None:
    with pytest.raises(ValueError):
        render("x", 0, 10)


def _capture_120x40() -> str:
    """A busy 120x40 screen: the streaming capture widened and lengthened, colours kept."""
    src = (SCREENS / "c_busy" / "04_done_80x24.screen_ansi.txt").read_text(encoding="utf-8")
    rows = src.rstrip("\n").split("\n")
    extra = "\x1b[38;5;246m" + " · more text on a wider screen" + "\x1b[39m"
    wide = [r + (extra if r.strip() else "") for r in rows]
    return "\n".join(wide[:12] + wide[2:18] + wide[12:])


def test_speed_120x40(capsys: pytest.CaptureFixture[str]) -> None:
    capture = _capture_120x40()
    rows = screen_mod._split_rows(capture)
    assert len(rows) == 40
    got = render(capture, 120, 40)
    assert any("more text on a wider screen" in line for line in got.lines)
    timings = {}
    for name, fn in (
        ("render", lambda: render(capture, 120, 40)),
        ("pyte path", lambda: screen_mod._render_pyte(rows, 120, 40)),
    ):
        fn()
        n = 50
        start = time.perf_counter()
        for _ in range(n):
            fn()
        timings[name] = (time.perf_counter() - start) / n * 1000
    with capsys.disabled():
        print(
            f"\n[speed] 120x40: render {timings['render']:.3f} ms/screen, "
            f"pyte path {timings['pyte path']:.3f} ms/screen"
        )


def test_hyperlinks_and_titles_are_dropped_on_the_quick_path() -> None:
    capture = (
        "see \x1b]8;;file:///tmp/x.py\x1b\\\x1b[38;5;153mx.py\x1b[39m\x1b]8;;\x1b\\ ok\n"
        "next \x1b]0;title\x07row"
    )
    rows = screen_mod._split_rows(capture)
    fast = screen_mod._render_fast(rows, 20, 2)
    assert fast is not None
    assert fast[0] == ["see x.py ok", "next row"]
    assert screen_mod._render_pyte(rows, 20, 2) == fast
