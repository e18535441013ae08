"""The audit log: every decision on every card, append-only, per account (``GET /api/audit``).

One row per decision, in the table ``audit``:

* **a phone's answer** (``source: phone``), recorded by ``relay/routes.py`` ``answer_card`` once
  the Mac took it: who (the phone's id and name, the token id, the client address as the relay
  sees it), which card (session, card id, kind, tool, title, the SHA-256 of the tool input's
  canonical JSON and its one-line summary), which answer (keys and their labels, typed text,
  "always") and when;
* **a decision nobody made by hand**, reported by the Mac over the link (``decision``,
  wire/protocol.py): a PermissionRequest hook answered by the session's policy (``policy``:
  a tool's or a category's rule; ``allow_all``), with the rule that made it (``tool Bash: allow``,
  ``category read: allow``, ``allow all``) and the Mac it ran on;
* **a hook's decision** (``hook``): a PermissionRequest hook of the person's own settings that
  answered before any dialog, seen in the transcript (``hook_allowed`` / ``hook_denied`` marker
  events, watched as they are stored). The agent's own hook leaves the same marker, so a marker
  is logged only when no decision of the Mac names its tool use within ``HOOK_GRACE`` seconds;
* **a card closed by a message** (``phone``, rule ``closed by a message``): a phone sent a
  message while a question, plan or dialog card was shown, and the Mac closed the card to type
  it (SPEC §5): who sent it, the card as shown, the message's text (cut at ``SUMMARY_CHARS``).

``at`` is always the relay's own clock, and retention counts a row's age from it. A Mac's
decision also keeps the time the Mac gave (``mac_at``) beside it, as information only: a Mac
whose clock is wrong, or that lies, cannot date a row back and have it expire early.

Append-only is kept by the database itself: a trigger refuses every ``UPDATE`` of a row and every
``DELETE`` of a row younger than the expiry horizon (``audit_expiry.cutoff``), and the horizon only
moves forward (SQLite: ``RAISE(ABORT…)`` triggers; PostgreSQL: plpgsql trigger functions raising an
integrity error, and ``TRUNCATE`` refused as well). Only retention moves it (``expire``, called in
its run's transaction with its clock): rows go by their own age (``audit_keep_days``), never with
their session — a session deleted by retention leaves its audit rows in place (retention.py keeps
this table out of its sweep).

Accounts never see each other's rows: every read is by the caller's account.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from relay.db import Connection
from relay.db.migrations import add_column
from relay.deps import CardAnswer, Phone, State, refuse_read_only
from relay.errors import BadRequest
from relay.feature import Feature
from relay.features.search import parse_time
from relay.state import RelayState, iso
from relay.store import Principal, Session
from wire.protocol import Card, Decision, input_digest
from wire.tasks import TaskSet
from wire.tools import summarize_tool_input

_log = logging.getLogger("relay.features.audit")

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

PAGE_DEFAULT = 50
PAGE_MAX = 200
MAX_ID = 2**63 - 1
SUMMARY_CHARS = 500
SOURCES = ("phone", "policy", "allow_all", "hook")
HOOK_GRACE = 3.0  # seconds a hook marker waits for the Mac's own decision about its tool use
# Cards the Mac closes (Esc) to type a message sent while they show (agent/held.py).
CLOSED_BY_MESSAGE = frozenset({"question", "plan", "dialog"})
CLOSED_RULE = "closed by a message"
_HOOK_MARKS = ('"marker":"hook_allowed"', '"marker":"hook_denied"')

TABLES = (
    f"""CREATE TABLE IF NOT EXISTS audit (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        at REAL NOT NULL,
        source TEXT NOT NULL CHECK (source IN ({", ".join(f"'{s}'" for s in SOURCES)})),
        rule TEXT,
        phone_id TEXT,
        phone_name TEXT,
        token_id TEXT,
        address TEXT,
        device_id TEXT,
        card_id TEXT,
        kind TEXT,
        tool TEXT,
        tool_use_id TEXT,
        title TEXT,
        input_digest TEXT,
        summary TEXT,
        answer TEXT NOT NULL,
        decision_id TEXT,
        mac_at REAL
    )""",
    "CREATE INDEX IF NOT EXISTS audit_account ON audit(account_id, id)",
    "CREATE INDEX IF NOT EXISTS audit_session ON audit(account_id, session_id, id)",
    "CREATE INDEX IF NOT EXISTS audit_at ON audit(at)",
    # A decision the Mac sends again after a reconnect is kept once.
    "CREATE UNIQUE INDEX IF NOT EXISTS audit_decision ON audit(account_id, decision_id)"
    " WHERE decision_id IS NOT NULL",
    # "only" is quoted: a reserved word in PostgreSQL (SQLite takes it either way).
    """CREATE TABLE IF NOT EXISTS audit_expiry (
        "only" INTEGER PRIMARY KEY CHECK ("only" = 1),
        cutoff REAL NOT NULL
    )""",
    'INSERT OR IGNORE INTO audit_expiry ("only", cutoff) VALUES (1, 0)',
)
_NEVER_CHANGED = "audit rows are append-only: they are never changed"
_KEPT = "audit rows are append-only: only retention deletes them, once older than audit_keep_days"
_FORWARD = "the audit expiry horizon only moves forward"
_NEVER_REMOVED = "the audit expiry horizon is never removed"
SQLITE_TRIGGERS = (
    f"""CREATE TRIGGER IF NOT EXISTS audit_never_changed BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, '{_NEVER_CHANGED}'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS audit_kept_until_expiry BEFORE DELETE ON audit
    WHEN OLD.at >= (SELECT cutoff FROM audit_expiry WHERE only = 1)
    BEGIN SELECT RAISE(ABORT,
        '{_KEPT}');
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS audit_expiry_forward BEFORE UPDATE ON audit_expiry
    WHEN NEW.cutoff < OLD.cutoff
    BEGIN SELECT RAISE(ABORT, '{_FORWARD}'); END""",
    f"""CREATE TRIGGER IF NOT EXISTS audit_expiry_kept BEFORE DELETE ON audit_expiry
    BEGIN SELECT RAISE(ABORT, '{_NEVER_REMOVED}'); END""",
)


def _pg_refusal(name: str, message: str, *, when: str = "", returns: str = "NULL") -> str:
    """A plpgsql trigger function that refuses the change (``when``: only if that holds)."""
    body = f"RAISE EXCEPTION '{message}' USING ERRCODE = 'integrity_constraint_violation';"
    if when:
        body = f"IF {when} THEN {body} END IF;"
    return (
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $fn$"
        f" BEGIN {body} RETURN {returns}; END $fn$"
    )


# The same rules in PostgreSQL: functions raising an integrity error (SQLite's RAISE(ABORT)
# is one too); a trigger's WHEN may not read a table there, so the horizon is read in the
# function. TRUNCATE, which skips row triggers, is refused as well.
POSTGRES_TRIGGERS = (
    _pg_refusal("audit_never_changed", _NEVER_CHANGED),
    _pg_refusal(
        "audit_kept_until_expiry",
        _KEPT,
        when='OLD.at >= (SELECT cutoff FROM audit_expiry WHERE "only" = 1)',
        returns="OLD",
    ),
    _pg_refusal("audit_expiry_forward", _FORWARD),
    _pg_refusal("audit_expiry_kept", _NEVER_REMOVED),
    "CREATE OR REPLACE TRIGGER audit_never_changed BEFORE UPDATE ON audit"
    " FOR EACH ROW EXECUTE FUNCTION audit_never_changed()",
    "CREATE OR REPLACE TRIGGER audit_kept_until_expiry BEFORE DELETE ON audit"
    " FOR EACH ROW EXECUTE FUNCTION audit_kept_until_expiry()",
    "CREATE OR REPLACE TRIGGER audit_never_truncated BEFORE TRUNCATE ON audit"
    " FOR EACH STATEMENT EXECUTE FUNCTION audit_never_changed()",
    "CREATE OR REPLACE TRIGGER audit_expiry_forward BEFORE UPDATE ON audit_expiry"
    " FOR EACH ROW WHEN (NEW.cutoff < OLD.cutoff) EXECUTE FUNCTION audit_expiry_forward()",
    "CREATE OR REPLACE TRIGGER audit_expiry_kept BEFORE DELETE ON audit_expiry"
    " FOR EACH ROW EXECUTE FUNCTION audit_expiry_kept()",
    "CREATE OR REPLACE TRIGGER audit_expiry_never_truncated BEFORE TRUNCATE ON audit_expiry"
    " FOR EACH STATEMENT EXECUTE FUNCTION audit_expiry_kept()",
)

_COLUMNS = (
    "id, account_id, session_id, at, source, rule, phone_id, phone_name, token_id, address,"
    " device_id, card_id, kind, tool, tool_use_id, title, input_digest, summary, answer, mac_at"
)


@dataclass(frozen=True)
class Entry:
    """One decision, as stored (``id`` and ``phone_name`` are filled in when it is stored)."""

    account_id: str
    session_id: str
    at: float
    source: str
    answer: dict[str, Any]
    rule: str | None = None
    phone_id: str | None = None
    token_id: str | None = None
    address: str | None = None
    device_id: str | None = None
    card_id: str | None = None
    kind: str | None = None
    tool: str | None = None
    tool_use_id: str | None = None
    title: str | None = None
    input_digest: str | None = None
    summary: str | None = None
    decision_id: str | None = None
    mac_at: float | None = None  # a Mac's decision: the time it gave (``at`` is the relay's)


# -- building entries (pure) ---------------------------------------------------------------


def _clip(text: str | None, limit: int = SUMMARY_CHARS) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


def card_summary(card: Card) -> str:
    """The card's input in one line: the tool's summary, else the dialog's first line."""
    if card.tool and card.tool_input:
        return summarize_tool_input(card.tool, card.tool_input)
    for line in card.text.splitlines():
        if line.strip():
            return _clip(line.strip()) or ""
    return card.title


