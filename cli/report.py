"""``claude-bridge report``: the usage report, per Mac and per project.

claude-bridge report [--since DATE] [--until DATE] [--json]
    GET /api/report: sessions started and resumed (by scope) and the resume rate, tokens re-read
    on resume and avoided (by scope), searches and the share followed by opening a result within
    two minutes, memory candidates proposed / accepted / dismissed, retention's expiries done
    against due — for the account, each Mac and each project. The last 30 days by default.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, Final

from cli.arguments import Subcommands, add_relay_args
from cli.common import connect, guarded, print_json
from cli.display import short_folder

SCOPES: Final = ("full", "summary", "fresh")
NO_FIGURE: Final = "—"


def rate(value: object) -> str:
    return f"{value * 100:.0f}%" if isinstance(value, int | float) else NO_FIGURE


def tokens(value: object) -> str:
    if not isinstance(value, int | float):
        return NO_FIGURE
    size = abs(value)
    if size >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if size >= 1_000:
        return f"{value / 1_000:.1f}k"
    return str(int(value))


COLUMNS: Final = ("", "started", "resumed", "rate", "re-read", "avoided", "searches", "found",
                  "memory +/−", "expired")  # fmt: skip


def row(name: str, figures: Mapping[str, Any]) -> list[str]:
    sessions, search = figures["sessions"], figures["search"]
    resumed = sessions["resumed"]
    by_scope = "/".join(str(resumed[s]) for s in SCOPES)
    reread = sum(figures["tokens"][s]["reread"] for s in SCOPES)
    avoided = sum(figures["tokens"][s]["avoided"] for s in SCOPES)
    memory, retention = figures["memory"], figures["retention"]
    return [
        name,
        str(sessions["started"]),
        by_scope,
        rate(sessions["resume_rate"]),
        tokens(reread),
        tokens(avoided),
        str(search["searches"]),
        rate(search["success_rate"]),
        f"{memory['proposed']}: {memory['accepted']}/{memory['dismissed']}",
        f"{retention['done']}/{retention['due']}",
    ]


def report_lines(body: Mapping[str, Any]) -> list[str]:
    """The report as a table: the account, then each Mac, then each project."""
    macs: Mapping[str, str] = body.get("macs") or {}
    rows = [row("all", body["totals"])]
    rows += [row(f"mac:{macs.get(k, k)}", v) for k, v in body["by_mac"].items()]
    rows += [row(short_folder(k), v) for k, v in body["by_project"].items()]
    widths = [max(len(r[i]) for r in [list(COLUMNS), *rows]) for i in range(len(COLUMNS))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            f"{c:<{w}}" if i == 0 else f"{c:>{w}}"
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    out = [f"Usage {body.get('since_iso')} … {body.get('until_iso')}", line(list(COLUMNS))]
    out += [line(r) for r in rows]
    hows = body.get("starts_by_how") or {}
    if hows:
        out.append("starts: " + ", ".join(f"{how} {hows[how]}" for how in hows))
    out.append(
        "resumed: full/summary/fresh · re-read: tokens the first answer after a resume read · "
        "found: searches followed by opening a result within 2 min · memory: proposed: "
        "accepted/dismissed · expired: done/due"
    )
    return out


def cmd_report(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=True)
    try:
        body = relay.report(args.since, args.until)
    finally:
        relay.close()
    if args.json:
        print_json(body)
    else:
        print("\n".join(report_lines(body)))
    return 0


def register(sub: Subcommands) -> None:
    """``report``."""
    reporting = sub.add_parser(
        "report",
        help="usage: starts and resumes, tokens re-read, search success, memory, expiries",
        description="Print the usage report for the account, each Mac and each project: "
        "sessions started and resumed (by scope), tokens re-read on resume and avoided, "
        "searches and how many were followed, memory candidates, retention's expiries.",
    )
    reporting.add_argument(
        "--since", metavar="DATE", help="from (2026-12-01, an ISO time or epoch s; 30 days ago)"
    )
    reporting.add_argument("--until", metavar="DATE", help="to (same forms; default now)")
    add_relay_args(reporting)
    reporting.set_defaults(func=guarded(cmd_report))
