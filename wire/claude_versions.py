"""The Claude Code versions this bridge was tested with, and where a running version stands.

One declared list: the agent's start-up warning, ``claude-bridge --version``, ``doctor`` and the
phone's version band all read it. A version joins the list only after the end-to-end suite
passed on it and its screens were captured into ``tests/fixtures/screens/``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

TESTED_VERSIONS: tuple[str, ...] = ("2.1.328", "2.1.332")

Standing = Literal["tested", "newer", "older", "untested", "unknown"]

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """``"2.1.332 (Claude Code)"`` → ``(2, 1, 332)``; None when no version is in the text."""
    match = _VERSION.search(text or "")
    if not match:
        return None
    major, minor, patch = (int(part) for part in match.groups())
    return major, minor, patch


def newest_tested() -> str:
    return max(TESTED_VERSIONS, key=lambda v: parse_version(v) or (0, 0, 0))


def standing(version: str | None) -> Standing:
    """Where ``version`` stands against the tested list: ``tested``; ``newer`` than all of it;
    ``older`` than all of it; ``untested`` between tested ones; ``unknown`` if unreadable."""
    parsed = parse_version(version)
    if parsed is None:
        return "unknown"
    tested = sorted(p for p in map(parse_version, TESTED_VERSIONS) if p is not None)
    if parsed in tested:
        return "tested"
    if parsed > tested[-1]:
        return "newer"
    if parsed < tested[0]:
        return "older"
    return "untested"


def claude_standing(info: Mapping[str, Any]) -> Standing | None:
    """A Mac's standing from the device info its agent reported (``DeviceInfo``): what the
    phone's version band shows. None when the Mac reported no version (it never linked)."""
    version = info.get("claude_version")
    return standing(version) if isinstance(version, str) and version else None


def version_warning(version: str | None) -> str | None:
    """One sentence for a person when ``version`` is not a tested one, else None."""
    where = standing(version)
    if where == "tested":
        return None
    tested = ", ".join(TESTED_VERSIONS)
    if where == "unknown":
        return f"the Claude Code version could not be read; this bridge was tested with {tested}"
    shown = ".".join(map(str, parse_version(version) or ()))
    if where == "newer":
        return (
            f"Claude Code {shown} is newer than this bridge was tested with ({tested}): "
            "cards may be missed"
        )
    return (
        f"Claude Code {shown} is not a version this bridge was tested with ({tested}): "
        "cards and states may be read wrong"
    )
