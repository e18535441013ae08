"""``claude-bridge session-cost``: what a session cost, as the relay counted it.

claude-bridge session-cost SESSION [--json]
    GET /api/sessions/{id}/cost: tokens and USD in total, per model and per subagent. (`claude-bridge
    cost FILE.jsonl…`, cli/transcripts.py, reads transcript files instead, without a relay.)
"""

from __future__ import annotations

import argparse
from typing import Literal

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.client import ApiError, CostReport, SessionSnapshot, SubagentSummary
from cli.common import connect, guarded, print_json
from cli.display import clip, named, usd_text
from cli.references import find_session

TokenField = Literal["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]
TOKEN_FIELDS: tuple[tuple[TokenField, str], ...] = (
    ("input_tokens", "INPUT"),
    ("output_tokens", "OUTPUT"),
    ("cache_read_tokens", "CACHE READ"),
    ("cache_write_tokens", "CACHE WRITE"),
)


def cost_lines(session: SessionSnapshot, report: CostReport, agents: dict[str, str]) -> list[str]:
    """What `claude-bridge session-cost` prints: totals, then per model and per subagent."""
    source = report.get("source")
    how = (
        "Claude Code's own figure, from its cost-state line"
        if source == "cost-state"
        else "estimated from the price catalogue"
    )
    out = [f"Cost of session {named(session)}", f"  USD: {usd_text(report.get('usd'))}  ({how})"]
    unknown = report.get("unknown_models") or []
    if unknown:
        out.append(
            f"  no price known for {', '.join(map(str, unknown))}: set one with CB_MODEL_PRICES"
        )
    out += [
        f"  {label.lower() + ':':13}{int(report.get(key) or 0):>12,} tokens"
        for key, label in TOKEN_FIELDS
    ]
    for title, part, names in (
        ("By model", report.get("by_model") or {}, {}),
        ("By subagent", report.get("by_agent") or {}, agents),
    ):
        if not part:
            continue
        head = ("NAME", *(label for _, label in TOKEN_FIELDS), "USD")
        rows = [
            (
                clip(names.get(name, name), 48),
                *(f"{int(line.get(key) or 0):,}" for key, _ in TOKEN_FIELDS),
                usd_text(line.get("usd")),
            )
            for name, line in part.items()
        ]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
        out.append(f"{title}:")
        for cells in (head, *rows):
            out.append(
                "  "
                + "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(cells, widths, strict=True))
                ).rstrip()
            )
    return out


def cmd_session_cost(args: argparse.Namespace) -> int:
    relay = connect(args, read_only=True)
    try:
        session = find_session(relay, args.session)
        report = relay.cost(session["id"])
        agents: dict[str, str] = {}
        if report.get("by_agent") and not args.json:
            listed: list[SubagentSummary]
            try:
                listed = relay.subagents(session["id"])
            except ApiError:
                listed = []  # the figures are still worth showing without the names
            for sub in listed:
                if agent_id := sub.get("agent_id"):
                    kind = " · ".join(
                        str(x) for x in (sub.get("agent_type"), sub.get("description")) if x
                    )
                    agents[agent_id] = f"{agent_id} {kind}".strip()
    finally:
        relay.close()
    if args.json:
        print_json(report)
    else:
        print("\n".join(cost_lines(session, report, agents)))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``session-cost``."""
    costing = sub.add_parser(
        "session-cost",
        help="tokens and USD of a session on the relay, per model and per subagent",
        description="Print a session's tokens and USD as the relay counted them, per model and "
        "per subagent.",
    )
    add_session_arg(costing)
    add_relay_args(costing)
    costing.set_defaults(func=guarded(cmd_session_cost))
