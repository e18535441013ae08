"""``claude-bridge pin``, ``unpin`` and ``retention``: which sessions are kept, and for how long.

claude-bridge pin SESSION | unpin SESSION [--json]
    Keep a session (never archived or deleted; an archived one is active again), or let it age.
claude-bridge retention [--run] [--json]
    What retention keeps: its ages, the last run, archived and pinned sessions, deletions waiting for
    an offline Mac. --run runs it now for this account and prints what it did.
"""

from __future__ import annotations

import argparse

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.client import RetentionCounts, RetentionReport, RetentionSettings, RetentionView, RunItem
from cli.common import connect, guarded, print_json
from cli.display import named, when
from cli.references import find_session


def cmd_pin(args: argparse.Namespace) -> int:
    pinning = args.command == "pin"
    relay = connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        view = relay.pin(session["id"], pinned=pinning)
    finally:
        relay.close()
    if args.json:
        print_json(view)
        return 0
    if pinning:
        print(
            f"Pinned session {named(session)}: kept, never archived or deleted "
            f"(stage: {view.get('stage')})."
        )
        return 0
    line = f"Unpinned session {named(session)}: it ages again"
    if view.get("stage") == "archived":
        line += f"; it is archived, and deleted {when(view.get('delete_at'))}"
    elif view.get("archive_at"):
        line += f"; archived {when(view.get('archive_at'))} if left idle"
    print(line + ".")
    return 0


def _days(value: float | None, never: str, rule: str) -> str:
    """``rule`` with the days filled in (``{days}``), or ``never`` for an age of 0 (turned off)."""
    days = float(value or 0)
    return never if days <= 0 else rule.format(days=f"{days:g}")


def retention_lines(view: RetentionView, macs: dict[str, str] | None = None) -> list[str]:
    """What `claude-bridge retention` prints for GET /api/retention (``macs``: id → name)."""
    settings = view.get("settings") or RetentionSettings()
    interval = float(settings.get("retention_interval") or 0)
    out = [
        "Retention: "
        + _days(
            settings.get("archive_after_days"), "never archive", "archive after {days} days idle"
        )
        + ", "
        + _days(
            settings.get("delete_after_days"), "never delete", "delete {days} days after archiving"
        )
        + f"; runs every {interval / 3600:g} h (next {when(view.get('next_run_at'))})."
    ]
    last = view.get("last_run")
    if last:
        out.append(
            f"Last run {when(last.get('ran_at'))} ({last.get('trigger')}): {last['summary']}"
        )
    else:
        out.append("Last run: none yet for this account.")
    archived = view.get("archived") or []
    out.append(f"Archived ({len(archived)}):" if archived else "Archived: none.")
    out += [
        f"  {a['session_id']}  archived {when(a.get('archived_at'))}"
        + (f", deleted {when(a['delete_at'])}" if a.get("delete_at") else "")
        for a in archived
    ]
    pinned = view.get("pinned") or []
    out.append(f"Pinned ({len(pinned)}): {', '.join(pinned)}" if pinned else "Pinned: none.")
    waiting = view.get("waiting_for_mac") or []
    if waiting:
        out.append(f"Deleted on the relay, waiting for an offline Mac ({len(waiting)}):")
        out += [
            f"  {w['session_id']}  on {(macs or {}).get(w.get('device_id') or '', w.get('device_id'))}"
            f", deleted {when(w.get('deleted_at'))}"
            for w in waiting
        ]
    return out


def run_lines(report: RetentionReport | None) -> list[str]:
    """What `claude-bridge retention --run` prints for the run's report."""
    if not report:
        return ["Ran retention now: this account has no sessions, nothing to do."]
    out = [f"Ran retention now: {report['summary']}."]

    def name(item: RunItem) -> str:
        title = item.get("title")
        return f'{item["session_id"]} "{title}"' if title else str(item["session_id"])

    for item in report.get("archived") or []:
        out.append(f"  archived   {name(item)} (idle {item.get('idle_days')} days)")
    for item in report.get("restored") or []:
        out.append(f"  active     {name(item)} (new events since it was archived)")
    for item in report.get("deleted") or []:
        where = (
            "also on its Mac"
            if item.get("mac") == "deleted"
            else "its Mac is offline and is told when it links again"
        )
        out.append(f"  deleted    {name(item)} ({where})")
    for item in report.get("failed") or []:
        out.append(f"  not deleted {name(item)}: {item.get('error')}")
    counts = report.get("counts") or RetentionCounts()
    working = report.get("kept_working") or []
    out.append(
        f"Kept {report.get('kept_pinned', 0)} pinned and {len(working)} working. Now "
        f"{counts.get('active', 0)} active, {counts.get('archived', 0)} archived, "
        f"{counts.get('pinned', 0)} pinned."
    )
    return out


def cmd_retention(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=not args.run)
    try:
        body = relay.run_retention() if args.run else relay.retention()
        macs: dict[str, str] = {}
        if body.get("waiting_for_mac") and not args.json:
            macs = {str(d["id"]): str(d["name"]) for d in relay.devices()}
    finally:
        relay.close()
    if args.json:
        print_json(body)
    elif args.run:
        print("\n".join(run_lines(body.get("report"))))
    else:
        print("\n".join(retention_lines(body, macs)))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``pin``, ``unpin`` and ``retention``."""
    for name, text in (
        ("pin", "keep a session: never archived or deleted (an archived one is active again)"),
        ("unpin", "let a pinned session age again"),
    ):
        pinning = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        add_session_arg(pinning)
        add_relay_args(pinning)
        pinning.set_defaults(func=guarded(cmd_pin))

    keeping = sub.add_parser(
        "retention",
        help="what retention archived, pinned and deleted; --run runs it now",
        description="Show retention's ages (archive_after_days, delete_after_days), its last "
        "run, archived and pinned sessions; --run runs it now and prints what it archived, "
        "made active again and deleted.",
    )
    keeping.add_argument("--run", action="store_true", help="run it now and print what it did")
    add_relay_args(keeping)
    keeping.set_defaults(func=guarded(cmd_retention))
