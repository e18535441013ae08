"""``claude-bridge fork``: a new session with a session's history, continuing apart.

claude-bridge fork SESSION [PROMPT…] [--json]
    POST /api/sessions/{id}/fork: a new session on the same Mac with the same history.
"""

from __future__ import annotations

import argparse

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.common import connect, guarded, print_json
from cli.display import named
from cli.references import find_session


def cmd_fork(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=False)
    try:
        parent = find_session(relay, args.session)
        fork = relay.fork(parent["id"], prompt=" ".join(args.prompt).strip() or None)
    finally:
        relay.close()
    if args.json:
        print_json(fork)
        return 0
    print(f"Forked {named(parent)} into {fork['id']}: the same history, continuing apart.")
    print(f"  attach: claude-bridge attach {fork['id'][:8]} · page: {relay.page_link(fork['id'])}")
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``fork``."""
    forking = sub.add_parser(
        "fork",
        help="a new session with a session's history, on its Mac, continuing apart",
        description="Fork a session: a new session (a new id) on the same Mac and folder with "
        "the same history (claude --resume … --fork-session); the two continue apart.",
    )
    add_session_arg(forking)
    forking.add_argument("prompt", nargs="*", metavar="PROMPT", help="a first message for the fork")
    add_relay_args(forking)
    forking.set_defaults(func=guarded(cmd_fork))
