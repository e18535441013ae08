"""Run every benchmark and print one Markdown table (metric | result | goal), also written to
bench/results.md so it can be pasted into the README.

    .venv/bin/python -m bench             # the full run (a few minutes)
    .venv/bin/python -m bench --quick     # small sizes, a smoke test (well under a minute)
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import catchup, cluster, fanout, ingest
from bench._common import BENCH, Row, install_signal_cleanup, log, markdown_table

ALL = ("ingest", "fanout", "catchup")
# Run only when asked (--only cluster): relay nodes, PostgreSQL and Caddy; 3½ minutes or more.
EXTRA = ("cluster",)


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} CPU(s), Python {platform.python_version()}, {platform.system()} "
            f"{platform.release()}; load average before the run: {load}")  # fmt: skip


def busy_warning(before: float) -> str:
    """A note when something else used the CPUs just before the run: p99 figures are then noisy."""
    cpus = os.cpu_count() or 1
    if before <= 0.5 * cpus:
        return ""
    return (
        f"Note: the machine was busy before the run (1-minute load {before:.2f} on {cpus} CPUs); "
        "latency tails and ratios are noisier than on an idle machine.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    parser.add_argument(
        "--only",
        action="append",
        choices=ALL + EXTRA,
        help=f"run only these (repeatable); {', '.join(EXTRA)} runs only when named",
    )
    parser.add_argument(
        "--out", default=str(BENCH / "results.md"), help="Markdown file to write ('' = none)"
    )
    parser.add_argument("--ingest-lines", type=int, default=None)
    parser.add_argument("--fanout-clients", default=None, help="e.g. 10,100,1000")
    parser.add_argument("--fanout-repeat", type=int, default=None)
    parser.add_argument("--catchup-events", type=int, default=None)
    args = parser.parse_args(argv)
    install_signal_cleanup()
    chosen = args.only or list(ALL)
    about = machine()
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    rows: list[Row] = []
    commands: list[str] = []

    if "ingest" in chosen:
        lines = args.ingest_lines or (2000 if args.quick else 20000)
        print(f"\n## ingest ({lines:,} lines)\n", flush=True)
        rows += ingest.run(lines, 200, ("events", "all"))
        commands.append(f"python -m bench.ingest --lines {lines} --mix events --mix all")

    if "fanout" in chosen:
        fan_argv = ["--quick"] if args.quick else []
        if args.fanout_clients:
            fan_argv += ["--clients", args.fanout_clients]
        if args.fanout_repeat:
            fan_argv += ["--repeat", str(args.fanout_repeat)]
        fan_args = fanout.parse(fan_argv)
        print(f"\n## fan-out ({', '.join(map(str, fan_args.clients))} clients)\n", flush=True)
        rows += fanout.run(fan_args)
        commands.append("python -m bench.fanout " + " ".join(fan_argv))

    if "catchup" in chosen:
        events = args.catchup_events or (2000 if args.quick else 10000)
        repeat = 1 if args.quick else 3
        print(f"\n## catch-up ({events:,} events)\n", flush=True)
        rows += catchup.run(events, repeat)
        commands.append(f"python -m bench.catchup --events {events} --repeat {repeat}")

    if "cluster" in chosen:
        cluster_argv = ["--quick"] if args.quick else []
        print("\n## cluster (PostgreSQL, three nodes, Caddy)\n", flush=True)
        rows += cluster.run(cluster.parse(cluster_argv))
        commands.append("python -m bench.cluster " + " ".join(cluster_argv))

    took = time.perf_counter() - started
    warning = busy_warning(load_before)
    if warning:
        log(warning.strip())
    table = markdown_table(rows)
    print("\n" + table, flush=True)
    log(f"\n[bench] done in {took:.0f} s")
    if args.out:
        text = (
            f"# claude-bridge relay benchmarks{' (quick)' if args.quick else ''}\n\n"
            f"Run {time.strftime('%Y-%m-%d %H:%M %Z')} on {about}; took {took:.0f} s.\n"
            f"Command: `.venv/bin/python -m bench{' --quick' if args.quick else ''}` "
            f"(parts: {'; '.join(f'`{c.strip()}`' for c in commands)}). See bench/README.md.\n"
            f"{warning}\n"
            f"{table}\n"
        )
        Path(args.out).write_text(text, encoding="utf-8")
        log(f"[bench] wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
