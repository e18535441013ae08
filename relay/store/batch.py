"""Planning one batch of transcript lines: which are new, in which order, and their seq numbers.

Pure: given the batch and what the session has stored of its conversation (the offset of the
last stored line, which of the batch's line uuids it holds, its numbering), :func:`plan_batch`
says what to store, with no I/O; relay/store/ingest.py reads the inputs and writes the plan in
one transaction. The rules:

* a line at or below the stored offset was sent again after a reconnect: a duplicate, dropped;
* a line whose uuid is stored (or came earlier in this batch) was copied into another
  conversation file: a duplicate, dropped;
* offsets only grow within a conversation: a line that breaks the order is dropped and reported
  (``out_of_order``), never allowed to move the mark (it would hide every later line as
  "already stored"); an offset past ``MAX_TRANSCRIPT_OFFSET`` is dropped (``out_of_range``);
* a line larger than ``max_line_bytes`` becomes one marker event saying so (it stays on the Mac);
* every other line becomes the events its conversion gives, in the order of the lines, numbered
  after the session's ``last_seq`` with no gap and no repeat (relay/seq.py ``number``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from relay import seq as seqrules
from relay.convert import Conversion, ConversionLimits, convert_line
from relay.errors import BadRequest
from wire.protocol import (
    MAX_SEQ,
    MAX_TRANSCRIPT_OFFSET,
    DisplayEvent,
    DroppedLine,
    EventKind,
    LineRecord,
    MarkerKind,
    replace_surrogates,
)


@dataclass(frozen=True)
class Stored:
    """What the session holds that a batch is planned against."""

    last_offset: int  # of the conversation's last stored line; -1 when none is
    known_uuids: frozenset[str]  # those of the batch's line uuids the session has stored
    numbering: seqrules.SessionSeq


@dataclass(frozen=True)
class Limits:
    max_line_bytes: int  # a longer line is stored as a marker saying so
    events_kept: int  # per session; older ones age out as new ones are numbered
    conversion: ConversionLimits


@dataclass
class BatchPlan:
    """What to store of a batch: its events numbered, and what to tell the Mac."""

    numbering: seqrules.SessionSeq  # the session's numbering once the batch is stored
    events: list[tuple[int, str]] = field(default_factory=list)  # (seq, NumberedEvent JSON)
    through: int = -1  # the conversation's stored offset once the batch is stored
    new_uuids: list[str] = field(default_factory=list)  # line uuids to remember
    converted: list[tuple[LineRecord, Conversion]] = field(default_factory=list)
    duplicates: int = 0
    rejected: list[str] = field(default_factory=list)
    dropped: list[DroppedLine] = field(default_factory=list)
    permission_mode: str | None = None  # the newest a line said


def plan_batch(
    session_id: str,
    conversation_id: str,
    lines: Iterable[LineRecord],
    stored: Stored,
    limits: Limits,
) -> BatchPlan:
    """The plan of one batch of a conversation's lines (see the module's rules).

    BadRequest ``seq_exhausted`` when numbering it would pass ``MAX_SEQ``."""
    through = stored.last_offset
    known = set(stored.known_uuids)
    plan = BatchPlan(numbering=stored.numbering, through=through)
    pending: list[tuple[LineRecord, DisplayEvent]] = []
    for line in lines:
        if line.offset >= MAX_TRANSCRIPT_OFFSET:
            plan.dropped.append(DroppedLine(offset=line.offset, reason="out_of_range"))
            continue
        if line.offset <= stored.last_offset:
            plan.duplicates += 1  # sent again after a reconnect: stored already
            plan.dropped.append(DroppedLine(offset=line.offset, reason="duplicate"))
            continue
        if line.offset <= through:
            plan.dropped.append(DroppedLine(offset=line.offset, reason="out_of_order"))
            continue
        through = line.offset
        if line.uuid is not None:
            if line.uuid in known:
                plan.duplicates += 1  # the same line copied into another conversation file
                plan.dropped.append(DroppedLine(offset=line.offset, reason="duplicate"))
                continue
            known.add(line.uuid)
            plan.new_uuids.append(line.uuid)
        line, size = readable_sized(line)
        if size > limits.max_line_bytes:
            plan.rejected.append(
                f"line at offset {line.offset} is {size} bytes (limit {limits.max_line_bytes})"
            )
            pending.append((line, too_large_marker(size, limits.max_line_bytes)))
            continue
        conversion = convert_line(line.text, limits.conversion)
        plan.converted.append((line, conversion))
        if conversion.facts.permission_mode:
            plan.permission_mode = conversion.facts.permission_mode
        pending.extend((line, event) for event in conversion.events)
    plan.through = through
    if stored.numbering.last_seq + len(pending) > MAX_SEQ:
        raise BadRequest(
            f"session {session_id} has used every seq up to {MAX_SEQ}", code="seq_exhausted"
        )
    numbers, plan.numbering = seqrules.number(stored.numbering, len(pending), limits.events_kept)
    plan.events = numbered_events(
        session_id, conversation_id, plan.numbering.epoch, numbers, pending
    )
    return plan


def numbered_events(
    session_id: str,
    conversation_id: str,
    epoch: str,
    numbers: Sequence[int],
    pending: Sequence[tuple[LineRecord, DisplayEvent]],
) -> list[tuple[int, str]]:
    """Each event as the JSON of a NumberedEvent, built directly (this runs for every event):
    the event's own JSON (pydantic's serializer) with the numbering's fields appended, the same
    object ``NumberedEvent(...).model_dump_json(exclude_none=True)`` describes."""
    out: list[tuple[int, str]] = []
    same = json.dumps(
        {"session_id": session_id, "epoch": epoch, "conversation_id": conversation_id},
        ensure_ascii=False,
        separators=(",", ":"),
    )[1:-1]
    for seq, (line, event) in zip(numbers, pending, strict=True):
        own = event.model_dump_json(exclude_none=True)
        out.append((seq, f'{own[:-1]},{same},"seq":{seq},"offset":{line.offset}}}'))
    return out


# A JSON escape of a UTF-16 surrogate, or a lone one itself. Claude Code (JavaScript) writes a
# pair as the character, so an escaped one in a transcript is nearly always lone: rare, checked.
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")


def readable_sized(line: LineRecord) -> tuple[LineRecord, int]:
    """:func:`readable` and the size of its text in UTF-8 bytes, cheaply for the usual line.

    Encoding finds a lone surrogate itself (strict UTF-8 refuses it) and gives the size; an
    escaped one needs a backslash-u-d: only a line holding one is searched with the pattern."""
    try:
        size = len(line.text.encode("utf-8"))
    except UnicodeEncodeError:
        pass  # a lone surrogate: repaired below
    else:
        if "\\ud" not in line.text and "\\uD" not in line.text:
            return line, size
    line = readable(line)
    return line, len(line.text.encode("utf-8", "surrogatepass"))


def readable(line: LineRecord) -> LineRecord:
    """The line with every lone surrogate in it or in its JSON replaced by U+FFFD (else it cannot
    be stored: UTF-8 has no such code point). A line that is not JSON keeps its text otherwise:
    it becomes the unreadable marker."""
    if not _SURROGATE.search(line.text):
        return line
    text = replace_surrogates(line.text)
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return LineRecord(offset=line.offset, text=text, uuid=line.uuid)
    repaired = replace_surrogates(parsed)
    if repaired != parsed:
        text = json.dumps(repaired, ensure_ascii=False, separators=(",", ":"))
    if text == line.text:
        return line
    return LineRecord(offset=line.offset, text=text, uuid=line.uuid)


def too_large_marker(size: int, limit: int) -> DisplayEvent:
    return DisplayEvent(
        kind=EventKind.MARKER,
        marker=MarkerKind.LINE_TOO_LARGE,
        text=f"A transcript line of {size:,} bytes is larger than the relay keeps ({limit:,}); "
        "it stays in the transcript on the Mac.",
    )
