"""Run the benchmarks and print one Markdown table (metric | result | goal) with the machine line
(bench/machine.py: CPU model, cores, RAM, OS, Python, date), also written to bench/results.md.

    .venv/bin/python -m bench             # ingest, fan-out, catch-up (a few minutes)
    .venv/bin/python -m bench --quick     # small sizes, a smoke test (well under a minute)
    .venv/bin/python -m bench --all       # every part below, the cluster and the real Claude Code too
    .venv/bin/python -m bench --readme    # --all, then README.md's figures table from this run

``--readme`` writes the table between README.md's figures markers (bench/readme_table.py), with
the date, the machine line and the command: run it on a quiet machine, never copy figures in.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import BENCH, REPO, Row, install_signal_cleanup, log, markdown_table
from bench.machine import machine_line

ALL = ("ingest", "fanout", "catchup")
# Run only when named (--only) or with --all / --readme: the cluster needs PostgreSQL and Caddy
# (3½ minutes or more); the agent's benchmarks start tmux, and card_latency the real Claude Code.
EXTRA = (
    "cluster",
    "hook_overhead",
    "screen_speed",
    "search_speed",
    "cost_listing",
    "agent_latency",
    "agent_idle",
    "card_latency",
    "resume_tokens",
    "page_load",
)
BUSY_SHARE = 0.5  # a 1-minute load above this share of the CPUs makes a run "busy"


@dataclass(frozen=True)
class Part:
    """One benchmark of the run: its rows, and the command that runs it alone."""

    run: Callable[[argparse.Namespace], list[Row]]
    command: Callable[[argparse.Namespace], str]


def _ingest(args: argparse.Namespace) -> list[Row]:
    from bench import ingest

    return ingest.run(_ingest_lines(args), 200, ("events", "all"))


def _ingest_lines(args: argparse.Namespace) -> int:
    return int(args.ingest_lines or (2000 if args.quick else 20000))


def _fanout_argv(args: argparse.Namespace) -> list[str]:
    argv = ["--quick"] if args.quick else []
    if args.fanout_clients:
        argv += ["--clients", args.fanout_clients]
    if args.fanout_repeat:
        argv += ["--repeat", str(args.fanout_repeat)]
    return argv


def _fanout(args: argparse.Namespace) -> list[Row]:
    from bench import fanout

    return fanout.run(fanout.parse(_fanout_argv(args)))


def _catchup_sizes(args: argparse.Namespace) -> tuple[int, int]:
    return int(args.catchup_events or (2000 if args.quick else 10000)), 1 if args.quick else 3


def _catchup(args: argparse.Namespace) -> list[Row]:
    from bench import catchup

    return catchup.run(*_catchup_sizes(args))


def _cluster(args: argparse.Namespace) -> list[Row]:
    from bench import cluster

    return cluster.run(cluster.parse(["--quick"] if args.quick else []))


def _hook_overhead(args: argparse.Namespace) -> list[Row]:
    from bench import hook_overhead

    return hook_overhead.run(40 if args.quick else 200)


def _screen_speed(args: argparse.Namespace) -> list[Row]:
    from bench import screen_speed

    return screen_speed.run(args.quick)


def _search_speed(args: argparse.Namespace) -> list[Row]:
    from bench import search_speed

    return search_speed.run(*((1000, 100) if args.quick else (10000, 200)))


def _cost_listing(args: argparse.Namespace) -> list[Row]:
    from bench import cost_listing

    return cost_listing.rows(cost_listing.run(*((1000, 5) if args.quick else (10_000, 30))))


def _agent_latency(args: argparse.Namespace) -> list[Row]:
    from bench import agent_latency

    return agent_latency.run(args.quick)


def _agent_idle(args: argparse.Namespace) -> list[Row]:
    from bench import agent_idle

    return agent_idle.run(args.quick)


def _card_latency(args: argparse.Namespace) -> list[Row]:
    from bench import card_latency

    return card_latency.run(3 if args.quick else 10)


def _resume_tokens(args: argparse.Namespace) -> list[Row]:
    from bench import resume_tokens

    return resume_tokens.run(*((60, 5) if args.quick else (300, 20)))


# issue 24's goals for a cold open of the page at 390×844, Fast 3G + 4× CPU (bench/page_load.py)
COLD_PAINT_GOAL_MS = 1000
COLD_ROWS_GOAL_MS = 2000


def page_load_rows(results: dict[str, tuple[dict[str, list[dict[str, Any]]], Any]]) -> list[Row]:
    """bench/page_load.py's medians as rows: each way in (direct, Caddy) and each open (cold,
    warm); the cold open against its goals."""
    from bench import page_load

    out: list[Row] = []
    for mode, (figures, _) in results.items():
        for kind, loads in figures.items():
            if not loads:
                continue
            paint, rows = page_load.median(loads, "paint"), page_load.median(loads, "rows")
            wire = page_load.median(loads, "wire") / 1024
            files = page_load.median(loads, "requests")
            label = (f"page {kind} open, {mode} (390×844, Fast 3G + {page_load.CPU_SLOWDOWN}× CPU, "
                     f"median of {len(loads)}): first paint / session rows visible")  # fmt: skip
            cold = kind == "cold"
            out.append(
                Row(
                    label,
                    f"{paint:,.0f} / {rows:,.0f} ms ({files:.0f} files, {wire:.1f} KiB on the wire)",
                    f"≤ {COLD_PAINT_GOAL_MS:,} / {COLD_ROWS_GOAL_MS:,} ms" if cold else "",
                    (paint <= COLD_PAINT_GOAL_MS and rows <= COLD_ROWS_GOAL_MS) if cold else None,
                )
            )
    return out


def _page_load(args: argparse.Namespace) -> list[Row]:
    import asyncio

    from bench import page_load

    results, _chromium = asyncio.run(
        page_load.run(list(page_load.MODES), 1 if args.quick else 3, None, {})
    )
    return page_load_rows(results)


def _quick(args: argparse.Namespace) -> str:
    return " --quick" if args.quick else ""


PARTS: dict[str, Part] = {
    "ingest": Part(
        _ingest,
        lambda a: f"python -m bench.ingest --lines {_ingest_lines(a)} --mix events --mix all",
    ),
    "fanout": Part(_fanout, lambda a: " ".join(["python -m bench.fanout", *_fanout_argv(a)])),
    "catchup": Part(
        _catchup,
        lambda a: "python -m bench.catchup --events {} --repeat {}".format(*_catchup_sizes(a)),
    ),
    "cluster": Part(_cluster, lambda a: "python -m bench.cluster" + _quick(a)),
    "hook_overhead": Part(
        _hook_overhead, lambda a: f"python -m bench.hook_overhead --runs {40 if a.quick else 200}"
    ),
    "screen_speed": Part(_screen_speed, lambda a: "python -m bench.screen_speed" + _quick(a)),
    "search_speed": Part(_search_speed, lambda a: "python -m bench.search_speed" + _quick(a)),
    "cost_listing": Part(_cost_listing, lambda a: "python -m bench.cost_listing" + _quick(a)),
    "agent_latency": Part(_agent_latency, lambda a: "python -m bench.agent_latency" + _quick(a)),
    "agent_idle": Part(_agent_idle, lambda a: "python -m bench.agent_idle" + _quick(a)),
    "card_latency": Part(_card_latency, lambda a: "python -m bench.card_latency" + _quick(a)),
    "resume_tokens": Part(_resume_tokens, lambda a: "python -m bench.resume_tokens" + _quick(a)),
    "page_load": Part(
        _page_load, lambda a: f"python -m bench.page_load --repeat {1 if a.quick else 3}"
    ),
}


def busy_warning(before: float, cpus: int | None = None) -> str:
    """A note when something else used the CPUs just before the run: figures are then noisy."""
    cpus = cpus or os.cpu_count() or 1
    if before <= BUSY_SHARE * cpus:
        return ""
    return (
        f"Note: the machine was busy before the run (1-minute load {before:.2f} on {cpus} CPUs); "
        "latency tails and ratios are noisier than on an idle machine."
    )


def chosen_parts(only: list[str] | None, every: bool) -> list[str]:
    """The parts a run does, in the table's order."""
    if only:
        return [name for name in (*ALL, *EXTRA) if name in only]
    return list(ALL + EXTRA) if every else list(ALL)


