"""wire/claude_versions.py: where a Claude Code version stands against the tested list, and the one
sentence a person reads when it is not a tested one."""

from __future__ import annotations

import pytest

from wire import claude_versions
from wire.claude_versions import (
    TESTED_VERSIONS,
    claude_standing,
    newest_tested,
    parse_version,
    standing,
    version_warning,
)

NEWER = "2.1.340"


def test_standing_against_the_tested_list() -> None:
    newest = newest_tested()
    assert standing(newest) == "tested"
    assert standing(f"{newest} (Claude Code)") == "tested"
    assert standing(NEWER) == "newer"
    assert standing("1.0.0") == "older"
    assert standing("") == "unknown"
    assert all(standing(v) == "tested" for v in TESTED_VERSIONS)
    assert claude_standing({"claude_version": NEWER}) == "newer"
    assert claude_standing({}) is None  # never reported: no band at all
    assert claude_standing({"claude_version": 2}) is None


def test_untested_versions_are_warned_about() -> None:
    assert version_warning("2.1.328 (Claude Code)") is None
    assert "newer than this bridge was tested with" in (version_warning("2.2.0") or "")
    assert "not a version" in (version_warning("2.0.1") or "")
    assert "could not be read" in (version_warning("") or "")


def test_a_version_is_read_from_claudes_own_words() -> None:
    assert parse_version("2.1.332 (Claude Code)") == (2, 1, 332)
    assert parse_version("Claude Code v10.20.3000") == (10, 20, 3000)
    assert parse_version("2.1") is None and parse_version(None) is None


def test_a_version_between_two_tested_ones_is_untested(monkeypatch: pytest.MonkeyPatch) -> None:
    # Numbers compare as numbers, not as text: 2.1.1000 is newer than 2.1.332.
    monkeypatch.setattr(claude_versions, "TESTED_VERSIONS", ("2.1.332", "2.1.328"))
    assert newest_tested() == "2.1.332"
    assert [standing(v) for v in ("2.1.327", "2.1.330", "2.1.332", "2.1.1000")] == [
        "older",
        "untested",
        "tested",
        "newer",
    ]
    assert version_warning("2.1.330") == (
        "Claude Code 2.1.330 is not a version this bridge was tested with (2.1.332, 2.1.328): "
        "cards and states may be read wrong"
    )