def of_answer(
    request: Request,
    principal: Principal,
    session: Session,
    card: Card | None,
    body: CardAnswer,
    now: float | None = None,
) -> Entry:
    """A phone's answer to a card, as the audit log keeps it (the card as shown, captured before
    the Mac answers: the next dialog may replace it meanwhile)."""
    keys = body.keys if body.keys is not None else [body.key] if body.key is not None else []
    labels = {o.key: o.label for o in card.options} if card is not None else {}
    answer: dict[str, Any] = {
        "keys": keys,
        "labels": [labels.get(k, "") for k in keys],
        "text": body.text,
        "always": body.always,
    }
    return Entry(
        account_id=principal.account_id,
        session_id=session.id,
        at=time.time() if now is None else now,
        source="phone",
        answer=answer,
        phone_id=principal.subject_id,
        token_id=principal.token_id,
        address=request.client.host if request.client else None,
        device_id=session.device_id,
        card_id=card.id if card is not None else None,
        kind=card.kind if card is not None else None,
        tool=card.tool if card is not None else None,
        title=_clip(card.title) if card is not None else None,
        input_digest=input_digest(card.tool_input) if card is not None else None,
        summary=_clip(card_summary(card)) if card is not None else None,
    )


def of_decision(
    account_id: str, device_id: str, decision: Decision, now: float | None = None
) -> Entry:
    """A decision the Mac made by itself (a ``decision`` link message), dated when the relay
    heard of it: retention counts its age from there. The Mac's own time for it (it may have
    waited for the link) is kept beside, never instead: a Mac cannot date a row back."""
    return Entry(
        account_id=account_id,
        session_id=decision.session_id,
        at=time.time() if now is None else now,
        mac_at=decision.at,
        source=decision.source,
        answer={"decision": decision.decision},
        rule=decision.rule,
        device_id=device_id,
        kind="permission",
        tool=decision.tool,
        tool_use_id=decision.tool_use_id,
        input_digest=decision.input_digest,
        summary=_clip(decision.summary),
        decision_id=decision.id,
    )


