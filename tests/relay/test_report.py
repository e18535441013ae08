"""relay.report: the usage report's figures from plain rows, per Mac and per project."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.report import (
    SCOPES,
    SEARCH_FOLLOW_SECONDS,
    MemoryRow,
    ResumeRow,
    RetentionRow,
    SearchRow,
    StartRow,
    Window,
    build_report,
)

PROPERTIES = settings(max_examples=150, derandomize=True, database=None, deadline=None)
WINDOW = Window(1000.0, 2000.0)


def test_a_week_of_use() -> None:
    report = build_report(
        WINDOW,
        starts=[
            StartRow(1100, "s1", "mac-a", "cb", resumed=False),
            StartRow(1200, "s1", "mac-a", "cb", resumed=True, scope="fresh"),
            StartRow(1300, "s2", "mac-b", "web", resumed=True, scope="full"),
            StartRow(1400, "s3", "mac-b", "web", resumed=False),
            StartRow(2500, "s9", "mac-b", "web", resumed=False),  # after the window
        ],
        resumes=[
            ResumeRow(
                1201, "s1", "mac-a", "cb", "fresh", reread_tokens=12_000, full_estimate=120_000
            ),
            ResumeRow(
                1301, "s2", "mac-b", "web", "full", reread_tokens=90_000, full_estimate=88_000
            ),
            ResumeRow(1302, "s2", "mac-b", "web", "full", reread_tokens=10_000, full_estimate=None),
        ],
        searches=[
            SearchRow(1500, "q1", opened_at=1500 + SEARCH_FOLLOW_SECONDS),
            SearchRow(1600, "q2", opened_at=1600 + SEARCH_FOLLOW_SECONDS + 1),
            SearchRow(1700, "q3", opened_at=None),
            SearchRow(1800, "q4", opened_at=1799),  # opened before it ran: not its result
        ],
        memory=[
            MemoryRow(1100, "m1", "cb", "proposed"),
            MemoryRow(1101, "m2", "cb", "proposed"),
            MemoryRow(1200, "m1", "cb", "edited"),
            MemoryRow(1300, "m2", "cb", "dismissed"),
        ],
        retention=[
            RetentionRow(1900, due=10, done=7),
            RetentionRow(1950, due=2, done=2, project="cb"),
        ],
    ).to_json()
    totals = report["totals"]
    assert totals["sessions"] == {
        "started": 2,
        "resumed": {"full": 1, "summary": 0, "fresh": 1},
        "resume_rate": 0.5,
    }
    assert totals["tokens"]["fresh"] == {
        "resumes": 1,
        "reread": 12_000,
        "reread_mean": 12_000.0,
        "avoided": 108_000,
    }
    assert totals["tokens"]["full"]["avoided"] == -2_000  # no estimate: left out of it
    assert totals["tokens"]["summary"]["reread_mean"] is None
    assert totals["search"] == {"searches": 4, "followed": 1, "success_rate": 0.25}
    assert totals["memory"] == {"proposed": 2, "accepted": 1, "edited": 1, "dismissed": 1}
    assert totals["retention"] == {"due": 12, "done": 9, "done_rate": 0.75}
    assert list(report["by_mac"]) == ["mac-a", "mac-b"]
    assert report["by_mac"]["mac-b"]["sessions"]["started"] == 1
    assert report["by_project"]["cb"]["retention"]["due"] == 2
    assert report["by_project"]["web"]["search"]["searches"] == 0  # searches are account-wide


def test_a_window_must_not_end_before_it_starts() -> None:
    with pytest.raises(ValueError, match="must not end before"):
        Window(2.0, 1.0)


_scope = st.sampled_from(SCOPES)
_mac = st.sampled_from(["mac-a", "mac-b"])
_project = st.sampled_from(["cb", "web"])
_at = st.floats(900, 2100)


@PROPERTIES
@given(
    st.lists(st.builds(StartRow, _at, st.just("s"), _mac, _project, st.booleans(), _scope)),
    st.lists(
        st.builds(
            ResumeRow,
            _at,
            st.just("s"),
            _mac,
            _project,
            _scope,
            st.integers(0, 10**6),
            st.none() | st.integers(0, 10**6),
        )
    ),
    st.lists(st.builds(SearchRow, _at, st.just("q"), st.none() | _at)),
)
def test_the_macs_add_up_to_the_totals_and_rates_are_shares(
    starts: list[StartRow], resumes: list[ResumeRow], searches: list[SearchRow]
) -> None:
    report = build_report(WINDOW, starts, resumes, searches)
    assert build_report(WINDOW, starts, resumes, searches).to_json() == report.to_json()
    totals = report.totals
    for parts in (report.by_mac, report.by_project):
        assert sum(f.started for f in parts.values()) == totals.started
        for scope in SCOPES:
            assert sum(f.resumed[scope] for f in parts.values()) == totals.resumed[scope]
            assert (
                sum(f.reread_tokens[scope] for f in parts.values()) == totals.reread_tokens[scope]
            )
            assert (
                sum(f.avoided_tokens[scope] for f in parts.values()) == totals.avoided_tokens[scope]
            )
    assert totals.started + totals.resumed_total == sum(WINDOW.holds(s.at) for s in starts)
    rates = totals.to_json()
    for rate in (rates["sessions"]["resume_rate"], rates["search"]["success_rate"]):
        assert rate is None or 0 <= rate <= 1
