"""The ``claude-bridge`` command: its parser, built from the command modules, and the dispatch.

claude-bridge up                 run the relay on this machine and print how to pair a phone
claude-bridge up install         the same at every login (launchd / systemd user unit)
claude-bridge relay              run only the relay
claude-bridge pair               make a one-time pairing code and link
claude-bridge token create|list|revoke
claude-bridge events FILE…       show how transcript lines become events (no relay needed)
claude-bridge replay FILE…       push transcripts to a relay as a Mac would
claude-bridge cost FILE…         tokens and USD of transcript files taken as one session (JSON)
claude-bridge open --session ID|-N  resume, start (with that id) or read a session
claude-bridge sessions           list sessions, newest created first
claude-bridge decisions SESSION  a session's decisions, pinned constraints and open items
claude-bridge audit              every decision on a card: who or which rule, which card, answer
claude-bridge report             usage: starts, resumes by scope, tokens re-read, search success
claude-bridge doctor             check everything the bridge needs, each with its fix
claude-bridge attach SESSION     join this terminal to a session running on this Mac
claude-bridge claude [ARGS…]     a drop-in for claude: started through the agent, seen on the phone
(each command's module, in :data:`COMMANDS`, says the rest)

Each command module adds its own commands with ``register(sub)`` and imports no other command
module; what they share is in the libraries (cli/common.py, cli/arguments.py, cli/client.py …).
This module holds no command's logic: :data:`COMMANDS` is the one list of command modules, in the
order ``claude-bridge --help`` shows them, and :func:`main` runs the one the words name.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from cli import (
    attach,
    audit,
    decisions,
    delete,
    doctor,
    fork,
    listing,
    move,
    opening,
    pair,
    policy,
    rename,
    replay,
    report,
    retention,
    serve,
    session_cost,
    subagents,
    tokens,
    transcripts,
    up,
)
from cli.arguments import Subcommands
from cli.common import fail
from relay.webfiles import WebFilesMissing


class CommandModule(Protocol):
    """A module of ``claude-bridge`` commands: ``register`` adds them, with their handlers."""

    def register(self, sub: Subcommands) -> None: ...


COMMANDS: tuple[CommandModule, ...] = (
    up,  # up, up install, up uninstall
    serve,  # relay
    pair,
    tokens,  # token create, list, revoke
    transcripts,  # events, cost
    replay,
    doctor,
    opening,  # open
    listing,  # sessions, search
    rename,
    session_cost,  # session-cost
    decisions,
    policy,
    retention,  # pin, unpin, retention
    audit,
    report,
    fork,
    move,
    delete,
    subagents,
    attach,  # attach, claude
)
"""The command modules, in the order ``claude-bridge --help`` lists their commands."""


class _Version(argparse.Action):
    """``--version``: the product's version and the Claude Code versions it was tested with."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from wire import __version__
        from wire.claude_versions import TESTED_VERSIONS

        print(f"claude-bridge {__version__}")
        print(f"tested with Claude Code {', '.join(TESTED_VERSIONS)}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The whole ``claude-bridge`` parser: every command module's commands, then the agent's own
    (``agent``, ``screen``, from agent/cli.py)."""
    parser = argparse.ArgumentParser(
        prog="claude-bridge",
        description="Run Claude Code on your own Macs and drive it from your phone. "
        "Start with `claude-bridge up`; `claude-bridge COMMAND --help` says what each one does.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        help="print the version and the Claude Code versions it was tested with, then exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        command.register(sub)

    from agent.cli import add_commands  # the Mac side's commands: agent, screen

    add_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["claude"]:  # claude's arguments, whole: not claude-bridge's to parse
        return attach.main_claude(words[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except WebFilesMissing as exc:  # a broken install says so at start, not 404 on the phone
        fail(str(exc), exc.hint)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
