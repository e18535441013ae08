"""The bridge marker-line format: the lines the agent writes for its own markers.

The agent sends them (auto-passed dialogs, revives, allow-all, lines too large) in the conversation
named ``BRIDGE_CONVERSATION``, as transcript-shaped JSON lines, so the relay numbers and stores them
like any other line; relay/convert.py turns each into its marker event.
"""

from __future__ import annotations

import json
from typing import Final

from wire.protocol import MarkerKind

__all__ = [
    "BRIDGE_CONVERSATION",
    "BRIDGE_LINE_TYPE",
    "BRIDGE_MARKERS",
    "SUMMARY_MARKER",
    "bridge_line",
    "fresh_marker",
]

SUMMARY_MARKER: Final = "resumed from a summary (Claude Code's /compact)"


def fresh_marker(decisions: int) -> str:
    """The marker line of a conversation resumed fresh (relay/handoff.py's ``marker_text``)."""
    noun = "decision" if decisions == 1 else "decisions"
    return f"resumed fresh from {decisions} {noun}"


# The line shape the agent writes for its own markers, in the
# conversation named BRIDGE_CONVERSATION, so they are numbered and stored like any other line.
BRIDGE_LINE_TYPE: Final = "bridge-marker"
BRIDGE_CONVERSATION: Final = "bridge"
BRIDGE_MARKERS: Final[frozenset[str]] = frozenset(
    {
        MarkerKind.AUTO_PASSED,
        MarkerKind.REVIVED,
        MarkerKind.INFO,
        MarkerKind.LINE_TOO_LARGE,
        MarkerKind.ALLOW_ALL,
        MarkerKind.GRANT,
        MarkerKind.MOVED,
        MarkerKind.RESUMED,
    }
)


def bridge_line(marker: MarkerKind, text: str, timestamp: str, marker_id: str) -> str:
    """A line the agent sends for ``marker`` (see BRIDGE_LINE_TYPE)."""
    return json.dumps(
        {
            "type": BRIDGE_LINE_TYPE,
            "marker": str(marker),
            "text": text,
            "timestamp": timestamp,
            "uuid": marker_id,
        },
        ensure_ascii=False,
    )
