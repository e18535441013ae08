"""ANSI helpers: turn tmux ``capture-pane -e`` rows into self-contained rows and edit them.

tmux writes an SGR change only where the attributes change, so a captured row may rely on
colours set on an earlier row. ``normalise`` prefixes every row with the full SGR state it
starts in, so rows can be cut out of one capture and drawn anywhere.
"""

from __future__ import annotations

import re
import unicodedata

SGR = re.compile(r"\x1b\[([0-9;]*)m")
ANY_ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

_FLAG_ON = {
    1: "bold",
    2: "dim",
    3: "italic",
    4: "underline",
    5: "blink",
    7: "reverse",
    8: "hidden",
    9: "strike",
}
_FLAG_OFF = {
    22: ("bold", "dim"),
    23: ("italic",),
    24: ("underline",),
    25: ("blink",),
    27: ("reverse",),
}
_FLAG_OFF.update({28: ("hidden",), 29: ("strike",)})
_FLAG_CODE = {v: k for k, v in _FLAG_ON.items()}


class SgrState:
    """The SGR attributes in force: foreground, background and flags."""

    def __init__(self) -> None:
        self.fg: str | None = None
        self.bg: str | None = None
        self.flags: set[str] = set()

    def apply(self, params: str) -> None:
        codes = [int(p) if p else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.fg, self.bg, self.flags = None, None, set()
            elif c in _FLAG_ON:
                self.flags.add(_FLAG_ON[c])
            elif c in _FLAG_OFF:
                self.flags.difference_update(_FLAG_OFF[c])
            elif c in (38, 48) and i + 1 < len(codes):
                n = 3 if codes[i + 1] == 5 else 5
                value = ";".join(str(x) for x in codes[i : i + n])
                if c == 38:
                    self.fg = value
                else:
                    self.bg = value
                i += n - 1
            elif 30 <= c <= 37 or 90 <= c <= 97:
                self.fg = str(c)
            elif c == 39:
                self.fg = None
            elif 40 <= c <= 47 or 100 <= c <= 107:
                self.bg = str(c)
            elif c == 49:
                self.bg = None
            i += 1

    def prefix(self) -> str:
        """The escape sequence that sets this state from a reset."""
        parts = [str(_FLAG_CODE[f]) for f in sorted(self.flags)]
        if self.fg:
            parts.append(self.fg)
        if self.bg:
            parts.append(self.bg)
        return "".join(f"\x1b[{p}m" for p in parts)


def normalise(rows: list[str]) -> list[str]:
    """Each row prefixed with the SGR state it starts in (empty when that is the default)."""
    state = SgrState()
    out = []
    for row in rows:
        start = state.prefix()
        for m in SGR.finditer(row):
            state.apply(m.group(1))
        out.append(start + row if plain(row) else "")
    return out


def plain(row: str) -> str:
    """The row's text without escape sequences."""
    return ANY_ESC.sub("", row)


def width(text: str) -> int:
    """Terminal columns taken by plain ``text``."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def truncate(row: str, columns: int) -> str:
    """Cut an ANSI row to ``columns`` visible columns, keeping its escape sequences."""
    out, used, i = [], 0, 0
    while i < len(row):
        m = ANY_ESC.match(row, i)
        if m:
            out.append(m.group(0))
            i = m.end()
            continue
        w = width(row[i])
        if used + w > columns:
            break
        out.append(row[i])
        used += w
        i += 1
    return "".join(out)


def wrap(text: str, first: int, rest: int) -> list[str]:
    """Greedy word wrap: the first line holds ``first`` columns, the others ``rest``."""
    lines: list[str] = []
    line = ""
    limit = first
    for word in text.split(" "):
        candidate = f"{line} {word}" if line else word
        if width(candidate) <= limit or not line:
            line = candidate
            while width(line) > limit:  # a word longer than a whole line is cut
                lines.append(line[:limit])
                line = line[limit:]
                limit = rest
        else:
            lines.append(line)
            line = word
            limit = rest
    lines.append(line)
    return lines
