"""Planning an ingest batch (relay/store/batch.py): plain inputs, and its invariants under
Hypothesis — numbered with no gap and no repeat after the stored seq, every line sent again
dropped as a duplicate, the order of the lines kept."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay import seq as seqrules
from relay.convert import DEFAULT_LIMITS
from relay.errors import BadRequest
from relay.store.batch import (
    BatchPlan,
    Limits,
    Stored,
    numbered_events,
    plan_batch,
    readable,
    readable_sized,
)
from wire.protocol import (
    MAX_SEQ,
    MAX_TRANSCRIPT_OFFSET,
    DisplayEvent,
    EventKind,
    LineRecord,
    NumberedEvent,
)

LIMITS = Limits(max_line_bytes=10_000, events_kept=1_000, conversion=DEFAULT_LIMITS)
PROPERTIES = settings(max_examples=150, derandomize=True, database=None, deadline=None)


def user_line(offset: int, uuid: str | None = None, text: str | None = None) -> LineRecord:
    body = {"type": "user", "message": {"role": "user", "content": text or f"line {offset}"}}
    if uuid is not None:
        body["uuid"] = uuid
    return LineRecord(offset=offset, text=json.dumps(body), uuid=uuid)


def two_texts(offset: int) -> LineRecord:
    """An assistant line of two text blocks: two events of one line."""
    content = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    body = {"type": "assistant", "message": {"role": "assistant", "content": content}}
    return LineRecord(offset=offset, text=json.dumps(body))


def stored(last_offset: int = -1, uuids: frozenset[str] = frozenset(), last_seq: int = 0) -> Stored:
    return Stored(last_offset, uuids, seqrules.SessionSeq("ep", last_seq, last_seq + 1))


def plan(lines: list[LineRecord], before: Stored | None = None, **limits: int) -> BatchPlan:
    chosen = Limits(
        limits.get("max_line_bytes", LIMITS.max_line_bytes),
        limits.get("events_kept", LIMITS.events_kept),
        DEFAULT_LIMITS,
    )
    return plan_batch("s1", "c1", lines, before or stored(), chosen)


def seqs_and_offsets(result: BatchPlan) -> list[tuple[int, int]]:
    return [(seq, json.loads(data)["offset"]) for seq, data in result.events]


# -- plain inputs ----------------------------------------------------------------------------------


def test_new_lines_are_numbered_after_the_stored_seq_in_their_order() -> None:
    result = plan([user_line(0), two_texts(10), user_line(20)], stored(last_seq=41))
    assert seqs_and_offsets(result) == [(42, 0), (43, 10), (44, 10), (45, 20)]
    assert result.numbering == seqrules.SessionSeq("ep", 45, 42)
    assert result.through == 20 and result.duplicates == 0 and result.dropped == []
    first = json.loads(result.events[0][1])
    assert (first["session_id"], first["conversation_id"], first["epoch"]) == ("s1", "c1", "ep")


def test_lines_at_or_below_the_stored_offset_are_duplicates() -> None:
    result = plan([user_line(5), user_line(9), user_line(12)], stored(last_offset=9, last_seq=3))
    assert seqs_and_offsets(result) == [(4, 12)]
    assert result.duplicates == 2
    assert [(d.offset, d.reason) for d in result.dropped] == [(5, "duplicate"), (9, "duplicate")]


def test_a_line_whose_uuid_is_stored_or_repeated_is_a_duplicate() -> None:
    lines = [user_line(0, "u-old"), user_line(1, "u-new"), user_line(2, "u-new")]
    result = plan(lines, stored(uuids=frozenset({"u-old"})))
    assert seqs_and_offsets(result) == [(1, 1)]
    assert result.new_uuids == ["u-new"] and result.duplicates == 2


def test_an_offset_out_of_order_or_range_is_dropped_and_never_moves_the_mark() -> None:
    lines = [user_line(10), user_line(4), user_line(MAX_TRANSCRIPT_OFFSET), user_line(11)]
    result = plan(lines)
    assert seqs_and_offsets(result) == [(1, 10), (2, 11)]
    assert [(d.offset, d.reason) for d in result.dropped] == [
        (4, "out_of_order"),
        (MAX_TRANSCRIPT_OFFSET, "out_of_range"),
    ]
    assert result.through == 11 and result.duplicates == 0


def test_a_line_too_large_becomes_one_marker_and_is_reported() -> None:
    result = plan([user_line(0, text="x" * 500), user_line(1)], max_line_bytes=200)
    events = [json.loads(data) for _, data in result.events]
    assert [e["kind"] for e in events] == ["marker", "user"]
    assert events[0]["marker"] == "line_too_large"
    assert result.rejected and "offset 0" in result.rejected[0]
    assert [line.offset for line, _ in result.converted] == [1]  # observers see converted lines


def test_the_window_of_kept_events_moves_with_the_numbering() -> None:
    result = plan([user_line(i) for i in range(5)], stored(last_seq=10), events_kept=3)
    assert result.numbering == seqrules.SessionSeq("ep", 15, 13)


def test_a_batch_past_the_last_seq_is_refused_whole() -> None:
    with pytest.raises(BadRequest) as refused:
        plan([user_line(0), user_line(1)], stored(last_seq=MAX_SEQ - 1))
    assert refused.value.code == "seq_exhausted"


def test_an_empty_or_all_duplicate_batch_numbers_nothing() -> None:
    before = stored(last_offset=3, last_seq=7)
    for lines in ([], [user_line(1), user_line(3)]):
        result = plan(lines, before)
        assert result.events == [] and result.numbering == before.numbering
        assert result.through == 3


# -- invariants --------------------------------------------------------------------------------

# A batch: offsets in any order (repeats too), some lines with uuids (shared ones too), some
# with two events; what was stored before: an offset mark, known uuids, a last seq.
line_specs = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=40),  # offset
        st.sampled_from([None, "a", "b", "c", "d"]),  # uuid
        st.booleans(),  # two events
    ),
    max_size=25,
)


def lines_of(specs: list[tuple[int, str | None, bool]]) -> list[LineRecord]:
    out = []
    for offset, uuid, two in specs:
        line = two_texts(offset) if two else user_line(offset)
        out.append(LineRecord(offset=offset, text=line.text, uuid=uuid))
    return out


@PROPERTIES
@given(
    specs=line_specs,
    last_offset=st.integers(min_value=-1, max_value=20),
    known=st.frozensets(st.sampled_from(["a", "b", "c", "d"])),
    last_seq=st.integers(min_value=0, max_value=10_000),
)
def test_a_plan_numbers_without_gap_or_repeat_drops_duplicates_and_keeps_order(
    specs: list[tuple[int, str | None, bool]],
    last_offset: int,
    known: frozenset[str],
    last_seq: int,
) -> None:
    lines = lines_of(specs)
    before = stored(last_offset, known, last_seq)
    result = plan(lines, before)
    seqs = [seq for seq, _ in result.events]
    # No gap, no repeat: exactly the next numbers after the stored seq.
    assert seqs == list(range(last_seq + 1, last_seq + 1 + len(seqs)))
    assert result.numbering.last_seq == last_seq + len(seqs)
    # Duplicates dropped: nothing at or below the mark, no uuid stored before or used twice.
    kept = [line for line, _ in result.converted]
    assert all(line.offset > last_offset for line in kept)
    uuids = [line.uuid for line in kept if line.uuid is not None]
    assert len(uuids) == len(set(uuids)) and not set(uuids) & known
    assert result.new_uuids == uuids
    # Order kept: offsets strictly grow, in the order the lines came, events following them.
    offsets = [line.offset for line in kept]
    assert offsets == sorted(set(offsets))
    assert [json.loads(d)["offset"] for _, d in result.events] == [
        line.offset for line in kept for _ in range(2 if "assistant" in line.text else 1)
    ]
    positions = [lines.index(line) for line in kept]
    assert positions == sorted(positions)
    # Every line is either stored or dropped with a reason; the mark is the highest offset
    # seen (a line copied from another file moves it too: it is stored, as the other's).
    assert len(kept) + len(result.dropped) == len(lines)
    assert result.through == max([last_offset, *(line.offset for line in lines)])


@PROPERTIES
@given(specs=line_specs, last_seq=st.integers(min_value=0, max_value=1_000))
def test_the_same_batch_sent_again_after_it_was_stored_numbers_nothing(
    specs: list[tuple[int, str | None, bool]], last_seq: int
) -> None:
    lines = lines_of(specs)
    first = plan(lines, stored(last_seq=last_seq))
    again = plan(lines, Stored(first.through, frozenset(first.new_uuids), first.numbering))
    assert again.events == [] and again.numbering == first.numbering
    # Every line is at or below the mark the first batch left: a duplicate now.
    assert again.duplicates == len(lines) == len(again.dropped)


# -- the quick paths give what the plain ones give --------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@PROPERTIES
@given(
    text=st.text(),
    tool_input=st.dictionaries(st.text(max_size=8), json_values, max_size=4) | st.none(),
    offset=st.integers(min_value=0, max_value=MAX_TRANSCRIPT_OFFSET - 1),
    seq=st.integers(min_value=1, max_value=MAX_SEQ),
    conversation=st.text(min_size=1, max_size=20),
)
def test_a_numbered_event_is_the_json_of_its_numbered_event_model(
    text: str, tool_input: dict[str, object] | None, offset: int, seq: int, conversation: str
) -> None:
    text = text.encode("utf-8", "replace").decode("utf-8")  # a stored text has no surrogate
    event = DisplayEvent(kind=EventKind.TOOL_USE, text=text, tool="Bash", input=tool_input)
    line = LineRecord(offset=offset, text="{}")
    [(number, data)] = numbered_events("s1", conversation, 'ep"é', [seq], [(line, event)])
    model = NumberedEvent(
        **event.model_dump(), session_id="s1", seq=seq, epoch="ep\"é",
        conversation_id=conversation, offset=offset,
    )  # fmt: skip
    assert number == seq
    assert json.loads(data) == json.loads(model.model_dump_json(exclude_none=True))
    assert NumberedEvent.model_validate_json(data) == model


@PROPERTIES
@given(
    st.text(
        alphabet=st.sampled_from(
            ["a", "é", '"', "\\", "u", "d", "D", "8", "f", "\ud800", "\udfff", "😀"]
        )
    )
)
def test_the_quick_size_and_surrogate_check_matches_the_pattern(text: str) -> None:
    for raw in (
        text,
        json.dumps({"type": "user", "t": text}),
        json.dumps({"t": text}, ensure_ascii=False),
    ):
        line = LineRecord(offset=0, text=raw)
        quick, size = readable_sized(line)
        plain = readable(line)
        assert quick == plain
        assert size == len(plain.text.encode("utf-8", "surrogatepass"))
        plain.text.encode("utf-8")  # nothing left that UTF-8 cannot hold


def test_an_escaped_lone_surrogate_is_repaired_on_the_quick_path_too() -> None:
    line = LineRecord(offset=0, text='{"type":"user","message":{"content":"a\\ud800b"}}')
    repaired, size = readable_sized(line)
    assert "\\ud800" not in repaired.text and "\ufffd" in repaired.text
    assert size == len(repaired.text.encode("utf-8"))
