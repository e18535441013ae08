"""``claude-bridge sessions`` and ``claude-bridge search``: the relay's sessions, listed or found.

claude-bridge sessions [--json]
    id, title, Mac, folder, state, created and cost of every session, newest created first.
claude-bridge search [QUERY…] [--mac MAC] [--cwd DIR | --here] [--state S] [--group G]
                     [--archived | --active] [--since DATE] [--until DATE] [--limit N] [--json]
    GET /api/search: ranked by title, summary, files touched, tools, Mac, folder and date (no
    QUERY: browse, newest activity first). With --mac and/or --cwd (--here: the current folder,
    and this Mac when its agent is linked to the same account) the results come in two sections,
    "This Mac / this folder" and "Other places"; without them, one list. Each result: id, title,
    Mac, folder, state, last active, summary.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TypedDict

from cli.arguments import Subcommands, add_relay_args
from cli.client import (
    CostSummary,
    Device,
    SearchItem,
    SearchMore,
    SearchQuery,
    SearchResults,
    SessionSnapshot,
    StartFailure,
)
from cli.common import connect, guarded, print_json
from cli.display import clip, cost_text, short_folder, state_of, trouble_lines, when
from cli.references import by_creation, pick_device, this_mac

HERE_HEADING = "This Mac / this folder"
ELSEWHERE_HEADING = "Other places"


# -- sessions ----------------------------------------------------------------------------------


class SessionRow(TypedDict):
    """One line of `claude-bridge sessions` (its ``--json`` too), with its -N reference."""

    ref: int
    id: str
    title: str
    device_id: str | None
    mac: str
    cwd: str
    state: str
    created_at: str | None
    cost: CostSummary | None
    error: str | None  # what went wrong, in one line
    failure: StartFailure | None  # claude ended before the session was live


def session_rows(
    sessions: Sequence[SessionSnapshot], devices: Sequence[Device]
) -> list[SessionRow]:
    """What `claude-bridge sessions` shows, newest created first, with each one's -N reference."""
    names = {d["id"]: d["name"] for d in devices}
    return [
        SessionRow(
            ref=-index,
            id=s["id"],
            title=s.get("title") or "",
            device_id=s.get("device_id"),
            mac=names.get(s.get("device_id") or "", s.get("device_id") or ""),
            cwd=s.get("cwd") or "",
            state=state_of(s),
            created_at=s.get("created_at"),
            cost=s.get("cost"),
            error=s.get("error"),
            failure=s.get("failure"),
        )
        for index, s in enumerate(by_creation(sessions), start=1)
    ]


