"""relay.memory: durable facts proposed from the ledgers of one project's sessions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from relay.ledger import Constraint, Decision, Ledger, Source
from relay.ledger_rules import build_ledger
from relay.memory import (
    Candidate,
    SessionLedger,
    candidate_id,
    new_candidates,
    normalise,
    propose,
)
from tests.support.transcripts import (
    stored_events,
    tool_result_line,
    tool_use_line,
    transcript,
)

PROPERTIES = settings(max_examples=150, derandomize=True, database=None, deadline=None)
PROJECT = "claude-bridge"
REJECTED_SAID = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). To tell you how to proceed, "
    "the user said:\n"
)


def pin(cid: str, text: str, seq: int | None = None) -> Constraint:
    return Constraint(cid, text, Source(seq, None))


def decision(did: str, kind: str, text: str, seq: int, context: str = "") -> Decision:
    return Decision(did, kind, text, Source(seq, None), context)


def session(
    sid: str, *entries: Constraint | Decision, remembered: frozenset[str] = frozenset()
) -> SessionLedger:
    ledger = Ledger(
        decisions=tuple(e for e in entries if isinstance(e, Decision)),
        constraints=tuple(e for e in entries if isinstance(e, Constraint)),
    )
    return SessionLedger(sid, ledger, remembered)


def test_a_constraint_pinned_in_two_sessions_is_proposed_once() -> None:
    found = propose(
        PROJECT,
        [
            session("s1", pin("c1", "Never push to main")),
            session("s2", pin("c7", "never push to main.", seq=40)),
            session("s3", pin("c9", "Only in one session")),
        ],
    )
    assert [(c.text, c.rules) for c in found] == [("never push to main.", ("pinned_twice",))]
    assert [(e.session_id, e.entry_id) for e in found[0].evidence] == [("s1", "c1"), ("s2", "c7")]
    assert found[0].id == candidate_id(PROJECT, "Never push to main")


def test_one_pin_in_one_session_twice_is_not_pinned_in_two_sessions() -> None:
    assert propose(PROJECT, [session("s1", pin("c1", "Use pnpm"), pin("c2", "use pnpm"))]) == []


def test_a_decision_marked_remember_is_proposed_with_its_question() -> None:
    answer = decision("e3.0", "answer", "Blue", 3, context="Which colour should the widget be?")
    found = propose(PROJECT, [session("s1", answer, remembered=frozenset({"e3.0"}))])
    assert [(c.text, c.rules) for c in found] == [
        ("Which colour should the widget be? → Blue", ("remembered",))
    ]


def test_a_correction_given_twice_from_real_rejections() -> None:
    def rejected(words: str) -> SessionLedger:
        events = stored_events(
            tool_use_line("Bash", {"command": "npm install"}, "t1"),
            tool_result_line("t1", REJECTED_SAID + words, is_error=True),
        )
        return SessionLedger(f"s-{words}", build_ledger(events))

    found = propose(PROJECT, [rejected("Use pnpm, not npm."), rejected("use pnpm,  not npm")])
    assert [(c.text, c.rules, len(c.evidence)) for c in found] == [
        ("use pnpm,  not npm", ("corrected_twice",), 2)
    ]


def test_what_is_not_a_correction_or_too_short_never_counts_twice() -> None:
    listed = [decision(f"e{i}.0", "answer", "Use the blue theme", i) for i in (1, 2)]
    short = [decision(f"e{i}.0", "rejected", "no", i) for i in (3, 4)]
    approved = [decision(f"e{i}.0", "plan_approved", "# Plan\n1. x", i) for i in (5, 6)]
    assert propose(PROJECT, [session("s1", *listed, *short, *approved)]) == []


def test_a_captured_answer_is_not_a_correction() -> None:
    ledger = build_ledger(stored_events(transcript("f_ask_question")))
    sessions = [SessionLedger("s1", ledger), SessionLedger("s2", ledger)]
    assert propose(PROJECT, sessions) == []


def test_proposing_twice_is_idempotent_and_a_fate_is_never_proposed_again() -> None:
    sessions = [
        session(
            "s1",
            pin("c1", "Never push to main"),
            decision("e1.0", "typed_answer", "keep it small", 1),
        ),
        session(
            "s2",
            pin("c2", "Never push to main"),
            decision("e9.0", "typed_answer", "keep it small", 9),
        ),
    ]
    first = propose(PROJECT, sessions)
    assert propose(PROJECT, sessions) == first
    assert sorted(c.rules for c in first) == [("corrected_twice",), ("pinned_twice",)]
    assert new_candidates(first, {}) == first
    assert new_candidates(first, {first[0].id: "dismissed"}) == first[1:]
    # The same fact in another project is another candidate.
    assert propose("other", sessions)[0].id != first[0].id


def test_normalising() -> None:
    assert normalise('  "Use pnpm,\n  not npm."  ') == "use pnpm, not npm"
    assert normalise("…") == "…" and normalise("?!") == ""


_texts = st.sampled_from(
    ["Never push to main", "never push to main.", "Use pnpm", "keep it small", "x"]
)
_entry = st.one_of(
    st.builds(pin, st.uuids().map(str), _texts, st.none() | st.integers(1, 100)),
    st.builds(
        decision,
        st.uuids().map(str),
        st.sampled_from(["typed_answer", "plan_rejected", "rejected", "answer", "rule"]),
        _texts,
        st.integers(1, 100),
    ),
)


@st.composite
def _sessions(draw: st.DrawFn) -> list[SessionLedger]:
    sessions = []
    for index in range(draw(st.integers(0, 4))):
        entries = draw(st.lists(_entry, max_size=5))
        ids = [e.id for e in entries if isinstance(e, Decision)]
        marked = frozenset(draw(st.lists(st.sampled_from(ids), max_size=2))) if ids else frozenset()
        sessions.append(session(f"s{index}", *entries, remembered=marked))
    return sessions


@PROPERTIES
@given(_sessions())
def test_every_candidate_is_backed_by_its_rule(sessions: list[SessionLedger]) -> None:
    found = propose(PROJECT, sessions)
    assert propose(PROJECT, sessions) == found
    assert len({c.id for c in found}) == len(found)
    for candidate in found:
        assert isinstance(candidate, Candidate) and candidate.rules
        assert candidate.id == candidate_id(PROJECT, candidate.text)
        where = {(e.session_id, e.entry_id) for e in candidate.evidence}
        if candidate.rules == ("pinned_twice",):
            assert len({sid for sid, _ in where}) >= 2
        if candidate.rules == ("corrected_twice",):
            assert len(where) >= 2
        if "remembered" in candidate.rules:
            assert any(
                entry_id in s.remembered
                for s in sessions
                for sid, entry_id in where
                if sid == s.session_id
            )
