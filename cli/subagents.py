"""``claude-bridge subagents``: a session's subagents, or one subagent's whole history.

claude-bridge subagents SESSION [--agent ID] [--json]
    One summary line per subagent (type, task, outcome, cost), or with --agent (an id or a unique
    start of one) that subagent's whole history, read a page at a time.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.client import CommandError, Event, SessionSnapshot, SubagentSummary, every_page
from cli.common import connect, guarded, print_json
from cli.display import describe, named
from cli.references import find_session


def pick_subagent(listed: Sequence[SubagentSummary], wanted: str, session_id: str) -> str:
    """The agent id ``--agent`` names: an exact id, or the start of exactly one."""
    ids = [str(s["agent_id"]) for s in listed if s.get("agent_id")]
    if wanted in ids:
        return wanted
    starting = [i for i in ids if i.startswith(wanted)]
    if len(starting) == 1:
        return starting[0]
    if starting:
        raise CommandError(
            f"{len(starting)} subagents start with {wanted!r}: {', '.join(starting)}",
            "give more of the id",
        )
    raise CommandError(
        f"no subagent {wanted!r} in session {session_id}",
        f"its subagents: {', '.join(ids)}" if ids else "this session has no subagents",
    )


def subagent_lines(session: SessionSnapshot, listed: Sequence[SubagentSummary]) -> list[str]:
    if not listed:
        return [f"No subagents in session {named(session)}."]
    out = [f"Subagents of session {named(session)} ({len(listed)}):"]
    for index, sub in enumerate(listed, start=1):
        out.append(f"  {index}. {sub['line']}")
        span = f"#{sub['first_seq']}–#{sub['last_seq']}" if sub.get("first_seq") is not None else ""
        facts = [
            f"id {sub.get('agent_id') or '— (no transcript)'}",
            f"{sub.get('events', 0)} events {span}".strip(),
        ]
        if sub.get("call_seq") is not None:
            facts.append(f"started by {sub.get('tool') or 'Agent'} at #{sub['call_seq']}")
        out.append("     " + " · ".join(facts))
    first = next((s["agent_id"] for s in listed if s.get("agent_id")), None)
    if first:
        out.append(
            f"Full history: claude-bridge subagents {session['id']} --agent {str(first)[:8]}"
        )
    return out


def cmd_subagents(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=True)
    notes: list[str] = []
    try:
        session = find_session(relay, args.session)
        listed = relay.subagents(session["id"])
        if args.agent is None:
            if args.json:
                print_json({"session_id": session["id"], "subagents": listed})
            else:
                print("\n".join(subagent_lines(session, listed)))
            return 0
        agent_id = pick_subagent(listed, args.agent, session["id"])
        session_id = session["id"]
        events = every_page(
            lambda after, epoch: relay.subagent_events(
                session_id, agent_id, after=after, epoch=epoch
            ),
            notes.append,
        )
    finally:
        relay.close()
    summary = next(s for s in listed if s.get("agent_id") == agent_id)
    if args.json:
        print_json(
            {"session_id": session["id"], "subagent": summary, "events": events, "notes": notes}
        )
        return 0
    out = [
        f"Subagent {agent_id} of session {named(session)}",
        f"  {summary['line']}",
        *notes,
    ]
    out += [describe(_without_agent(e)) for e in events] or ["(no events)"]
    out.append(f"{len(events)} events. Page: {relay.page_link(session['id'], read_only=True)}")
    print("\n".join(out))
    return 0


def _without_agent(event: Event) -> Event:
    """A subagent's own history: its events need no ``[subagent …]`` mark."""
    quiet = event.copy()
    quiet.pop("agent_id", None)
    return quiet


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``subagents``."""
    helpers = sub.add_parser(
        "subagents",
        help="a session's subagents, one line each, or one's whole history (--agent)",
        description="List a session's subagents, one line each (type, task, outcome, cost), or "
        "print one subagent's whole history with --agent.",
    )
    add_session_arg(helpers)
    helpers.add_argument("--agent", metavar="ID", help="an agent id, or the start of one")
    add_relay_args(helpers)
    helpers.set_defaults(func=guarded(cmd_subagents))
