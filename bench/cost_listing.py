"""Listing costs: how long the relay takes to give every session's usage and cost, 10,000 sessions.

The relay's data folder is filled first through the real ingest path (Store.ingest with the usage
observer of features/usage.py), with the captured transcripts' lines that carry usage, one of three
kinds per session: Claude Code's cost-state totals (n_permissionrequest_allow_hook), a subagent
(m_subagent and its agent-… transcript) and an estimate only (d_bash_permission). Then:

* store: ``session_costs(store, account, None)`` — one indexed query, every report parsed into a
  dict — on a fresh Store in this process (the figure the goal names);
* API: ``GET /api/costs`` on the relay running as its own process (`claude-bridge relay`) over a
  keep-alive connection, the body parsed as JSON by the client.

    .venv/bin/python -m bench.cost_listing [--sessions 10000] [--repeat 30] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    TRANSCRIPTS,
    RelayProcess,
    Row,
    fmt_ms,
    install_signal_cleanup,
    log,
    markdown_table,
    percentile,
)

GOAL_SECONDS = 0.2
CONCURRENT = 256  # ingests in flight while filling: the writer commits them in groups

KINDS: dict[str, list[tuple[str, str]]] = {
    # kind: [(transcript file, conversation id)]
    "cost-state": [("n_permissionrequest_allow_hook__4d013a6c-21a8-43b8-9122-f08493e9b5ca.jsonl",
                    "4d013a6c-21a8-43b8-9122-f08493e9b5ca")],
    "subagent": [("m_subagent__b9a49076-7ef0-4409-b3eb-ff11c5c634e6.jsonl",
                  "b9a49076-7ef0-4409-b3eb-ff11c5c634e6"),
                 ("m_subagent__subagent__agent-a0f2c7af82d1d7fd7.jsonl", "agent-a0f2c7af82d1d7fd7")],
    "estimate": [("d_bash_permission__544d7fc9-b2af-4196-a2f2-d9970b3c5421.jsonl",
                  "544d7fc9-b2af-4196-a2f2-d9970b3c5421")],
}  # fmt: skip


@dataclass
class ListingResult:
    sessions: int
    fill_seconds: float
    store: list[float] = field(default_factory=list)
    api: list[float] = field(default_factory=list)
    api_bytes: int = 0


def usage_lines(name: str) -> list[Any]:
    """The lines of a captured transcript that carry usage or Claude Code's cost-state."""
    from wire.transcript import read_lines

    return [
        line
        for line in read_lines((TRANSCRIPTS / name).read_bytes())
        if '"usage"' in line.text or '"type":"cost-state"' in line.text
    ]


async def fill(data_dir: Path, sessions: int) -> tuple[str, float]:
    """Store ``sessions`` sessions with usage; return (account id, seconds)."""
    from relay.features import usage
    from relay.hub import Hub
    from relay.state import RelayState
    from relay.store import Store
    from wire import config as configmod

    config = configmod.load({"data_dir": str(data_dir)}, environ={})
    store = Store(config)
    try:
        await usage.start(RelayState(config=config, store=store, hub=Hub(16)))
        account_id = store.ensure_account()
        _, _, device_id = store.create_token(account_id, "device", "bench-fill")
        kinds = [[(usage_lines(name), conv) for name, conv in parts] for parts in KINDS.values()]
        started = time.perf_counter()

        async def one(n: int) -> None:
            session_id = str(uuid.uuid4())
            for lines, conversation_id in kinds[n % len(kinds)]:
                await store.ingest(account_id, device_id, session_id, conversation_id, lines, "/w")

        for start in range(0, sessions, CONCURRENT):
            await asyncio.gather(*(one(n) for n in range(start, min(sessions, start + CONCURRENT))))
            if start and start % 2000 == 0:
                log(f"  filled {start} sessions")
        return account_id, time.perf_counter() - started
    finally:
        store.close()


