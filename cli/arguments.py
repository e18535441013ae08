"""The arguments several commands take, each said once: the relay's data (``--data``,
``--database-url``), where it listens (``--host``, ``--port``, ``--public-url``, ``--log-level``),
the relay a session command talks to (``--relay``, ``--token``, ``--json``) and a SESSION.

A library, not a command. :class:`Subcommands` is what a command module's ``register`` is given:
the ``claude-bridge`` parser's list of commands, to add its own to.
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any, Protocol

DEFAULT_DATA = "~/.claude-bridge/relay"


class Subcommands(Protocol):
    """The commands of a parser (what ``add_subparsers`` returns): a command module adds its
    own with ``add_parser``, as argparse takes it."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def add_data_args(parser: argparse.ArgumentParser) -> None:
    """Where the relay's data is: a folder (SQLite), or PostgreSQL."""
    parser.add_argument(
        "--data",
        dest="data_dir",
        metavar="DIR",
        help=f"relay data folder (default {DEFAULT_DATA}, or $CB_DATA_DIR)",
    )
    parser.add_argument(
        "--database-url",
        metavar="URL",
        help="keep the relay's data in PostgreSQL (postgresql://user:password@host/db, or "
        "$CB_DATABASE_URL), shared by every relay node on it; default: SQLite in the data folder",
    )


def add_listen_args(parser: argparse.ArgumentParser) -> None:
    """The relay's data and where it listens, for the commands that run it."""
    add_data_args(parser)
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8765)")
    parser.add_argument(
        "--public-url",
        metavar="URL",
        help="the https address phones reach this relay at, behind a TLS proxy "
        "(pairing links and Secure cookies use it; default http://HOST:PORT)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="how much the server logs (default info)",
    )


def add_relay_args(parser: argparse.ArgumentParser) -> None:
    """The relay a session command talks to (cli/common.py ``connect``), and ``--json``."""
    parser.add_argument(
        "--relay", metavar="URL", help="the relay (default $CB_RELAY, else this machine's)"
    )
    parser.add_argument("--token", help="a phone token (default $CB_TOKEN)")
    parser.add_argument("--json", action="store_true", help="print JSON, for scripts")


def add_session_arg(parser: argparse.ArgumentParser) -> None:
    """SESSION, as cli/references.py reads it."""
    parser.add_argument(
        "session", metavar="SESSION", help="a session id, or -1, -2 … by creation (newest first)"
    )


def session_id(value: str) -> str:
    """An argparse ``type``: a session id as the relay takes it, a UUID in its canonical
    (lower-case) spelling; anything else is refused before anything is sent."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value[:80]!r} is not a session id: session ids are UUIDs "
            "(like 123e4567-e89b-12d3-a456-426614174000)"
        ) from None
