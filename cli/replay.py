"""``claude-bridge replay``: push transcript files to a relay as a Mac would, over the link client."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wire.client import MacLink
from wire.transcript import read_lines


@dataclass
class ReplaySummary:
    session_id: str
    conversation_id: str
    lines: int
    duplicates: int
    last_seq: int
    seconds: float


async def replay_file(
    link: MacLink,
    path: Path,
    session_id: str,
    *,
    batch_size: int = 200,
    progress: Callable[[int, int], None] | None = None,
) -> ReplaySummary:
    """Push one transcript's complete lines as a Mac would, batch by batch, each acknowledged."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    data = path.read_bytes()
    conversation_id = path.stem
    lines = list(read_lines(data))
    duplicates = 0
    last_seq = 0
    for index in range(0, len(lines), batch_size):
        batch = lines[index : index + batch_size]
        ack = await link.send_lines(session_id, conversation_id, batch, cwd=str(path.parent))
        duplicates += ack.duplicates
        last_seq = ack.last_seq
        if progress is not None:
            progress(min(index + batch_size, len(lines)), len(lines))
    return ReplaySummary(
        session_id, conversation_id, len(lines), duplicates, last_seq, loop.time() - started
    )
