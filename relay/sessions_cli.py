"""``claude-bridge open`` and ``claude-bridge sessions``: sessions by reference, from a terminal.

Both talk to a running relay over HTTP exactly as the phone page does, with a phone token:

    --relay URL     or CB_RELAY   default: this machine's relay (CB_PUBLIC_URL, else CB_HOST:CB_PORT,
                                  else http://127.0.0.1:8765)
    --token TOKEN   or CB_TOKEN   a phone token: `claude-bridge token create --kind phone --name cli`

claude-bridge open --session ID|-N [--device MAC] [--cwd DIR] [--read-only] [--tail N] [--json]
    ID resumes that session (reopened when it has ended, shown when it runs) or, when the relay has
    none with that id, starts one with exactly that id on MAC (default: the only online Mac) in DIR
    (default: the current folder), so a script can choose its ids up front. -1 is the session
    created last, -2 the one before (creation order: resuming a session does not make it -1).
    --read-only prints the whole conversation and sends nothing: every request carries
    ``X-CB-Read-Only: 1`` and the relay refuses any change made with it.
claude-bridge sessions [--json]
    id, title, Mac, folder, state, created and cost of every session, newest created first.

Exit status: 0 done; 2 with a message on every error (unknown offset, Mac offline, bad token…).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NoReturn
from urllib.parse import quote

import httpx

from relay import config as configmod

# relay.routes.READ_ONLY_HEADER, repeated here: importing the API would cost the CLI 0.5 s.
READ_ONLY_HEADER = "X-CB-Read-Only"
PAGE = 500  # the relay's largest page of events (its catchup_page setting, by default)
OFFSET = re.compile(r"-([1-9][0-9]*)")
RUNNING_STATES = {"starting", "idle", "busy", "waiting"}
PAIR_HINT = (
    "pair again: make a phone token with `claude-bridge token create --kind phone --name cli` "
    "and pass it with --token or CB_TOKEN"
)


class CommandError(Exception):
    """What went wrong, said for a person, and what to do about it."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class ApiError(CommandError):
    """The relay answered with an error (``{"error": {"code", "message"}}``)."""

    def __init__(
        self, status: int, code: str, message: str, hint: str = "", **details: Any
    ) -> None:
        super().__init__(message, hint)
        self.status = status
        self.code = code
        self.details = details


# -- pure parts ------------------------------------------------------------------------------


def parse_ref(text: str) -> int | str:
    """``-N`` → the offset N (1 = the newest created session); anything else is a session id."""
    text = text.strip()
    if not text:
        raise CommandError("--session needs a session id or -1, -2 …")
    found = OFFSET.fullmatch(text)
    if found:
        return int(found.group(1))
    if text.startswith("-") and text[1:].isdigit():
        raise CommandError(f"--session {text}: offsets start at -1 (the newest created session)")
    return text


