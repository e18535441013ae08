"""``claude-bridge move``: a session goes on on another Mac.

claude-bridge move SESSION [MAC] [--cwd DIR] [--now] [--no-wait] [--json]
    POST /api/sessions/{id}/move: the session goes on on MAC (a name or id; default: the only
    other online Mac) with its working folder (DIR, default the same path), conversation, held
    messages and events. It moves when its turn ends; --now interrupts the turn first. Shows the
    progress until the move is done or failed (--no-wait: only begins it).

Choosing the Mac (:func:`move_target`) and the progress line (:func:`move_line`) are pure.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.client import CommandError, Device, Move
from cli.common import connect, fail, guarded, print_json
from cli.display import named
from cli.references import find_session, mac_listing, pick_device

MOVE_POLL_SECONDS = 0.5  # how often `move` reads the progress again


def move_target(devices: Sequence[Device], wanted: str | None, source_id: str | None) -> Device:
    """The Mac a session moves to: the one named (id or name), else the only other online Mac."""
    others = [d for d in devices if d["id"] != source_id]
    if wanted is not None:
        if wanted == source_id or any(
            d["id"] == source_id and str(d["name"]).lower() == wanted.lower() for d in devices
        ):
            raise CommandError("the session is on that Mac already", "name another Mac")
        return pick_device(others, wanted)
    online = [d for d in others if d.get("online")]
    if len(online) == 1:
        return online[0]
    listing = mac_listing(others)
    if not online:
        raise CommandError(
            "no other Mac is online to move the session to",
            f"start the agent on the other Mac. Macs: {listing}"
            if others
            else "pair another Mac: `claude-bridge pair --kind device`",
        )
    raise CommandError(
        f"{len(online)} other Macs are online; name the one to move to", f"Macs: {listing}"
    )


def move_line(move: Move, target: str) -> str:
    """One line of a move's progress (its step and the bytes carried), or that it is done."""
    if move.get("state") == "done":
        return f"Moved to {target}, in {move.get('cwd')}."
    step = (move.get("step") or move.get("phase") or "moving").replace("_", " ")
    total = int(move.get("total") or 0)
    if total:
        done = min(int(move.get("bytes") or 0), total)
        return f"Moving to {target}: {step}, {human_bytes(done)} of {human_bytes(total)}"
    return f"Moving to {target}: {step}"


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB"):
        if size < 1024 or unit == "MB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"  # pragma: no cover - the loop returns


def cmd_move(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        target = move_target(relay.devices(), args.mac, session.get("device_id"))
        move = relay.move(
            session["id"], target["id"], cwd=args.cwd, when="now" if args.now else "idle"
        )
        if not args.json:
            how = "now (its turn is interrupted)" if args.now else "when its turn ends"
            print(f"Moving {named(session)} to {target['name']} {how}.")
        shown = ""
        while not args.no_wait and move.get("state") == "moving":
            line = move_line(move, target["name"])
            if line != shown and not args.json:
                print(f"  {line}", flush=True)
                shown = line
            time.sleep(MOVE_POLL_SECONDS)
            move = relay.move_status(session["id"])
    finally:
        relay.close()
    if args.json:
        print_json(move)
        return 2 if move.get("state") == "failed" else 0
    if move.get("state") == "failed":
        error = move.get("error") or {"code": None, "message": "the move failed"}
        fail(
            f"not moved to {target['name']}: {error['message']} ({error['code']})",
            "the session goes on where it was; fix that and move it again",
        )
    if move.get("state") == "moving":
        print(f"  its progress is on the page: {relay.page_link(session['id'])}")
    else:
        print(move_line(move, target["name"]))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``move``."""
    moving = sub.add_parser(
        "move",
        help="move a session to another Mac with its folder, conversation and held messages",
        description="Move a session to another Mac of the account: its working folder (a git "
        "repository's branch, commits, uncommitted and untracked files; ignored things stay), "
        "its conversation (continued there with claude --resume), held messages and events. "
        "A move that fails leaves the session running where it was, with the reason.",
    )
    add_session_arg(moving)
    moving.add_argument(
        "mac", nargs="?", metavar="MAC", help="the Mac to move to (default: the only other online)"
    )
    moving.add_argument("--cwd", metavar="DIR", help="the folder on that Mac (default: the same)")
    moving.add_argument(
        "--now", action="store_true", help="interrupt the turn (default: when the turn ends)"
    )
    moving.add_argument(
        "--no-wait", action="store_true", help="only begin the move; do not show its progress"
    )
    add_relay_args(moving)
    moving.set_defaults(func=guarded(cmd_move))
