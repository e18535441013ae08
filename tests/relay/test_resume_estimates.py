"""relay.resume_estimates: each resume scope's tokens, from the usage of captured transcripts."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.convert import Conversion
from relay.resume_estimates import (
    SUMMARY_TOKENS_GUESS,
    AnswerUsage,
    UsageTrack,
    estimates,
    track_usage,
)
from tests.support.transcripts import CLAUDE_332, converted, lines_of, transcript
from wire.protocol import LineRecord

PROPERTIES = settings(max_examples=200, derandomize=True, database=None, deadline=None)
CHOOSER = CLAUDE_332 / "resume_chooser"
# the chooser's screens, labelled with the others (tests/test_cards.py)
SCREENS = CLAUDE_332.parents[1] / "screens" / "2.1.332" / "o_resume_chooser"


def tracked(*paths: Path) -> UsageTrack:
    return track_usage(UsageTrack(), converted(lines_of(*paths)))


def test_full_is_the_figure_claude_codes_own_resume_chooser_shows() -> None:
    track = tracked(CHOOSER / "life1" / "transcript_before_aging.jsonl")
    full = estimates(track, handoff_tokens=300).full
    assert full == 1200 + 120000 + 300 + 31
    # The chooser drawn by 2.1.332 for these very files: "… 3d old and 121.5k tokens."
    screen = (SCREENS / "03_chooser_120x40.screen_plain.txt").read_text(encoding="utf-8")
    assert f"{full / 1000:.1f}k tokens" in screen
    precompact = json.loads((CHOOSER / "life1" / "precompact.json").read_text(encoding="utf-8"))
    assert precompact["preCompactTokens"] == full


def test_summary_uses_claude_codes_own_figure_after_a_compaction() -> None:
    track = tracked(CLAUDE_332 / "summary_resume" / "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e.jsonl")
    assert track.compacted == 2901  # compact_boundary's postTokens in that capture
    figures = estimates(track, handoff_tokens=300)
    assert figures.full is not None and figures.summary is not None
    assert figures.summary <= figures.full
    assert figures.fixed is not None and figures.fresh == figures.fixed + 300


def test_a_subagents_answers_are_not_the_sessions_context() -> None:
    main = tracked(transcript("m_subagent"))
    with_sub = track_usage(
        main,
        converted(
            lines_of(*sorted(transcript("m_subagent").parent.glob("m_subagent__subagent__*")))
        ),
    )
    assert with_sub == main


def test_without_an_answer_there_is_nothing_to_re_read() -> None:
    figures = estimates(UsageTrack(), handoff_tokens=250)
    assert (figures.full, figures.summary, figures.fresh, figures.fixed) == (None, None, 250, None)


def test_the_track_is_kept_as_json() -> None:
    track = tracked(transcript("ij_clear_compact"))
    assert UsageTrack.from_json(json.loads(json.dumps(track.to_json()))) == track
    for bad in (None, {"first": [1, 2]}, {"first_prompt_tokens": -1}, {"last": [1, 2, 3, True]}):
        with pytest.raises(ValueError):
            UsageTrack.from_json(bad)


@pytest.mark.parametrize(
    "usage",
    [
        None,
        {},
        {"input_tokens": -1},
        {"input_tokens": True},
        {"input_tokens": "9"},
        {"output_tokens": 10**12},
    ],
)
def test_usage_that_is_not_believable_is_left_out(usage: object) -> None:
    assert AnswerUsage.of(usage) is None  # type: ignore[arg-type]


_usage = st.builds(AnswerUsage, *(st.integers(0, 10**6) for _ in range(4))).filter(
    lambda u: u.total > 0
)


@PROPERTIES
@given(
    st.none() | _usage,
    st.integers(0, 10**5),
    st.none() | _usage,
    st.none() | st.integers(0, 10**6),
    st.integers(0, 10**5),
)
def test_summary_never_costs_more_than_full_and_fresh_is_the_fixed_part_and_the_handoff(
    first: AnswerUsage | None,
    prompt: int,
    last: AnswerUsage | None,
    compacted: int | None,
    handoff: int,
) -> None:
    track = UsageTrack(first=first, first_prompt_tokens=prompt, last=last, compacted=compacted)
    figures = estimates(track, handoff)
    if figures.full is None:
        assert figures.summary is None
    else:
        assert figures.summary is not None and figures.summary <= figures.full
        if compacted is None and figures.fixed is not None and figures.full >= figures.fixed:
            assert figures.summary <= figures.fixed + SUMMARY_TOKENS_GUESS
    assert figures.fresh == (figures.fixed or 0) + handoff


def _one_line_at_a_time(
    track: UsageTrack, lines: list[tuple[LineRecord, Conversion]]
) -> UsageTrack:
    for line in lines:
        track = track_usage(track, [line])
    return track


@PROPERTIES
@given(cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6))
def test_a_batch_tracks_what_its_lines_one_by_one_would(cuts: list[int]) -> None:
    lines = converted(
        lines_of(
            CLAUDE_332 / "summary_resume" / "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e.jsonl",
            transcript("m_subagent"),
        )
    )
    bounds = sorted({0, len(lines), *(min(c, len(lines)) for c in cuts)})
    track = UsageTrack()
    for start, end in pairwise(bounds):
        track = track_usage(track, lines[start:end])
    assert track == _one_line_at_a_time(UsageTrack(), lines)
    assert track.compacted == 2901 and track.first is not None
    assert track_usage(track, []) is track  # nothing new: the same track
