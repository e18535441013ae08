"""``claude-bridge decisions``: a session's decisions ledger, as the relay keeps it.

claude-bridge decisions SESSION [--json] [--add-constraint TEXT] [--remove-constraint ID]
    GET /api/sessions/{id}/decisions: the decisions (answers to questions, plan approvals and
    rejections, rules, model and mode changes) verbatim with the event each came from (#seq and
    time), the constraints pinned by the person, and the open items (tasks, a card waiting,
    held messages). ``--add-constraint`` pins a typed constraint first, ``--remove-constraint``
    removes one (its id as listed).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any, Final

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.client import SessionSnapshot
from cli.common import connect, guarded, print_json
from cli.display import named, when
from cli.references import find_session
from relay.handoff import CONTEXT_SHOWN, DECISION_LABELS
from wire.protocol import MODE_NAMES

# Words as the handoff and the phone's Decisions panel use them (relay/handoff.py).
LABELS: Final = DECISION_LABELS
OPEN_LABELS: Final = {"task": "task", "card": "waiting for you", "held": "held message"}
INDENT: Final = "      "


def _where(source: Mapping[str, Any] | None) -> str:
    source = source or {}
    seq = source.get("seq")
    place = f"#{seq}" if isinstance(seq, int) else "—"
    return f"{place} {when(source.get('at'))}" if source.get("at") else place


def _block(text: str) -> list[str]:
    """A verbatim text, every line of it, indented under its entry."""
    return [INDENT + line for line in str(text).splitlines() or [""]]


def ledger_lines(session: SessionSnapshot, ledger: Mapping[str, Any]) -> list[str]:
    """What `claude-bridge decisions` prints."""
    decisions: Sequence[Mapping[str, Any]] = ledger.get("decisions") or []
    constraints: Sequence[Mapping[str, Any]] = ledger.get("constraints") or []
    open_items: Sequence[Mapping[str, Any]] = ledger.get("open_items") or []
    out = [f"Decisions of session {named(session)}"]
    if not decisions:
        out.append("  none yet: answers, plan approvals, rules and mode changes are listed here")
    for d in decisions:
        kind = str(d.get("kind", ""))
        about = f" ({d.get('context')})" if d.get("context") and kind in CONTEXT_SHOWN else ""
        mark = "  [remember]" if d.get("remembered") else ""
        out.append(f"  {_where(d.get('source'))}  {LABELS.get(kind, kind)}{about}:{mark}")
        text = str(d.get("text", ""))
        out.extend(_block(MODE_NAMES.get(text, text) if kind == "mode" else text))
    if ledger.get("dropped"):
        out.append(f"  ({ledger['dropped']} older decisions are not kept)")
    out.append("Constraints")
    if not constraints:
        out.append("  none: pin one with --add-constraint TEXT, or from a message on the phone")
    for c in constraints:
        out.append(f"  {c.get('id')}  {_where(c.get('source'))}")
        out.extend(_block(str(c.get("text", ""))))
    out.append("Open items")
    if not open_items:
        out.append("  none")
    for o in open_items:
        status = f" [{o['status']}]" if o.get("status") else ""
        label = OPEN_LABELS.get(str(o.get("kind")), str(o.get("kind")))
        out.append(f"  {label}{status}: {o.get('text', '')}")
    return out


def cmd_decisions(args: argparse.Namespace) -> int:
    changing = bool(args.add_constraint or args.remove_constraint)
    relay = connect(args, read_only=not changing)
    try:
        session = find_session(relay, args.session)
        for text in args.add_constraint or []:
            relay.add_constraint(session["id"], text)
        for constraint_id in args.remove_constraint or []:
            relay.remove_constraint(session["id"], constraint_id)
        ledger = relay.decisions(session["id"])
    finally:
        relay.close()
    if args.json:
        print_json(ledger)
    else:
        print("\n".join(ledger_lines(session, ledger)))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``decisions``."""
    parser = sub.add_parser(
        "decisions",
        help="a session's decisions, pinned constraints and open items, verbatim",
        description="Print a session's decisions ledger: what was decided (each with the event "
        "it came from), the constraints pinned, what is still open.",
    )
    add_session_arg(parser)
    parser.add_argument(
        "--add-constraint",
        action="append",
        metavar="TEXT",
        help="pin this constraint first (repeatable)",
    )
    parser.add_argument(
        "--remove-constraint",
        action="append",
        metavar="ID",
        help="remove this constraint first (its id as listed; repeatable)",
    )
    add_relay_args(parser)
    parser.set_defaults(func=guarded(cmd_decisions))
