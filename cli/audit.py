"""``claude-bridge audit``: every decision on a card, who or which rule made it.

claude-bridge audit [--session SESSION] [--since DATE] [--until DATE] [--limit N] [--json]
    GET /api/audit: every decision on a card, newest first — who answered (the phone, its token
    id and address) or which rule did (a policy rule, allow all, a hook), the card (tool, input
    digest, summary) and the answer. SESSION may be one retention already deleted (its id).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from cli.arguments import Subcommands, add_relay_args
from cli.client import AuditAnswer, AuditCard, AuditEntry, AuditQuery, CommandError
from cli.common import connect, guarded, print_json
from cli.display import clip, first_line, when
from cli.references import parse_ref, pick_offset

AUDIT_PAGE = 200  # the relay's largest page of audit entries


def answer_text(entry: AuditEntry) -> str:
    answer = entry.get("answer") or AuditAnswer()
    if "decision" in answer:
        return str(answer["decision"])
    keys = answer.get("keys") or []
    labels = answer.get("labels") or []
    parts = [f"{label or '?'} [{key}]" for key, label in zip(keys, labels, strict=False)]
    if answer.get("text"):
        parts.append(f'"{clip(first_line(str(answer["text"])), 60)}"')
    text = ", ".join(parts) or "—"
    return text + (" · always" if answer.get("always") else "")


def who_text(entry: AuditEntry, macs: dict[str, str]) -> str:
    who = entry.get("who")
    if who:
        return (
            f'phone "{who.get("name") or who.get("phone_id")}" ({who.get("phone_id")},'
            f" token {who.get('token_id')}, from {who.get('address') or '?'})"
        )
    mac = macs.get(str(entry.get("device_id")), str(entry.get("device_id") or "?"))
    return f"{entry.get('source')}: {entry.get('rule') or '?'} (on {mac})"


def audit_lines(entries: Sequence[AuditEntry], macs: dict[str, str]) -> list[str]:
    """Two lines per decision: when, the card and the answer; who or which rule, the session."""
    if not entries:
        return ["No decisions in the audit log for this choice."]
    out = []
    for entry in entries:
        card = entry.get("card") or AuditCard()
        what = card.get("tool") or card.get("title") or card.get("kind") or "card"
        summary = clip(first_line(str(card.get("summary") or "")), 70)
        digest = card.get("input_digest")
        out.append(
            f"{when(entry.get('at'))}  {what}"
            + (f" {summary}" if summary else "")
            + (f" (sha256 {str(digest)[:12]})" if digest else "")
            + f" → {answer_text(entry)}"
        )
        out.append(f"    by {who_text(entry, macs)} · session {entry.get('session_id')}")
    return out


def cmd_audit(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 1:
        raise CommandError("--limit must be 1 or more")
    wanted = args.limit or 100
    relay = connect(args, read_only=True)
    try:
        params = AuditQuery()
        if args.session:
            ref = parse_ref(args.session, "--session")
            # An id is taken as it is: a session retention deleted keeps its audit rows.
            params["session_id"] = (
                pick_offset(relay.sessions(), ref)["id"] if isinstance(ref, int) else ref
            )
        if args.since:
            params["since"] = args.since
        if args.until:
            params["until"] = args.until
        entries: list[AuditEntry] = []
        while len(entries) < wanted:
            params["limit"] = min(AUDIT_PAGE, wanted - len(entries))
            body = relay.audit(params)
            entries += body["entries"]
            next_before = body.get("next_before")
            if next_before is None:
                break
            params["before"] = next_before
        macs = {} if args.json else {str(d["id"]): str(d["name"]) for d in relay.devices()}
    finally:
        relay.close()
    if args.json:
        print_json({"entries": entries})
    else:
        print("\n".join(audit_lines(entries, macs)))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``audit``."""
    auditing = sub.add_parser(
        "audit",
        help="every decision on a card: who or which rule, which card, which answer",
        description="Print the audit log, newest first: every decision on a card, the phone "
        "(name, token id, address) or the rule that made it, the card and the answer.",
    )
    auditing.add_argument(
        "--session", metavar="SESSION", help="only this session (an id, or -1, -2 …)"
    )
    auditing.add_argument(
        "--since", metavar="DATE", help="on or after (2026-11-29, an ISO time or epoch s)"
    )
    auditing.add_argument("--until", metavar="DATE", help="on or before (same forms)")
    auditing.add_argument(
        "--limit", type=int, metavar="N", help="at most N decisions, newest first (default 100)"
    )
    add_relay_args(auditing)
    auditing.set_defaults(func=guarded(cmd_audit))
