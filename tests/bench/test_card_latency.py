"""The card latency benchmark's checks (bench/card_latency.py): the "screen only" column is
refused when an early card still comes, "as built" when none ever does; both modes' figures go
into one row of `python -m bench`'s table."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench.card_latency import (
    MODES,
    ToggleNotWorking,
    check_mode,
    check_round,
    claude_version,
    rows,
    table,
)

EARLY = {"id": "c1", "answerable": False}
READY = {"id": "c2", "answerable": True}


def test_screen_only_refuses_an_early_card() -> None:
    assert check_round("screen only", [READY]) is False
    with pytest.raises(ToggleNotWorking, match="did not turn the early card off"):
        check_round("screen only", [EARLY, READY])


def test_as_built_counts_early_cards_and_needs_one() -> None:
    assert check_round("as built", [EARLY, READY]) is True
    assert check_round("as built", [READY]) is False  # the dialog beat it this round
    check_mode("as built", 1, 10)
    check_mode("screen only", 0, 10)
    with pytest.raises(ToggleNotWorking, match="no early card in 10 rounds"):
        check_mode("as built", 0, 10)
    with pytest.raises(ToggleNotWorking, match="no card came"):
        check_round("as built", [])


def test_both_columns_are_in_the_table_and_the_row() -> None:
    built = {"hook_first": [3.0, 4.0, 9.0], "drawn_first": [-370.0, -375.0, -380.0],
             "drawn_ready": [25.0, 26.0, 27.0], "hook_drawn": [369.0, 370.0, 371.0]}  # fmt: skip
    screen = {"hook_first": [340.0, 345.0, 350.0], "drawn_first": [29.0, 30.0, 31.0],
              "drawn_ready": [29.0, 30.0, 31.0], "hook_drawn": [300.0, 305.0, 310.0]}  # fmt: skip
    results = dict(zip(MODES, (built, screen), strict=True))
    text = table("real Claude Code 2.1.332", results)
    assert "| hook received → first card on the phone | 4 ms | 345 ms |" in text
    assert "2.1.332" in text
    [row] = rows("real Claude Code 2.1.332", results)
    assert "4 ms, n=3" in row.result and "375 ms before the dialog" in row.result
    assert "screen only) 345 ms" in row.result


def test_the_version_is_read_from_the_binary(tmp_path: Path) -> None:
    fake = tmp_path / "claude"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} -c \"print('2.1.332 (Claude Code)')\"\n")
    fake.chmod(0o700)
    assert claude_version(str(fake)) == "2.1.332"
    assert claude_version(str(tmp_path / "missing")) == "of an unknown version"
