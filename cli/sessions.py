"""The session commands of ``claude-bridge``: sessions by reference, from a terminal.

They talk to a running relay over HTTP exactly as the phone page does, with a phone token:

    --relay URL     or CB_RELAY   default: this machine's relay (CB_PUBLIC_URL, else CB_HOST:CB_PORT,
                                  else http://127.0.0.1:8765)
    --token TOKEN   or CB_TOKEN   a phone token: `claude-bridge token create --kind phone --name cli`

SESSION, wherever a command takes one, is a session id or -1, -2 … (creation order, newest first,
as `claude-bridge sessions` numbers them), a unique start of an id (4 characters or more) or a
title.

claude-bridge open --session ID|-N [--device MAC] [--cwd DIR] [--read-only] [--tail N] [--json]
    ID resumes that session (reopened when it has ended, shown when it runs) or, when the relay has
    none with that id, starts one with exactly that id on MAC (default: the only online Mac) in DIR
    (default: the current folder), so a script can choose its ids up front. -1 is the session
    created last, -2 the one before (creation order: resuming a session does not make it -1).
    --read-only prints the whole conversation and sends nothing: every request carries
    ``X-CB-Read-Only: 1`` and the relay refuses any change made with it.
claude-bridge sessions [--json]
    id, title, Mac, folder, state, created and cost of every session, newest created first.
claude-bridge search [QUERY…] [--mac MAC] [--cwd DIR | --here] [--state S] [--group G]
                     [--archived | --active] [--since DATE] [--until DATE] [--limit N] [--json]
    GET /api/search: ranked by title, summary, files touched, tools, Mac, folder and date (no
    QUERY: browse, newest activity first). With --mac and/or --cwd (--here: the current folder,
    and this Mac when its agent is linked to the same account) the results come in two sections, "This Mac / this folder" and "Other places"; without them,
    one list. Each result: id, title, Mac, folder, state, last active, summary.
claude-bridge rename SESSION TITLE… | rename SESSION --auto
    PATCH the title (the id never changes); --auto forgets a person's title so the automatic one
    shows again (DELETE /api/sessions/{id}/title).
claude-bridge session-cost SESSION [--json]
    GET /api/sessions/{id}/cost: tokens and USD in total, per model and per subagent. (`claude-bridge
    cost FILE.jsonl…` reads transcript files instead, without a relay.)
claude-bridge policy SESSION [--allow-all [--for DURATION] | --no-allow-all] [--category C=RULE…] [--tool T=RULE…]
                     [--reset] [--json]
    Without changes: the session's permission policy (the relay's copy, also while the Mac is
    offline). With changes: sent to the Mac, which must be online, and applied there on top of the
    policy it holds (--reset: on top of the default, ask for everything); prints the policy it now
    holds.
    RULE is allow, ask or deny, or unset to drop the rule.
claude-bridge pin SESSION | unpin SESSION [--json]
    Keep a session (never archived or deleted; an archived one is active again), or let it age.
claude-bridge retention [--run] [--json]
    What retention keeps: its ages, the last run, archived and pinned sessions, deletions waiting for
    an offline Mac. --run runs it now for this account and prints what it did.
claude-bridge audit [--session SESSION] [--since DATE] [--until DATE] [--limit N] [--json]
    GET /api/audit: every decision on a card, newest first — who answered (the phone, its token
    id and address) or which rule did (a policy rule, allow all, a hook), the card (tool, input
    digest, summary) and the answer. SESSION may be one retention already deleted (its id).
claude-bridge fork SESSION [PROMPT…] [--json]
    POST /api/sessions/{id}/fork: a new session on the same Mac with the same history.
claude-bridge move SESSION [MAC] [--cwd DIR] [--now] [--no-wait] [--json]
    POST /api/sessions/{id}/move: the session goes on on MAC (a name or id; default: the only
    other online Mac) with its working folder (DIR, default the same path), conversation, held
    messages and events. It moves when its turn ends; --now interrupts the turn first. Shows the
    progress until the move is done or failed (--no-wait: only begins it).
claude-bridge delete SESSION [--yes] [--json]
    DELETE /api/sessions/{id}: ends it and deletes its events on the relay and its Mac (Claude
    Code's own transcript in ~/.claude stays).
claude-bridge subagents SESSION [--agent ID] [--json]
    One summary line per subagent (type, task, outcome, cost), or with --agent (an id or a unique
    start of one) that subagent's whole history, read a page at a time.

Exit status: 0 done; 2 with a message on every error (unknown offset, Mac offline, bad token…).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Literal, NoReturn, TypedDict

from cli.client import READ_ONLY_HEADER as READ_ONLY_HEADER
from cli.client import (
    ApiError,
    AuditAnswer,
    AuditCard,
    AuditEntry,
    AuditQuery,
    CommandError,
    CostReport,
    CostSummary,
    Device,
    Event,
    EventsPage,
    Move,
    Policy,
    PolicyChanges,
    PolicyView,
    RelayClient,
    RetentionCounts,
    RetentionReport,
    RetentionSettings,
    RetentionView,
    RunItem,
    SearchItem,
    SearchMore,
    SearchQuery,
    SearchResults,
    SessionSnapshot,
    SubagentSummary,
)
from wire import config as configmod

PAGE = 500  # the relay's largest page of events (its catchup_page setting, by default)
OFFSET = re.compile(r"-([1-9][0-9]*)")
RUNNING_STATES = {"starting", "idle", "busy", "waiting"}
MOVE_POLL_SECONDS = 0.5  # how often `move` reads the progress again


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


# -- pure parts ------------------------------------------------------------------------------


def parse_ref(text: str, what: str = "--session") -> int | str:
    """``-N`` → the offset N (1 = the newest created session); anything else is a session id."""
    text = text.strip()
    if not text:
        raise CommandError(f"{what} needs a session id or -1, -2 …")
    found = OFFSET.fullmatch(text)
    if found:
        return int(found.group(1))
    if text.startswith("-") and text[1:].isdigit():
        raise CommandError(f"{what} {text}: offsets start at -1 (the newest created session)")
    return text


def by_creation(sessions: Sequence[SessionSnapshot]) -> list[SessionSnapshot]:
    """Newest created first (ties: the later place in the list, which creation gives)."""
    return sorted(
        sessions, key=lambda s: (s.get("created_at") or "", s.get("position") or 0), reverse=True
    )


def pick_offset(sessions: Sequence[SessionSnapshot], offset: int) -> SessionSnapshot:
    ordered = by_creation(sessions)
    if offset > len(ordered):
        have = (
            "there are no sessions yet"
            if not ordered
            else f"there {'is' if len(ordered) == 1 else 'are'} only {len(ordered)} "
            f"session{'' if len(ordered) == 1 else 's'}"
        )
        raise CommandError(
            f"no session -{offset}: {have}",
            "`claude-bridge sessions` lists them, newest created first (-1, -2 …)",
        )
    return ordered[offset - 1]


def this_mac(devices: Sequence[Device]) -> Device | None:
    """The Mac this command runs on, when its agent has linked to this relay's account (the
    agent writes its device id in its data folder, ``$CB_AGENT_DIR`` or ~/.claude-bridge)."""
    folder = os.path.expanduser(os.environ.get("CB_AGENT_DIR") or "~/.claude-bridge")
    try:
        with open(os.path.join(folder, "device-id"), encoding="utf-8") as handle:
            device_id = handle.read().strip()
    except OSError:
        return None
    return next((d for d in devices if d["id"] == device_id), None)


def mac_listing(devices: Sequence[Device]) -> str:
    return "; ".join(
        f"{d['name']} ({d['id']}, {'online' if d.get('online') else 'offline'})" for d in devices
    )


def pick_device(devices: Sequence[Device], wanted: str | None) -> Device:
    """The Mac named by ``--device`` (id or name), else the only online one, else this Mac
    when it is one of several online."""
    listing = mac_listing(devices)
    if wanted is not None:
        for device in devices:
            if wanted == device["id"]:
                return device
        named = [d for d in devices if str(d["name"]).lower() == wanted.lower()]
        if len(named) == 1:
            return named[0]
        if len(named) > 1:
            raise CommandError(
                f"{len(named)} Macs are named {wanted!r}; give its id with --device",
                f"Macs: {listing}",
            )
        raise CommandError(
            f"no Mac {wanted!r} in this account",
            f"Macs: {listing}" if devices else "pair one: `claude-bridge pair --kind device`",
        )
    online = [d for d in devices if d.get("online")]
    if len(online) == 1:
        return online[0]
    here = this_mac(online)
    if here is not None:
        return here
    if not devices:
        raise CommandError(
            "no Mac is paired with this relay", "pair one: `claude-bridge pair --kind device`"
        )
    if not online:
        raise CommandError(
            "no Mac is online to start the session on",
            f"start the agent on one, or choose one with --device. Macs: {listing}",
        )
    raise CommandError(
        f"{len(online)} Macs are online; choose one with --device ID or NAME", f"Macs: {listing}"
    )


def state_of(session: SessionSnapshot | SearchItem) -> str:
    """What a person calls its state: the mark (ended, resting, offline) or the live state."""
    mark = session.get("mark")
    return str(mark) if mark else str(session.get("state") or "ended")


def is_running(session: SessionSnapshot) -> bool:
    return session.get("state") in RUNNING_STATES and session.get("mark") not in (
        "ended",
        "resting",
    )


def cost_text(session: SessionSnapshot | SessionRow) -> str:
    cost = session.get("cost")
    usd = cost.get("usd") if isinstance(cost, dict) else None
    if isinstance(usd, int | float) and not isinstance(usd, bool):
        return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"
    return "—"


def when(iso: str | None) -> str:
    """``2026-11-29T21:33:33.197Z`` → ``2026-11-29 22:33`` in local time."""
    if not iso:
        return "—"
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def short_folder(path: str) -> str:
    home = os.path.expanduser("~")
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


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
        )
        for index, s in enumerate(by_creation(sessions), start=1)
    ]


def table(rows: Sequence[SessionRow]) -> list[str]:
    head = ("REF", "ID", "TITLE", "MAC", "FOLDER", "STATE", "CREATED", "COST")
    cells = [
        (
            str(r["ref"]),
            str(r["id"]),
            _clip(r["title"] or "—", 40),
            _clip(str(r["mac"]), 20),
            _clip(short_folder(r["cwd"]) or "—", 40),
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


def describe(event: Event) -> str:
    """One event as a terminal line (or a few): ``#12  claude: Delegating to a subagent.``"""
    kind = event.get("kind")
    text = str(event.get("text") or "")
    if kind == "user":
        body = f"you: {text}"
    elif kind == "assistant":
        body = f"claude: {text}"
    elif kind == "thinking":
        body = f"(thinking) {_clip(_first_line(text), 120)}"
    elif kind == "tool_use":
        body = f"{event.get('tool') or 'tool'}: {event.get('summary') or ''}".rstrip(": ")
    elif kind == "tool_result":
        lines = text.count("\n") + 1 if text else 0
        more = f" (+{lines - 1} lines)" if lines > 1 else ""
        error = " [error]" if event.get("is_error") else ""
        body = f"  → {_clip(_first_line(text), 160)}{more}{error}"
    else:
        body = f"· {text}"
    agent = event.get("agent_id")
    if agent:
        body = f"[subagent {str(agent)[:8]}] {body}"
    prefix = f"#{event.get('seq', '?')}".ljust(6)
    return prefix + body.replace("\n", "\n" + " " * 6)


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the relay over HTTP ------------------------------------------------------------------------


