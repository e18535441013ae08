"""``claude-bridge doctor``: everything a person needs before trusting the bridge, checked, each
problem with its fix; it exits 1 when a check fails (warnings do not).

The checks are cli/checkup.py's probes (what it looks at on this machine and the relay) and
cli/checks.py's decisions (pure: what those mean, and the fix).
"""

from __future__ import annotations

import argparse
import json

from cli.arguments import Subcommands
from cli.checks import exit_code, render
from cli.checkup import Options, run_checks
from cli.common import fail
from wire import config as configmod


def cmd_doctor(args: argparse.Namespace) -> int:
    options = Options(
        relay_url=args.relay,
        data_dir=args.data_dir,
        agent_dir=args.agent_data,
        claude=args.claude,
        token=args.token,
    )
    try:
        results = run_checks(options)
    except configmod.ConfigError as exc:
        fail(str(exc))
    if args.json:
        print(json.dumps([r.to_json() for r in results], indent=2, ensure_ascii=False))
    else:
        print("claude-bridge doctor")
        print(render(results), end="")
    return exit_code(results)


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``doctor``."""
    doctor = sub.add_parser(
        "doctor",
        help="check everything the bridge needs (tmux, Claude Code, relay, HTTPS, service …)",
        description="Check what the bridge needs before you trust it; each problem with its fix. "
        "Exits 1 when a check fails (warnings do not).",
    )
    _add_arguments(doctor)
    doctor.set_defaults(func=cmd_doctor)


def _add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--relay",
        metavar="URL",
        help="the relay's address as the phone uses it (default $CB_RELAY, $CB_PUBLIC_URL, "
        "the agent's remembered relay, else this machine's)",
    )
    parser.add_argument(
        "--data",
        dest="data_dir",
        metavar="DIR",
        help="the relay's data folder (default ~/.claude-bridge/relay, or $CB_DATA_DIR)",
    )
    parser.add_argument(
        "--agent-data",
        metavar="DIR",
        help="the agent's data folder (default ~/.claude-bridge, or $CB_AGENT_DIR)",
    )
    parser.add_argument(
        "--claude",
        metavar="PATH",
        help="the claude command to check (default $CB_CLAUDE, else claude on PATH)",
    )
    parser.add_argument(
        "--token",
        help="a phone token, to ask the relay whether this machine is online (default $CB_TOKEN)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of {name, status, detail, fix} instead of lines for a person",
    )