def table(rows: Sequence[SessionRow]) -> list[str]:
    head = ("REF", "ID", "TITLE", "MAC", "FOLDER", "STATE", "CREATED", "COST")
    cells = [
        (
            str(r["ref"]),
            str(r["id"]),
            clip(r["title"] or "—", 40),
            clip(str(r["mac"]), 20),
            clip(short_folder(r["cwd"]) or "—", 40),
            r["state"],
            when(r["created_at"]),
            cost_text(r),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    return [
        "  ".join(value.ljust(width) for value, width in zip(line, widths, strict=True)).rstrip()
        for line in (head, *cells)
    ]


NO_SESSIONS = (
    "No sessions yet. Start one on the page (+ New session), or in a terminal in the folder to "
    "work in: claude-bridge claude"
)


def troubles(rows: Sequence[SessionRow]) -> list[str]:
    """Below the table: each session that went wrong, what happened and what to do."""
    out: list[str] = []
    for row in rows:
        lines = trouble_lines(row, indent="    ")
        if lines:
            out += [f"{row['ref']}  {clip(row['title'] or row['id'], 40)}", *lines]
    return ["", *out] if out else []


def cmd_sessions(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=True)  # listing changes nothing
    try:
        rows = session_rows(relay.sessions(), relay.devices())
    finally:
        relay.close()
    if args.json:
        print_json(rows)
    elif not rows:
        print(NO_SESSIONS)
    else:
        print("\n".join([*table(rows), *troubles(rows)]))
    return 0


# -- search ------------------------------------------------------------------------------------


def search_params(args: argparse.Namespace, devices: Sequence[Device]) -> SearchQuery:
    """The query string of GET /api/search for the command's arguments."""
    params = SearchQuery(q=" ".join(args.query).strip())
    if args.mac is not None:
        params["device_id"] = pick_device(devices, args.mac)["id"]
    elif args.here and (here := this_mac(devices)) is not None:
        params["device_id"] = here["id"]  # this Mac and this folder
    cwd = args.cwd if args.cwd is not None else (os.getcwd() if args.here else None)
    if cwd is not None:
        params["cwd"] = cwd if cwd.startswith("/") else os.path.abspath(os.path.expanduser(cwd))
    states = [s.strip() for value in args.state or [] for s in value.split(",") if s.strip()]
    if states:
        params["state"] = ",".join(states)
    if args.group is not None:
        params["group"] = args.group
    if args.stage is not None:
        params["stage"] = args.stage
    if args.since is not None:
        params["since"] = args.since
    if args.until is not None:
        params["until"] = args.until
    if args.limit is not None:
        params["limit"] = args.limit
    return params


def search_lines(body: SearchResults, params: SearchQuery, mac: str | None) -> list[str]:
    """What `claude-bridge search` prints for the relay's answer."""
    query = body.get("query") or ""
    out: list[str] = []
    if body.get("note"):
        out.append(str(body["note"]))
    split = "device_id" in params or "cwd" in params
    here, elsewhere = list(body.get("here") or []), list(body.get("elsewhere") or [])
    more = body.get("has_more") or SearchMore()
    if not here and not elsewhere and not body.get("note"):
        what = f"matches {query!r}" if query else "is listed"
        return [f"No session {what} with these filters."]
    if query:
        out.append(f"Sessions matching {query!r}, best first:")
    else:
        out.append("Sessions, most recently active first:")
    sections: list[tuple[str | None, list[SearchItem], bool]] = []
    if split:
        place = " · ".join(
            x for x in (mac, short_folder(str(params["cwd"])) if "cwd" in params else None) if x
        )
        sections.append((f"{HERE_HEADING}: {place}", here, bool(more.get("here"))))
        sections.append((ELSEWHERE_HEADING, elsewhere, bool(more.get("elsewhere"))))
    else:
        sections.append((None, here + elsewhere, bool(more.get("here") or more.get("elsewhere"))))
    for heading, items, has_more in sections:
        if heading is not None:
            out.append("")
            out.append(f"{heading} ({len(items)}{'+' if has_more else ''})")
        if not items:
            out.append("  (none)")
        for item in items:
            out += search_row(item)
        if has_more:
            out.append("  … more: narrow the search, or show more with --limit N (at most 100)")
    return out


def search_row(item: SearchItem) -> list[str]:
    marks = "".join(f"  [{m}]" for m in (item.get("stage"),) if m and m != "active")
    lines = [
        f"  {item['id']}  {clip(item.get('title') or '(untitled)', 70)}{marks}",
        "      "
        + " · ".join(
            (
                str(item.get("mac") or item.get("device_id") or "?"),
                short_folder(str(item.get("cwd") or "")) or "—",
                state_of(item),
                f"active {when(item.get('updated_at'))}",
            )
        ),
    ]
    summary = " ".join(str(item.get("summary") or "").split())
    if summary:
        lines.append(f"      {clip(summary, 200)}")
    return lines


def cmd_search(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=True)
    try:
        devices = relay.devices() if args.mac is not None or args.here else []
        params = search_params(args, devices)
        body = relay.search(params)
    finally:
        relay.close()
    if args.json:
        print_json(body)
        return 0
    mac = None
    if "device_id" in params:
        mac = next(str(d["name"]) for d in devices if d["id"] == params["device_id"])
    print("\n".join(search_lines(body, params, mac)))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``sessions`` and ``search``."""
    listing = sub.add_parser(
        "sessions",
        help="list sessions, newest created first",
        description="List the relay's sessions, newest created first: id, title, Mac, folder, "
        "state, created, cost.",
    )
    add_relay_args(listing)
    listing.set_defaults(func=guarded(cmd_sessions))

    finder = sub.add_parser(
        "search",
        help="search sessions by title, summary, files, tools, Mac, folder and date "
        "(no QUERY: browse)",
        description="Search sessions by title, summary, files, tools, Mac, folder and date; "
        "with no QUERY, browse. With --mac, --cwd or --here the results come in two sections: "
        '"This Mac / this folder" and "Other places".',
    )
    finder.add_argument("query", nargs="*", metavar="QUERY", help="words (all must match)")
    finder.add_argument(
        "--mac", metavar="MAC", help='Mac id or name: its sessions listed apart ("This Mac")'
    )
    place = finder.add_mutually_exclusive_group()
    place.add_argument(
        "--cwd",
        metavar="DIR",
        help='a folder: sessions in it or below listed apart ("this folder")',
    )
    place.add_argument(
        "--here",
        action="store_true",
        help="this folder (as --cwd $PWD) and, when its agent is linked here, this Mac "
        "(never by default)",
    )
    finder.add_argument(
        "--state",
        action="append",
        metavar="S",
        help="starting, idle, busy, waiting or ended (repeat or comma-separate for several)",
    )
    finder.add_argument("--group", metavar="G", help="only this group")
    stage = finder.add_mutually_exclusive_group()
    stage.add_argument(
        "--archived", dest="stage", action="store_const", const="archived", help="only archived"
    )
    stage.add_argument(
        "--active", dest="stage", action="store_const", const="active", help="only not archived"
    )
    finder.add_argument(
        "--since", metavar="DATE", help="active on or after (2026-11-29, an ISO time or epoch s)"
    )
    finder.add_argument("--until", metavar="DATE", help="created on or before (same forms)")
    finder.add_argument(
        "--limit", type=int, metavar="N", help="results per section (default 20, at most 100)"
    )
    add_relay_args(finder)
    finder.set_defaults(func=guarded(cmd_search))
