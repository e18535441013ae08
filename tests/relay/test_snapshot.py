"""relay.snapshot: when a snapshot is due, and what it keeps (stored as a ``snapshot`` event)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.ledger import Pin, RelaySide, Source
from relay.ledger_rules import build_ledger
from relay.snapshot import SNAPSHOT_VERSION, Snapshot, snapshot_reasons, take_snapshot
from tests.support.transcripts import (
    TRANSCRIPTS,
    converted,
    lines_of,
    number,
    stored_events,
    transcript,
)

PROPERTIES = settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_compaction_and_clear_are_read_from_the_captured_markers() -> None:
    compacted, cleared = (
        stored_events(path)
        for path in sorted(transcript("ij_clear_compact").parent.glob("ij_clear_compact__*"))
    )
    ledger = build_ledger(compacted)
    assert snapshot_reasons(compacted, ledger, 0) == ("compaction",)
    assert snapshot_reasons(cleared, build_ledger(cleared), 0) == ("clear",)
    # An end with nothing in the ledger keeps nothing worth a line; with a pin it does.
    assert ledger.empty
    assert snapshot_reasons(compacted, ledger, 0, session_ended=True) == ("compaction",)
    pinned = build_ledger(
        compacted, relay=RelaySide(pins=(Pin("c1", "Keep it short", Source(None, None)),))
    )
    assert snapshot_reasons(compacted, pinned, 0, session_ended=True) == ("compaction", "end")


def test_a_turn_end_takes_one_only_when_it_carried_a_decision() -> None:
    events = stored_events(transcript("f_ask_question"))
    ledger = build_ledger(events)
    answer_seq = ledger.decisions[0].source.seq
    assert answer_seq is not None
    assert snapshot_reasons(events, ledger, 0, turn_ended=True) == ("decision",)
    assert snapshot_reasons(events, ledger, 0) == ()  # the turn is still going
    # A snapshot already holds that decision: the next turn end takes none.
    assert snapshot_reasons(events[answer_seq:], ledger, answer_seq, turn_ended=True) == ()
    plain = stored_events(transcript("b_idle"))
    assert snapshot_reasons(plain, build_ledger(plain), 0, turn_ended=True) == ()


def test_a_snapshot_keeps_what_aged_out_and_reads_back() -> None:
    first = stored_events(transcript("f_ask_question"), transcript("e_write_edit_permission"))
    relay = RelaySide(pins=(Pin("c1", "Never push to main", Source(None, None)),))
    base = take_snapshot(first, ("decision",), relay)
    assert [d.text for d in base.ledger.decisions] == ["Blue"]
    assert base.files and base.exchange.pieces and base.through_seq == first[-1].seq
    stored = json.loads(json.dumps(base.to_json()))
    assert Snapshot.from_json(stored) == base
    assert base.summary() == "Snapshot at a decision: 1 decision, 1 constraint, 0 open items"

    # Later events, numbered on; the earlier ones have aged out of the window.
    later_lines = lines_of(transcript("l_model"))
    later = number((c for _, c in converted(later_lines)), first_seq=base.through_seq + 1)
    after = take_snapshot(later, ("end",), relay, base=Snapshot.from_json(stored))
    assert [d.kind for d in after.ledger.decisions] == ["answer", "model"]
    assert after.files == base.files  # no file touched since
    assert after.exchange.pieces[0].text == "hello with new model"


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        {"version": SNAPSHOT_VERSION + 1},
        {"version": SNAPSHOT_VERSION, "reasons": ["whim"], "files": [], "through_seq": 0},
        {"version": SNAPSHOT_VERSION, "reasons": [], "files": [1], "through_seq": 0},
        {"version": SNAPSHOT_VERSION, "reasons": [], "files": [], "through_seq": -1},
        {"version": SNAPSHOT_VERSION, "reasons": [], "files": [], "through_seq": 0, "ledger": 3},
    ],
)
def test_what_is_not_a_snapshot_is_refused(data: object) -> None:
    with pytest.raises(ValueError):
        Snapshot.from_json(data)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


_entry = st.fixed_dictionaries(
    {"id": _json, "kind": _json, "text": st.text(max_size=10) | _json},
    optional={
        "source": st.fixed_dictionaries({}, optional={"seq": _json, "at": _json}) | _json,
        "truncated": _json,
        "context": _json,
        "role": st.sampled_from(["person", "claude"]) | _json,
    },
)
_nearly = st.fixed_dictionaries(
    {
        "version": st.just(SNAPSHOT_VERSION),
        "reasons": st.lists(st.sampled_from(["decision", "compaction", "clear", "end"])),
        "files": st.lists(st.text(max_size=10)),
        "through_seq": st.integers(0, 10**6),
        "exchange": st.lists(_entry, max_size=3) | _json,
        "ledger": st.fixed_dictionaries(
            {},
            optional={
                "decisions": st.lists(_entry, max_size=3) | _json,
                "constraints": st.lists(_entry, max_size=3),
                "open_items": st.lists(_entry, max_size=3),
                "through_seq": _json,
                "dropped": _json,
            },
        )
        | _json,
    }
)


@PROPERTIES
@given(_json | _nearly)
def test_reading_any_stored_json_either_gives_a_snapshot_or_refuses_it(data: object) -> None:
    try:
        snapshot = Snapshot.from_json(data)
    except ValueError:
        return
    assert Snapshot.from_json(snapshot.to_json()) == snapshot


def test_every_snapshot_taken_of_a_captured_transcript_reads_back_equal() -> None:
    """The relay keeps the snapshot it just stored as the latest without reading it back
    (relay/features/snapshots.py ``LatestSnapshots.remember``): it must read back equal."""
    paths = sorted(p for p in TRANSCRIPTS.glob("*.jsonl") if "__subagent__" not in p.name)
    assert paths
    relay = RelaySide(pins=(Pin("c1", "Never push to main", Source(None, None)),))
    base = None
    for path in paths:
        events = stored_events(path)
        for reasons in (("decision",), ("compaction", "end")):
            taken = take_snapshot(events, reasons, relay, base)
            assert Snapshot.from_json(json.loads(json.dumps(taken.to_json()))) == taken
        base = taken