def closed_by_message(card: Card, answer: Mapping[str, Any]) -> bool:
    """Did the Mac close ``card`` to type a message? Its answer to the send says the message was
    typed at once, which with such a card open means it was closed first (agent/held.py)."""
    return card.kind in CLOSED_BY_MESSAGE and answer.get("state") == "typed"


def of_message(
    request: Request,
    principal: Principal,
    session: Session,
    card: Card,
    text: str,
    message_id: str | None,
    now: float | None = None,
) -> Entry:
    """A card a phone's message closed, as the audit log keeps it: who sent it, the card as it
    was shown, what the message said."""
    return Entry(
        account_id=principal.account_id,
        session_id=session.id,
        at=time.time() if now is None else now,
        source="phone",
        answer={"closed_by": "message", "text": _clip(text), "message_id": message_id},
        rule=CLOSED_RULE,
        phone_id=principal.subject_id,
        token_id=principal.token_id,
        address=request.client.host if request.client else None,
        device_id=session.device_id,
        card_id=card.id,
        kind=card.kind,
        tool=card.tool,
        title=_clip(card.title),
        input_digest=input_digest(card.tool_input),
        summary=_clip(card_summary(card)),
        # One entry per card, however often the message is retried.
        decision_id=f"closed:{session.id}:{card.id}"[:200],
    )