async def time_store(data_dir: Path, account_id: str, sessions: int, repeat: int) -> list[float]:
    from relay.features.usage import session_costs
    from relay.store import Store
    from wire import config as configmod

    store = Store(configmod.load({"data_dir": str(data_dir)}, environ={}))
    try:
        times = []
        for i in range(repeat + 1):
            started = time.perf_counter()
            costs = await session_costs(store, account_id, None)
            elapsed = time.perf_counter() - started
            if len(costs) != sessions or not all(c["input_tokens"] > 0 for c in costs.values()):
                raise RuntimeError(f"expected {sessions} sessions with usage, got {len(costs)}")
            sources = {c["source"] for c in costs.values()}
            if sources != {"cost-state", "estimate"}:
                raise RuntimeError(f"unexpected sources {sources}")
            if i:  # the first run warms the page cache and the reader connection
                times.append(elapsed)
        return times
    finally:
        store.close()


def time_api(relay: RelayProcess, sessions: int, repeat: int) -> tuple[list[float], int]:
    import httpx

    headers = {"Authorization": f"Bearer {relay.phone_token}"}
    with httpx.Client(base_url=relay.url, headers=headers, timeout=60) as client:
        times, size = [], 0
        for i in range(repeat + 1):
            started = time.perf_counter()
            response = client.get("/api/costs")
            response.raise_for_status()
            costs = response.json()["costs"]
            elapsed = time.perf_counter() - started
            if len(costs) != sessions:
                raise RuntimeError(f"GET /api/costs listed {len(costs)}, expected {sessions}")
            size = len(response.content)
            if i:
                times.append(elapsed)
        return times, size


class FilledRelay(RelayProcess):
    """A relay process whose data folder holds ``sessions`` sessions with usage before it starts."""

    name = "relay-costs"

    def __init__(self, sessions: int) -> None:
        super().__init__()
        self.sessions = sessions
        self.account_id = ""
        self.fill_seconds = 0.0

    def prepare(self) -> None:
        super().prepare()  # tokens (account "default")
        self.account_id, self.fill_seconds = asyncio.run(fill(self.data_dir, self.sessions))


def run(sessions: int, repeat: int) -> ListingResult:
    log(f"cost listing: filling {sessions:,} sessions, then {repeat} timed listings each way")
    with FilledRelay(sessions) as relay:
        result = ListingResult(sessions, relay.fill_seconds)
        log(f"  filled in {relay.fill_seconds:.1f} s")
        result.store = asyncio.run(time_store(relay.data_dir, relay.account_id, sessions, repeat))
        result.api, result.api_bytes = time_api(relay, sessions, repeat)
    return result


def rows(result: ListingResult) -> list[Row]:
    n = f"{result.sessions:,}"
    store_p95 = percentile(result.store, 95)
    return [
        Row(
            f"listing {n} sessions' costs: session_costs(), p50 / p95",
            f"{fmt_ms(percentile(result.store, 50))} / {fmt_ms(store_p95)}",
            f"≤ {GOAL_SECONDS * 1000:.0f} ms",
            store_p95 <= GOAL_SECONDS,
        ),
        Row(
            f"listing {n} sessions' costs: GET /api/costs + JSON parse, p50 / p95",
            f"{fmt_ms(percentile(result.api, 50))} / {fmt_ms(percentile(result.api, 95))}"
            f" ({result.api_bytes / 1e6:.1f} MB)",
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="1,000 sessions, 5 listings")
    args = parser.parse_args(argv)
    install_signal_cleanup()
    sessions, repeat = (1000, 5) if args.quick else (args.sessions, args.repeat)
    result = run(sessions, repeat)
    print(markdown_table(rows(result)))
    print(json.dumps({"sessions": result.sessions, "fill_seconds": round(result.fill_seconds, 2),
                      "store_ms": [round(x * 1000, 2) for x in result.store],
                      "api_ms": [round(x * 1000, 2) for x in result.api]}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
