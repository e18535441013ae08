"""Render a tmux capture into text lines (pure: no I/O, no clock, no global state that grows).

``render`` takes what ``tmux capture-pane -e -p`` prints (rows joined by ``\\n``, SGR colour
escapes) and returns the rows as text, as a terminal of that size shows them.

Two paths give the same result:

* the common case — only SGR escapes, every row fits the width — is handled by a small
  SGR-aware splitter (about 0.2 ms for a full 120x40 screen);
* anything else (cursor moves, OSC, tabs, bare CR, zero-width characters, rows wider than the
  screen, …) is fed into a ``pyte.Screen`` of that size, which emulates a real terminal.

The tests check both paths against each other and against tmux's own plain captures.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

import pyte
from pyte import modes as pyte_modes
from pyte.screens import Char
from wcwidth import wcswidth, wcwidth

__all__ = ["Screen", "from_plain", "render"]

Span = tuple[int, int, int]  # (row, start, end): string indexes into ``lines[row]``


@dataclass(frozen=True)
class Screen:
    """A rendered terminal screen.

    ``lines`` has one entry per row with trailing spaces stripped. ``highlights`` lists the
    stretches drawn on a coloured background or in reverse video, as ``(row, start, end)``
    string indexes into ``lines[row]``; it is empty for plain captures (nothing is known).
    """

    lines: tuple[str, ...]
    width: int
    height: int
    cursor: tuple[int, int] | None = None  # (row, col) when known
    highlights: tuple[Span, ...] = field(default=(), compare=False)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def render(
    capture: str, width: int, height: int, *, cursor: tuple[int, int] | None = None
) -> Screen:
    """Render ``capture-pane -e -p`` output on a ``width`` x ``height`` terminal.

    ``cursor`` (row, col) is passed through when the caller knows it (capture-pane does not
    print it; tmux's ``#{cursor_y}``/``#{cursor_x}`` do).
    """
    if width <= 0 or height <= 0:
        raise ValueError(f"bad screen size {width}x{height}")
    rows = _split_rows(capture)
    fast = _render_fast(rows, width, height)
    if fast is not None:
        lines, spans = fast
    else:
        lines, spans = _render_pyte(rows, width, height)
    return Screen(tuple(lines), width, height, cursor, tuple(spans))


def from_plain(text: str, width: int = 0, height: int = 0) -> Screen:
    """A screen from a plain-text capture (``capture-pane -p``), rows split on ``\\n``.

    The size is the text's own unless a larger ``width``/``height`` is given (then blank rows
    are added at the bottom).
    """
    rows = [r.rstrip() for r in _split_rows(text)]
    widest = max((_cells(r) for r in rows), default=0)
    if len(rows) < height:
        rows.extend([""] * (height - len(rows)))
    return Screen(tuple(rows), max(width, widest), max(height, len(rows)))


# ---------------------------------------------------------------------------
# internals
# ---------------------------------------------------------------------------

_SGR_RE = re.compile(r"\x1b\[([0-9;:]*)m")
# OSC sequences (hyperlinks ``ESC ] 8 ; ; url ST``, titles) draw nothing
_OSC_RE = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# After the SGR escapes are gone, any of these means "not a simple capture": use pyte.
_CONTROL_RE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _split_rows(capture: str) -> list[str]:
    text = capture.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n")


def _cells(text: str) -> int:
    if text.isascii():
        return len(text)
    n = wcswidth(text)
    return n if n >= 0 else len(text)


def _sgr_state(params: str, bg: bool, rev: bool) -> tuple[bool, bool]:
    """Follow the background / reverse-video state through one SGR escape."""
    parts = re.split(r"[;:]", params) if params else ["0"]
    i = 0
    while i < len(parts):
        p = parts[i]
        code = int(p) if p.isdigit() else 0
        if code == 0:
            bg = rev = False
        elif code == 7:
            rev = True
        elif code == 27:
            rev = False
        elif 40 <= code <= 47 or 100 <= code <= 107:
            bg = True
        elif code == 49:
            bg = False
        elif code in (38, 48, 58):
            if code == 48:
                bg = True
            kind = parts[i + 1] if i + 1 < len(parts) else ""
            i += 2 if kind == "5" else 4 if kind == "2" else 0
        i += 1
    return bg, rev


def _render_fast(rows: list[str], width: int, height: int) -> tuple[list[str], list[Span]] | None:
    """Rows of SGR-coloured text that fit the screen; ``None`` when pyte is needed."""
    widths: dict[str, int] = {}  # per call, so nothing global grows
    lines: list[str] = []
    spans: list[Span] = []
    bg = rev = False
    first = max(0, len(rows) - height)  # pyte would scroll the earlier rows away
    for index, row in enumerate(rows):
        y = index - first
        out: list[str] = []
        pos = 0  # string index in the row
        cells = 0
        if "\x1b]" in row:
            row = _OSC_RE.sub("", row)
        for n, piece in enumerate(_SGR_RE.split(row) if "\x1b" in row else (row,)):
            if n % 2:
                bg, rev = _sgr_state(piece, bg, rev)
                continue
            if not piece:
                continue
            if "\x1b" in piece or _CONTROL_RE.search(piece):
                return None
            if piece.isascii():
                cells += len(piece)
            else:
                for ch in piece:
                    w = widths.get(ch)
                    if w is None:
                        w = widths[ch] = wcwidth(ch)
                    if w != 1 and w != 2:
                        return None
                    cells += w
            if cells > width:
                return None
            if (bg or rev) and y >= 0:
                if spans and spans[-1][0] == y and spans[-1][2] == pos:
                    spans[-1] = (y, spans[-1][1], pos + len(piece))
                else:
                    spans.append((y, pos, pos + len(piece)))
            out.append(piece)
            pos += len(piece)
        if y >= 0:
            lines.append("".join(out).rstrip())
    lines.extend([""] * (height - len(lines)))
    return lines, _clip(spans, lines)


def _clip(spans: list[Span], lines: list[str]) -> list[Span]:
    out: list[Span] = []
    for y, start, end in spans:
        end = min(end, len(lines[y]))
        if end > start:
            out.append((y, start, end))
    return out


_new_char = tuple.__new__


class _Screen(pyte.Screen):
    """pyte's screen with a quicker ``draw`` (same result for width-1/2 characters).

    Unlike pyte's own ``draw``, a zero-width character that does not combine (a variation
    selector, a zero-width joiner) is skipped instead of dropping the rest of the text.
    """

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines)
        self._widths: dict[str, int] = {}

    def draw(self, data: str) -> None:
        data = data.translate(self.g1_charset if self.charset else self.g0_charset)
        if pyte_modes.IRM in self.mode:
            super().draw(data)
            return
        cursor = self.cursor
        columns = self.columns
        widths = self._widths
        x = cursor.x
        line = self.buffer[cursor.y]
        rest = tuple(cursor.attrs)[1:]
        for i, ch in enumerate(data):
            w = widths.get(ch)
            if w is None:
                w = widths[ch] = wcwidth(ch)
            if w == 1 and x < columns:
                line[x] = _new_char(Char, (ch, *rest))
                x += 1
            elif w == 2 and x + 1 < columns:
                line[x] = _new_char(Char, (ch, *rest))
                line[x + 1] = _new_char(Char, ("", *rest))
                x += 2
            elif w == 0 and not _combining(ch):
                continue
            else:  # wrap, combining characters, unprintables: pyte's own rules
                cursor.x = x
                self.dirty.add(cursor.y)
                super().draw(data[i:])
                return
        cursor.x = x
        self.dirty.add(cursor.y)


def _combining(ch: str) -> bool:
    return unicodedata.combining(ch) != 0


def _render_pyte(rows: list[str], width: int, height: int) -> tuple[list[str], list[Span]]:
    screen = _Screen(width, height)
    stream = pyte.Stream(screen)
    stream.feed("\r\n".join(rows))
    lines: list[str] = []
    spans: list[Span] = []
    for y in range(height):
        line = screen.buffer[y]
        text: list[str] = []
        pos = 0
        for x in range(max(line, default=-1) + 1):
            cell = line[x]
            data = cell.data
            if data and (cell.bg != "default" or cell.reverse):
                if spans and spans[-1][0] == y and spans[-1][2] == pos:
                    spans[-1] = (y, spans[-1][1], pos + len(data))
                else:
                    spans.append((y, pos, pos + len(data)))
            text.append(data)
            pos += len(data)
        lines.append("".join(text).rstrip())
    return lines, _clip(spans, lines)
