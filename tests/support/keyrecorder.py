"""A program for a tmux pane that keeps every byte its terminal gives it, as Claude Code's input
would get them: the terminal in raw mode (no line editing, no signals: Ctrl-C is the byte 0x03)
with bracketed paste on, so a paste arrives between ``ESC [ 2 0 0 ~`` and ``ESC [ 2 0 1 ~`` and
anything else is a key.

Usage: ``python keyrecorder.py FILE``: appends what it reads to FILE; shows READY once the mode
is set (tmux reads a pane's output in order, so READY on its screen means the mode took).
"""

from __future__ import annotations

import os
import sys
import tty

READY = "READY"
BRACKETED_PASTE_ON = b"\x1b[?2004h"


def main() -> None:
    out = sys.argv[1]
    tty.setraw(0)
    os.write(1, BRACKETED_PASTE_ON + READY.encode())
    with open(out, "ab", buffering=0) as record:
        while data := os.read(0, 65536):
            record.write(data)


if __name__ == "__main__":
    main()
