"""``claude-bridge rename``: a session's title.

claude-bridge rename SESSION TITLE… | rename SESSION --auto
    PATCH the title (the id never changes); --auto forgets a person's title so the automatic one
    shows again (DELETE /api/sessions/{id}/title).
"""

from __future__ import annotations

import argparse

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.client import CommandError
from cli.common import connect, guarded, print_json
from cli.references import find_session


def cmd_rename(args: argparse.Namespace) -> int:
    title = " ".join(" ".join(args.title).split())
    if args.auto and title:
        raise CommandError("give a TITLE or --auto, not both")
    if not args.auto and not title:
        raise CommandError(
            "rename needs a TITLE",
            "`claude-bridge rename SESSION --auto` gives back the automatic title",
        )
    relay = connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        if args.auto:
            renamed = relay.automatic_title(session["id"])
        else:
            renamed = relay.rename(session["id"], title)
    finally:
        relay.close()
    if args.json:
        print_json(renamed)
    elif args.auto:
        now = (
            f'"{renamed["title"]}"' if renamed.get("title") else "none yet (lists show its folder)"
        )
        print(f"Session {renamed['id']} shows its automatic title again: {now}")
    else:
        print(f'Renamed session {renamed["id"]}: "{renamed["title"]}"')
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``rename``."""
    rename = sub.add_parser(
        "rename",
        help="rename a session (the id never changes), or --auto for its own title",
        description="Give a session a title (its id never changes), or with --auto give back "
        "the title it got by itself.",
    )
    add_session_arg(rename)
    rename.add_argument("title", nargs="*", metavar="TITLE", help="the new title")
    rename.add_argument(
        "--auto", action="store_true", help="forget the given title: the automatic one shows"
    )
    add_relay_args(rename)
    rename.set_defaults(func=guarded(cmd_rename))
