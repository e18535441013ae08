"""The usage report: what the relay recorded, counted by relay/report.py ``build_report``.

Recorded as it happens, in tables of this feature (SQLite and PostgreSQL alike):

* ``report_starts`` — each time a session's claude starts (its live side turns ``starting``,
  told by the Mac: relay/hookspecs.py ``SessionWatcher``): new (no event yet) or resumed, and how —
  ``move`` (the session was moving), ``revive`` (the Mac had just linked: after a reboot or an
  agent restart), else ``reopen`` (Reopen, or a message to a stopped session). Its scope is the
  one the Mac reports (``SessionInfo.resume_scope`` once resume scopes exist), else ``full``:
  every resume is ``claude --resume`` of the whole conversation today. A resume keeps the
  ``full`` estimate at that moment (the last answer's input + cache + output tokens) and, from
  the first answer after it, what it re-read (input + cache read + cache creation).
* ``report_last_usage`` — per session, the last answer's full figure (kept as lines arrive, a
  line observer's O(new lines) work), for the estimate above.
* ``report_searches`` — each search run on ``GET /api/search`` with words (its ``search_id`` goes
  back with the answer) and when a result of it was first opened (``POST /api/search/opened``).
* ``report_retention`` — each retention run's expiries per account: due (sessions whose time to
  be deleted came) and done (deleted, on the Mac too); retention.py calls :func:`record_retention`
  in its run's transaction.
* memory candidates' fates come from relay/features/memory.py.

    GET  /api/report?since=&until=     Report JSON: totals, by_mac, by_project, series, macs
                                       (names), starts_by_how (new, reopen, revive, move)
    POST /api/search/opened {"search_id", "session_id"}
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Query
from pydantic import Field

from relay.bodies import Body
from relay.db import Connection
from relay.deps import Phone, State, refuse_read_only
from relay.errors import BadRequest, NotFound
from relay.feature import Feature
from relay.features import memory
from relay.hookspecs import NewLines
from relay.report import (
    SCOPES,
    MemoryRow,
    ResumeRow,
    RetentionRow,
    SearchRow,
    StartRow,
    Window,
    build_report,
)
from relay.state import RelayState, iso
from relay.store import Session
from wire.protocol import SessionInfo
from wire.tasks import TaskSet

_log = logging.getLogger("relay.features.report")

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

DAY: Final = 86400.0
DEFAULT_DAYS: Final = 30  # the window when none is given
MAX_WINDOW_DAYS: Final = 3660
MAX_BUCKETS: Final = 92  # of the chart's series: days, or weeks past that
SEARCH_ID_BYTES: Final = 12
MAX_ROWS: Final = 200_000  # of one table read for one report
REREAD_FIELDS: Final = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
FULL_FIELDS: Final = (*REREAD_FIELDS, "output_tokens")
MAX_TOKENS: Final = 10**9  # a usage field above this is not believed
HOWS: Final = ("new", "reopen", "revive", "move")

TABLES = (
    """CREATE TABLE IF NOT EXISTS report_starts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        account_id TEXT NOT NULL,
        session_id TEXT NOT NULL,
        device_id TEXT NOT NULL,
        project TEXT NOT NULL,
        at REAL NOT NULL,
        resumed INTEGER NOT NULL,
        how TEXT NOT NULL,
        scope TEXT,
        full_estimate INTEGER,
        reread_tokens INTEGER,
        reread_at REAL
    )""",
    "CREATE INDEX IF NOT EXISTS report_starts_at ON report_starts(account_id, at)",
    "CREATE INDEX IF NOT EXISTS report_starts_session ON report_starts(session_id, id)",
    """CREATE TABLE IF NOT EXISTS report_last_usage (
        session_id TEXT PRIMARY KEY,
        tokens INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS report_searches (
        search_id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        at REAL NOT NULL,
        opened_at REAL,
        opened_session TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS report_searches_at ON report_searches(account_id, at)",
    """CREATE TABLE IF NOT EXISTS report_retention (
        account_id TEXT NOT NULL,
        at REAL NOT NULL,
        due INTEGER NOT NULL,
        done INTEGER NOT NULL,
        PRIMARY KEY (account_id, at)
    )""",
)


def setup(conn: Connection) -> None:
    for sql in TABLES:
        conn.execute(sql)


# -- recording ------------------------------------------------------------------------------------


def _count(value: object) -> int:
    return value if isinstance(value, int) and 0 <= value <= MAX_TOKENS else 0


def usage_tokens(usage: Mapping[str, Any], fields: Sequence[str]) -> int:
    return sum(_count(usage.get(f)) for f in fields)


def start_kind(session: Session, before: SessionInfo | None, after: SessionInfo) -> str | None:
    """How a ``session_update`` started the session's claude (``new``, ``reopen``, ``revive``,
    ``move``), None when it did not (pure)."""
    if after.state != "starting" or (before is not None and before.state == "starting"):
        return None
    if session.last_seq == 0:
        return "new"
    if session.mark == "moving":
        return "move"
    return "revive" if before is None else "reopen"


def scope_of(after: SessionInfo) -> str:
    """The resume's scope as the Mac reports it; ``full`` (today's only one) otherwise."""
    reported = getattr(after, "resume_scope", None) or getattr(after, "scope", None)
    return reported if reported in SCOPES else "full"


def _insert_start(
    conn: Connection, account_id: str, session: Session, how: str, scope: str | None, at: float
) -> None:
    resumed = how != "new"
    estimate = None
    if resumed:
        row = conn.execute(
            "SELECT tokens FROM report_last_usage WHERE session_id = ?", (session.id,)
        ).fetchone()
        estimate = int(row[0]) if row else None
    conn.execute(
        "INSERT INTO report_starts (account_id, session_id, device_id, project, at, resumed, how,"
        " scope, full_estimate) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (account_id, session.id, session.device_id, session.cwd, at, int(resumed), how,
         scope if resumed else None, estimate),
    )  # fmt: skip


