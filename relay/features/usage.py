"""Usage and cost on the relay: kept per session as lines arrive, listed in one query.

``UsageTracker`` is a line observer (relay/hookspecs.py): inside the ingest transaction, for the lines
stored for the first time, it updates the session's ledger (features/cost.py) — the message ids it
counted and their usage (``usage_messages``, so a response repeated across lines, batches or
conversation files counts once) and one ``session_costs`` row holding the ledger and the
finished report. The work
is O(new lines): the ledger is a few entries per model, subagent and cost epoch, never the lines.

Reading costs is then one indexed query: ``session_costs(store, account, ids)`` for any number of
sessions, ``GET /api/sessions/{id}/cost`` for one, ``GET /api/costs`` for all of an account.

The session listing (``RelayState.session_json``) is synchronous, so its compact ``cost``
(``{"usd", "tokens", "source"}``) comes from an in-memory cache: loaded from the table at start,
then refreshed after each commit that changed a cost — the tracker queues a small writer job
that reads the committed rows and fills the cache once that job has committed too, so the cache
never shows a figure a rolled-back batch computed. On PostgreSQL, where lines may come in through
any relay node, the listing and the snapshot read the stored figures instead of the cache.

Prices are those of the relay's configuration at ingest time (``model_prices`` overrides on top
of relay/features/prices.json); changing them re-prices a session's estimated part when it next
gets lines.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Annotated, Any, Final

from fastapi import APIRouter, Query, Request
from fastapi.responses import Response

from relay.db import Connection
from relay.deps import Phone
from relay.feature import Feature
from relay.features.cost import EMPTY_REPORT, CostCounter, Ledger, Prices, Usage, load_prices
from relay.hookspecs import NewLines
from relay.state import RelayState
from relay.store import Session, Store
from wire.tasks import TaskSet

_log = logging.getLogger("relay.features.usage")

SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS usage_messages (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        message_id TEXT NOT NULL,
        usage TEXT NOT NULL,
        PRIMARY KEY (session_id, message_id)
    ) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS session_costs (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        account_id TEXT NOT NULL,
        ledger TEXT NOT NULL,
        report TEXT NOT NULL,
        usd REAL,
        tokens INTEGER NOT NULL,
        source TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS session_costs_account ON session_costs(account_id)",
)
TOKEN_FIELDS: Final = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_CHUNK: Final = 500  # ids per IN (…) query
EMPTY_JSON: Final = json.dumps(EMPTY_REPORT.to_json())
EMPTY_SUMMARY: Final = EMPTY_REPORT.summary()


def setup(conn: Connection) -> None:
    """The feature's tables (its schema, made as the store opens; safe to run again)."""
    for statement in SCHEMA:  # one by one: executescript would COMMIT the writer's transaction
        conn.execute(statement)


def _exists(conn: Connection, table: str) -> bool:
    row = conn.execute("SELECT to_regclass(?) IS NOT NULL", (table,)).fetchone()
    return bool(row[0])


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


