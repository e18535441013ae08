"""wire/transcript.py: a transcript's complete lines read from a file or bytes, with their offsets
and uuids — partial last lines, long lines, bad UTF-8 and empty lines."""

from __future__ import annotations

import json
from pathlib import Path

from wire.transcript import read_complete_lines, read_lines


def line(n: int) -> bytes:
    return (
        json.dumps({"type": "user", "uuid": f"u{n}", "message": {"content": f"m{n}"}}).encode()
        + b"\n"
    )


def test_only_complete_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(line(1) + line(2) + b'{"type": "user", "uu')
    records, after = read_complete_lines(path, 0)
    assert [r.uuid for r in records] == ["u1", "u2"]
    assert records[1].offset == len(line(1))
    assert after == len(line(1)) + len(line(2))
    with path.open("ab") as handle:
        handle.write(b'id": "u3"}\n')
    more, _ = read_complete_lines(path, after)
    assert [(r.offset, r.uuid) for r in more] == [(after, "u3")]


def test_bad_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"type": "user", "x": "\xff\xfe"}\n')
    records, _ = read_complete_lines(path, 0)
    assert "\ufffd" in records[0].text


def test_a_line_longer_than_a_chunk_is_read_to_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    long = json.dumps({"type": "user", "uuid": "big", "x": "y" * 100}).encode() + b"\n"
    path.write_bytes(long + line(2))
    records, after = read_complete_lines(path, 0, max_bytes=16)
    assert [r.uuid for r in records] == ["big"]  # the chunk that found its newline, nothing more
    assert after == len(long)
    rest, end = read_complete_lines(path, after, max_bytes=16)
    assert [(r.offset, r.uuid) for r in rest] == [(len(long), "u2")]
    assert end == len(long) + len(line(2))


def test_a_line_over_the_bound_without_a_newline_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 64 + b"\n")
    assert read_complete_lines(path, 0, max_bytes=8, max_line=32) == ([], 0)


def test_bad_utf8_gets_no_uuid_in_both_readers(tmp_path: Path) -> None:
    raw = b'{"type": "user", "uuid": "u9", "x": "\xff"}\n'
    path = tmp_path / "t.jsonl"
    path.write_bytes(raw)
    [record] = read_complete_lines(path, 0)[0]
    assert record.uuid is None and "\ufffd" in record.text
    assert list(read_lines(raw)) == [record]


def test_empty_lines_and_a_partial_last_line(tmp_path: Path) -> None:
    data = b"\n" + line(1) + b"\n" + b'{"partial'
    records = list(read_lines(data))
    assert [(r.offset, r.text, r.uuid) for r in records] == [
        (0, "", None),
        (1, line(1).decode().rstrip("\n"), "u1"),
        (1 + len(line(1)), "", None),
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    assert read_complete_lines(path, 0) == (records, 2 + len(line(1)))
    assert list(read_lines(data, start=1)) == records[1:]
    assert read_complete_lines(tmp_path / "missing.jsonl", 5) == ([], 5)