def whole_conversation(
    relay: RelayClient, session_id: str, note: Callable[[str], None]
) -> list[Event]:
    """Every event of the session, a page at a time; older parts the relay cannot reach (the Mac
    is offline) are skipped with a note instead of failing the whole read."""
    return every_page(lambda after, epoch: relay.events(session_id, after=after, epoch=epoch), note)


def every_page(
    fetch: Callable[[int, str | None], EventsPage], note: Callable[[str], None]
) -> list[Event]:
    """Every event of a paged history (a session's or a subagent's), forwards from the start:
    ``fetch(after, epoch)`` reads one page (as large as the relay gives)."""
    events: list[Event] = []
    after = 0
    epoch: str | None = None
    while True:
        try:
            page = fetch(after, epoch)
        except ApiError as exc:
            oldest = exc.details.get("oldest_seq")
            if exc.code != "history_unavailable" or not isinstance(oldest, int) or after >= oldest:
                raise
            note(
                f"(events before #{oldest} are kept only on the Mac, which is offline; "
                "showing what the relay keeps)"
            )
            after = int(oldest) - 1
            continue
        epoch = page["epoch"]
        events.extend(page["events"])
        if not page["has_more"] or not page["events"]:
            return events
        after = page["events"][-1]["seq"]


# -- commands ------------------------------------------------------------------------------


