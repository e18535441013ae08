"""``claude-bridge delete``: a session ended and deleted with its events.

claude-bridge delete SESSION [--yes] [--json]
    DELETE /api/sessions/{id}: ends it and deletes its events on the relay and its Mac (Claude
    Code's own transcript in ~/.claude stays).
"""

from __future__ import annotations

import argparse
import sys

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.common import connect, guarded, print_json
from cli.display import named
from cli.references import find_session


def cmd_delete(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        if not args.yes and sys.stdin.isatty():
            answer = input(f"Delete {named(session)} and its events, here and on its Mac? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("Kept.")
                return 0
        done = relay.delete(session["id"])
    finally:
        relay.close()
    if args.json:
        print_json(done)
        return 0
    late = done.get("mac") == "waiting"
    print(
        f"Deleted {named(session)}"
        + (": its Mac is offline and deletes its copy when it links again." if late else ".")
    )
    print("  (Claude Code's own transcript in ~/.claude on the Mac is kept.)")
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``delete``."""
    deleting = sub.add_parser(
        "delete",
        help="end a session and delete it with its events, on the relay and its Mac",
        description="End a session (its claude stops) and delete it with its events on the "
        "relay and on its Mac (at once, or when an offline Mac links again). Claude Code's own "
        "transcript in ~/.claude stays.",
    )
    add_session_arg(deleting)
    deleting.add_argument("--yes", "-y", action="store_true", help="do not ask first")
    add_relay_args(deleting)
    deleting.set_defaults(func=guarded(cmd_delete))
