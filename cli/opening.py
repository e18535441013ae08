"""``claude-bridge open``: a session from this terminal, by id or by creation order.

claude-bridge open [SESSION | --session ID|-N] [--scope full|summary|fresh] [--device MAC] [--cwd DIR]
                   [--read-only] [--tail N] [--json]
    ID resumes that session (reopened when it has ended, shown when it runs) or, when the relay has
    none with that id, starts one with exactly that id on MAC (default: the only online Mac) in DIR
    (default: the current folder), so a script can choose its ids up front. -1 is the session
    created last, -2 the one before (creation order: resuming a session does not make it -1).
    --read-only prints the whole conversation (with --tail N: its last N events) and sends
    nothing: every request carries ``X-CB-Read-Only: 1`` and the relay refuses any change made
    with it.
    --scope says how a stopped session comes back, this once (else the session's own resume
    scope, else the account's): ``full`` resumes the whole conversation, ``summary`` resumes it
    and compacts it first (Claude Code's /compact), ``fresh`` starts a new conversation from the
    session's decisions (its handoff).

Exit status: 0 done; 2 with a message on every error (unknown offset, Mac offline, bad token…).
"""

from __future__ import annotations

import argparse
import os

from cli.arguments import Subcommands, add_relay_args
from cli.client import (
    ApiError,
    CommandError,
    Event,
    RelayClient,
    SessionSnapshot,
    SubagentSummary,
    whole_conversation,
)
from cli.common import connect, guarded, print_json
from cli.display import describe, is_running, state_of, trouble_lines, when
from cli.references import mac_name, parse_ref, pick_device, pick_offset

PAGE = 500  # the relay's largest page of events (its catchup_page setting, by default)
DEFAULT_TAIL = 10  # events shown after opening (--read-only shows them all unless --tail N)


def _header(session: SessionSnapshot, mac: str) -> list[str]:
    title = f' — "{session["title"]}"' if session.get("title") else ""
    return [
        f"Session {session['id']}{title}",
        f"  Mac: {mac} · folder: {session.get('cwd') or '—'} · state: {state_of(session)}"
        f" · created {when(session.get('created_at'))}",
        *trouble_lines(session),
    ]


SCOPE_WORDS = {
    "full": "the whole conversation",
    "summary": "from a summary (Claude Code's /compact first)",
    "fresh": "fresh: a new conversation from its decisions",
}


def cmd_open(args: argparse.Namespace) -> int:
    given = args.session or args.ref
    if not given or (args.session and args.ref and args.session != args.ref):
        raise CommandError(
            "say which session to open", "give its id or -N once: open ID, or open --session ID"
        )
    ref = parse_ref(given)
    relay = connect(args, read_only=args.read_only)
    try:
        session: SessionSnapshot | None
        if isinstance(ref, int):
            session = relay.session(pick_offset(relay.sessions(), ref)["id"])
            if session is None:
                raise CommandError(f"session -{ref} was just removed; run this again")
        else:
            session = relay.session(ref)
        if args.read_only:
            if session is None:
                raise CommandError(
                    f"no session {ref}",
                    "--read-only never starts a session; drop it to start one with this id",
                )
            return _read(relay, session, args.json, args.tail)
        return _open(relay, ref, session, args)
    finally:
        relay.close()


def _read(
    relay: RelayClient, session: SessionSnapshot, as_json: bool, tail: int | None = None
) -> int:
    """The conversation, read only: the whole of it, or (``tail``) its last events."""
    notes: list[str] = []
    last = int(session.get("last_seq") or 0)
    if tail is not None:
        events: list[Event] = []
        if last and tail > 0:
            page = relay.events(session["id"], before=last + 1, limit=min(tail, PAGE))
            events = page["events"]
    else:
        events = whole_conversation(relay, session["id"], notes.append)
    subagents: list[SubagentSummary]
    try:
        subagents = relay.subagents(session["id"])
    except ApiError:
        subagents = []  # an older relay: the conversation is still worth showing
    link = relay.page_link(session["id"], read_only=True)
    if as_json:
        print_json({"session": session, "events": events, "subagents": subagents, "link": link})
        return 0
    out = _header(session, mac_name(relay, session.get("device_id")))
    out[0] += " (read-only)"
    out += notes
    out += [describe(e) for e in events] or ["(no events yet)"]
    if subagents:
        out.append("Subagents:")
        out += [f"  {s['line']} ({s['events']} events, {s['agent_id']})" for s in subagents]
    out.append(f"Page: {link}")
    print("\n".join(out))
    return 0


