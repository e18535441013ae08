"""``claude-bridge replay``: push transcript files to a relay as a Mac would, over the link client."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cli.arguments import Subcommands, session_id
from cli.common import fail
from wire.client import MacLink
from wire.errors import LinkRefused
from wire.protocol import DeviceInfo
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


def cmd_replay(args: argparse.Namespace) -> int:
    async def run() -> int:
        link = MacLink(args.relay, args.token, DeviceInfo(name=args.name))
        try:
            await link.connect()
        except (LinkRefused, OSError) as exc:
            fail(
                f"cannot link to {args.relay}: {exc}",
                "check the relay is running and the token is a device token",
            )
        total_started = time.perf_counter()
        try:
            for name in args.files:
                path = Path(name)
                if not path.is_file():
                    fail(f"no such transcript: {path}")
                session = args.session or str(uuid.uuid5(uuid.NAMESPACE_URL, str(path.resolve())))

                def progress(done: int, total: int, path: Path = path) -> None:
                    if not args.quiet:
                        print(
                            f"\r  {path.name}: {done}/{total} lines",
                            end="",
                            file=sys.stderr,
                            flush=True,
                        )

                try:
                    summary = await replay_file(
                        link, path, session, batch_size=args.batch, progress=progress
                    )
                except LinkRefused as exc:
                    fail(f"the relay refused {path}: {exc}", "nothing after that line was sent")
                if not args.quiet:
                    print(file=sys.stderr)
                print(
                    json.dumps(
                        {
                            "session_id": summary.session_id,
                            "conversation_id": summary.conversation_id,
                            "lines": summary.lines,
                            "duplicates": summary.duplicates,
                            "last_seq": summary.last_seq,
                            "seconds": round(summary.seconds, 3),
                        }
                    )
                )
        finally:
            await link.close()
        if not args.quiet:
            print(
                f"Replayed {len(args.files)} file(s) in {time.perf_counter() - total_started:.2f} s.",
                file=sys.stderr,
            )
        return 0

    return asyncio.run(run())


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``replay``."""
    replay = sub.add_parser(
        "replay",
        help="push transcripts to a relay over the link, as a Mac would",
        description="Push transcript files to a relay over the agent link, as a Mac would (one "
        "session per file unless --session), and print a JSON summary per file.",
    )
    replay.add_argument("--relay", required=True, metavar="URL", help="e.g. http://127.0.0.1:8765")
    replay.add_argument("--token", required=True, help="a device token")
    replay.add_argument(
        "--session", type=session_id, help="session id (a UUID) to use (default: one per file)"
    )
    replay.add_argument("--name", default="replay", help="the Mac's name on the relay")
    replay.add_argument("--batch", type=int, default=200, help="lines per batch")
    replay.add_argument("--quiet", action="store_true", help="no progress on stderr")
    replay.add_argument(
        "files", nargs="+", metavar="FILE.jsonl", help="Claude Code transcript files"
    )
    replay.set_defaults(func=cmd_replay)
