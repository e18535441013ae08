"""agent/archive.py: the Mac's own copy of each session's numbered events, appended once, kept across
a restart, a torn last line ignored and names that leave its folder refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.archive import DiskArchive
from wire.protocol import EventKind, NumberedEvent


def event(seq: int, epoch: str = "e1") -> NumberedEvent:
    return NumberedEvent(kind=EventKind.USER, text=f"t{seq}", session_id="s1", seq=seq, epoch=epoch)


def test_archive_appends_once_and_survives_a_restart(tmp_path: Path) -> None:
    archive = DiskArchive(tmp_path / "events")
    archive.add("s1", "e1", [event(1), event(2)])
    archive.add("s1", "e1", [event(2), event(3)])  # 2 sent again after a reconnect
    lines = (tmp_path / "events" / "s1.jsonl").read_text().splitlines()
    assert [json.loads(x)["seq"] for x in lines] == [1, 2, 3]
    # Transcripts are private whatever the umask: the folder 0700, its files 0600.
    assert (tmp_path / "events").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "events" / "s1.jsonl").stat().st_mode & 0o777 == 0o600
    again = DiskArchive(tmp_path / "events")
    [pos] = again.positions()
    assert (pos.session_id, pos.last_seq, pos.epoch) == ("s1", 3, "e1")
    assert [e.seq for e in again.read("s1", 2, 9)] == [2, 3]


def test_archive_ignores_a_torn_last_line(tmp_path: Path) -> None:
    archive = DiskArchive(tmp_path)
    archive.add("s1", "e1", [event(1), event(2)])
    with (tmp_path / "s1.jsonl").open("a") as handle:
        handle.write('{"kind": "user", "seq": 3, "ep')  # the crash came mid-write
    assert DiskArchive(tmp_path).last_seq("s1") == 2


def test_archive_refuses_path_tricks(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DiskArchive(tmp_path).path("../../etc/passwd")