class UsageTracker:
    """The line observer keeping each session's usage and cost (see the module's docstring)."""

    def __init__(self, store: Store, prices: Prices) -> None:
        self.store = store
        self.prices = prices
        self._cache: dict[str, dict[str, Any]] = {}  # session id → summary (event loop only)
        self._dirty: set[str] = set()  # sessions changed since the last refresh (writer only)
        self._refresh_queued = False  # writer only
        self._loop: asyncio.AbstractEventLoop | None = None
        self.tasks = TaskSet("usage", _log)

    # -- LineObserver --------------------------------------------------------------

    def setup(self, conn: Connection) -> None:
        # Made as the store opens already; again for a store opened without the schema. Not on
        # PostgreSQL when there: CREATE INDEX IF NOT EXISTS would lock the table for writes.
        if not conn.dialect.postgres or not _exists(conn, "session_costs"):
            setup(conn)

    def on_lines(self, conn: Connection, new: NewLines) -> None:
        session_id, conversation_id, lines = new.session_id, new.conversation_id, new.lines
        account_id = new.account_id
        facts = [
            c.facts for _, c in lines if c.facts.usage is not None or c.facts.cost_state is not None
        ]
        if not facts:
            return
        row = conn.execute(
            "SELECT ledger FROM session_costs WHERE session_id = ?", (session_id,)
        ).fetchone()
        ledger = Ledger.from_json(json.loads(row[0])) if row else Ledger()
        ids = list({f.message_id for f in facts if f.message_id is not None})
        counted: dict[str, Usage] = {}
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            counted.update(
                (str(r[0]), Usage.from_row(json.loads(r[1])))
                for r in conn.execute(
                    "SELECT message_id, usage FROM usage_messages"
                    f" WHERE session_id = ? AND message_id IN ({marks})",
                    (session_id, *chunk),
                )
            )
        counter = CostCounter(self.prices, ledger, counted)
        changed = False
        for item in facts:
            changed = counter.add(item, conversation_id) or changed
        if not changed:
            return
        if counter.changed:
            conn.executemany(
                "INSERT INTO usage_messages (session_id, message_id, usage) VALUES (?, ?, ?)"
                " ON CONFLICT (session_id, message_id) DO UPDATE SET usage = excluded.usage",
                [
                    (session_id, m, json.dumps(counter.counted[m].as_row()))
                    for m in dict.fromkeys(counter.changed)
                ],
            )
        report = counter.report().to_json()
        conn.execute(
            "INSERT INTO session_costs (session_id, account_id, ledger, report, usd, tokens, source)"
            " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
            " ledger = excluded.ledger, report = excluded.report, usd = excluded.usd,"
            " tokens = excluded.tokens, source = excluded.source",
            (
                session_id,
                account_id,
                json.dumps(ledger.to_json(), separators=(",", ":")),
                json.dumps(report, separators=(",", ":")),
                report["usd"],
                sum(report[k] for k in TOKEN_FIELDS),
                report["source"],
            ),
        )
        self._dirty.add(session_id)
        if self._loop is not None and not self._refresh_queued:
            try:
                self._loop.call_soon_threadsafe(self._start_refresh)
            except RuntimeError:  # the loop has closed (shutting down): no listing to refresh
                return
            self._refresh_queued = True

    # -- the listing's cache ------------------------------------------------------------

    async def start(self) -> None:
        """Fill the cache and refresh it after commits from now on (call on the event loop)."""
        rows = await self.store.read("SELECT session_id, usd, tokens, source FROM session_costs")
        self._cache = {str(r[0]): _summary(r[1], r[2], r[3]) for r in rows}
        self._loop = asyncio.get_running_loop()

    def summary(self, session_id: str) -> dict[str, Any]:
        """``{"usd", "tokens", "source"}`` of a session (zeros when it has no usage yet)."""
        return dict(self._cache.get(session_id, EMPTY_SUMMARY))

    def _start_refresh(self) -> None:
        if self.tasks.closed:
            self._refresh_queued = False
            return
        self.tasks.start(self._refresh(), name="cost cache refresh")

    async def close(self) -> None:
        await self.tasks.close()

    async def _refresh(self) -> None:
        def job(conn: Connection) -> list[Any]:
            # A later transaction than the lines': reads only what was committed with them.
            try:
                ids = sorted(self._dirty)
                rows: list[Any] = []
                for chunk in _chunks(ids):
                    marks = ",".join("?" * len(chunk))
                    rows += conn.execute(
                        "SELECT session_id, usd, tokens, source FROM session_costs"
                        f" WHERE session_id IN ({marks})",
                        tuple(chunk),
                    ).fetchall()
                self._dirty.difference_update(ids)
                return rows
            finally:
                self._refresh_queued = False

        try:
            rows = await self.store.write(job)
        except Exception as exc:  # closing, or a failed commit: the next change refreshes again
            _log.debug("cost cache refresh skipped: %s", exc)
            return
        for session_id, usd, tokens, source in rows:
            self._cache[str(session_id)] = _summary(usd, tokens, source)


def _summary(usd: Any, tokens: Any, source: Any) -> dict[str, Any]:
    return {"usd": usd, "tokens": int(tokens), "source": str(source)}


# -- wiring -------------------------------------------------------------------------------


async def start(state: RelayState) -> UsageTracker:
    """Make the tracker for the relay's store (prices from its config), observe lines, fill the
    cache, and give each session snapshot its ``cost``."""
    tracker = UsageTracker(state.store, load_prices(state.config.str("model_prices")))
    state.store.add_observer(tracker)
    await tracker.start()
    state.hooks.session_fields.append(lambda session: {"cost": tracker.summary(session.id)})
    if state.store.dialect.postgres:
        # The cache holds what this node counted; lines may come in through any node, so the
        # listing and the snapshot read the stored figures (one indexed query each).
        state.hooks.list_fields.append(functools.partial(_listed_costs, state.store))
        state.hooks.snapshot_fields.append(functools.partial(_session_cost, state.store))
    return tracker


