"""Text from a phone as it may reach a terminal: characters only, never keys.

Everything the bridge types into Claude Code's terminal — messages, held messages, "send now",
answers typed into a question or a permission's amendment, the first prompt of a session or a
fork, ``/model`` — is pasted (bracketed paste, agent/mux.py ``Mux.paste``) after :func:`clean`.
A terminal takes a control character as a key: ESC starts an escape sequence (``ESC [ 2 0 1 ~``
would end the paste early and turn what follows into key presses: ``ESC [ Z`` is Shift+Tab),
Ctrl-C (``0x03``) interrupts, and some terminals read the C1 controls U+0080–U+009F as ESC
sequences too (U+009B is CSI). None of them can be written in a message's meaning, so they are
removed rather than refused: what is left is exactly the visible text.

Kept:
  * every character that is not a control (Unicode category ``Cc``): letters, marks, symbols,
    emoji, spaces of every kind, format characters (ZWJ, bidi marks), private use;
  * the line break ``\\n`` (LF) and the tab ``\\t``.
Changed:
  * a carriage return, alone or before LF (``\\r``, ``\\r\\n``), becomes ``\\n``: a line break
    either way, written the one way Claude Code keeps as a line break in every field (a CR
    outside a bracketed paste would be Enter; inside one, a question's typed answer keeps it).
Removed:
  * every other C0 control U+0000–U+001F (NUL, ESC, Ctrl-C, backspace, bell …), DEL U+007F
    and the C1 controls U+0080–U+009F.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["KEPT_CONTROLS", "clean", "has_text"]

KEPT_CONTROLS: Final = frozenset("\n\t")
_LINE_BREAK: Final = re.compile(r"\r\n?")
# C0 but LF and TAB, DEL, C1: what Unicode calls Cc, less the two kept.
_CONTROLS: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """``text`` with line breaks as LF and every other control but TAB removed (see above)."""
    return _CONTROLS.sub("", _LINE_BREAK.sub("\n", text))


def has_text(text: str) -> bool:
    """Is anything but white space left of ``text`` once cleaned? (Nothing would be typed.)"""
    return bool(clean(text).strip())
