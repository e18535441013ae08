"""Subagent history: each subagent linked to its parent session and the tool call that started it.

Claude Code writes a subagent's transcript as ``<session>/subagents/agent-<id>.jsonl``; the agent
sends it as the conversation ``agent-<id>`` and every event made from it carries ``agent_id``. The
relay numbers those events with the session's own, so a subagent's history is the session's events
with its ``agent_id``. Three tables, filled by one trigger on ``events`` inside the ingest
transaction (as durable as the events themselves, never filled twice for a line sent again):

    subagent_events (session_id, agent_id, seq)  which seqs are whose: the index a subagent's
                                                 history is paged by; never pruned with the events,
                                                 so older pages are asked of the Mac by seq
    subagents       one row per subagent: first and last seq, event count, its prompt (first
                    user text), its outcome (last assistant text), first and last timestamps
    subagent_calls  one row per ``Agent`` / ``Task`` tool use: description, agent type, prompt,
                    the tool result and the ``<task-notification>`` that answered it

On PostgreSQL the trigger is a plpgsql function doing the same (``subagent_index_event``, which
the backfill calls too).

Linking happens when read (``link``, pure): a call's tool result names its subagent
(``agentId: …``, written by Claude Code for background and foreground agents alike); failing
that, the subagent whose first prompt is the call's ``prompt`` input, in order.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import Response

from relay import seq as seqrules
from relay.db import Connection
from relay.deps import Page, Phone, State, session_or_404
from relay.errors import BadRequest, NotFound
from relay.feature import Feature
from relay.features import usage
from relay.history import fetch_page

if TYPE_CHECKING:
    from relay.store import Session, Store

TEXT_KEPT = 2000  # characters of a prompt or an outcome kept in the summary tables
SUBAGENT_TOOLS = ("Agent", "Task")  # "Task" is the older name of the same tool

TABLES = """
CREATE TABLE IF NOT EXISTS subagent_events (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    PRIMARY KEY (session_id, agent_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS subagents (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    agent_id TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    events INTEGER NOT NULL DEFAULT 0,
    prompt TEXT,
    outcome TEXT,
    started_at TEXT,
    ended_at TEXT,
    PRIMARY KEY (session_id, agent_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS subagent_calls (
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    tool_use_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    tool TEXT NOT NULL,
    caller TEXT,
    description TEXT,
    agent_type TEXT,
    prompt TEXT,
    result TEXT,
    result_error INTEGER NOT NULL DEFAULT 0,
    notification TEXT,
    PRIMARY KEY (session_id, tool_use_id)
) WITHOUT ROWID;
"""

# Each statement reads one stored event ({sid}, {seq}, {data}): the triggers pass NEW.*, the
# backfill of a database made before these tables passes ?1, ?2, ?3. One text, two uses.
_INDEX = """
INSERT OR IGNORE INTO subagent_events (session_id, agent_id, seq)
SELECT {sid}, json_extract({data}, '$.agent_id'), {seq}
WHERE json_extract({data}, '$.agent_id') IS NOT NULL
"""
_SUMMARY = f"""
INSERT INTO subagents
    (session_id, agent_id, first_seq, last_seq, events, prompt, outcome, started_at, ended_at)
SELECT {{sid}}, agent, {{seq}}, {{seq}}, 1,
    CASE WHEN kind = 'user' AND text <> '' THEN substr(text, 1, {TEXT_KEPT}) END,
    CASE WHEN kind = 'assistant' AND text <> '' THEN substr(text, 1, {TEXT_KEPT}) END,
    ts, ts
FROM (SELECT json_extract(d, '$.agent_id') AS agent, json_extract(d, '$.kind') AS kind,
             json_extract(d, '$.text') AS text, json_extract(d, '$.timestamp') AS ts
      FROM (SELECT {{data}} AS d))
WHERE agent IS NOT NULL
ON CONFLICT (session_id, agent_id) DO UPDATE SET
    first_seq = min(first_seq, excluded.first_seq),
    last_seq = max(last_seq, excluded.last_seq),
    events = events + 1,
    prompt = COALESCE(prompt, excluded.prompt),
    outcome = COALESCE(excluded.outcome, outcome),
    started_at = COALESCE(started_at, excluded.started_at),
    ended_at = COALESCE(excluded.ended_at, ended_at)
"""
_CALL = f"""
INSERT OR IGNORE INTO subagent_calls
    (session_id, tool_use_id, seq, tool, caller, description, agent_type, prompt)
SELECT {{sid}}, id, {{seq}}, tool, caller, description, agent_type, substr(prompt, 1, {TEXT_KEPT})
FROM (SELECT json_extract(d, '$.kind') AS kind, json_extract(d, '$.tool') AS tool,
             json_extract(d, '$.tool_use_id') AS id, json_extract(d, '$.agent_id') AS caller,
             json_extract(d, '$.input.description') AS description,
             json_extract(d, '$.input.subagent_type') AS agent_type,
             json_extract(d, '$.input.prompt') AS prompt
      FROM (SELECT {{data}} AS d))
WHERE kind = 'tool_use' AND tool IN ({", ".join(f"'{t}'" for t in SUBAGENT_TOOLS)})
  AND id IS NOT NULL
"""
_ANSWER = """
UPDATE subagent_calls SET
    result = CASE WHEN json_extract({data}, '$.kind') = 'tool_result'
                  THEN json_extract({data}, '$.text') ELSE result END,
    result_error = CASE WHEN json_extract({data}, '$.kind') = 'tool_result'
                        THEN COALESCE(json_extract({data}, '$.is_error'), 0) ELSE result_error END,
    notification = CASE WHEN json_extract({data}, '$.marker') = 'task_notification'
                        THEN json_extract({data}, '$.text') ELSE notification END
WHERE session_id = {sid} AND tool_use_id = json_extract({data}, '$.tool_use_id')
  AND json_extract({data}, '$.kind') IN ('tool_result', 'marker')
"""
_STATEMENTS = (_INDEX, _SUMMARY, _CALL, _ANSWER)

# One trigger, whose WHEN lets through only the events the statements may use — a subagent's, an
# Agent / Task call, an answer to a call — with cheap string tests on the stored JSON (compact,
# "kind" first: DisplayEvent's first field); json_extract in the statements decides exactly.
# Cost: about 3 µs per stored event on the 2-core build machine, where ingest takes ~120 µs.
_AGENT_MARK = '"agent_id":"'
_NOTIFICATION_MARK = '"marker":"task_notification"'


def _contains(column: str, fragment: str, function: str = "instr") -> str:
    # instr (SQLite) and strpos (PostgreSQL) take the same arguments
    return f"{function}({column}, '{fragment}') > 0"


def _kind_is(column: str, kind: str) -> str:
    start = f'{{"kind":"{kind}"'
    return f"substr({column}, 1, {len(start)}) = '{start}'"


def _candidates(column: str, *, answers: str, contains: str = "instr") -> str:
    tools = " OR ".join(_contains(column, f'"tool":"{t}"', contains) for t in SUBAGENT_TOOLS)
    notification = (
        f"{_kind_is(column, 'marker')} AND {_contains(column, _NOTIFICATION_MARK, contains)}"
    )
    return (
        f"{_contains(column, _AGENT_MARK, contains)}"
        f" OR ({_kind_is(column, 'tool_use')} AND ({tools}))"
        f" OR (({_kind_is(column, 'tool_result')} OR ({notification})){answers})"
    )


_TRIGGER_WHEN = _candidates(
    "NEW.data",
    answers=" AND EXISTS (SELECT 1 FROM subagent_calls WHERE session_id = NEW.session_id)",
)


def _backfill_where(postgres: bool) -> str:
    return _candidates("data", answers="", contains="strpos" if postgres else "instr")


def _for_trigger(statement: str) -> str:
    return statement.format(sid="NEW.session_id", seq="NEW.seq", data="NEW.data")


def _for_backfill(statement: str) -> str:
    return statement.format(sid="?1", seq="?2", data="?3")


def setup(conn: Connection) -> None:
    """Create the tables and the trigger, and index the events stored before they existed, in one
    transaction (so an interrupted first start indexes them on the next)."""
    postgres = conn.dialect.postgres
    conn.execute("BEGIN IMMEDIATE")
    try:
        found = conn.execute(
            "SELECT to_regclass('subagent_events') IS NOT NULL"
            if postgres
            else "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'subagent_events'"
        ).fetchone()
        existed = found is not None and bool(found[0])
        for statement in TABLES.split(";"):
            if statement.strip():
                conn.execute(statement)
        if postgres:
            for statement in _PG_TRIGGER:
                conn.execute(statement)
        else:
            body = ";\n".join(_for_trigger(s).strip() for s in _STATEMENTS)
            conn.execute(
                "CREATE TRIGGER IF NOT EXISTS subagent_index AFTER INSERT ON events"
                f" WHEN {_TRIGGER_WHEN}\nBEGIN\n{body};\nEND"
            )
        if not existed:
            rows = conn.execute(
                f"SELECT session_id, seq, data FROM events WHERE {_backfill_where(postgres)}"
                " ORDER BY session_id, seq"
            ).fetchall()
            if postgres:
                backfill = ["SELECT subagent_index_event(?, ?, ?)"]
            else:
                backfill = [_for_backfill(s) for s in _STATEMENTS]
            for row in rows:
                for statement in backfill:
                    conn.execute(statement, tuple(row))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# -- PostgreSQL: the same index, as plpgsql -------------------------------------------------
# A trigger's WHEN may not hold a subquery there, so the cheap string tests stay in WHEN and the
# function does the rest (an answer to no known call updates nothing). One function per event,
# called by the trigger and by the backfill alike; the JSON is parsed once per event.

_PG_TOOLS = ", ".join(f"'{t}'" for t in SUBAGENT_TOOLS)
_PG_ROW_FUNCTION = f"""
CREATE OR REPLACE FUNCTION subagent_index_event(p_sid TEXT, p_seq BIGINT, p_data TEXT)
RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
    d JSONB := p_data::jsonb;
    v_agent TEXT := d ->> 'agent_id';
    v_kind TEXT := d ->> 'kind';
    v_text TEXT := d ->> 'text';
    v_ts TEXT := d ->> 'timestamp';
BEGIN
    IF v_agent IS NOT NULL THEN
        INSERT INTO subagent_events (session_id, agent_id, seq) VALUES (p_sid, v_agent, p_seq)
        ON CONFLICT DO NOTHING;
        INSERT INTO subagents AS a
            (session_id, agent_id, first_seq, last_seq, events, prompt, outcome, started_at,
             ended_at)
        VALUES (p_sid, v_agent, p_seq, p_seq, 1,
            CASE WHEN v_kind = 'user' AND v_text <> '' THEN substr(v_text, 1, {TEXT_KEPT}) END,
            CASE WHEN v_kind = 'assistant' AND v_text <> '' THEN substr(v_text, 1, {TEXT_KEPT}) END,
            v_ts, v_ts)
        ON CONFLICT (session_id, agent_id) DO UPDATE SET
            first_seq = LEAST(a.first_seq, excluded.first_seq),
            last_seq = GREATEST(a.last_seq, excluded.last_seq),
            events = a.events + 1,
            prompt = COALESCE(a.prompt, excluded.prompt),
            outcome = COALESCE(excluded.outcome, a.outcome),
            started_at = COALESCE(a.started_at, excluded.started_at),
            ended_at = COALESCE(excluded.ended_at, a.ended_at);
    END IF;
    IF v_kind = 'tool_use' AND d ->> 'tool' IN ({_PG_TOOLS}) AND d ->> 'tool_use_id' IS NOT NULL
    THEN
        INSERT INTO subagent_calls
            (session_id, tool_use_id, seq, tool, caller, description, agent_type, prompt)
        VALUES (p_sid, d ->> 'tool_use_id', p_seq, d ->> 'tool', v_agent,
            d #>> '{{input,description}}', d #>> '{{input,subagent_type}}',
            substr(d #>> '{{input,prompt}}', 1, {TEXT_KEPT}))
        ON CONFLICT DO NOTHING;
    END IF;
    IF v_kind IN ('tool_result', 'marker') THEN
        UPDATE subagent_calls SET
            result = CASE WHEN v_kind = 'tool_result' THEN v_text ELSE result END,
            result_error = CASE WHEN v_kind = 'tool_result'
                THEN CASE WHEN d -> 'is_error' = 'true'::jsonb THEN 1 ELSE 0 END
                ELSE result_error END,
            notification = CASE WHEN d ->> 'marker' = 'task_notification'
                THEN v_text ELSE notification END
        WHERE session_id = p_sid AND tool_use_id = d ->> 'tool_use_id';
    END IF;
END
$fn$
"""
_PG_TRIGGER = (
    _PG_ROW_FUNCTION,
    """CREATE OR REPLACE FUNCTION subagent_index() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    PERFORM subagent_index_event(NEW.session_id, NEW.seq, NEW.data);
    RETURN NULL;
END
$fn$""",
    "CREATE OR REPLACE TRIGGER subagent_index AFTER INSERT ON events FOR EACH ROW"
    f" WHEN ({_candidates('NEW.data', answers='', contains='strpos')})"
    " EXECUTE FUNCTION subagent_index()",
)


# -- linking (pure) -------------------------------------------------------------------------

_AGENT_ID = re.compile(r"\bagentId:\s*([A-Za-z0-9_-]+)")
_BACKGROUND = ("Async agent launched", "The agent is working in the background")


@dataclass(frozen=True)
class AgentRow:
    """What the subagent's own events say (table ``subagents``)."""

    agent_id: str
    first_seq: int
    last_seq: int
    events: int
    prompt: str | None
    outcome: str | None
    started_at: str | None
    ended_at: str | None


@dataclass(frozen=True)
class CallRow:
    """The parent's ``Agent`` / ``Task`` tool use and what answered it (table ``subagent_calls``)."""

    tool_use_id: str
    seq: int
    tool: str
    caller: str | None  # agent_id of a subagent that started it; None: the session itself
    description: str | None
    agent_type: str | None
    prompt: str | None
    result: str | None
    result_error: bool
    notification: str | None

    @property
    def named_agent(self) -> str | None:
        """The subagent id Claude Code wrote into the tool result, if any."""
        found = _AGENT_ID.search(self.result or "")
        return found.group(1) if found else None

    @property
    def status(self) -> str:
        """running | finished | failed, from the call's answers."""
        if self.notification:
            return "finished"
        if self.result is None or any(self.result.startswith(b) for b in _BACKGROUND):
            return "running"
        return "failed" if self.result_error else "finished"


@dataclass(frozen=True)
class Subagent:
    """One line of the parent's summary: a subagent, its call, or both."""

    agent_id: str | None
    agent: AgentRow | None
    call: CallRow | None

    @property
    def outcome(self) -> str | None:
        if self.agent is not None and self.agent.outcome:
            return self.agent.outcome
        if self.call is not None and self.call.notification:
            _, _, result = self.call.notification.partition("\n")
            return result.strip() or None
        if self.call is not None and self.call.status != "running":
            return self.call.result
        return None

    def to_json(self, cost: dict[str, Any] | None = None) -> dict[str, Any]:
        agent, call = self.agent, self.call
        agent_type = call.agent_type if call else None
        description = call.description if call else None
        outcome = self.outcome
        status = call.status if call else None
        return {
            "agent_id": self.agent_id,
            "agent_type": agent_type,
            "description": description,
            "tool": call.tool if call else None,
            "tool_use_id": call.tool_use_id if call else None,
            "call_seq": call.seq if call else None,
            "caller": call.caller if call else None,
            "prompt": (agent.prompt if agent and agent.prompt else None)
            or (call.prompt if call else None),
            "outcome": outcome,
            "status": status,
            "events": agent.events if agent else 0,
            "first_seq": agent.first_seq if agent else None,
            "last_seq": agent.last_seq if agent else None,
            "started_at": agent.started_at if agent else None,
            "ended_at": agent.ended_at if agent else None,
            "cost": cost,
            "line": summary_line(agent_type, description, status, outcome, cost),
        }


def link(agents: Sequence[AgentRow], calls: Sequence[CallRow]) -> list[Subagent]:
    """Pair subagents with the calls that started them; one entry per subagent or lone call.

    A call whose tool result names an agent id is that agent's; the other calls take, in order,
    the first unclaimed subagent whose first prompt is the call's prompt. Ordered by the call's
    seq (the place in the parent's conversation), or the subagent's first seq when no call."""
    by_id = {a.agent_id: a for a in agents}
    claimed: set[str] = set()
    paired: dict[str, str] = {}  # tool_use_id -> agent_id
    for call in calls:
        named = call.named_agent
        if named is not None and named not in claimed:
            paired[call.tool_use_id] = named
            claimed.add(named)
    for call in calls:
        if call.tool_use_id in paired or not call.prompt:
            continue
        for agent in sorted(agents, key=lambda a: a.first_seq):
            if agent.agent_id not in claimed and agent.prompt == call.prompt:
                paired[call.tool_use_id] = agent.agent_id
                claimed.add(agent.agent_id)
                break
    out = [
        Subagent(paired.get(c.tool_use_id), by_id.get(paired.get(c.tool_use_id, "")), c)
        for c in calls
    ]
    out += [Subagent(a.agent_id, a, None) for a in agents if a.agent_id not in claimed]
    out.sort(key=lambda s: s.call.seq if s.call else s.agent.first_seq if s.agent else 0)
    return out


def summary_line(
    agent_type: str | None,
    description: str | None,
    status: str | None,
    outcome: str | None,
    cost: dict[str, Any] | None,
) -> str:
    """``general-purpose · Inspect folder — finished: the folder was listed. · $0.0123``"""
    head = " · ".join(x for x in (agent_type or "subagent", description) if x)
    tail = _first_line(outcome, 160)
    if status and tail:
        tail = f"{status}: {tail}"
    elif status:
        tail = status
    line = f"{head} — {tail}" if tail else head
    usd = cost.get("usd") if cost else None
    if isinstance(usd, int | float):
        line += f" · ${usd:.4f}"
    return line


def _first_line(text: str | None, limit: int) -> str:
    line = (text or "").strip().split("\n", 1)[0].strip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


# -- reading ------------------------------------------------------------------------------

# Events of a page as (seq, JSON) and whether more follow: relay.history.fetch_page bound to the
# relay's state, used for the part older than the relay keeps.
PageFetcher = Callable[["Session", seqrules.Page], Awaitable[tuple[list[tuple[int, str]], bool]]]


async def summaries(
    store: Store, session_id: str, costs: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The parent's summary lines, one per subagent (``costs``: agent id → cost object)."""
    agent_rows = await store.read(
        "SELECT agent_id, first_seq, last_seq, events, prompt, outcome, started_at, ended_at"
        " FROM subagents WHERE session_id = ? ORDER BY first_seq",
        (session_id,),
    )
    call_rows = await store.read(
        "SELECT tool_use_id, seq, tool, caller, description, agent_type, prompt, result,"
        " result_error, notification FROM subagent_calls WHERE session_id = ? ORDER BY seq",
        (session_id,),
    )
    agents = [AgentRow(*r) for r in agent_rows]
    calls = [
        CallRow(
            tool_use_id=r[0],
            seq=r[1],
            tool=r[2],
            caller=r[3],
            description=_text(r[4]),
            agent_type=_text(r[5]),
            prompt=_text(r[6]),
            result=r[7],
            result_error=bool(r[8]),
            notification=r[9],
        )
        for r in call_rows
    ]
    costs = costs or {}
    return [s.to_json(costs.get(s.agent_id or "")) for s in link(agents, calls)]


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


async def page(
    store: Store,
    session: Session,
    agent_id: str,
    *,
    after: int | None,
    before: int | None,
    limit: int | None,
    epoch: str | None,
    page_max: int,
    fetch: PageFetcher,
) -> str:
    """A page of one subagent's events as the JSON body of the answer.

    Positions are the session's seqs, as for the session's own events: ``after=N`` gives the
    subagent's first events with seq > N, ``before=N`` its last ones with seq < N, oldest first,
    at most ``limit`` (≤ ``page_max``), with ``has_more`` in that direction."""
    size = seqrules.check_limit(limit, page_max)
    if after is not None and before is not None:
        raise BadRequest("give after or before, not both", code="bad_after")
    numbering = session.numbering
    if before is not None:
        seqrules.page_before(numbering, before, 1, epoch)  # the same position checks
    else:
        seqrules.page_after(numbering, after or 0, 1, epoch)
    known = await store.read(
        "SELECT events, first_seq, last_seq FROM subagents WHERE session_id = ? AND agent_id = ?",
        (session.id, agent_id),
    )
    if not known:
        raise NotFound(
            f"no subagent {agent_id} in session {session.id}",
            code="unknown_subagent",
            agent_id=agent_id,
        )
    if before is not None:
        rows = await store.read(
            "SELECT seq FROM subagent_events WHERE session_id = ? AND agent_id = ? AND seq < ?"
            " ORDER BY seq DESC LIMIT ?",
            (session.id, agent_id, before, size + 1),
        )
        seqs = sorted(int(r[0]) for r in rows[:size])
    else:
        rows = await store.read(
            "SELECT seq FROM subagent_events WHERE session_id = ? AND agent_id = ? AND seq > ?"
            " ORDER BY seq LIMIT ?",
            (session.id, agent_id, after or 0, size + 1),
        )
        seqs = [int(r[0]) for r in rows[:size]]
    has_more = len(rows) > size
    events = await _older(session, seqs, page_max, fetch) + await _stored(
        store, session, agent_id, seqs
    )
    events_count, first_seq, last_seq = known[0]
    head = json.dumps(
        {
            "session_id": session.id,
            "agent_id": agent_id,
            "epoch": session.epoch,
            "last_seq": session.last_seq,
            "oldest_seq": session.oldest_seq,
            "agent_events": events_count,
            "agent_first_seq": first_seq,
            "agent_last_seq": last_seq,
            "has_more": has_more,
        },
        separators=(",", ":"),
    )[:-1]
    return head + ',"events":[' + ",".join(data for _, data in events) + "]}"


async def _stored(
    store: Store, session: Session, agent_id: str, seqs: list[int]
) -> list[tuple[int, str]]:
    kept = [s for s in seqs if s >= session.oldest_seq]
    if not kept:
        return []
    rows = await store.read(
        "SELECT e.seq, e.data FROM subagent_events s JOIN events e"
        " ON e.session_id = s.session_id AND e.seq = s.seq"
        " WHERE s.session_id = ? AND s.agent_id = ? AND s.seq BETWEEN ? AND ? ORDER BY s.seq",
        (session.id, agent_id, kept[0], kept[-1]),
    )
    return [(int(r[0]), str(r[1])) for r in rows]


async def _older(
    session: Session, seqs: list[int], page_max: int, fetch: PageFetcher
) -> list[tuple[int, str]]:
    """The part older than the relay keeps, asked of the Mac in spans of at most ``page_max``."""
    wanted = [s for s in seqs if s < session.oldest_seq]
    out: list[tuple[int, str]] = []
    index = 0
    while index < len(wanted):
        first = wanted[index]
        span = [s for s in wanted[index:] if s < first + page_max]
        last = span[-1]
        events, _ = await fetch(
            session, seqrules.Page(first=first, last=last, from_mac=(first, last), has_more=False)
        )
        keep = set(span)
        out.extend(e for e in events if e[0] in keep)
        index += len(span)
    return out


# -- routes --------------------------------------------------------------------------------

router = APIRouter(prefix="/api")


@router.get("/sessions/{session_id}/subagents")
async def session_subagents(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """One summary line per subagent: type, task, outcome, cost (relay/features/subagents.py)."""
    session = await session_or_404(state, principal, session_id)
    costs: dict[str, dict[str, Any]] = {}
    if (
        state.part(usage.UsageTracker) is not None
    ):  # per subagent, by agent id (relay/features/usage.py)
        report = await usage.session_costs(state.store, principal.account_id, [session.id])
        costs = report.get(session.id, {}).get("by_agent", {})
    listed = await summaries(state.store, session.id, costs)
    return {"session_id": session.id, "subagents": listed}


@router.get("/sessions/{session_id}/subagents/{agent_id}/events")
async def subagent_events_page(
    session_id: str,
    agent_id: Annotated[str, Path(max_length=200)],
    principal: Phone,
    state: State,
    query: Page,
) -> Response:
    """A page of one subagent's events, by the session's seqs, like the session's own events."""
    session = await session_or_404(state, principal, session_id)
    body = await page(
        state.store,
        session,
        agent_id,
        after=query.after,
        before=query.before,
        limit=query.limit,
        epoch=query.epoch,
        page_max=state.config.int("catchup_page"),
        # The subagent page picks its events out of what is fetched: all of it or an error.
        fetch=functools.partial(fetch_page, state, whole=True),
    )
    return Response(body, media_type="application/json")


# The index is a trigger on the store's events: its tables are made when the store opens.
FEATURE = Feature("subagents", schema=setup, router=router)
