"""The one reader of a transcript's complete lines, shared by the agent and ``claude-bridge replay``.

A transcript is JSON lines that Claude Code appends to. A line is read only once it ends in a
newline, so a line being written is never cut; each line keeps its byte offset (where the relay
resumes and how it drops repeats) and the ``uuid`` of its JSON object when it has one.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from wire.protocol import LineRecord

READ_CHUNK = 1024 * 1024
MAX_LINE_BYTES = 64 * 1024 * 1024  # one line longer than a chunk is read to its newline up to this


def read_lines(data: bytes, start: int = 0) -> Iterator[LineRecord]:
    """Complete lines of ``data`` (ending in a newline) from ``start``, with their byte offsets."""
    offset = start
    while True:
        end = data.find(b"\n", offset)
        if end < 0:
            return  # a partial last line is not read until it is complete
        raw = data[offset:end]
        # A line that is not valid UTF-8 is still sent (text decoded with replacement) so nothing
        # is lost, but gets no uuid: its bytes are not the JSON Claude Code wrote, so a uuid read
        # from the repaired text could name a line that does not exist.
        text = raw.decode("utf-8", errors="replace")
        yield LineRecord(offset=offset, text=text, uuid=_uuid_of(raw))
        offset = end + 1


def read_complete_lines(
    path: Path, start: int, max_bytes: int = READ_CHUNK, max_line: int = MAX_LINE_BYTES
) -> tuple[list[LineRecord], int]:
    """Complete lines of the file from ``start``: the records and the offset after the last one."""
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            data = handle.read(max_bytes)
            # A single line longer than a chunk: keep reading until its newline (bounded).
            while data and b"\n" not in data and len(data) < max_line:
                more = handle.read(max_bytes)
                if not more:
                    break
                data += more
    except FileNotFoundError:
        return [], start
    end = data.rfind(b"\n")
    if end < 0:
        return [], start
    records = [
        LineRecord(offset=start + r.offset, text=r.text, uuid=r.uuid)
        for r in read_lines(data[: end + 1])
    ]
    return records, start + end + 1


def _uuid_of(raw: bytes) -> str | None:
    if b'"uuid"' not in raw:
        return None
    try:
        value = json.loads(raw).get("uuid")  # bad UTF-8 raises here (UnicodeDecodeError)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None
