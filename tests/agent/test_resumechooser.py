"""agent.resumechooser: Claude Code 2.1.332's own resume chooser read back, and the option a
session's resume scope presses."""

from __future__ import annotations

import math
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import autopass
from agent.cards import classify_text
from agent.resumechooser import (
    LABELS,
    answer_for,
    choice_of,
    is_chooser,
    parse_age,
    parse_tokens,
    read_offer,
)
from tests.support import paths
from wire.protocol import CardOption

SCREENS = paths.SCREENS / "2.1.332" / "o_resume_chooser"
PROPS = settings(max_examples=200, derandomize=True, database=None, deadline=None)


def _chooser_options() -> tuple[CardOption, ...]:
    card = classify_text((SCREENS / "01_chooser_80x24.screen_plain.txt").read_text()).card
    assert card is not None and card.kind == "resume"
    return card.options


# The program's own formatters (2.1.332: dIt for the age, Do for tokens), written again here.
def program_age(minutes: float) -> str:
    if minutes < 60:
        return f"{math.floor(minutes)}m"
    hours = math.floor(minutes / 60)
    if hours < 24:
        rest = math.floor(minutes % 60)
        return f"{hours}h" if rest == 0 else f"{hours}h {rest}m"
    days, rest = hours // 24, hours % 24
    return f"{days}d" if rest == 0 else f"{days}d {rest}h"


def program_tokens(n: int) -> str:
    """Intl.NumberFormat('en-US', {notation: 'compact', maximumFractionDigits: 1}) in lower
    case, '.0' dropped."""
    for suffix, scale in (("t", 10**12), ("b", 10**9), ("m", 10**6), ("k", 10**3)):
        if n >= scale * 0.99995:
            text = f"{n / scale:.1f}{suffix}"
            return text.replace(".0", "", 1)
    return str(n)


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("45m", 45), ("0m", 0), ("3h", 180), ("3h 12m", 192), ("2d", 2880), ("3d 1h", 4380)],
)
def test_ages_as_the_program_writes_them(text: str, minutes: int) -> None:
    assert parse_age(text) == minutes


@pytest.mark.parametrize("text", ["", "3", "3x", "12m 3h", "3h 2h", "1d 2h 3m", "-3d", "3 d"])
def test_other_ages_are_not_read(text: str) -> None:
    assert parse_age(text) is None


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("950", 950), ("12k", 12_000), ("121.5k", 121_500), ("1.2m", 1_200_000), ("2b", 2 * 10**9)],
)
def test_tokens_as_the_program_writes_them(text: str, tokens: int) -> None:
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["", "k", "1.25k", "12kk", "1,200", "12 k", "1e5"])
def test_other_token_counts_are_not_read(text: str) -> None:
    assert parse_tokens(text) is None


@PROPS
@given(st.floats(min_value=0, max_value=60 * 24 * 400, allow_nan=False))
def test_every_age_the_program_writes_reads_back(minutes: float) -> None:
    got = parse_age(program_age(minutes))
    assert got is not None
    # the program drops what is below its smallest unit shown (minutes, or hours past a day)
    unit = 1 if minutes < 60 * 24 else 60
    assert got <= minutes < got + unit


@PROPS
@given(st.integers(min_value=0, max_value=10**13))
def test_every_token_count_the_program_writes_reads_back(n: int) -> None:
    got = parse_tokens(program_tokens(n))
    assert got is not None
    assert abs(got - n) <= max(n * 0.05, 1)


def test_read_offer() -> None:
    offer = read_offer("This session is 3d old and 121.5k tokens.")
    assert offer is not None
    assert (offer.age, offer.tokens, offer.age_minutes, offer.estimated_tokens) == (
        "3d",
        "121.5k",
        4320,
        121_500,
    )
    # wrapped on a narrow terminal and joined back with other spaces: the same
    assert read_offer("This session is  3d old and\n121.5k tokens.") == offer
    assert read_offer("This session is old") is None
    assert read_offer("Select model") is None
    # a title of another shape keeps the text, without numbers
    odd = read_offer("This session is a while old and many tokens.")
    assert odd is not None and odd.age_minutes is None and odd.estimated_tokens is None


def test_is_chooser_by_title_or_by_its_two_resume_options() -> None:
    assert is_chooser("This session is 45m old and 100k tokens.", [])
    assert is_chooser("Resume?", [LABELS["compact"], LABELS["continue"]])
    assert is_chooser("", ["Resume from summary\n(instant,  recommended)", LABELS["continue"]])
    assert not is_chooser("Resume?", [LABELS["compact"]])
    assert not is_chooser("Select model", ["Default", "Opus"])
    assert choice_of("Don't ask  again") == "never"
    assert choice_of("Yes") is None


def test_the_scope_presses_its_option() -> None:
    options = _chooser_options()
    summary = answer_for("summary", options)
    assert (summary.key, summary.choice) == ("1", "compact")
    full = answer_for("full", options)
    assert (full.key, full.choice) == ("2", "continue")  # never "Don't ask again"
    assert "full" in full.reason


def test_no_scope_and_fresh_leave_it_to_the_person() -> None:
    options = _chooser_options()
    none = answer_for(None, options)
    assert (none.key, none.choice) == (None, None)
    assert "person" in none.reason
    fresh = answer_for("fresh", options)
    assert (fresh.key, fresh.choice) == (None, None)
    assert "new conversation" in fresh.reason and "person" in fresh.reason
    odd = answer_for("sometimes", options)  # type: ignore[arg-type]
    assert odd.key is None and "unknown" in odd.reason


def test_options_are_found_by_label_not_by_position() -> None:
    moved = [
        CardOption(key="7", label=LABELS["never"]),
        CardOption(key="8", label=LABELS["continue"]),
        CardOption(key="9", label=LABELS["compact"]),
    ]
    assert answer_for("summary", moved).key == "9"
    assert answer_for("full", moved).key == "8"
    missing = answer_for("full", [CardOption(key="1", label=LABELS["compact"])])
    assert missing.key is None and "person" in missing.reason


@PROPS
@given(st.text(max_size=300))
def test_any_title_reads_without_raising(title: str) -> None:
    offer = read_offer(title)
    if offer is not None:
        assert len(offer.age) <= 24 and len(offer.tokens) <= 24
        assert offer.age_minutes is None or offer.age_minutes >= 0
        assert offer.estimated_tokens is None or offer.estimated_tokens >= 0


# -- answered by the session's scope, never blindly (agent/autopass.py) -------------------------


@pytest.mark.parametrize("screen", sorted(p.name for p in SCREENS.glob("0[1368]_*_plain.txt")))
def test_the_chooser_is_answered_only_by_a_scope_somebody_set(screen: str) -> None:
    card = classify_text((SCREENS / screen).read_text()).card
    assert card is not None and card.kind == "resume"
    decide = partial(autopass.decide, card, since_model_change=None, model_switch_window=30)
    # No scope set (a revive of a session nobody chose for): the person's card, never Enter.
    assert decide(starting=True) is None
    summary = decide(starting=True, resume_scope="summary")
    assert summary is not None and (summary.key, summary.choice) == ("1", "compact")
    assert "Resume from summary" in summary.line and summary.kind == "resume"
    full = decide(starting=True, resume_scope="full")
    assert full is not None and (full.key, full.choice) == ("2", "continue")
    assert decide(starting=True, resume_scope="fresh") is None  # a fresh start never asks
    assert decide(starting=False, resume_scope="full") is None  # not while starting: the person's