class UsageObserver:
    """Keeps each session's last answer's figure and fills a pending resume's re-read tokens
    (relay/hookspecs.py ``LineObserver``, in its own savepoint: it never refuses lines)."""

    def setup(self, conn: Connection) -> None:
        setup(conn)

    def on_lines(self, conn: Connection, new: NewLines) -> None:
        answers = [
            c.facts.usage
            for _, c in new.lines
            if c.facts.usage is not None and c.facts.agent_id is None
        ]
        if not answers:
            return
        conn.execute("SAVEPOINT report_usage")
        try:
            pending = conn.execute(
                "SELECT id FROM report_starts WHERE session_id = ? AND resumed = 1"
                " AND reread_tokens IS NULL ORDER BY id DESC LIMIT 1",
                (new.session_id,),
            ).fetchone()
            if pending is not None:
                conn.execute(
                    "UPDATE report_starts SET reread_tokens = ?, reread_at = ? WHERE id = ?",
                    (usage_tokens(answers[0], REREAD_FIELDS), time.time(), pending[0]),
                )
            conn.execute(
                "INSERT INTO report_last_usage (session_id, tokens) VALUES (?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET tokens = excluded.tokens",
                (new.session_id, usage_tokens(answers[-1], FULL_FIELDS)),
            )
        except Exception:
            conn.execute("ROLLBACK TO report_usage")
            _log.exception("usage of session %s not recorded for the report", new.session_id)
        finally:
            conn.execute("RELEASE report_usage")


class Recorder:
    """The running part: records starts as the Macs report them."""

    def __init__(self, state: RelayState) -> None:
        self.state = state
        self.tasks = TaskSet("report", _log)

    def watch(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo
    ) -> None:
        how = start_kind(session, before, after)
        if how is None or self.tasks.closed:
            return
        scope = scope_of(after)
        at = time.time()
        self.tasks.start(
            self._record(account_id, session, how, scope, at),
            name=f"record the start of {session.id}",
        )

    async def _record(
        self, account_id: str, session: Session, how: str, scope: str, at: float
    ) -> None:
        await self.state.store.write(
            lambda conn: _insert_start(conn, account_id, session, how, scope, at)
        )

    async def close(self) -> None:
        await self.tasks.wait(2.0)
        await self.tasks.close()


