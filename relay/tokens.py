"""A rough, cautious estimate of how many tokens a text takes — pure, no tokenizer.

The relay has no tokenizer (Anthropic's is not public) and must not call the API to count, so it
estimates, the way Claude Code 2.1.332 does for its own rough counts (``Math.round(text.length /
4)`` in several places of the binary, e.g. when it sizes attachments), but leaning high, because the
estimate is used as a ceiling (the ``fresh`` handoff's ``handoff_max_tokens``):

* an ASCII character is a quarter of a token (English prose and code average about four
  characters a token);
* any other character is a whole token: Hangul, CJK and emoji take one token or more each, so
  counting them at a quarter would under-count Korean text by four times or more;
* a margin of :data:`MARGIN_PERCENT` is added, and the result is rounded up.

So ``estimate_tokens("x" * 400) == 110`` and ``estimate_tokens("가" * 100) == 110``.

It is computed in whole *units* (a quarter of a token) so that it adds up exactly: the units of
two texts joined are the sum of their units, which lets the handoff builder drop pieces without
measuring the whole text again, and its figure always equals :func:`estimate_tokens` of what it
built.

Not checked against real token counts: the captured transcripts were made against the project's
fake API, whose ``usage`` figures are fixed numbers (1200 input, 9000 cache read …) whatever the
text, so they say nothing about the ratio; measuring it needs the real API.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "MARGIN_PERCENT",
    "UNITS_PER_TOKEN",
    "estimate_tokens",
    "max_units",
    "text_units",
    "tokens_of_units",
]

UNITS_PER_TOKEN: Final = 4
ASCII_UNITS: Final = 1  # an ASCII character: a quarter of a token
OTHER_UNITS: Final = UNITS_PER_TOKEN  # any other character: a whole token
MARGIN_PERCENT: Final = 10
_PERCENT: Final = 100


def text_units(text: str) -> int:
    """The size of ``text`` in quarter tokens (additive over concatenation)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars * ASCII_UNITS + (len(text) - ascii_chars) * OTHER_UNITS


def tokens_of_units(units: int) -> int:
    """Tokens for ``units``, with the margin, rounded up."""
    scaled = units * (_PERCENT + MARGIN_PERCENT)
    return -(-scaled // (UNITS_PER_TOKEN * _PERCENT))


def max_units(tokens: int) -> int:
    """The most units whose estimate is at most ``tokens`` (the inverse of tokens_of_units)."""
    return max(0, tokens) * UNITS_PER_TOKEN * _PERCENT // (_PERCENT + MARGIN_PERCENT)


def estimate_tokens(text: str) -> int:
    """The estimated token count of ``text`` (see the module docstring)."""
    return tokens_of_units(text_units(text))
