"""``claude-bridge policy``: a session's permission policy, shown or changed on its Mac.

claude-bridge policy SESSION [--allow-all [--for DURATION] | --no-allow-all] [--category C=RULE…]
                     [--tool T=RULE…] [--reset] [--json]
    Without changes: the session's permission policy (the relay's copy, also while the Mac is
    offline). With changes: sent to the Mac, which must be online, and applied there on top of the
    policy it holds (--reset: on top of the default, ask for everything); prints the policy it now
    holds.
    RULE is allow, ask or deny, or unset to drop the rule.

The arguments' reading (:func:`parse_rule`, :func:`parse_duration`, :func:`policy_changes`) and
the lines shown (:func:`policy_lines`) are pure.
"""

from __future__ import annotations

import argparse
import re
from datetime import datetime

from cli.arguments import Subcommands, add_relay_args, add_session_arg
from cli.client import CommandError, Policy, PolicyChanges, PolicyView, SessionSnapshot
from cli.common import connect, guarded, print_json
from cli.display import named, when
from cli.references import find_session, mac_name

RULE_WORDS = ("allow", "ask", "deny", "unset")


def parse_rule(text: str, kind: str) -> tuple[str, str]:
    """``read=allow`` → ("read", "allow"); ``unset`` drops the rule."""
    name, sep, rule = text.partition("=")
    name, rule = name.strip(), rule.strip().lower()
    if not sep or not name or rule not in RULE_WORDS:
        raise CommandError(
            f"--{kind} {text!r}: write NAME=RULE, RULE one of {', '.join(RULE_WORDS)}",
            "e.g. --category read=allow --tool Bash=deny (unset drops a rule)",
        )
    if kind == "category":
        from wire.policy import CATEGORIES  # pure and small, unlike the relay's API

        if name not in CATEGORIES:
            raise CommandError(
                f"--category {text!r}: no category {name!r}",
                f"categories: {', '.join(CATEGORIES)}; or name one tool with --tool",
            )
    return name, rule