async def record_search(state: RelayState, account_id: str) -> str:
    """A search run with words: its new ``search_id``."""
    search_id = secrets.token_hex(SEARCH_ID_BYTES)
    at = time.time()
    await state.store.write(
        lambda conn: conn.execute(
            "INSERT INTO report_searches (search_id, account_id, at) VALUES (?, ?, ?)",
            (search_id, account_id, at),
        )
    )
    return search_id


def record_retention(conn: Connection, at: float, reports: Mapping[str, Mapping[str, Any]]) -> None:
    """Inside a retention run's transaction: its expiries per account (its reports, as
    retention.py makes them): due = sessions whose time to be deleted came, done = those deleted
    on the relay and on their Mac."""
    rows = []
    for account_id, report in reports.items():
        deleted = report.get("deleted") or []
        failed = report.get("failed") or []
        done = sum(1 for d in deleted if isinstance(d, Mapping) and d.get("mac") == "deleted")
        rows.append((account_id, at, len(deleted) + len(failed), done))
    if rows:
        conn.executemany(
            "INSERT INTO report_retention (account_id, at, due, done) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (account_id, at) DO NOTHING",
            rows,
        )


# -- reading --------------------------------------------------------------------------------------


async def rows_of(
    state: RelayState, account_id: str, window: Window
) -> tuple[list[StartRow], list[ResumeRow], list[SearchRow], list[MemoryRow], list[RetentionRow]]:
    span = (account_id, window.since, window.until)
    starts = await state.store.read(
        "SELECT at, session_id, device_id, project, resumed, scope, reread_tokens, full_estimate"
        f" FROM report_starts WHERE account_id = ? AND at >= ? AND at < ? LIMIT {MAX_ROWS}",
        span,
    )
    start_rows = [
        StartRow(float(at), str(sid), str(dev), str(project), bool(resumed), scope)
        for at, sid, dev, project, resumed, scope, _, _ in starts
    ]
    resume_rows = [
        ResumeRow(float(at), str(sid), str(dev), str(project), scope or "full", int(reread),
                  None if estimate is None else int(estimate))
        for at, sid, dev, project, resumed, scope, reread, estimate in starts
        if resumed and reread is not None
    ]  # fmt: skip
    searches = await state.store.read(
        "SELECT at, search_id, opened_at FROM report_searches"
        f" WHERE account_id = ? AND at >= ? AND at < ? LIMIT {MAX_ROWS}",
        span,
    )
    search_rows = [
        SearchRow(float(at), str(sid), None if opened is None else float(opened))
        for at, sid, opened in searches
    ]
    memory_rows = [
        MemoryRow(at, cid, project, fate)  # type: ignore[arg-type]
        for cid, project, fate, at in await memory.fates(
            state, account_id, window.since, window.until
        )
    ]
    expiries = await state.store.read(
        "SELECT at, due, done FROM report_retention WHERE account_id = ? AND at >= ? AND at < ?",
        span,
    )
    retention_rows = [RetentionRow(float(at), int(due), int(done)) for at, due, done in expiries]
    return start_rows, resume_rows, search_rows, memory_rows, retention_rows


