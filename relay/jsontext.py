"""The relay's one JSON encoder: compact, and never NaN or Infinity.

``JSON.parse`` in a browser refuses ``NaN`` / ``Infinity``, so one such value in an account's
stream would blank every page of that account. Python's ``json`` writes them by default; the
relay writes JSON only through :func:`dumps` (and :class:`JSONText` for responses), which raise
``ValueError`` instead, so a non-finite number fails where it is made, not on a phone.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse


def dumps(data: Any, *, ensure_ascii: bool = False) -> str:
    """Compact JSON; ``ValueError`` for a NaN or an infinity anywhere in ``data``."""
    return json.dumps(data, ensure_ascii=ensure_ascii, allow_nan=False, separators=(",", ":"))


class JSONText(JSONResponse):
    """The relay's JSON responses, through :func:`dumps`."""

    def render(self, content: Any) -> bytes:
        return dumps(content).encode("utf-8")