def _connect(args: argparse.Namespace, *, read_only: bool) -> RelayClient:
    token = args.token or os.environ.get("CB_TOKEN", "")
    if not token.strip():
        raise CommandError(
            "no phone token: pass --token or set CB_TOKEN",
            "make one with `claude-bridge token create --kind phone --name cli`",
        )
    url = args.relay or os.environ.get("CB_RELAY") or _local_relay()
    return RelayClient(url, token.strip(), read_only=read_only)


def _local_relay() -> str:
    try:
        return configmod.load().base_url
    except configmod.ConfigError:
        return "http://127.0.0.1:8765"


def _device_name(relay: RelayClient, device_id: str | None) -> str:
    try:
        devices = relay.devices()
    except ApiError:
        return device_id or "?"
    return next((str(d["name"]) for d in devices if d["id"] == device_id), device_id or "?")


def _header(session: SessionSnapshot, mac: str) -> list[str]:
    title = f' — "{session["title"]}"' if session.get("title") else ""
    return [
        f"Session {session['id']}{title}",
        f"  Mac: {mac} · folder: {session.get('cwd') or '—'} · state: {state_of(session)}"
        f" · created {when(session.get('created_at'))}",
    ]


def cmd_open(args: argparse.Namespace) -> int:
    ref = parse_ref(args.session)
    relay = _connect(args, read_only=args.read_only)
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
            return _read(relay, session, args.json)
        return _open(relay, ref, session, args)
    finally:
        relay.close()