# -- the store -----------------------------------------------------------------------------


def setup(conn: Connection) -> None:
    """The table and its append-only triggers (safe to run again); a table from before a Mac's
    own time was kept apart gets its column (``mac_at``: adding it changes no row)."""
    for sql in TABLES:
        conn.execute(sql)
    add_column(conn, "audit", "mac_at", "REAL")
    for sql in POSTGRES_TRIGGERS if conn.dialect.postgres else SQLITE_TRIGGERS:
        conn.execute(sql)


setup.schema_version = 2  # type: ignore[attr-defined]  # 2: audit.mac_at


def insert(conn: Connection, entry: Entry) -> bool:
    """Store one entry; False when the Mac's decision id was stored before."""
    name = None
    if entry.phone_id is not None:
        row = conn.execute("SELECT name FROM phones WHERE id = ?", (entry.phone_id,)).fetchone()
        name = row[0] if row else None
    cursor = conn.execute(
        "INSERT OR IGNORE INTO audit (account_id, session_id, at, source, rule, phone_id,"
        " phone_name, token_id, address, device_id, card_id, kind, tool, tool_use_id, title,"
        " input_digest, summary, answer, decision_id, mac_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry.account_id,
            entry.session_id,
            entry.at,
            entry.source,
            entry.rule,
            entry.phone_id,
            name,
            entry.token_id,
            entry.address,
            entry.device_id,
            entry.card_id,
            entry.kind,
            entry.tool,
            entry.tool_use_id,
            entry.title,
            entry.input_digest,
            entry.summary,
            json.dumps(entry.answer, separators=(",", ":"), ensure_ascii=False),
            entry.decision_id,
            entry.mac_at,
        ),
    )
    return bool(cursor.rowcount > 0)


def expire(conn: Connection, before: float) -> dict[str, int]:
    """Delete the rows older than ``before`` (retention's run, in its transaction) and say how
    many per account: the horizon moves forward first, so the append-only trigger lets exactly
    these rows go."""
    cutoff = conn.execute('SELECT cutoff FROM audit_expiry WHERE "only" = 1').fetchone()
    if cutoff is None or before <= float(cutoff[0]):
        return {}
    counts = {
        str(r[0]): int(r[1])
        for r in conn.execute(
            "SELECT account_id, COUNT(*) FROM audit WHERE at < ? GROUP BY account_id", (before,)
        )
    }
    conn.execute('UPDATE audit_expiry SET cutoff = ? WHERE "only" = 1', (before,))
    conn.execute("DELETE FROM audit WHERE at < ?", (before,))
    return counts


async def record(state: RelayState, entry: Entry) -> bool:
    return await state.store.write(lambda conn: insert(conn, entry))


