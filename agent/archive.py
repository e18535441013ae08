"""The Mac's archive of numbered events: ``<data>/events/<session id>.jsonl``, one event a line.

The relay keeps only the latest events of a session; the Mac keeps them all, so older history
pages can always be served from here. Each line is a ``NumberedEvent`` exactly as the relay sent
it. Appends are idempotent (an event at or below the last archived seq is skipped), so events
the relay sends again after a reconnect are not written twice.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from pydantic import ValidationError

from wire.protocol import NumberedEvent, SessionPosition

TAIL_BYTES = 64 * 1024


class DiskArchive:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)  # transcripts: private
        self._last: dict[str, int] = {}
        self._epochs: dict[str, str] = {}
        for path in self.folder.glob("*.jsonl"):
            last = _last_event(path)
            if last is not None:
                self._last[path.stem] = last.seq
                self._epochs[path.stem] = last.epoch

    def path(self, session_id: str) -> Path:
        if "/" in session_id or session_id.startswith("."):
            raise ValueError(f"not a session id: {session_id!r}")
        return self.folder / f"{session_id}.jsonl"

    def positions(self) -> list[SessionPosition]:
        return [
            SessionPosition(session_id=sid, last_seq=seq, epoch=self._epochs.get(sid))
            for sid, seq in sorted(self._last.items())
        ]

    def track(self, session_id: str) -> None:
        """Say hello about a session even before it has events (so the relay knows it)."""
        self._last.setdefault(session_id, 0)

    def last_seq(self, session_id: str) -> int:
        return self._last.get(session_id, 0)

    def set_epoch(self, session_id: str, epoch: str) -> None:
        self._epochs[session_id] = epoch

    def add(self, session_id: str, epoch: str, events: list[NumberedEvent]) -> None:
        last = self._last.get(session_id, 0)
        if self._epochs.get(session_id) not in (None, epoch):
            # A new epoch numbers on after the highest seq seen, so appending stays ordered.
            last = min(last, min((e.seq for e in events), default=last + 1) - 1)
        fresh = [e for e in sorted(events, key=lambda e: e.seq) if e.seq > last]
        self._epochs[session_id] = epoch
        if not fresh:
            return
        fd = os.open(self.path(session_id), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with open(fd, "a", encoding="utf-8") as handle:
            for event in fresh:
                handle.write(event.model_dump_json(exclude_none=True))
                handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        self._last[session_id] = fresh[-1].seq

    def read(self, session_id: str, first: int, last: int) -> list[NumberedEvent]:
        path = self.path(session_id)
        if not path.exists() or last < first:
            return []
        found: dict[int, NumberedEvent] = {}
        with path.open("rb") as handle:
            for raw in handle:
                # Cheap pre-filter on the seq before parsing the whole event.
                seq = _seq_of(raw)
                if seq is None or not first <= seq <= last:
                    continue
                with contextlib.suppress(ValidationError, ValueError):
                    found[seq] = NumberedEvent.model_validate_json(raw)
        return [found[s] for s in sorted(found)]

    def delete(self, session_id: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(session_id).unlink()
        self._last.pop(session_id, None)
        self._epochs.pop(session_id, None)


def _seq_of(raw: bytes) -> int | None:
    marker = raw.find(b'"seq":')
    if marker < 0:
        return None
    start = marker + 6
    end = start
    while end < len(raw) and raw[end : end + 1].isdigit():
        end += 1
    return int(raw[start:end]) if end > start else None


def _last_event(path: Path) -> NumberedEvent | None:
    size = path.stat().st_size
    with path.open("rb") as handle:
        handle.seek(max(0, size - TAIL_BYTES))
        tail = handle.read()
    for raw in reversed(tail.splitlines()):
        try:
            return NumberedEvent.model_validate(json.loads(raw))
        except (ValueError, ValidationError):
            continue  # a torn last line after a crash, or the cut start of the tail
    return None
