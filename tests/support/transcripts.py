"""Captured transcripts as the relay stores them, and transcript lines in Claude Code's shapes.

``stored_events`` converts a captured transcript (tests/fixtures/…) line by line with
relay/convert.py and numbers the events from 1, as the store would: the input of the relay's pure
cores (the ledger, snapshots, the handoff). ``tool_use_line`` / ``tool_result_line`` /
``prompt_line`` write lines shaped as Claude Code 2.1.332 writes them (the shapes of
tests/fixtures/transcripts/f_ask_question), for texts the captures do not hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from itertools import count
from pathlib import Path
from typing import Any

from relay.convert import Conversion, convert_line
from wire.markers import bridge_line
from wire.protocol import LineRecord, MarkerKind, NumberedEvent

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRANSCRIPTS = FIXTURES / "transcripts"
CLAUDE_332 = FIXTURES / "claude" / "2.1.332"
SESSION = "s-1"
EPOCH = "e-1"
_clock = count()


def transcript(scenario: str) -> Path:
    """The captured main transcript of a scenario of tests/fixtures/transcripts/ (its first)."""
    found = sorted(
        p for p in TRANSCRIPTS.glob(f"{scenario}__*.jsonl") if "__subagent__" not in p.name
    )
    assert found, f"no captured transcript for {scenario}"
    return found[0]


def lines_of(*paths: Path) -> list[str]:
    return [
        line
        for path in paths
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def converted(lines: Iterable[str]) -> list[tuple[LineRecord, Conversion]]:
    """Lines with their records (offsets in order) and conversions, as an observer gets them."""
    return [
        (LineRecord(offset=offset, text=line), convert_line(line))
        for offset, line in enumerate(lines)
    ]


def number(conversions: Iterable[Conversion], first_seq: int = 1) -> list[NumberedEvent]:
    events = []
    seq = first_seq
    for conversion in conversions:
        for event in conversion.events:
            events.append(
                NumberedEvent(**event.model_dump(), session_id=SESSION, seq=seq, epoch=EPOCH)
            )
            seq += 1
    return events


def stored_events(*sources: Path | str) -> list[NumberedEvent]:
    """The events of captured transcripts (paths) and/or lines (strings), numbered from 1."""
    lines: list[str] = []
    for source in sources:
        lines.extend(lines_of(source) if isinstance(source, Path) else [source])
    return number(convert_line(line) for line in lines)


def _timestamp() -> str:
    return f"2026-12-05T10:00:{next(_clock) % 60:02d}.000Z"


def prompt_line(text: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "message": {"role": "user", "content": text},
            "timestamp": _timestamp(),
            "sessionId": "c-1",
            "permissionMode": "default",
        },
        ensure_ascii=False,
    )


def assistant_line(text: str) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "message": {
                "id": f"msg_{next(_clock)}",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [{"type": "text", "text": text}],
            },
            "timestamp": _timestamp(),
            "sessionId": "c-1",
        },
        ensure_ascii=False,
    )


def tool_use_line(tool: str, tool_input: dict[str, Any], tool_use_id: str) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "message": {
                "id": f"msg_{tool_use_id}",
                "role": "assistant",
                "model": "claude-opus-5-5",
                "content": [
                    {"type": "tool_use", "id": tool_use_id, "name": tool, "input": tool_input}
                ],
            },
            "timestamp": _timestamp(),
            "sessionId": "c-1",
        },
        ensure_ascii=False,
    )


def tool_result_line(tool_use_id: str, text: str, *, is_error: bool = False) -> str:
    block: dict[str, Any] = {"type": "tool_result", "content": text, "tool_use_id": tool_use_id}
    if is_error:
        block["is_error"] = True
    return json.dumps(
        {
            "type": "user",
            "message": {"role": "user", "content": [block]},
            "timestamp": _timestamp(),
            "sessionId": "c-1",
        },
        ensure_ascii=False,
    )


def marker_line(marker: MarkerKind, text: str) -> str:
    """One of the agent's own marker lines (wire/markers.py)."""
    return bridge_line(marker, text, _timestamp(), f"m-{next(_clock)}")
