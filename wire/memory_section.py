"""The product's own section of a project's CLAUDE.md / CLAUDE.local.md — pure text in, text out.

Facts the person accepted on the phone (relay/memory.py proposes them) are written into the
project's ``CLAUDE.local.md`` (personal, the default) or ``CLAUDE.md`` (shared), between two
marker comments that only claude-bridge edits::

    <!-- claude-bridge:memory begin · written from the facts accepted on the phone; edit them there -->
    ## Remembered by claude-bridge
    - Use pnpm, not npm
    <!-- claude-bridge:memory end -->

Rules (tests/wire/test_memory_section.py checks them with Hypothesis):

* **Everything outside the section stays byte for byte**: the text before the begin marker and
  after the end marker is never changed. A file without a section gets one at its end (after a
  blank line; a file not ending in a line break gets one first, the only bytes added outside).
* **Applying twice is a no-op**: ``apply(apply(t, f), f) == apply(t, f)``.
* The section holds exactly the facts given, in order, one ``- `` item each (a fact's further
  lines indented under it); no facts gives an empty section (the markers stay: the person's
  choice to remember nothing is kept, and nothing else moves).
* The file's line ending (``\\r\\n`` when it uses it) is kept for the new lines.
* A file whose markers are broken (an end without a begin, a begin without an end, two sections)
  is refused with :class:`SectionError`, whose message says what to fix: the product never
  guesses which text is its own.
* A fact that is empty, longer than :data:`FACT_MAX_CHARS` or holds a marker is refused
  (:class:`SectionError`): it could not be written back as given.

This module is shared (wire/) because the Mac writes the file (it is on the Mac) and the relay
shows the diff first (:func:`unified_diff`, for the phone).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Final

__all__ = [
    "BEGIN_MARKER",
    "END_MARKER",
    "FACT_MAX_CHARS",
    "MEMORY_FILES",
    "SectionError",
    "apply_section",
    "check_fact",
    "current_facts",
    "unified_diff",
]

MEMORY_FILES: Final = ("CLAUDE.local.md", "CLAUDE.md")  # the first is the default
MARKER_PREFIX: Final = "<!-- claude-bridge:memory"
BEGIN_MARKER: Final = (
    f"{MARKER_PREFIX} begin · written from the facts accepted on the phone; edit them there -->"
)
END_MARKER: Final = f"{MARKER_PREFIX} end -->"
_BEGIN_KEY: Final = f"{MARKER_PREFIX} begin"
_END_KEY: Final = END_MARKER
HEADING: Final = "## Remembered by claude-bridge"
ITEM: Final = "- "
CONTINUATION: Final = "  "
FACT_MAX_CHARS: Final = 1000
CRLF: Final = "\r\n"
LF: Final = "\n"
DIFF_CONTEXT_LINES: Final = 3


class SectionError(ValueError):
    """The file's section cannot be written safely; the message says why and what to do."""


def check_fact(text: str) -> str:
    """``text`` as a fact to write (surrounding whitespace dropped), or SectionError."""
    fact = text.strip()
    if not fact:
        raise SectionError("a fact to remember is empty: write what Claude should remember")
    if len(fact) > FACT_MAX_CHARS:
        raise SectionError(
            f"a fact to remember is {len(fact)} characters, over {FACT_MAX_CHARS}: shorten it"
        )
    if MARKER_PREFIX in fact:
        raise SectionError(
            "a fact to remember holds claude-bridge's section marker: remove the marker text"
        )
    return fact


def _bounds(text: str) -> tuple[int, int] | None:
    """(start of the begin marker, end of the end marker) of the section, None when there is
    none; SectionError when the markers are broken."""
    begins = text.count(_BEGIN_KEY)
    ends = text.count(_END_KEY)
    if begins == 0 and ends == 0:
        return None
    if begins != 1 or ends != 1:
        raise SectionError(
            f"the file has {begins} begin and {ends} end markers of claude-bridge's memory "
            "section (one of each expected): fix or remove them by hand, then accept again"
        )
    start = text.index(_BEGIN_KEY)
    end = text.index(_END_KEY)
    if end < start:
        raise SectionError(
            "the end marker of claude-bridge's memory section comes before its begin marker: "
            "fix or remove them by hand, then accept again"
        )
    return start, end + len(_END_KEY)


def _newline(text: str) -> str:
    return CRLF if CRLF in text else LF


def _section(facts: Sequence[str], newline: str) -> str:
    lines = [BEGIN_MARKER]
    checked = [check_fact(fact) for fact in facts]
    if checked:
        lines.append(HEADING)
    for fact in checked:
        first, *rest = fact.splitlines() or [""]
        lines.append(ITEM + first)
        lines.extend(CONTINUATION + line if line else line for line in rest)
    lines.append(END_MARKER)
    return newline.join(lines)


def apply_section(text: str, facts: Sequence[str]) -> str:
    """``text`` with its claude-bridge section holding ``facts`` (see the module's rules)."""
    newline = _newline(text)
    section = _section(facts, newline)
    bounds = _bounds(text)
    if bounds is not None:
        start, end = bounds
        return text[:start] + section + text[end:]
    if not text:
        return section + newline
    lead = "" if text.endswith(("\n", "\r")) else newline
    return text + lead + newline + section + newline


def current_facts(text: str) -> list[str]:
    """The facts the file's section holds now (empty when it has none)."""
    bounds = _bounds(text)
    if bounds is None:
        return []
    body = text[bounds[0] : bounds[1]].splitlines()[1:-1]
    facts: list[str] = []
    for line in body:
        if line.startswith(ITEM):
            facts.append(line[len(ITEM) :])
        elif facts and (line.startswith(CONTINUATION) or not line):
            facts[-1] += LF + line[len(CONTINUATION) :]
    return facts


def unified_diff(before: str, after: str, name: str) -> str:
    """The change as a unified diff of ``name`` (what the phone shows before the write)."""
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{name}",
            tofile=f"b/{name}",
            n=DIFF_CONTEXT_LINES,
        )
    )
