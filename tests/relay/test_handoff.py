"""relay.handoff: the first message of a fresh conversation, within its token budget."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.handoff import (
    CUT_MARK,
    EXCHANGE_HEADING,
    FILES_HEADING,
    OPEN_HEADING,
    build_handoff,
    marker_text,
)
from relay.ledger import Constraint, Decision, Ledger, OpenItem, Pin, RelaySide, Source
from relay.ledger_rules import build_ledger
from relay.recent_work import HANDOFF_OPENING, Exchange, Piece, files_touched, last_exchange
from relay.tokens import estimate_tokens
from tests.support.transcripts import stored_events, transcript

PROPERTIES = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def captured() -> tuple[Ledger, tuple[str, ...], Exchange]:
    events = stored_events(
        transcript("f_ask_question"),
        transcript("g_plan_approval"),
        transcript("l_model"),
        transcript("e_write_edit_permission"),
    )
    pins = (Pin("c1", "Never push to main", Source(None, None)),)
    ledger = build_ledger(events, RelaySide(pins=pins))
    return ledger, files_touched(events), last_exchange(events)


def test_a_roomy_budget_carries_everything_verbatim() -> None:
    ledger, files, exchange = captured()
    handoff = build_handoff(ledger, files, exchange, budget=8000)
    assert handoff.fits and handoff.tokens == estimate_tokens(handoff.text) <= 8000
    assert handoff.text.startswith(HANDOFF_OPENING)
    for expected in (
        "- answered (Which colour should the widget be?): Blue",
        "- rejected the plan and said: MAKE_PLAN again",
        "- model: Set model to `Opus 5.5` and saved as your default for new sessions",
        "- Never push to main",
        "/tmp/realclaude/work-e_write_edit_permission_80x24/hello.txt",
        "Person: WRITE_FILE again",
    ):
        assert expected in handoff.text
    # Nothing of the earlier turns but what the ledger and the last exchange hold.
    assert "ASK_ME something" not in handoff.text and "hello with new model" not in handoff.text
    assert handoff.left_out.exchange_pieces == 0 and handoff.marker == marker_text(3)


def test_a_tight_budget_drops_the_oldest_exchange_text_first() -> None:
    ledger, files, exchange = captured()
    roomy = build_handoff(ledger, files, exchange, budget=8000)
    tight = build_handoff(ledger, files, exchange, budget=roomy.tokens - 10)
    assert tight.fits and tight.tokens <= roomy.tokens - 10
    assert tight.left_out.files == 0 and tight.left_out.open_items == 0
    assert "Person: WRITE_FILE again" not in tight.text  # the oldest piece went first
    assert exchange.pieces[-1].text in tight.text  # the newest stayed


def test_decisions_that_do_not_fit_are_kept_whole_and_said_so() -> None:
    ledger, files, exchange = captured()
    handoff = build_handoff(ledger, files, exchange, budget=20)
    assert not handoff.fits and handoff.needed > 20 and handoff.tokens == handoff.needed
    assert all(d.text in handoff.text for d in ledger.decisions)
    assert FILES_HEADING not in handoff.text and EXCHANGE_HEADING not in handoff.text


def test_the_marker_line() -> None:
    assert marker_text(0) == "resumed fresh from 0 decisions"
    assert marker_text(1) == "resumed fresh from 1 decision"
    assert marker_text(12) == "resumed fresh from 12 decisions"


def test_a_budget_below_one_token_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        build_handoff(Ledger(), (), Exchange(), budget=0)


# -- properties ------------------------------------------------------------------------------

_words = st.text(st.characters(blacklist_categories=["Cs"]), min_size=1, max_size=120).filter(
    str.strip
)
_source = st.builds(
    Source, st.none() | st.integers(1, 10**6), st.none() | st.just("2026-12-05T10:00:00Z")
)
_decision = st.builds(
    Decision,
    id=st.uuids().map(str),
    kind=st.sampled_from(["answer", "typed_answer", "plan_approved", "rule", "mode", "odd"]),
    text=_words,
    source=_source,
    context=st.text(max_size=30),
    truncated=st.booleans(),
)
_ledger = st.builds(
    Ledger,
    decisions=st.lists(_decision, max_size=6).map(tuple),
    constraints=st.lists(
        st.builds(Constraint, st.uuids().map(str), _words, _source), max_size=4
    ).map(tuple),
    open_items=st.lists(
        st.builds(OpenItem, st.sampled_from(["task", "card", "held"]), _words, _source), max_size=5
    ).map(tuple),
)
_exchange = st.lists(
    st.builds(Piece, st.sampled_from(["person", "claude"]), _words, _source), max_size=6
).map(lambda pieces: Exchange(tuple(pieces)))
_files = st.lists(_words, max_size=6).map(tuple)


@PROPERTIES
@given(_ledger, _files, _exchange, st.integers(1, 1500))
def test_the_budget_is_kept_and_decisions_and_constraints_never_touched(
    ledger: Ledger, files: tuple[str, ...], exchange: Exchange, budget: int
) -> None:
    handoff = build_handoff(ledger, files, exchange, budget)
    assert build_handoff(ledger, files, exchange, budget) == handoff  # deterministic
    assert handoff.tokens == estimate_tokens(handoff.text)
    assert handoff.fits == (handoff.needed <= budget)
    if handoff.fits:
        assert handoff.tokens <= budget
    else:
        assert handoff.tokens == handoff.needed
        assert OPEN_HEADING not in handoff.text and EXCHANGE_HEADING not in handoff.text
    for decision in ledger.decisions:
        assert decision.text in handoff.text
    for constraint in ledger.constraints:
        assert f"- {constraint.text}" in handoff.text
    assert handoff.decisions == len(ledger.decisions)


@PROPERTIES
@given(_ledger, _files, _exchange, st.integers(1, 1500))
def test_the_oldest_exchange_text_goes_first_then_files_then_open_items(
    ledger: Ledger, files: tuple[str, ...], exchange: Exchange, budget: int
) -> None:
    handoff = build_handoff(ledger, files, exchange, budget)
    left = handoff.left_out
    pieces = exchange.pieces
    if left.files:
        assert left.exchange_pieces == len(pieces)
    if left.open_items:
        assert left.files == len(files)
    kept = pieces[left.exchange_pieces :]
    for index, piece in enumerate(kept):
        if index == 0 and left.exchange_chars:
            assert CUT_MARK + piece.text[left.exchange_chars :] in handoff.text
        else:
            assert piece.text in handoff.text
    for path in files[left.files :]:
        assert f"- {path}" in handoff.text
    # More room never leaves out more.
    roomier = build_handoff(ledger, files, exchange, budget + 100).left_out
    assert roomier.exchange_pieces <= left.exchange_pieces
    assert roomier.files <= left.files and roomier.open_items <= left.open_items
