"""``claude-bridge events`` and ``claude-bridge cost``: Claude Code transcript files read here,
no relay needed — the display events a phone would show, and what the session cost.

claude-bridge events FILE…       each line's display events, one JSON object per line
claude-bridge cost FILE…         tokens and USD of the files taken as one session (JSON); for a
                                 session on a relay, `claude-bridge session-cost` (cli/session_cost.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cli.arguments import Subcommands
from cli.common import fail, load_config
from wire import config as configmod


def cmd_events(args: argparse.Namespace) -> int:
    from relay.convert import ConversionLimits, convert_line

    limits = ConversionLimits.from_config(configmod.load())
    out = sys.stdout
    for name in args.files:
        path = Path(name)
        for raw in _read(path).splitlines():
            for event in convert_line(raw, limits).events:
                out.write(event.model_dump_json(exclude_none=True))
                out.write("\n")
    return 0


def cmd_cost(args: argparse.Namespace) -> int:
    """All the files are one session (a transcript, its /clear successors, its subagents'
    agent-<id>.jsonl): read in the order given, each named by its file name for subagents."""
    from relay.features.cost import CostCounter, PriceError, load_prices

    cfg = load_config(args)
    try:
        counter = CostCounter(load_prices(cfg.str("model_prices")))
    except PriceError as exc:
        fail(str(exc), "fix CB_MODEL_PRICES (see the configuration table in README.md)")
    for name in args.files:
        path = Path(name)
        for raw in _read(path).splitlines():
            counter.add_text(raw, path.stem)
    print(json.dumps(counter.report().to_json(), indent=2))
    return 0


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        fail(f"cannot read {path}: {exc.strerror}")


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``events`` and ``cost``."""
    events = sub.add_parser(
        "events",
        help="print the display events of transcript files, one JSON per line",
        description="Print how Claude Code transcript lines become the events a phone shows, one "
        "JSON object per line; no relay needed.",
    )
    events.add_argument(
        "files", nargs="+", metavar="FILE.jsonl", help="Claude Code transcript files"
    )
    events.set_defaults(func=cmd_events)

    cost = sub.add_parser(
        "cost",
        help="print the tokens and USD of transcript files (together one session) as JSON",
        description="Print the tokens and USD of transcript files taken as one session (a "
        "transcript, its /clear successors, its subagents' agent-ID.jsonl), as JSON: from "
        "Claude Code's own cost lines, or estimated from the bundled prices (model_prices).",
    )
    cost.add_argument(
        "files", nargs="+", metavar="FILE.jsonl", help="the session's transcript files, in order"
    )
    cost.set_defaults(func=cmd_cost)
