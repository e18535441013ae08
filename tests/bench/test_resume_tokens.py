"""bench/resume_tokens.py on a short synthetic session: every decision kept, fresh far below
full, and the captured transcripts read."""

from __future__ import annotations

from bench import resume_tokens


def test_a_long_session_resumes_fresh_for_a_fraction_of_full() -> None:
    lines = resume_tokens.synthetic(60)
    found = resume_tokens.figures("synthetic", lines)
    assert found.handoff.decisions == 60 // resume_tokens.QUESTION_EVERY
    assert found.full is not None and found.ratio is not None and found.ratio < 0.5
    assert found.handoff.fits and found.handoff.tokens <= found.handoff.budget


def test_the_run_gives_three_rows() -> None:
    rows = resume_tokens.run(turns=20, repeat=2)
    assert [r.metric.split(" ")[0] for r in rows] == ["resume", "resume", "handoff"]
    assert rows[-1].met is True