def command_line(args: argparse.Namespace) -> str:
    """The command that gives this run again."""
    words = [".venv/bin/python -m bench"]
    if args.readme:
        words.append("--readme")
    elif args.all:
        words.append("--all")
    if args.quick:
        words.append("--quick")
    for name in args.only or []:
        words += ["--only", name]
    return " ".join(words)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    parser.add_argument(
        "--only",
        action="append",
        choices=ALL + EXTRA,
        help=f"run only these (repeatable); {', '.join(EXTRA)} run only when named or with --all",
    )
    parser.add_argument("--all", action="store_true", help="every part, EXTRA ones included")
    parser.add_argument(
        "--readme",
        nargs="?",
        const=str(REPO / "README.md"),
        default=None,
        metavar="PATH",
        help="then write the figures table of PATH (README.md) from this run; implies --all",
    )
    parser.add_argument(
        "--out", default=str(BENCH / "results.md"), help="Markdown file to write ('' = none)"
    )
    parser.add_argument("--ingest-lines", type=int, default=None)
    parser.add_argument("--fanout-clients", default=None, help="e.g. 10,100,1000")
    parser.add_argument("--fanout-repeat", type=int, default=None)
    parser.add_argument("--catchup-events", type=int, default=None)
    args = parser.parse_args(argv)
    if args.readme and args.quick:
        parser.error("--readme takes a full run's figures: leave out --quick")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    install_signal_cleanup()
    chosen = chosen_parts(args.only, args.all or bool(args.readme))
    about = machine_line()
    print(about, flush=True)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    rows: list[Row] = []
    commands: list[str] = []
    for name in chosen:
        part = PARTS[name]
        print(f"\n## {name}\n", flush=True)
        rows += part.run(args)
        commands.append(part.command(args))
    took = time.perf_counter() - started
    warning = busy_warning(load_before)
    if warning:
        log(warning)
    table = markdown_table(rows)
    print(f"\n{about}\n\n{table}", flush=True)
    log(f"\n[bench] done in {took:.0f} s")
    if args.out:
        text = (
            f"# claude-bridge benchmarks{' (quick)' if args.quick else ''}\n\n"
            f"Run on this {about.removeprefix('machine: ')}; took {took:.0f} s.\n"
            f"Command: `{command_line(args)}` "
            f"(parts: {'; '.join(f'`{c.strip()}`' for c in commands)}). See bench/README.md.\n"
            f"{warning + chr(10) if warning else ''}\n"
            f"{table}\n"
        )
        Path(args.out).write_text(text, encoding="utf-8")
        log(f"[bench] wrote {args.out}")
    if args.readme:
        write_readme(Path(args.readme), rows, about, command_line(args), took, warning)
    return 0


def write_readme(
    path: Path, rows: list[Row], about: str, command: str, took: float, warning: str
) -> None:
    from bench.readme_table import replace_section, section

    notes = [warning] if warning else []
    text = replace_section(
        path.read_text(encoding="utf-8"), section(rows, about, command, took, notes)
    )
    path.write_text(text, encoding="utf-8")
    log(f"[bench] wrote the figures table of {path}")


if __name__ == "__main__":
    raise SystemExit(main())
