"""Files the agent writes: whole or not at all, and readable by this user only."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a temp file in the same folder, fsync,
    rename), mode 0600 whatever the umask (``mkstemp`` makes it so): a crash leaves the old
    file or the new one, never half of one."""
    write_text(path, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str, mode: int | None = None) -> None:
    """Write ``text`` to ``path`` as :func:`write_json` does: atomically, mode 0600 (or
    ``mode``: a file of the person's that keeps its own, such as a project's CLAUDE.md)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