def by_creation(sessions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Newest created first (ties: the later place in the list, which creation gives)."""
    return sorted(
        sessions, key=lambda s: (s.get("created_at") or "", s.get("position") or 0), reverse=True
    )


def pick_offset(sessions: Sequence[dict[str, Any]], offset: int) -> dict[str, Any]:
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


def pick_device(devices: Sequence[dict[str, Any]], wanted: str | None) -> dict[str, Any]:
    """The Mac named by ``--device`` (id or name), else the only online one."""
    listing = "; ".join(
        f"{d['name']} ({d['id']}, {'online' if d.get('online') else 'offline'})" for d in devices
    )
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


def state_of(session: dict[str, Any]) -> str:
    """What a person calls its state: the mark (ended, resting, offline) or the live state."""
    mark = session.get("mark")
    return str(mark) if mark else str(session.get("state") or "ended")


def is_running(session: dict[str, Any]) -> bool:
    return session.get("state") in RUNNING_STATES and session.get("mark") not in (
        "ended",
        "resting",
    )


def cost_text(session: dict[str, Any]) -> str:
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
    sessions: Sequence[dict[str, Any]], devices: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """What `claude-bridge sessions` shows, newest created first, with each one's -N reference."""
    names = {d["id"]: d["name"] for d in devices}
    return [
        {
            "ref": -index,
            "id": s["id"],
            "title": s.get("title") or "",
            "device_id": s.get("device_id"),
            "mac": names.get(s.get("device_id"), s.get("device_id") or ""),
            "cwd": s.get("cwd") or "",
            "state": state_of(s),
            "created_at": s.get("created_at"),
            "cost": s.get("cost"),
        }
        for index, s in enumerate(by_creation(sessions), start=1)
    ]


def table(rows: Sequence[dict[str, Any]]) -> list[str]:
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


def describe(event: dict[str, Any]) -> str:
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


class Relay:
    """The relay's phone API with a phone token; every error becomes an ApiError or CommandError."""

    def __init__(self, url: str, token: str, *, read_only: bool, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"}
        if read_only:
            headers[READ_ONLY_HEADER] = "1"
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        self.http.close()

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise CommandError(
                f"cannot reach the relay at {self.url}: {exc}",
                "is it running? Pass --relay URL or set CB_RELAY",
            ) from None
        if response.status_code < 400:
            return response.json()
        try:
            error = dict(response.json()["error"])
            code, message = str(error.pop("code")), str(error.pop("message"))
        except (ValueError, KeyError, TypeError):
            error, code = {}, "http_error"
            message = f"HTTP {response.status_code} from the relay"
        hint = ""
        if response.status_code == 401:
            hint = PAIR_HINT
        elif code == "wrong_token_kind":
            hint = "this command needs a phone token, not a Mac's; " + PAIR_HINT
        elif code == "device_offline":
            hint = "start the agent on that Mac (claude-bridge agent), then run this again"
        raise ApiError(response.status_code, code, f"{message} ({code})", hint, **error)

    def session(self, session_id: str) -> dict[str, Any] | None:
        """The session's snapshot, or None when the relay has no session with that id."""
        try:
            found: dict[str, Any] = self.call("GET", f"/api/sessions/{_quote(session_id)}")
        except ApiError as exc:
            if exc.status == 404 and exc.code == "unknown_session":
                return None
            raise
        return found

    def sessions(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.call("GET", "/api/sessions")["sessions"]
        return listed

    def devices(self) -> list[dict[str, Any]]:
        listed: list[dict[str, Any]] = self.call("GET", "/api/devices")["devices"]
        return listed

    def events(self, session_id: str, **params: Any) -> dict[str, Any]:
        page: dict[str, Any] = self.call(
            "GET", f"/api/sessions/{_quote(session_id)}/events", params=params
        )
        return page

    def page_link(self, session_id: str, *, read_only: bool = False) -> str:
        return f"{self.url}/#/s/{_quote(session_id)}" + ("/read" if read_only else "")


def _quote(session_id: str) -> str:
    return quote(session_id, safe="")


def whole_conversation(
    relay: Relay, session_id: str, note: Callable[[str], None]
) -> list[dict[str, Any]]:
    """Every event of the session, a page at a time; older parts the relay cannot reach (the Mac
    is offline) are skipped with a note instead of failing the whole read."""
    events: list[dict[str, Any]] = []
    after = 0
    epoch: str | None = None
    while True:
        params: dict[str, Any] = {"after": after}  # pages as large as the relay gives
        if epoch is not None:
            params["epoch"] = epoch
        try:
            page = relay.events(session_id, **params)
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


def _connect(args: argparse.Namespace, *, read_only: bool) -> Relay:
    token = args.token or os.environ.get("CB_TOKEN", "")
    if not token.strip():
        raise CommandError(
            "no phone token: pass --token or set CB_TOKEN",
            "make one with `claude-bridge token create --kind phone --name cli`",
        )
    url = args.relay or os.environ.get("CB_RELAY") or _local_relay()
    return Relay(url, token.strip(), read_only=read_only)


def _local_relay() -> str:
    try:
        return configmod.load().base_url
    except configmod.ConfigError:
        return "http://127.0.0.1:8765"


def _device_name(relay: Relay, device_id: str | None) -> str:
    try:
        devices = relay.devices()
    except ApiError:
        return device_id or "?"
    return next((str(d["name"]) for d in devices if d["id"] == device_id), device_id or "?")


def _header(session: dict[str, Any], mac: str) -> list[str]:
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
        session: dict[str, Any] | None
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


def _read(relay: Relay, session: dict[str, Any], as_json: bool) -> int:
    notes: list[str] = []
    events = whole_conversation(relay, session["id"], notes.append)
    try:
        subagents = relay.call("GET", f"/api/sessions/{_quote(session['id'])}/subagents")[
            "subagents"
        ]
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
    relay: Relay, ref: int | str, session: dict[str, Any] | None, args: argparse.Namespace
) -> int:
    if session is None:
        assert isinstance(ref, str)
        device = pick_device(relay.devices(), args.device)
        cwd = args.cwd or os.getcwd()
        created = relay.call(
            "POST",
            "/api/sessions",
            json={"device_id": device["id"], "cwd": cwd, "session_id": ref},
        )
        session_id = str(created["id"])
        action = f"Started a new session on {device['name']} in {cwd}"
    elif is_running(session):
        session_id = session["id"]
        action = "Already running"
    else:
        session_id = session["id"]
        relay.call("POST", f"/api/sessions/{_quote(session_id)}/reopen")
        action = "Reopened"
    snapshot = relay.session(session_id) or session or {"id": session_id}
    tail: list[dict[str, Any]] = []
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
        print("No sessions yet. Start one: claude-bridge open --session NAME --cwd DIR")
    else:
        print("\n".join(table(rows)))
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


def add_commands(sub: Any) -> None:
    """Register ``open`` and ``sessions`` on the ``claude-bridge`` parser."""
    opener = sub.add_parser(
        "open",
        help="resume a session by id or -N (creation order), start one with a chosen id, "
        "or read one (--read-only)",
    )
    opener.add_argument(
        "--session",
        required=True,
        metavar="ID|-N",
        help="a session id (started with that id when none exists) or -1, -2 … by creation",
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

    listing = sub.add_parser("sessions", help="list sessions, newest created first")
    _relay_args(listing)
    listing.set_defaults(func=_guarded(cmd_sessions))