async def record_decision(state: RelayState, account_id: str, device_id: str, msg: Decision) -> str:
    """Store a Mac's own decision; the error code to answer with, or "" when stored. A Mac
    speaks only for the sessions it runs."""
    rows = await state.store.read(
        "SELECT device_id FROM sessions WHERE id = ? AND account_id = ?",
        (msg.session_id, account_id),
    )
    if not rows or rows[0][0] != device_id:
        return "unknown_session"
    await record(state, of_decision(account_id, device_id, msg))
    return ""


def entry_json(row: tuple[Any, ...]) -> dict[str, Any]:
    (
        row_id, _, session_id, at, source, rule, phone_id, phone_name, token_id, address,
        device_id, card_id, kind, tool, tool_use_id, title, digest, summary, answer, mac_at,
    ) = row  # fmt: skip
    who = None
    if phone_id is not None:
        who = {"phone_id": phone_id, "name": phone_name, "token_id": token_id, "address": address}
    return {
        "id": row_id,
        "at": iso(at),
        "session_id": session_id,
        "source": source,
        "rule": rule,
        "who": who,
        "device_id": device_id,
        "card": {
            "id": card_id,
            "kind": kind,
            "tool": tool,
            "tool_use_id": tool_use_id,
            "title": title,
            "input_digest": digest,
            "summary": summary,
        },
        "answer": json.loads(answer),
        "mac_at": iso(mac_at),  # a Mac's own decision: the time it gave (``at``: the relay's)
    }


async def page(
    state: RelayState,
    account_id: str,
    *,
    session_id: str | None = None,
    since: float | None = None,
    until: float | None = None,
    before: int | None = None,
    limit: int = PAGE_DEFAULT,
) -> dict[str, Any]:
    """Newest first; ``next_before`` is the cursor of the next (older) page, None at the end."""
    where = ["account_id = ?"]
    params: list[Any] = [account_id]
    for clause, value in (
        ("session_id = ?", session_id),
        ("at >= ?", since),
        ("at <= ?", until),
        ("id < ?", before),
    ):
        if value is not None:
            where.append(clause)
            params.append(value)
    rows = await state.store.read(
        f"SELECT {_COLUMNS} FROM audit WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
        (*params, limit + 1),
    )
    more = len(rows) > limit
    entries = [entry_json(tuple(r)) for r in rows[:limit]]
    return {
        "entries": entries,
        "has_more": more,
        "next_before": entries[-1]["id"] if more else None,
    }


def insert_hook(conn: Connection, account_id: str, session_id: str, event: Any) -> bool:
    """Log a hook marker event as a ``hook`` decision, unless the Mac told its own decision about
    the same tool use (its hook leaves the same marker). The tool and its summary come from the
    tool use event; no digest, since stored inputs may be cut short."""
    tool_use_id = event.get("tool_use_id") if isinstance(event, dict) else None
    if not isinstance(tool_use_id, str) or not tool_use_id:
        return False
    told = conn.execute(
        "SELECT 1 FROM audit WHERE account_id = ? AND session_id = ? AND tool_use_id = ?",
        (account_id, session_id, tool_use_id),
    ).fetchone()
    session = conn.execute("SELECT device_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if told or session is None:
        return False
    if conn.dialect.postgres:
        # strpos first: only the events naming the id are parsed as JSON
        use = conn.execute(
            "SELECT data::jsonb ->> 'tool', data::jsonb ->> 'summary' FROM events"
            " WHERE session_id = ? AND strpos(data, ?) > 0"
            " AND data::jsonb ->> 'tool_use_id' = ? AND data::jsonb ->> 'kind' = 'tool_use'"
            " ORDER BY seq LIMIT 1",
            (session_id, tool_use_id, tool_use_id),
        ).fetchone()
    else:
        use = conn.execute(
            "SELECT json_extract(data, '$.tool'), json_extract(data, '$.summary') FROM events"
            " WHERE session_id = ? AND json_extract(data, '$.tool_use_id') = ?"
            " AND json_extract(data, '$.kind') = 'tool_use' LIMIT 1",
            (session_id, tool_use_id),
        ).fetchone()
    denied = event.get("marker") == "hook_denied"
    entry = Entry(
        account_id=account_id,
        session_id=session_id,
        at=time.time(),
        source="hook",
        answer={"decision": "deny" if denied else "allow"},
        rule=_clip(str(event.get("text") or "a PermissionRequest hook")),
        device_id=str(session[0]),
        kind="permission",
        tool=use[0] if use else None,
        tool_use_id=tool_use_id,
        summary=_clip(use[1]) if use else None,
        decision_id=f"hook:{session_id}:{event.get('seq')}"[:200],
    )
    return insert(conn, entry)


class HookWatch:
    """Hook markers as they are stored (a store listener, called on the writer's thread)."""

    def __init__(self, state: RelayState, loop: asyncio.AbstractEventLoop) -> None:
        self.state = state
        self.loop = loop
        self.tasks = TaskSet("audit", _log)

    def on_events(self, account_id: str, session_id: str, events: list[tuple[int, str]]) -> None:
        found = [data for _, data in events if any(m in data for m in _HOOK_MARKS)]
        if found and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self._start, account_id, session_id, found)

    def _start(self, account_id: str, session_id: str, found: list[str]) -> None:
        if not self.tasks.closed:
            self.tasks.start(self._record(account_id, session_id, found), name="hook markers")

    async def _record(self, account_id: str, session_id: str, found: list[str]) -> None:
        await asyncio.sleep(HOOK_GRACE)
        events = [json.loads(data) for data in found]

        def job(conn: Connection) -> None:
            for event in events:
                insert_hook(conn, account_id, session_id, event)

        await self.state.store.write(job)

    async def close(self) -> None:
        await self.tasks.close()