def _open(
    relay: RelayClient, ref: int | str, session: SessionSnapshot | None, args: argparse.Namespace
) -> int:
    used: str | None = None  # the resume scope a reopen used
    if session is None:
        assert isinstance(ref, str)
        device = pick_device(relay.devices(), args.device)
        cwd = args.cwd or os.getcwd()
        created = relay.create_session(device["id"], cwd, ref)
        session_id = str(created["id"])
        action = f"Started a new session on {device['name']} in {cwd}"
    elif is_running(session):
        session_id = session["id"]
        action = "Already running"
        if args.scope:
            action += f" (--scope {args.scope} applies when a stopped session starts again)"
    else:
        session_id = session["id"]
        used = relay.reopen(session_id, args.scope)
        action = "Reopened"
    snapshot = relay.session(session_id) or session or SessionSnapshot(id=session_id)
    said = f"{action}, {SCOPE_WORDS.get(used, used)}" if used else action
    tail: list[Event] = []
    last = int(snapshot.get("last_seq") or 0)
    wanted = DEFAULT_TAIL if args.tail is None else args.tail
    if last and wanted > 0:
        try:
            tail = relay.events(session_id, before=last + 1, limit=min(wanted, PAGE))["events"]
        except ApiError:
            tail = []  # older events only on an offline Mac: the link below still works
    link = relay.page_link(session_id)
    if args.json:
        body = {"action": action, "scope": used, "session": snapshot, "events": tail, "link": link}
        print_json(body)
        return 0
    out = [said + ".", *_header(snapshot, mac_name(relay, snapshot.get("device_id")))]
    if tail:
        out.append(f"Last {len(tail)} events:")
        out += [describe(e) for e in tail]
    out += [
        f"Send and watch on the page: {link}",
        f"Read it here: claude-bridge open --session {session_id} --read-only",
    ]
    print("\n".join(out))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``open``: resume, start or read a session."""
    opener = sub.add_parser(
        "open",
        help="resume a session by id or -N (creation order), start one with a chosen id, "
        "or read one (--read-only)",
        description="Open a session from this terminal: resume it on its Mac by id or by "
        "creation order (-1 newest), or start one with exactly that id (a UUID) when none "
        "exists; show its last events. --read-only prints the conversation and sends nothing.",
    )
    opener.add_argument(
        "ref", nargs="?", metavar="SESSION", help="the session (as --session), given plainly"
    )
    opener.add_argument(
        "--session",
        metavar="ID|-N",
        help="a session id (a UUID: started with that id when none exists) or -1, -2 … by creation",
    )
    opener.add_argument(
        "--scope",
        choices=("full", "summary", "fresh"),
        help="how a stopped session comes back, this once: the whole conversation (full), "
        "compacted first (summary), or a new conversation from its decisions (fresh)",
    )
    opener.add_argument("--device", metavar="MAC", help="Mac id or name for a new session")
    opener.add_argument("--cwd", metavar="DIR", help="folder of a new session (default: here)")
    opener.add_argument(
        "--read-only", action="store_true", help="print the conversation; send nothing"
    )
    opener.add_argument(
        "--tail",
        type=int,
        metavar="N",
        help=f"last events shown after opening (default {DEFAULT_TAIL}); with --read-only, only "
        "the last N instead of the whole conversation",
    )
    add_relay_args(opener)
    opener.set_defaults(func=guarded(cmd_open))
