"""Claude Code's own resume chooser: what it offers, and which option a session's resume scope
presses. Pure: no I/O, no clock.

Claude Code 2.1.332 may ask this on ``claude --resume`` of an old, large conversation
(tests/fixtures/claude/2.1.332/FINDINGS.md §4; screens in
tests/fixtures/screens/2.1.332/o_resume_chooser/)::

    This session is 3d old and 121.5k tokens.

    Resuming the full session uses a lot of your usage limits. Resuming from a summary uses less.

    ❯ 1. Resume from summary (instant, recommended)
      2. Resume full session as-is
      3. Don't ask again

    Enter to confirm · Esc to cancel

* The age is written ``45m``, ``3h``, ``3h 12m``, ``2d``, ``2d 5h`` (whole units, rounded down;
  the program's ``dIt``), the tokens in en-US compact notation, lower case, ``.0`` dropped
  (``950``, ``12k``, ``121.5k``, ``1.2m``; its ``Do``). :func:`read_offer` reads both back; the
  numbers are what the text says (a lower bound for the age, the rounded estimate for tokens).
* A digit answers at once: no Enter follows it. **Enter answers the option under the cursor,
  which starts on the summary**: an Enter meant for something else (a held message, a blind
  "confirm") would compact the conversation. Esc closes it as "full" and it asks again next time.
  Option 3 writes ``resumeReturnDismissed: true`` into the person's ``~/.claude.json``: no Claude
  Code on this Mac asks again, for any conversation.

:func:`answer_for` says which option a session's resume scope presses:

* ``summary`` → "Resume from summary": Claude Code's own compaction, from the summary it saved;
* ``full`` → "Resume full session as-is" (never "Don't ask again": that changes the person's
  Claude Code settings beyond this session);
* ``fresh`` → none: a fresh start is a new conversation (``--session-id``, no ``--resume``), which
  this chooser never interrupts; one drawn anyway means the start was not the scope's, so the
  person decides;
* no scope → none: the person decides on the phone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from wire.protocol import ResumeScope

__all__ = [
    "LABELS",
    "ChooserChoice",
    "OptionLike",
    "ResumeAnswer",
    "ResumeOffer",
    "ResumeScope",
    "answer_for",
    "choice_of",
    "is_chooser",
    "parse_age",
    "parse_tokens",
    "read_offer",
]

# The chooser's own values for its options (its Esc is "dismiss", which no scope presses).
ChooserChoice = Literal["compact", "continue", "never"]

LABELS: dict[ChooserChoice, str] = {
    "compact": "Resume from summary (instant, recommended)",
    "continue": "Resume full session as-is",
    "never": "Don't ask again",
}
SCOPE_CHOICE: dict[ResumeScope, ChooserChoice | None] = {
    "summary": "compact",
    "full": "continue",
    "fresh": None,
}

MINUTES_PER_HOUR = 60
MINUTES_PER_DAY = 24 * MINUTES_PER_HOUR
UNIT_MINUTES = {"m": 1, "h": MINUTES_PER_HOUR, "d": MINUTES_PER_DAY}
TOKEN_SUFFIXES = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
MAX_FIELD_CHARS = 24  # an age or token count longer than this is not the program's

_TITLE_RE = re.compile(r"^This session is (?P<age>.+?) old and (?P<tokens>\S+) tokens\.$")
_AGE_RE = re.compile(r"^(\d{1,9})([mhd])(?: (\d{1,9})([mhd]))?$")
_TOKENS_RE = re.compile(r"^(\d{1,15})(?:\.(\d))?([kmbt]?)$")


class OptionLike(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def label(self) -> str: ...


@dataclass(frozen=True)
class ResumeOffer:
    """What the chooser's title says: the age and size as drawn, and as numbers (None when the
    text is not in the program's format)."""

    age: str
    tokens: str
    age_minutes: int | None
    estimated_tokens: int | None


@dataclass(frozen=True)
class ResumeAnswer:
    """The option to press for a scope (``key`` None: the person decides), and why."""

    key: str | None
    choice: ChooserChoice | None
    reason: str


def _squash(text: str) -> str:
    return " ".join(text.split())


def parse_age(text: str) -> int | None:
    """``"3d"`` → 4320, ``"3h 12m"`` → 192; None unless it is the program's age format (units
    in falling order, at most two)."""
    match = _AGE_RE.match(text.strip())
    if match is None:
        return None
    first, unit, second, second_unit = match.groups()
    minutes = int(first) * UNIT_MINUTES[unit]
    if second is not None:
        if UNIT_MINUTES[second_unit] >= UNIT_MINUTES[unit]:
            return None
        minutes += int(second) * UNIT_MINUTES[second_unit]
    return minutes


def parse_tokens(text: str) -> int | None:
    """``"121.5k"`` → 121500, ``"950"`` → 950, ``"1.2m"`` → 1200000; None otherwise."""
    match = _TOKENS_RE.match(text.strip().lower())
    if match is None:
        return None
    whole, tenth, suffix = match.groups()
    scale = TOKEN_SUFFIXES[suffix]
    return int(whole) * scale + (int(tenth) * scale // 10 if tenth else 0)


def read_offer(title: str) -> ResumeOffer | None:
    """The chooser's title (``This session is 3d old and 121.5k tokens.``) read back."""
    match = _TITLE_RE.match(_squash(title))
    if match is None:
        return None
    age, tokens = match.group("age"), match.group("tokens")
    if len(age) > MAX_FIELD_CHARS or len(tokens) > MAX_FIELD_CHARS:
        return None
    return ResumeOffer(age, tokens, parse_age(age), parse_tokens(tokens))


def choice_of(label: str) -> ChooserChoice | None:
    """Which of the chooser's options ``label`` is (the label may have been wrapped)."""
    wanted = _squash(label)
    return next((choice for choice, text in LABELS.items() if text == wanted), None)


def is_chooser(title: str, labels: Sequence[str]) -> bool:
    """Is a numbered dialog with this title and these option labels the resume chooser? Its
    title, or its two resume options (should a later version reword the title)."""
    if read_offer(title) is not None:
        return True
    choices = {choice_of(label) for label in labels}
    return {"compact", "continue"} <= choices


def answer_for(scope: ResumeScope | None, options: Sequence[OptionLike]) -> ResumeAnswer:
    """The option of the drawn chooser (``options``, read from the screen) that ``scope``
    presses, found by its label, never by its position."""
    if scope is None:
        return ResumeAnswer(None, None, "no resume scope is set: the person chooses")
    if scope not in SCOPE_CHOICE:
        return ResumeAnswer(None, None, f"unknown resume scope {scope!r}: the person chooses")
    choice = SCOPE_CHOICE[scope]
    if choice is None:
        return ResumeAnswer(
            None,
            None,
            "a fresh start opens a new conversation, which Claude Code's resume chooser never "
            "interrupts: this one was drawn by a start that was not fresh, so the person chooses",
        )
    key = next((o.key for o in options if choice_of(o.label) == choice), None)
    if key is None:
        return ResumeAnswer(
            None,
            None,
            f"the chooser on screen has no {LABELS[choice]!r} option: the person chooses",
        )
    return ResumeAnswer(key, choice, f"the session's resume scope is {scope}")
