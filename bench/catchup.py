"""Catch-up: how long a phone takes to read a session's last 10,000 events from the relay.

The relay (its own process) keeps 10,000 events per session (CB_EVENTS_KEPT=10000), a MacLink
pushes exactly 10,000 events (captured transcript lines that make events, so real event sizes),
then two readers are timed:

* paged: GET /api/sessions/{id}/events?after=…&limit=500, one page after another (like the page
  does), each body parsed as JSON, over one keep-alive connection (httpx);
* SSE: one GET /api/sessions/{id}/stream?after=0, read until the frame with seq 10,000 arrives
  (the raw-socket client of the fan-out benchmark).

    .venv/bin/python -m bench.catchup [--events 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field

if __package__ in (None, ""):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

from bench._common import (
    LineSource,
    RelayProcess,
    Row,
    SSEStream,
    install_signal_cleanup,
    log,
    markdown_table,
    open_stream,
)

GOAL_SECONDS = 0.5
PAGE = 500


@dataclass
class CatchupResult:
    events: int
    push_seconds: float
    paged: list[float] = field(default_factory=list)
    sse: list[float] = field(default_factory=list)
    paged_requests: int = 0
    body_bytes: int = 0


async def fill(relay: RelayProcess, events: int, batch: int) -> tuple[str, float, int]:
    from wire.client import MacLink
    from wire.protocol import DeviceInfo

    session_id = str(uuid.uuid4())
    conversation_id = str(uuid.uuid4())
    lines = LineSource("events").take_events(events)
    link = MacLink(relay.url, relay.device_token, DeviceInfo(name="bench-catchup"))
    await link.connect()
    started = time.perf_counter()
    try:
        last_seq = 0
        for i in range(0, len(lines), batch):
            ack = await link.send_lines(
                session_id, conversation_id, lines[i : i + batch], timeout=60
            )
            last_seq = ack.last_seq
    finally:
        await link.close()
    # The relay numbers a few events of its own among them (a snapshot at each compaction and
    # /clear the captured lines hold): at least as many, never fewer.
    if last_seq < events:
        raise RuntimeError(f"expected {events} events on the relay, got last_seq {last_seq}")
    return session_id, time.perf_counter() - started, last_seq


def read_paged(relay: RelayProcess, session_id: str, events: int) -> tuple[float, int, int]:
    """(seconds, requests, bytes) to read every event with sequential pages of 500."""
    import httpx

    with httpx.Client(base_url=relay.url, headers={"Authorization": f"Bearer {relay.phone_token}"},
                      timeout=30) as client:  # fmt: skip
        client.get(
            "/api/health"
        )  # open the connection first, as a page that is already loaded would
        started = time.perf_counter()
        after, requests, size, seen = 0, 0, 0, 0
        while True:
            response = client.get(
                f"/api/sessions/{session_id}/events", params={"after": after, "limit": PAGE}
            )
            response.raise_for_status()
            requests += 1
            size += len(response.content)
            page = response.json()
            if page["events"]:
                for expected, event in enumerate(page["events"], start=after + 1):
                    if event["seq"] != expected:
                        raise RuntimeError(
                            f"gap in the pages: wanted seq {expected}, got {event['seq']}"
                        )
                seen += len(page["events"])
                after = page["events"][-1]["seq"]
            if not page["has_more"]:
                break
        seconds = time.perf_counter() - started
    if seen < events:  # a snapshot the relay took after the push may follow
        raise RuntimeError(f"paged catch-up read {seen} events, expected {events}")
    return seconds, requests, size


async def read_sse(relay: RelayProcess, session_id: str, events: int, timeout: float = 60) -> float:
    seen = 0

    def on_event(stream: SSEStream, event: bytes, ident: int | None, data: bytes, now: int) -> None:
        nonlocal seen
        if event != b"event":
            if (
                event in (b"resync", b"history_unavailable", b"revoked")
                and not stream.finished.done()
            ):
                stream.finished.set_exception(RuntimeError(f"{event.decode()}: {data[:200]!r}"))
            return
        seen += 1
        if ident is not None and ident >= events and not stream.finished.done():
            stream.finished.set_result(None)

    started = time.perf_counter()
    stream = await asyncio.wait_for(
        open_stream("127.0.0.1", relay.port, f"/api/sessions/{session_id}/stream?after=0",
                    relay.phone_token, on_event), 30)  # fmt: skip
    try:
        await asyncio.wait_for(asyncio.shield(stream.finished), timeout)
        seconds = time.perf_counter() - started
    finally:
        stream.close()
    if seen < events:
        raise RuntimeError(f"SSE catch-up read {seen} events, expected {events}")
    return seconds


SNAPSHOT_ROOM = 10  # one kept event in this many more than pushed: the relay's snapshots


def measure(events: int, repeat: int, batch: int) -> CatchupResult:
    # Room for the relay's own snapshot events among them: every event stays to be read.
    kept = events + events // SNAPSHOT_ROOM
    with RelayProcess(env={"CB_EVENTS_KEPT": str(kept)}) as relay:
        log(f"[catchup] pushing {events:,} events (relay keeps {kept:,} per session)")
        session_id, push_seconds, events = asyncio.run(
            asyncio.wait_for(fill(relay, events, batch), 600)
        )
        result = CatchupResult(events, push_seconds)
        for i in range(repeat):  # alternate the two readers
            seconds, result.paged_requests, result.body_bytes = read_paged(
                relay, session_id, events
            )
            result.paged.append(seconds)
            result.sse.append(asyncio.run(read_sse(relay, session_id, events)))
            log(f"[catchup] round {i + 1}: paged {seconds:.3f} s, SSE {result.sse[-1]:.3f} s")
    return result


def report(result: CatchupResult) -> list[Row]:
    paged, sse = statistics.median(result.paged), statistics.median(result.sse)
    print(f"catch-up of {result.events:,} events (pushed in {result.push_seconds:.2f} s; "
          f"{result.body_bytes / result.events:.0f} B per event on the wire):")  # fmt: skip
    print(f"  paged GET /events x{result.paged_requests} (limit {PAGE}): median {paged:.3f} s  "
          f"[{', '.join(f'{s:.3f}' for s in result.paged)}]  (goal <= {GOAL_SECONDS} s)")  # fmt: skip
    print(f"  one SSE stream from after=0:        median {sse:.3f} s  "
          f"[{', '.join(f'{s:.3f}' for s in result.sse)}]  (goal <= {GOAL_SECONDS} s)", flush=True)  # fmt: skip
    return [
        Row(f"catch-up of {result.events:,} events, GET /events pages of {PAGE} (sequential)",
            f"{paged:.3f} s", f"≤ {GOAL_SECONDS} s", paged <= GOAL_SECONDS),
        Row(f"catch-up of {result.events:,} events, one SSE stream from after=0",
            f"{sse:.3f} s", f"≤ {GOAL_SECONDS} s", sse <= GOAL_SECONDS),
    ]  # fmt: skip


def run(events: int = 10000, repeat: int = 3, batch: int = 500) -> list[Row]:
    return report(measure(events, repeat, batch))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10000, help="events to push and read (10000)")
    parser.add_argument(
        "--repeat", type=int, default=3, help="timed reads of each kind (3); median shown"
    )
    parser.add_argument("--batch", type=int, default=500, help="lines per pushed batch (500)")
    parser.add_argument("--quick", action="store_true", help="2,000 events, 1 repeat")
    args = parser.parse_args(argv)
    install_signal_cleanup()
    events, repeat = (2000, 1) if args.quick else (args.events, args.repeat)
    rows = run(events, repeat, args.batch)
    print()
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
