"""Where a session's work stands: the files it touched and its last exchange — pure.

Both are read from the session's stored events (relay/convert.py), given in seq order; no I/O.
Snapshots keep them beside the ledger, the ``fresh`` handoff passes them on.

* **Files touched**: the paths of tool uses that read or change a file (``file_path``,
  ``notebook_path``: Read, Write, Edit, NotebookEdit …; a search's ``path`` is a folder it looked
  in, not a file it touched), each once, ordered by its latest use, oldest first, the newest
  :data:`FILES_KEPT` kept. A subagent's files count: the work is the session's.
* **The last exchange**: the person's last prompt in the session's own conversation (not a
  subagent's) and every text Claude answered after it, in order, each with its source. A prompt
  that is itself a handoff (it starts with :data:`HANDOFF_OPENING`, inside Claude Code's
  ``<pasted_content>`` wrapper or not: :func:`is_handoff`) is left out: its content is
  the ledger, which travels on its own. Only the newest :data:`EXCHANGE_MAX_PIECES` are kept.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from relay.ledger import Source
from wire.protocol import EventKind, NumberedEvent

__all__ = [
    "EXCHANGE_MAX_PIECES",
    "FILES_KEPT",
    "FILE_INPUT_KEYS",
    "HANDOFF_OPENING",
    "Exchange",
    "Piece",
    "files_touched",
    "is_handoff",
    "last_exchange",
]

FILES_KEPT: Final = 50
FILE_INPUT_KEYS: Final = ("file_path", "notebook_path")
EXCHANGE_MAX_PIECES: Final = 50
# The first line of every handoff (relay/handoff.py writes it): how a handoff prompt is known.
HANDOFF_OPENING: Final = "[claude-bridge handoff] This conversation continues earlier work."

# Claude Code 2.1.332 writes a long pasted message wrapped: "\n\n<pasted_content id="3dd1">\n"
# + the text + "\n</pasted_content id="3dd1">\n" (seen with the real binary: a handoff is one).
_PASTED_OPENING: Final = re.compile(r'\s*<pasted_content id="[^"\n]{0,40}">\n')

Role = Literal["person", "claude"]


def is_handoff(text: str) -> bool:
    """Is this prompt a handoff (as typed, or as Claude Code wrapped it as pasted content)?"""
    opened = _PASTED_OPENING.match(text)
    return text[opened.end() if opened else 0 :].lstrip().startswith(HANDOFF_OPENING)


@dataclass(frozen=True, slots=True)
class Piece:
    role: Role
    text: str
    source: Source

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "text": self.text, "source": self.source.to_json()}


@dataclass(frozen=True, slots=True)
class Exchange:
    pieces: tuple[Piece, ...] = ()  # oldest first

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.pieces]

    @classmethod
    def from_json(cls, data: object) -> Exchange:
        """An exchange stored by :meth:`to_json`; ValueError when it is not one."""
        if not isinstance(data, list):
            raise ValueError("the exchange is not a list")
        pieces = []
        for item in data:
            if not isinstance(item, Mapping):
                raise ValueError("an exchange piece is not an object")
            role, text, source = item.get("role"), item.get("text"), item.get("source")
            if role not in ("person", "claude") or not isinstance(text, str):
                raise ValueError("an exchange piece needs a role and a text")
            if not isinstance(source, Mapping):
                raise ValueError("an exchange piece has no source")
            seq, at = source.get("seq"), source.get("at")
            if (seq is not None and (isinstance(seq, bool) or not isinstance(seq, int))) or (
                at is not None and not isinstance(at, str)
            ):
                raise ValueError("an exchange piece's source is not a seq and a time")
            pieces.append(Piece("person" if role == "person" else "claude", text, Source(seq, at)))
        return cls(tuple(pieces))


def files_touched(events: Iterable[NumberedEvent], keep: int = FILES_KEPT) -> tuple[str, ...]:
    """Paths the session's tool uses touched, by latest use, oldest first (the newest ``keep``)."""
    latest: dict[str, int] = {}
    for event in events:
        if event.kind is not EventKind.TOOL_USE or not event.input:
            continue
        for key in FILE_INPUT_KEYS:
            path = event.input.get(key)
            if isinstance(path, str) and path.strip():
                latest.pop(path, None)  # re-inserted: dict order is the order of latest use
                latest[path] = event.seq
    paths = list(latest)
    return tuple(paths[-keep:]) if keep > 0 else ()


def last_exchange(events: Iterable[NumberedEvent]) -> Exchange:
    """The last prompt of the session's own conversation and Claude's texts after it."""
    pieces: deque[Piece] = deque(maxlen=EXCHANGE_MAX_PIECES)
    for event in events:
        if event.agent_id is not None:
            continue
        source = Source(event.seq, event.timestamp)
        if event.kind is EventKind.USER and event.text.strip():
            pieces.clear()
            if not is_handoff(event.text):
                pieces.append(Piece("person", event.text, source))
        elif event.kind is EventKind.ASSISTANT and event.text.strip():
            pieces.append(Piece("claude", event.text, source))
    return Exchange(tuple(pieces))