def _read(relay: RelayClient, session: SessionSnapshot, as_json: bool) -> int:
    notes: list[str] = []
    events = whole_conversation(relay, session["id"], notes.append)
    subagents: list[SubagentSummary]
    try:
        subagents = relay.subagents(session["id"])
    except ApiError:
        subagents = []  # an older relay: the conversation is still worth showing
    link = relay.page_link(session["id"], read_only=True)
    if as_json:
        json.dump(
            {"session": session, "events": events, "subagents": subagents, "link": link},
            sys.stdout,
            ensure_ascii=False,
        )
        print()
        return 0
    out = _header(session, _device_name(relay, session.get("device_id")))
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
    else:
        session_id = session["id"]
        relay.reopen(session_id)
        action = "Reopened"
    snapshot = relay.session(session_id) or session or SessionSnapshot(id=session_id)
    tail: list[Event] = []
    last = int(snapshot.get("last_seq") or 0)
    if last and args.tail > 0:
        try:
            tail = relay.events(session_id, before=last + 1, limit=min(args.tail, PAGE))["events"]
        except ApiError:
            tail = []  # older events only on an offline Mac: the link below still works
    link = relay.page_link(session_id)
    if args.json:
        body = {"action": action, "session": snapshot, "events": tail, "link": link}
        json.dump(body, sys.stdout, ensure_ascii=False)
        print()
        return 0
    out = [action + ".", *_header(snapshot, _device_name(relay, snapshot.get("device_id")))]
    if tail:
        out.append(f"Last {len(tail)} events:")
        out += [describe(e) for e in tail]
    out += [
        f"Send and watch on the page: {link}",
        f"Read it here: claude-bridge open --session {session_id} --read-only",
    ]
    print("\n".join(out))
    return 0


