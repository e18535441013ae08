"""The ingest benchmark's figures (bench/ingest.py): the relay's CPU per 1,000 events next to
events/s, and the profiled relay's command (bench/profiled.py around `claude-bridge relay`)."""

from __future__ import annotations

from pathlib import Path

from bench.ingest import IngestResult, ProfiledRelay, rows


def result(**changes: float) -> IngestResult:
    base = dict(
        mix="events", lines=20_000, events=21_000, batches=100, batch_size=200, seconds=2.0,
        ack_p50=0.02, ack_p99=0.05, ack_max=0.06, relay_cpu=0.8,
    )  # fmt: skip
    base.update(changes)
    return IngestResult(**base)  # type: ignore[arg-type]


def test_cpu_per_1000_events_is_the_relay_cpu_time_over_the_events() -> None:
    # 0.8 of a core for 2 s = 1.6 CPU seconds for 21,000 events: 76 ms per 1,000
    assert round(result().cpu_ms_per_1000_events) == 76
    assert result(events=0).cpu_ms_per_1000_events >= 0


def test_the_rows_carry_events_per_s_against_the_goal_and_the_cpu() -> None:
    found = {row.metric.split(": ", 1)[1]: row for row in rows(result())}
    assert found["events/s"].result == "10,500" and found["events/s"].met is True
    assert found["relay CPU per 1,000 events"].result == "76 ms"
    assert rows(result(), goal=False)[0].met is None


def test_the_profiled_relay_runs_the_relay_command_under_the_profiler(tmp_path: Path) -> None:
    relay = ProfiledRelay(tmp_path / "relay.prof")
    relay.dir = tmp_path
    command = relay.command()
    assert command[1:4] == ["-m", "bench.profiled", str(tmp_path / "relay.prof")]
    assert command[4] == "relay" and "--port" in command