async def start(state: RelayState) -> HookWatch:
    """Watch for hook markers (at start-up; the table and its triggers are the schema, made as
    the store opens: on PostgreSQL under the migration lock, so nodes starting together do not
    race to create them)."""
    watch = HookWatch(state, asyncio.get_running_loop())

    async def record_mac_decision(account_id: str, device_id: str, msg: Decision) -> str:
        return await record_decision(state, account_id, device_id, msg)

    def log_answer(
        request: Request, principal: Principal, session: Session, card: Card, body: CardAnswer
    ) -> Callable[[], Awaitable[None]]:
        entry = of_answer(request, principal, session, card, body)

        async def done() -> None:
            await record(state, entry)

        return done

    def log_message(
        request: Request, principal: Principal, session: Session, card: Card, text: str
    ) -> Callable[[Mapping[str, Any]], Awaitable[None]]:
        async def done(answer: Mapping[str, Any]) -> None:
            if closed_by_message(card, answer):
                message_id = answer.get("message_id")
                entry = of_message(
                    request, principal, session, card, text,
                    message_id if isinstance(message_id, str) else None,
                )  # fmt: skip
                await record(state, entry)

        return done

    state.hooks.decision_recorder = record_mac_decision
    state.hooks.answer_loggers.append(log_answer)
    state.hooks.message_loggers.append(log_message)
    state.store.add_listener(watch.on_events)
    return watch


# -- routes --------------------------------------------------------------------------------


@router.get("/audit")
async def audit_log(
    principal: Phone,
    state: State,
    session_id: Annotated[str | None, Query(max_length=200)] = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    until: Annotated[str | None, Query(max_length=64)] = None,
    before: Annotated[int | None, Query()] = None,
    limit: Annotated[int | None, Query()] = None,
) -> dict[str, Any]:
    """The account's decisions, newest first, a page at a time (``before`` = ``next_before``)."""
    size = PAGE_DEFAULT if limit is None else limit
    if not 1 <= size <= PAGE_MAX:
        raise BadRequest(f"limit must be between 1 and {PAGE_MAX}", code="bad_limit")
    if before is not None and not 1 <= before <= MAX_ID:
        raise BadRequest("before must be an entry id (next_before of a page)", code="bad_before")
    return await page(
        state,
        principal.account_id,
        session_id=session_id or None,
        since=parse_time(since) if since else None,
        until=parse_time(until, end_of_day=True) if until else None,
        before=before,
        limit=size,
    )


FEATURE = Feature("audit", schema=setup, start=start, router=router)
