"""wire.memory_section: claude-bridge's own section of CLAUDE.md / CLAUDE.local.md."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wire.memory_section import (
    BEGIN_MARKER,
    END_MARKER,
    FACT_MAX_CHARS,
    MARKER_PREFIX,
    SectionError,
    apply_section,
    current_facts,
    unified_diff,
)

PROPERTIES = settings(max_examples=200, derandomize=True, database=None, deadline=None)
PERSONS_FILE = "# Notes\n\nRun `make test` before pushing.\n"


def test_a_section_is_added_at_the_end_and_replaced_in_place() -> None:
    once = apply_section(PERSONS_FILE, ["Use pnpm, not npm"])
    assert once == (
        PERSONS_FILE
        + "\n"
        + BEGIN_MARKER
        + "\n## Remembered by claude-bridge\n- Use pnpm, not npm\n"
        + END_MARKER
        + "\n"
    )
    edited_by_hand = once.replace("# Notes", "# My notes") + "More of mine.\n"
    twice = apply_section(edited_by_hand, ["Use pnpm, not npm", "Never push to main"])
    assert twice.startswith("# My notes") and twice.endswith(END_MARKER + "\nMore of mine.\n")
    assert current_facts(twice) == ["Use pnpm, not npm", "Never push to main"]


def test_an_empty_file_a_file_without_a_last_line_break_and_crlf() -> None:
    assert apply_section("", ["a"]).startswith(BEGIN_MARKER)
    no_break = apply_section("last line", ["a"])
    assert no_break.startswith("last line\n\n" + BEGIN_MARKER)
    crlf = apply_section("one\r\ntwo\r\n", ["a\nb"])
    assert crlf == (
        "one\r\ntwo\r\n\r\n"
        + BEGIN_MARKER
        + "\r\n## Remembered by claude-bridge\r\n- a\r\n  b\r\n"
        + END_MARKER
        + "\r\n"
    )


def test_no_facts_leave_an_empty_section() -> None:
    with_one = apply_section(PERSONS_FILE, ["a"])
    emptied = apply_section(with_one, [])
    assert emptied == PERSONS_FILE + "\n" + BEGIN_MARKER + "\n" + END_MARKER + "\n"
    assert current_facts(emptied) == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (f"x\n{END_MARKER}\n", "1 end"),
        (f"{BEGIN_MARKER}\nno end\n", "1 begin and 0 end"),
        (f"{END_MARKER}\n{BEGIN_MARKER}\n", "comes before"),
        (f"{BEGIN_MARKER}\n{END_MARKER}\n{BEGIN_MARKER}\n{END_MARKER}\n", "2 begin"),
    ],
)
def test_broken_markers_are_refused_with_what_to_do(text: str, reason: str) -> None:
    with pytest.raises(SectionError, match=reason) as refused:
        apply_section(text, ["a"])
    assert "by hand" in str(refused.value)


@pytest.mark.parametrize(
    "fact", ["", "   ", "x" * (FACT_MAX_CHARS + 1), f"see {MARKER_PREFIX} end -->"]
)
def test_facts_that_cannot_be_written_back_are_refused(fact: str) -> None:
    with pytest.raises(SectionError):
        apply_section(PERSONS_FILE, [fact])


def test_the_diff_the_phone_shows() -> None:
    after = apply_section(PERSONS_FILE, ["Use pnpm, not npm"])
    diff = unified_diff(PERSONS_FILE, after, "CLAUDE.local.md")
    assert diff.startswith("--- a/CLAUDE.local.md\n+++ b/CLAUDE.local.md\n")
    assert "+- Use pnpm, not npm\n" in diff and "\n-" not in diff.split("+++", 1)[1]
    assert unified_diff(after, after, "CLAUDE.local.md") == ""


_outside = st.text(st.characters(blacklist_categories=["Cs"])).filter(
    lambda t: MARKER_PREFIX not in t
)
_fact = (
    st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=80)
    .map(str.strip)
    .filter(lambda t: t and MARKER_PREFIX not in t)
)


@PROPERTIES
@given(_outside, _outside, st.lists(_fact, max_size=4), st.lists(_fact, max_size=4), st.booleans())
def test_text_outside_the_section_never_changes_and_applying_twice_is_a_no_op(
    before: str, after: str, old: list[str], new: list[str], has_section: bool
) -> None:
    text = before + apply_section("", old) + after if has_section else before
    updated = apply_section(text, new)
    assert apply_section(updated, new) == updated
    if has_section:
        assert updated.startswith(before) and updated.endswith(after)
        assert updated[len(before) : len(updated) - len(after)].startswith(BEGIN_MARKER)
    else:
        assert updated.startswith(before)
        added = updated[len(before) :]
        assert added.lstrip("\r\n").startswith(BEGIN_MARKER)
        assert added.endswith(END_MARKER + ("\r\n" if "\r\n" in before else "\n"))
