"""relay.tokens: the cautious token estimate (chars/4 for ASCII, a token a character otherwise)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from relay.tokens import estimate_tokens, max_units, text_units, tokens_of_units

PROPERTIES = settings(max_examples=200, derandomize=True, database=None, deadline=None)


def test_examples_of_the_documented_estimate() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("x" * 400) == 110  # 100 tokens and the 10 % margin
    assert estimate_tokens("가" * 100) == 110  # Hangul: a token a character
    assert estimate_tokens("a") == 1  # rounded up
    # Never below Claude Code's own rough count (text length / 4) for any text.
    text = "Which colour should the widget be? 위젯 색은? 🎨"
    assert estimate_tokens(text) >= round(len(text) / 4)


@PROPERTIES
@given(st.text(), st.text())
def test_units_add_up_over_concatenation(a: str, b: str) -> None:
    assert text_units(a + b) == text_units(a) + text_units(b)
    assert estimate_tokens(a + b) >= max(estimate_tokens(a), estimate_tokens(b))


@PROPERTIES
@given(st.integers(0, 10**7))
def test_max_units_is_the_largest_size_within_a_budget(tokens: int) -> None:
    most = max_units(tokens)
    assert tokens_of_units(most) <= tokens < tokens_of_units(most + 1)


@PROPERTIES
@given(st.text())
def test_the_estimate_never_counts_less_than_a_quarter_token_a_character(text: str) -> None:
    assert estimate_tokens(text) * 4 >= len(text)