def parse_duration(text: str) -> float | str:
    """``--for``: ``90m``, ``2h``, ``1h30m``, ``45s``, or ``session`` (until it ends)."""
    spoken = text.strip().lower()
    if spoken == "session":
        return "session"
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", spoken)
    seconds = 0
    if match and spoken:
        hours, minutes, secs = (int(g or 0) for g in match.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    if seconds <= 0:
        raise CommandError(
            f"--for {text!r}: not a duration",
            "e.g. --for 30m, --for 2h, --for 1h30m, or --for session (until the session ends)",
        )
    return float(seconds)


def policy_changes(args: argparse.Namespace) -> PolicyChanges | None:
    """The command's changes as a PATCH body (the Mac merges them into the policy it holds, so
    nothing changed elsewhere meanwhile is lost), or None for no change."""
    changes = PolicyChanges()
    if args.reset:
        changes["reset"] = True
    if args.allow_all is not None:
        changes["allow_all"] = args.allow_all
    if args.allow_all_for is not None:
        if args.allow_all is False:
            raise CommandError("--for goes with --allow-all", "e.g. --allow-all --for 2h")
        changes["allow_all_for"] = parse_duration(args.allow_all_for)
    if categories := _rules(args.category, "category"):
        changes["categories"] = categories
    if tools := _rules(args.tool, "tool"):
        changes["tools"] = tools
    return changes or None


def _rules(texts: list[str] | None, kind: str) -> dict[str, str | None]:
    """``NAME=RULE`` arguments as rules to send (``unset`` → None: the rule is dropped)."""
    rules = [parse_rule(text, kind) for text in texts or []]
    return {name: None if rule == "unset" else rule for name, rule in rules}


def policy_lines(session: SessionSnapshot, body: PolicyView, mac: str) -> list[str]:
    policy = body.get("policy") or Policy()
    allow_all = bool(policy.get("allow_all"))
    fallback = "allow (allow all)" if allow_all else "ask"
    out = [f"Permission policy of session {named(session)}"]
    if not body.get("known"):
        out.append("  (never reported by the Mac: the default, which asks for everything)")
    elif body.get("device_online"):
        out.append(f"  held and applied by {mac}; updated {when(body.get('updated_at'))}")
    else:
        out.append(
            f"  as {mac} last reported it ({when(body.get('updated_at'))}); {mac} is offline, "
            "and changes need it online"
        )
    until = policy.get("allow_all_until")
    if not allow_all:
        out.append("  allow all: no")
    elif isinstance(until, int | float):
        at = datetime.fromtimestamp(until).strftime("%Y-%m-%d %H:%M")
        out.append(f"  allow all: yes, until {at}; then it ends by itself")
    else:
        out.append("  allow all: yes, until the session ends")
    rules = policy.get("categories") or {}
    tools_of = body.get("categories") or {}
    names = list(tools_of) or list(rules)
    for name in names:
        rule = rules.get(name)
        shown = rule if rule else f"{fallback} (no rule)"
        members = ", ".join(tools_of.get(name) or []) or ("mcp__… tools" if name == "mcp" else "")
        out.append(f"  {name:9}{shown:26}{members}".rstrip())
    tool_rules = policy.get("tools") or {}
    out.append(
        "  tools:   "
        + (", ".join(f"{t} {r}" for t, r in tool_rules.items()) if tool_rules else "(no rule)")
    )
    out.append(
        f"  Any other tool: {fallback}. A tool's rule beats its category's; questions and plans "
        "always ask."
    )
    return out


def cmd_policy(args: argparse.Namespace) -> int:
    wants_change = bool(
        args.category
        or args.tool
        or args.reset
        or args.allow_all is not None
        or args.allow_all_for is not None
    )
    if args.allow_all_for is not None:
        parse_duration(args.allow_all_for)  # every mistake before any request
    for text in args.category or []:
        parse_rule(text, "category")  # every mistake before any request
    for text in args.tool or []:
        parse_rule(text, "tool")
    relay = connect(args, read_only=not wants_change)
    try:
        session = find_session(relay, args.session)
        changes = policy_changes(args)
        body = (
            relay.change_policy(session["id"], changes) if changes else relay.policy(session["id"])
        )
        mac = mac_name(relay, session.get("device_id"))
    finally:
        relay.close()
    if args.json:
        print_json(body)
        return 0
    out = policy_lines(session, body, mac)
    if changes:
        out.insert(0, f"Changed on {mac}.")
    print("\n".join(out))
    return 0


# -- the parser --------------------------------------------------------------------------------


def register(sub: Subcommands) -> None:
    """``policy``."""
    policy = sub.add_parser(
        "policy",
        help="show or change a session's permission policy (allow / ask / deny)",
        description="Show a session's permission policy, or change it on its Mac: rules per "
        'category or tool (allow, ask, deny, unset), and "allow all" for a while (--for). '
        "Changes merge into the policy the Mac holds; --reset starts from the default.",
    )
    add_session_arg(policy)
    policy.add_argument(
        "--allow-all",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="allow every tool no rule names, for a while (--no-allow-all: ask for them)",
    )
    policy.add_argument(
        "--for",
        dest="allow_all_for",
        metavar="DURATION",
        help="how long --allow-all lasts: 30m, 2h, 1h30m, or session (until the session ends);"
        " default: the relay's allow_all_default_minutes",
    )
    policy.add_argument(
        "--category",
        action="append",
        metavar="C=RULE",
        help="read, edit, execute, web or mcp = allow, ask, deny or unset (repeatable)",
    )
    policy.add_argument(
        "--tool",
        action="append",
        metavar="T=RULE",
        help="a tool (Bash, Write, mcp__x__y…) = allow, ask, deny or unset; beats its category",
    )
    policy.add_argument(
        "--reset", action="store_true", help="start from the default (ask for everything)"
    )
    add_relay_args(policy)
    policy.set_defaults(func=guarded(cmd_policy))