def buckets(window: Window) -> list[Window]:
    """The chart's periods over ``window``: days, or as many days each as keeps them at most
    :data:`MAX_BUCKETS` (pure)."""
    span = window.until - window.since
    days = max(1, -(-int(span // DAY) // MAX_BUCKETS)) if span > DAY * MAX_BUCKETS else 1
    step = DAY * days
    out: list[Window] = []
    start = window.since
    while start < window.until and len(out) < MAX_BUCKETS + 1:
        out.append(Window(start, min(window.until, start + step)))
        start += step
    return out


async def report_json(state: RelayState, account_id: str, window: Window) -> dict[str, Any]:
    rows = await rows_of(state, account_id, window)
    body = build_report(window, *rows).to_json()
    body["series"] = [
        {"since": iso(part.since), "until": iso(part.until),
         **_series_point(build_report(part, *rows).to_json()["totals"])}
        for part in buckets(window)
    ]  # fmt: skip
    hows = await state.store.read(
        "SELECT how, COUNT(*) FROM report_starts WHERE account_id = ? AND at >= ? AND at < ?"
        " GROUP BY how",
        (account_id, window.since, window.until),
    )
    counted = {str(how): int(n) for how, n in hows}
    body["starts_by_how"] = {how: counted.get(how, 0) for how in HOWS}
    devices = await state.store.list_devices(account_id)
    body["macs"] = {d.id: d.name for d in devices}
    body["since_iso"], body["until_iso"] = iso(window.since), iso(window.until)
    return body


def _series_point(totals: Mapping[str, Any]) -> dict[str, Any]:
    sessions = totals["sessions"]
    return {
        "started": sessions["started"],
        "resumed": sessions["resumed"],
        "searches": totals["search"]["searches"],
        "followed": totals["search"]["followed"],
        "reread": {scope: totals["tokens"][scope]["reread"] for scope in SCOPES},
    }


def parse_window(since: str | None, until: str | None, now: float | None = None) -> Window:
    """The window of ``since`` and ``until`` (a day ``2026-12-01``, an ISO time or epoch seconds;
    the last :data:`DEFAULT_DAYS` days up to now by default)."""

    def parse(value: str, end_of_day: bool) -> float:
        text = value.strip()
        try:
            return float(text)
        except ValueError:
            pass
        try:
            if len(text) == len("2026-12-01"):
                return datetime.strptime(text, "%Y-%m-%d").timestamp() + (DAY if end_of_day else 0)
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            raise BadRequest(
                f"{value[:40]!r} is not a date: use 2026-12-01, 2026-12-01T10:00:00Z or epoch"
                " seconds",
                code="bad_date",
            ) from None

    current = time.time() if now is None else now
    end = parse(until, True) if until else current
    start = parse(since, False) if since else end - DEFAULT_DAYS * DAY
    if not start <= end:
        raise BadRequest("the report's since must not come after its until", code="bad_window")
    if end - start > MAX_WINDOW_DAYS * DAY:
        raise BadRequest(f"a report covers at most {MAX_WINDOW_DAYS} days", code="bad_window")
    return Window(start, end)


DateQuery = Annotated[str | None, Query(max_length=64)]


@router.get("/report")
async def report_route(
    principal: Phone, state: State, since: DateQuery = None, until: DateQuery = None
) -> dict[str, Any]:
    """The usage report of the account over the window, per Mac and per project."""
    return await report_json(state, principal.account_id, parse_window(since, until))


class SearchOpened(Body):
    search_id: str = Field(min_length=1, max_length=64, pattern=r"^[0-9a-f]+$")
    session_id: str = Field(min_length=1, max_length=64)


@router.post("/search/opened")
async def search_opened(body: SearchOpened, principal: Phone, state: State) -> dict[str, Any]:
    """A result of a search was opened: the first time counts (within 2 minutes it is a
    search that worked, relay/report.py)."""
    now = time.time()

    def job(conn: Connection) -> int:
        row = conn.execute(
            "SELECT opened_at FROM report_searches WHERE search_id = ? AND account_id = ?",
            (body.search_id, principal.account_id),
        ).fetchone()
        if row is None:
            return -1
        if row[0] is None:
            conn.execute(
                "UPDATE report_searches SET opened_at = ?, opened_session = ? WHERE search_id = ?",
                (now, body.session_id, body.search_id),
            )
            return 1
        return 0

    found = await state.store.write(job)
    if found < 0:
        raise NotFound(f"no search {body.search_id}", code="unknown_search")
    return {"ok": True, "first": found == 1}


async def start(state: RelayState) -> Recorder:
    recorder = Recorder(state)
    state.hooks.watchers.append(recorder.watch)
    state.store.add_observer(UsageObserver())
    return recorder


FEATURE = Feature("report", schema=setup, start=start, router=router)
