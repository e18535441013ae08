"""Durable ingest: how many transcript lines and numbered events a relay stores per second.

A MacLink (the real agent-link protocol) pushes N fresh transcript lines in batches; each batch
is awaited until the relay's ack, which it sends only after the SQLite COMMIT (durable). The
relay runs as its own process (`claude-bridge relay`).

    .venv/bin/python -m bench.ingest [--lines 20000] [--batch 200] [--mix events|all|chat] [--profile]

``--profile`` runs the relay under cProfile (every thread: bench/profiled.py) and prints where its
time went; the figures of a profiled run are lower than a plain run's (the profiler's own cost).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

from bench._common import (
    LineSource,
    RelayProcess,
    Row,
    install_signal_cleanup,
    log,
    markdown_table,
    percentile,
    proc_cpu,
)

GOAL_EVENTS_PER_S = 5000


class ProfiledRelay(RelayProcess):
    """The relay under cProfile (bench/profiled.py); its stats are written to ``stats`` on stop."""

    def __init__(self, stats: Path) -> None:
        super().__init__()
        self.stats = stats

    def command(self) -> list[str]:
        relay = super().command()
        return [sys.executable, "-m", "bench.profiled", str(self.stats), *relay[1:]]


@dataclass
class IngestResult:
    mix: str
    lines: int
    events: int
    batches: int
    batch_size: int
    seconds: float
    ack_p50: float
    ack_p99: float
    ack_max: float
    relay_cpu: float = 0.0  # share of one core the relay used while ingesting

    @property
    def lines_per_s(self) -> float:
        return self.lines / self.seconds

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds

    @property
    def cpu_ms_per_1000_events(self) -> float:
        """The relay's CPU time per 1,000 events: steadier than events/s on a shared machine
        (it leaves out the time the relay waited for a CPU), so before/after compare better."""
        return self.relay_cpu * self.seconds * 1000 / max(self.events, 1) * 1000


async def push(
    relay: RelayProcess, lines: int, batch: int, mix: str, warmup: int = 2
) -> IngestResult:
    from wire.client import MacLink
    from wire.protocol import DeviceInfo

    source = LineSource(mix)
    session_id = str(uuid.uuid4())
    conversation_id = str(uuid.uuid4())
    # Build every batch first: making lines is not the relay's work.
    batches = [source.take(min(batch, lines - i)) for i in range(0, lines, batch)]
    warm = [LineSource(mix).take(batch) for _ in range(warmup)]
    link = MacLink(relay.url, relay.device_token, DeviceInfo(name="bench-ingest"))
    await link.connect()
    try:
        # Warm-up on another session: first-use costs (imports, statements, pages) out of the way.
        warm_session, warm_conv = str(uuid.uuid4()), str(uuid.uuid4())
        for lines_ in warm:
            await link.send_lines(warm_session, warm_conv, lines_, cwd="/tmp/bench", timeout=60)
        latencies: list[float] = []
        last_seq = 0
        assert relay.proc is not None
        cpu0 = proc_cpu(relay.proc.pid)
        started = time.perf_counter()
        for lines_ in batches:
            t0 = time.perf_counter()
            ack = await link.send_lines(
                session_id, conversation_id, lines_, cwd="/tmp/bench", timeout=60
            )
            latencies.append(time.perf_counter() - t0)
            if ack.rejected:
                raise RuntimeError(f"the relay rejected lines: {ack.rejected[:3]}")
            last_seq = ack.last_seq
        seconds = time.perf_counter() - started
        relay_cpu = (proc_cpu(relay.proc.pid) - cpu0) / seconds
    finally:
        await link.close()
    return IngestResult(
        mix=mix, lines=lines, events=last_seq, batches=len(batches), batch_size=batch,
        seconds=seconds, ack_p50=percentile(latencies, 50), ack_p99=percentile(latencies, 99),
        ack_max=max(latencies), relay_cpu=relay_cpu,
    )  # fmt: skip


def report(result: IngestResult) -> None:
    print(f"ingest ({result.mix} mix): {result.lines:,} lines -> {result.events:,} events "
          f"in {result.batches} batches of {result.batch_size}, {result.seconds:.2f} s")  # fmt: skip
    print(f"  lines/s   {result.lines_per_s:10,.0f}")
    print(f"  events/s  {result.events_per_s:10,.0f}   (goal >= {GOAL_EVENTS_PER_S:,})")
    print(f"  ack latency per batch: p50 {result.ack_p50 * 1000:.1f} ms, "
          f"p99 {result.ack_p99 * 1000:.1f} ms, max {result.ack_max * 1000:.1f} ms; relay process CPU "
          f"{result.relay_cpu * 100:.0f}% of a core", flush=True)  # fmt: skip
    print(f"  relay CPU per 1,000 events: {result.cpu_ms_per_1000_events:.0f} ms", flush=True)


def rows(result: IngestResult, goal: bool = True) -> list[Row]:
    label = f"ingest, {result.mix} mix ({result.lines:,} lines, batches of {result.batch_size})"
    out = [
        Row(f"{label}: events/s", f"{result.events_per_s:,.0f}",
            f"≥ {GOAL_EVENTS_PER_S:,}" if goal else "",
            result.events_per_s >= GOAL_EVENTS_PER_S if goal else None),
        Row(f"{label}: lines/s", f"{result.lines_per_s:,.0f}"),
        Row(f"{label}: ack latency p50 / p99", f"{result.ack_p50 * 1000:.1f} / {result.ack_p99 * 1000:.1f} ms"),
        Row(f"{label}: relay CPU per 1,000 events", f"{result.cpu_ms_per_1000_events:.0f} ms"),
    ]  # fmt: skip
    return out


def run(
    lines: int = 20000,
    batch: int = 200,
    mixes: tuple[str, ...] = ("events",),
    profile: bool = False,
) -> list[Row]:
    out: list[Row] = []
    for i, mix in enumerate(mixes):
        log(f"[ingest] starting a relay; pushing {lines:,} lines ({mix} mix) in batches of {batch}"
            + (" under cProfile" if profile else ""))  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="cb-bench-profile-") as folder:
            stats = Path(folder) / "relay.prof"
            with ProfiledRelay(stats) if profile else RelayProcess() as relay:
                result = asyncio.run(asyncio.wait_for(push(relay, lines, batch, mix), timeout=600))
            report(result)
            if profile:
                print_profile(stats)
        out += rows(result, goal=(i == 0) and not profile)
    return out


def print_profile(stats: Path) -> None:
    from bench.profiled import summary

    if not stats.is_file():
        log("[ingest] the relay wrote no profile (did it stop cleanly?)")
        return
    print("\nthe relay's profile (every thread, start-up and warm-up included), by own time:")
    print(summary(stats), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=20000, help="lines to push (default 20000)")
    parser.add_argument("--batch", type=int, default=200, help="lines per batch (default 200)")
    parser.add_argument("--mix", action="append", choices=["events", "all", "chat"],
                        help="which lines: events (captured lines that make events, default), all "
                             "(every captured line), chat (made-up prompts/replies); repeatable")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="2,000 lines")
    parser.add_argument("--profile", action="store_true",
                        help="run the relay under cProfile and print where its time went "
                             "(slower: the figures are not the goal's)")  # fmt: skip
    args = parser.parse_args(argv)
    install_signal_cleanup()
    from bench.machine import machine_line

    print(machine_line(), flush=True)
    lines = 2000 if args.quick else args.lines
    table = run(lines, args.batch, tuple(args.mix or ["events"]), profile=args.profile)
    print()
    print(markdown_table(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