_SUMMARY_SQL: Final = "SELECT session_id, usd, tokens, source FROM session_costs"


async def _listed_costs(store: Store, account_id: str) -> Callable[[str], dict[str, Any]]:
    rows = await store.read(_SUMMARY_SQL + " WHERE account_id = ?", (account_id,))
    found = {str(r[0]): _summary(r[1], r[2], r[3]) for r in rows}
    return lambda session_id: {"cost": dict(found.get(session_id, EMPTY_SUMMARY))}


async def _session_cost(store: Store, session: Session) -> dict[str, Any]:
    rows = await store.read(_SUMMARY_SQL + " WHERE session_id = ?", (session.id,))
    return {"cost": _summary(rows[0][1], rows[0][2], rows[0][3]) if rows else dict(EMPTY_SUMMARY)}


async def session_costs(
    store: Store, account_id: str, session_ids: Iterable[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Each session's full cost report (CostReport.to_json), by session id.

    All the account's sessions when ``session_ids`` is None; ids of other accounts or of no
    session are left out. A session without usage gets the empty report (zeros, usd 0)."""
    rows = await _reports(store, account_id, session_ids)

    def parse() -> dict[str, dict[str, Any]]:
        # One json.loads for all: a call per report costs twice as much at 10,000 sessions.
        reports: list[dict[str, Any]] = json.loads("[" + ",".join(r for _, r in rows) + "]")
        return dict(zip((sid for sid, _ in rows), reports, strict=True))

    return await asyncio.to_thread(parse)  # off the event loop, like the query


async def session_costs_text(
    store: Store, account_id: str, session_ids: Iterable[str] | None = None
) -> str:
    """``{"costs": {session id: report}}`` as JSON text, built from the stored reports as they
    are (no parsing and re-encoding of 10,000 reports)."""
    parts = [
        f"{json.dumps(sid)}:{report}"
        for sid, report in await _reports(store, account_id, session_ids)
    ]
    return '{"costs":{' + ",".join(parts) + "}}"


async def _reports(
    store: Store, account_id: str, session_ids: Iterable[str] | None
) -> list[tuple[str, str]]:
    """(session id, report JSON) — one indexed query (per 500 ids when ids are given)."""
    if session_ids is None:
        rows = await store.read(
            "SELECT s.id, c.report FROM sessions s LEFT JOIN session_costs c ON c.session_id = s.id"
            " WHERE s.account_id = ?",
            (account_id,),
        )
    else:
        rows = []
        for chunk in _chunks(list(dict.fromkeys(session_ids))):
            marks = ",".join("?" * len(chunk))
            rows += await store.read(
                "SELECT s.id, c.report FROM sessions s"
                " LEFT JOIN session_costs c ON c.session_id = s.id"
                f" WHERE s.account_id = ? AND s.id IN ({marks})",
                (account_id, *chunk),
            )
    return [(str(sid), report or EMPTY_JSON) for sid, report in rows]


# -- API ------------------------------------------------------------------------------------


router = APIRouter(prefix="/api")


@router.get("/sessions/{session_id}/cost")
async def session_cost(session_id: str, request: Request, principal: Phone) -> dict[str, Any]:
    """One session's tokens and USD: totals, ``by_model``, ``by_agent``, ``source``."""
    store: Store = request.app.state.relay.store
    await store.get_session(principal.account_id, session_id)  # 404 unknown_session
    costs = await session_costs(store, principal.account_id, [session_id])
    return {"session_id": session_id, **costs[session_id]}


@router.get("/costs")
async def costs(
    request: Request,
    principal: Phone,
    ids: Annotated[str | None, Query(max_length=200_000)] = None,
) -> Response:
    """Every session's cost report (or those in ``ids``, comma-separated), by session id."""
    store: Store = request.app.state.relay.store
    wanted = [i for i in ids.split(",") if i] if ids else None
    text = await session_costs_text(store, principal.account_id, wanted)
    return Response(text, media_type="application/json")


FEATURE = Feature("usage", schema=setup, start=start, router=router)