def cmd_sessions(args: argparse.Namespace) -> int:
    relay = _connect(args, read_only=True)  # listing changes nothing
    try:
        rows = session_rows(relay.sessions(), relay.devices())
    finally:
        relay.close()
    if args.json:
        json.dump(rows, sys.stdout, ensure_ascii=False)
        print()
    elif not rows:
        print('No sessions yet. Start one: claude-bridge open --session "$(uuidgen)" --cwd DIR')
    else:
        print("\n".join(table(rows)))
    return 0


# -- SESSION arguments -------------------------------------------------------------------------


def find_session(relay: RelayClient, text: str) -> SessionSnapshot:
    """The snapshot of the session SESSION names (an id or -N), or a CommandError saying so."""
    ref = parse_ref(text, "SESSION")
    if isinstance(ref, int):
        found = relay.session(pick_offset(relay.sessions(), ref)["id"])
        if found is None:
            raise CommandError(f"session -{ref} was just removed; run this again")
        return found
    found = relay.session(ref)
    if found is None:
        from cli.attach import resolve  # a unique start of an id, or a title

        found = relay.session(resolve(relay.sessions(), ref)["id"])
        if found is None:
            raise CommandError(f"session {ref} was just removed; run this again")
    return found


def _named(session: SessionSnapshot) -> str:
    title = session.get("title")
    return f'{session["id"]} ("{title}")' if title else str(session["id"])


def _print_json(body: object) -> None:
    json.dump(body, sys.stdout, ensure_ascii=False)
    print()


# -- search ------------------------------------------------------------------------------------

HERE_HEADING = "This Mac / this folder"
ELSEWHERE_HEADING = "Other places"


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
        f"  {item['id']}  {_clip(item.get('title') or '(untitled)', 70)}{marks}",
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
        lines.append(f"      {_clip(summary, 200)}")
    return lines


def cmd_search(args: argparse.Namespace) -> int:
    relay = _connect(args, read_only=True)
    try:
        devices = relay.devices() if args.mac is not None or args.here else []
        params = search_params(args, devices)
        body = relay.search(params)
    finally:
        relay.close()
    if args.json:
        _print_json(body)
        return 0
    mac = None
    if "device_id" in params:
        mac = next(str(d["name"]) for d in devices if d["id"] == params["device_id"])
    print("\n".join(search_lines(body, params, mac)))
    return 0


# -- rename ------------------------------------------------------------------------------------


def cmd_rename(args: argparse.Namespace) -> int:
    title = " ".join(" ".join(args.title).split())
    if args.auto and title:
        raise CommandError("give a TITLE or --auto, not both")
    if not args.auto and not title:
        raise CommandError(
            "rename needs a TITLE",
            "`claude-bridge rename SESSION --auto` gives back the automatic title",
        )
    relay = _connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        if args.auto:
            renamed = relay.automatic_title(session["id"])
        else:
            renamed = relay.rename(session["id"], title)
    finally:
        relay.close()
    if args.json:
        _print_json(renamed)
    elif args.auto:
        now = (
            f'"{renamed["title"]}"' if renamed.get("title") else "none yet (lists show its folder)"
        )
        print(f"Session {renamed['id']} shows its automatic title again: {now}")
    else:
        print(f'Renamed session {renamed["id"]}: "{renamed["title"]}"')
    return 0


# -- session-cost ------------------------------------------------------------------------------

TokenField = Literal["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]
TOKEN_FIELDS: tuple[tuple[TokenField, str], ...] = (
    ("input_tokens", "INPUT"),
    ("output_tokens", "OUTPUT"),
    ("cache_read_tokens", "CACHE READ"),
    ("cache_write_tokens", "CACHE WRITE"),
)


def usd_text(usd: object) -> str:
    if isinstance(usd, int | float) and not isinstance(usd, bool):
        return f"${usd:.4f}" if usd < 1 else f"${usd:.2f}"
    return "unknown"


def cost_lines(session: SessionSnapshot, report: CostReport, agents: dict[str, str]) -> list[str]:
    """What `claude-bridge session-cost` prints: totals, then per model and per subagent."""
    source = report.get("source")
    how = (
        "Claude Code's own figure, from its cost-state line"
        if source == "cost-state"
        else "estimated from the price catalogue"
    )
    out = [f"Cost of session {_named(session)}", f"  USD: {usd_text(report.get('usd'))}  ({how})"]
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
                _clip(names.get(name, name), 48),
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
    relay = _connect(args, read_only=True)
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
        _print_json(report)
    else:
        print("\n".join(cost_lines(session, report, agents)))
    return 0


# -- policy ------------------------------------------------------------------------------------

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
    out = [f"Permission policy of session {_named(session)}"]
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
    relay = _connect(args, read_only=not wants_change)
    try:
        session = find_session(relay, args.session)
        changes = policy_changes(args)
        body = (
            relay.change_policy(session["id"], changes) if changes else relay.policy(session["id"])
        )
        mac = _device_name(relay, session.get("device_id"))
    finally:
        relay.close()
    if args.json:
        _print_json(body)
        return 0
    out = policy_lines(session, body, mac)
    if changes:
        out.insert(0, f"Changed on {mac}.")
    print("\n".join(out))
    return 0


# -- pin, unpin, retention ---------------------------------------------------------------------


def cmd_pin(args: argparse.Namespace) -> int:
    pinning = args.command == "pin"
    relay = _connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        view = relay.pin(session["id"], pinned=pinning)
    finally:
        relay.close()
    if args.json:
        _print_json(view)
        return 0
    if pinning:
        print(
            f"Pinned session {_named(session)}: kept, never archived or deleted "
            f"(stage: {view.get('stage')})."
        )
        return 0
    line = f"Unpinned session {_named(session)}: it ages again"
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
    relay = _connect(args, read_only=not args.run)
    try:
        body = relay.run_retention() if args.run else relay.retention()
        macs: dict[str, str] = {}
        if body.get("waiting_for_mac") and not args.json:
            macs = {str(d["id"]): str(d["name"]) for d in relay.devices()}
    finally:
        relay.close()
    if args.json:
        _print_json(body)
    elif args.run:
        print("\n".join(run_lines(body.get("report"))))
    else:
        print("\n".join(retention_lines(body, macs)))
    return 0


# -- the audit log -----------------------------------------------------------------------------

AUDIT_PAGE = 200  # the relay's largest page of audit entries


def answer_text(entry: AuditEntry) -> str:
    answer = entry.get("answer") or AuditAnswer()
    if "decision" in answer:
        return str(answer["decision"])
    keys = answer.get("keys") or []
    labels = answer.get("labels") or []
    parts = [f"{label or '?'} [{key}]" for key, label in zip(keys, labels, strict=False)]
    if answer.get("text"):
        parts.append(f'"{_clip(_first_line(str(answer["text"])), 60)}"')
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
        summary = _clip(_first_line(str(card.get("summary") or "")), 70)
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
    relay = _connect(args, read_only=True)
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
        _print_json({"entries": entries})
    else:
        print("\n".join(audit_lines(entries, macs)))
    return 0


# -- subagents ---------------------------------------------------------------------------------


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
        return [f"No subagents in session {_named(session)}."]
    out = [f"Subagents of session {_named(session)} ({len(listed)}):"]
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
    relay = _connect(args, read_only=True)
    notes: list[str] = []
    try:
        session = find_session(relay, args.session)
        listed = relay.subagents(session["id"])
        if args.agent is None:
            if args.json:
                _print_json({"session_id": session["id"], "subagents": listed})
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
        _print_json(
            {"session_id": session["id"], "subagent": summary, "events": events, "notes": notes}
        )
        return 0
    out = [
        f"Subagent {agent_id} of session {_named(session)}",
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


# -- fork and delete ---------------------------------------------------------------------------


def cmd_fork(args: argparse.Namespace) -> int:
    relay = _connect(args, read_only=False)
    try:
        parent = find_session(relay, args.session)
        fork = relay.fork(parent["id"], prompt=" ".join(args.prompt).strip() or None)
    finally:
        relay.close()
    if args.json:
        _print_json(fork)
        return 0
    print(f"Forked {_named(parent)} into {fork['id']}: the same history, continuing apart.")
    print(f"  attach: claude-bridge attach {fork['id'][:8]} · page: {relay.page_link(fork['id'])}")
    return 0


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
    relay = _connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        target = move_target(relay.devices(), args.mac, session.get("device_id"))
        move = relay.move(
            session["id"], target["id"], cwd=args.cwd, when="now" if args.now else "idle"
        )
        if not args.json:
            how = "now (its turn is interrupted)" if args.now else "when its turn ends"
            print(f"Moving {_named(session)} to {target['name']} {how}.")
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
        _print_json(move)
        return 2 if move.get("state") == "failed" else 0
    if move.get("state") == "failed":
        error = move.get("error") or {"code": None, "message": "the move failed"}
        _fail(
            f"not moved to {target['name']}: {error['message']} ({error['code']})",
            "the session goes on where it was; fix that and move it again",
        )
    if move.get("state") == "moving":
        print(f"  its progress is on the page: {relay.page_link(session['id'])}")
    else:
        print(move_line(move, target["name"]))
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    relay = _connect(args, read_only=False)
    try:
        session = find_session(relay, args.session)
        if not args.yes and sys.stdin.isatty():
            answer = input(f"Delete {_named(session)} and its events, here and on its Mac? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("Kept.")
                return 0
        done = relay.delete(session["id"])
    finally:
        relay.close()
    if args.json:
        _print_json(done)
        return 0
    late = done.get("mac") == "waiting"
    print(
        f"Deleted {_named(session)}"
        + (": its Mac is offline and deletes its copy when it links again." if late else ".")
    )
    print("  (Claude Code's own transcript in ~/.claude on the Mac is kept.)")
    return 0


# -- the parser ------------------------------------------------------------------------------


def _guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except CommandError as exc:
            _fail(exc.message, exc.hint)

    return run


def _fail(message: str, hint: str = "") -> NoReturn:
    print(f"claude-bridge: {message}", file=sys.stderr)
    if hint:
        print(f"  → {hint}", file=sys.stderr)
    raise SystemExit(2)


def _relay_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--relay", metavar="URL", help="the relay (default $CB_RELAY, else this machine's)"
    )
    parser.add_argument("--token", help="a phone token (default $CB_TOKEN)")
    parser.add_argument("--json", action="store_true", help="print JSON, for scripts")


def _session_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session", metavar="SESSION", help="a session id, or -1, -2 … by creation (newest first)"
    )


def add_commands(sub: Any) -> None:
    """Register the session commands on the ``claude-bridge`` parser: open, sessions, search,
    rename, session-cost, policy, pin, unpin, retention, audit and subagents."""
    opener = sub.add_parser(
        "open",
        help="resume a session by id or -N (creation order), start one with a chosen id, "
        "or read one (--read-only)",
        description="Open a session from this terminal: resume it on its Mac by id or by "
        "creation order (-1 newest), or start one with exactly that id (a UUID) when none "
        "exists; show its last events. --read-only prints the conversation and sends nothing.",
    )
    opener.add_argument(
        "--session",
        required=True,
        metavar="ID|-N",
        help="a session id (a UUID: started with that id when none exists) or -1, -2 … by creation",
    )
    opener.add_argument("--device", metavar="MAC", help="Mac id or name for a new session")
    opener.add_argument("--cwd", metavar="DIR", help="folder of a new session (default: here)")
    opener.add_argument(
        "--read-only", action="store_true", help="print the conversation; send nothing"
    )
    opener.add_argument(
        "--tail", type=int, default=10, metavar="N", help="last events shown after opening"
    )
    _relay_args(opener)
    opener.set_defaults(func=_guarded(cmd_open))

    listing = sub.add_parser(
        "sessions",
        help="list sessions, newest created first",
        description="List the relay's sessions, newest created first: id, title, Mac, folder, "
        "state, created, cost.",
    )
    _relay_args(listing)
    listing.set_defaults(func=_guarded(cmd_sessions))

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
    _relay_args(finder)
    finder.set_defaults(func=_guarded(cmd_search))

    rename = sub.add_parser(
        "rename",
        help="rename a session (the id never changes), or --auto for its own title",
        description="Give a session a title (its id never changes), or with --auto give back "
        "the title it got by itself.",
    )
    _session_arg(rename)
    rename.add_argument("title", nargs="*", metavar="TITLE", help="the new title")
    rename.add_argument(
        "--auto", action="store_true", help="forget the given title: the automatic one shows"
    )
    _relay_args(rename)
    rename.set_defaults(func=_guarded(cmd_rename))

    costing = sub.add_parser(
        "session-cost",
        help="tokens and USD of a session on the relay, per model and per subagent",
        description="Print a session's tokens and USD as the relay counted them, per model and "
        "per subagent.",
    )
    _session_arg(costing)
    _relay_args(costing)
    costing.set_defaults(func=_guarded(cmd_session_cost))

    policy = sub.add_parser(
        "policy",
        help="show or change a session's permission policy (allow / ask / deny)",
        description="Show a session's permission policy, or change it on its Mac: rules per "
        'category or tool (allow, ask, deny, unset), and "allow all" for a while (--for). '
        "Changes merge into the policy the Mac holds; --reset starts from the default.",
    )
    _session_arg(policy)
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
    _relay_args(policy)
    policy.set_defaults(func=_guarded(cmd_policy))

    for name, text in (
        ("pin", "keep a session: never archived or deleted (an archived one is active again)"),
        ("unpin", "let a pinned session age again"),
    ):
        pinning = sub.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        _session_arg(pinning)
        _relay_args(pinning)
        pinning.set_defaults(func=_guarded(cmd_pin))

    keeping = sub.add_parser(
        "retention",
        help="what retention archived, pinned and deleted; --run runs it now",
        description="Show retention's ages (archive_after_days, delete_after_days), its last "
        "run, archived and pinned sessions; --run runs it now and prints what it archived, "
        "made active again and deleted.",
    )
    keeping.add_argument("--run", action="store_true", help="run it now and print what it did")
    _relay_args(keeping)
    keeping.set_defaults(func=_guarded(cmd_retention))

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
    _relay_args(auditing)
    auditing.set_defaults(func=_guarded(cmd_audit))

    forking = sub.add_parser(
        "fork",
        help="a new session with a session's history, on its Mac, continuing apart",
        description="Fork a session: a new session (a new id) on the same Mac and folder with "
        "the same history (claude --resume … --fork-session); the two continue apart.",
    )
    _session_arg(forking)
    forking.add_argument("prompt", nargs="*", metavar="PROMPT", help="a first message for the fork")
    _relay_args(forking)
    forking.set_defaults(func=_guarded(cmd_fork))

    moving = sub.add_parser(
        "move",
        help="move a session to another Mac with its folder, conversation and held messages",
        description="Move a session to another Mac of the account: its working folder (a git "
        "repository's branch, commits, uncommitted and untracked files; ignored things stay), "
        "its conversation (continued there with claude --resume), held messages and events. "
        "A move that fails leaves the session running where it was, with the reason.",
    )
    _session_arg(moving)
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
    _relay_args(moving)
    moving.set_defaults(func=_guarded(cmd_move))

    deleting = sub.add_parser(
        "delete",
        help="end a session and delete it with its events, on the relay and its Mac",
        description="End a session (its claude stops) and delete it with its events on the "
        "relay and on its Mac (at once, or when an offline Mac links again). Claude Code's own "
        "transcript in ~/.claude stays.",
    )
    _session_arg(deleting)
    deleting.add_argument("--yes", "-y", action="store_true", help="do not ask first")
    _relay_args(deleting)
    deleting.set_defaults(func=_guarded(cmd_delete))

    helpers = sub.add_parser(
        "subagents",
        help="a session's subagents, one line each, or one's whole history (--agent)",
        description="List a session's subagents, one line each (type, task, outcome, cost), or "
        "print one subagent's whole history with --agent.",
    )
    _session_arg(helpers)
    helpers.add_argument("--agent", metavar="ID", help="an agent id, or the start of one")
    _relay_args(helpers)
    helpers.set_defaults(func=_guarded(cmd_subagents))
