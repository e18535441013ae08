"""Memory with a tap: durable facts proposed from a project's sessions, written only when the
person accepts them on the phone.

A *project* is a working folder (a session's ``cwd``): its sessions are the account's sessions
in that folder. Candidates come from relay/memory.py ``propose`` over their ledgers (a constraint
pinned in two sessions, a decision marked "remember", a correction given twice), as the decisions
feature keeps them (relay/features/decisions.py ``ledger_for`` and ``remembered``: the decisions
from the stored events, the person's pins and "remember" marks).

Every candidate's fate is kept in ``memory_candidates`` (one row per account and candidate id,
relay/memory.py's stable id): ``proposed`` when first found, then ``accepted`` (as proposed),
``edited`` (accepted with the text changed) or ``dismissed``, with when each happened (the usage
report counts them, relay/features/report.py). A fact accepted or dismissed is never proposed
again. Proposing writes nothing to any Mac: only ``POST /api/memory/{id}`` with ``accept`` sends
``write_memory`` to a Mac holding the project (a session of that folder, one online first), with
every fact accepted for that file, so the section holds them all; the diff is shown first
(``GET /api/memory/{id}/diff``, the same command as a dry run). Dismissing an accepted fact takes
it out of its file again. What is written applies from each session's next start (Claude Code
reads CLAUDE.md files as it starts).

    GET  /api/memory?project=          the candidates (of one project, or of all)
    GET  /api/memory/{id}/diff?file=&text=   what accepting would change, as a unified diff
    POST /api/memory/{id} {"action": "accept"|"dismiss", "text"?, "file"?}
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from fastapi import APIRouter, Depends, Query
from pydantic import Field

from relay.bodies import Body
from relay.db import Connection
from relay.deps import Phone, State, refuse_read_only, send_command
from relay.errors import Conflict, NotFound, Unprocessable
from relay.feature import Feature
from relay.features import decisions
from relay.memory import FATES, Candidate, SessionLedger, propose
from relay.state import RelayState, iso
from relay.store import Session
from wire.memory_section import MEMORY_FILES, SectionError, check_fact
from wire.protocol import (
    MAX_CWD_CHARS,
    MAX_MEMORY_FACTS,
    MemoryFileName,
    WriteMemoryArgs,
)

_log = logging.getLogger("relay.features.memory")

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

DEFAULT_FILE: Final[MemoryFileName] = "CLAUDE.local.md"
MAX_PROJECTS: Final = 50  # projects looked at by one GET /api/memory without a project
MAX_EVIDENCE: Final = 20  # evidence listed with one candidate
MAX_PROJECT_SESSIONS: Final = 40  # a project's newest sessions a proposal reads the ledgers of
ID_RE: Final = re.compile(r"[0-9a-f]{16}")
ACCEPTED: Final = ("accepted", "edited")

TABLES = (
    f"""CREATE TABLE IF NOT EXISTS memory_candidates (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        project TEXT NOT NULL,
        text TEXT NOT NULL,
        rules TEXT NOT NULL,
        evidence TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ({", ".join(f"'{f}'" for f in FATES)})),
        proposed_at REAL NOT NULL,
        decided_at REAL,
        written_text TEXT,
        file TEXT,
        path TEXT,
        device_id TEXT,
        PRIMARY KEY (account_id, id)
    )""",
    "CREATE INDEX IF NOT EXISTS memory_candidates_project"
    " ON memory_candidates(account_id, project, state)",
    "CREATE INDEX IF NOT EXISTS memory_candidates_proposed ON memory_candidates(proposed_at)",
    "CREATE INDEX IF NOT EXISTS memory_candidates_decided ON memory_candidates(decided_at)",
)

_COLUMNS = (
    "id, project, text, rules, evidence, state, proposed_at, decided_at, written_text, file,"
    " path, device_id"
)


def setup(conn: Connection) -> None:
    """The table (safe to run again, on SQLite and PostgreSQL)."""
    for sql in TABLES:
        conn.execute(sql)


@dataclass(frozen=True)
class Row:
    """One candidate as stored."""

    id: str
    project: str
    text: str
    rules: list[str]
    evidence: list[dict[str, Any]]
    state: str
    proposed_at: float
    decided_at: float | None
    written_text: str | None
    file: str | None
    path: str | None
    device_id: str | None

    @classmethod
    def of(cls, row: Sequence[Any]) -> Row:
        (id_, project, text, rules, evidence, state, proposed, decided, written, file, path,
         device) = row  # fmt: skip
        return cls(
            str(id_), str(project), str(text), json.loads(rules), json.loads(evidence),
            str(state), float(proposed), None if decided is None else float(decided),
            written, file, path, device,
        )  # fmt: skip

    @property
    def fact(self) -> str:
        """The text as it is (or would be) in the file."""
        return self.written_text if self.written_text is not None else self.text

    def to_json(self, titles: Mapping[str, str]) -> dict[str, Any]:
        return {
            "id": self.id,
            "project": self.project,
            "text": self.fact,
            "proposed_text": self.text,
            "state": self.state,
            "rules": self.rules,
            "evidence": [
                {**e, "title": titles.get(str(e.get("session_id")), "")}
                for e in self.evidence[:MAX_EVIDENCE]
            ],
            "evidence_count": len(self.evidence),
            "file": self.file,
            "path": self.path,
            "proposed_at": iso(self.proposed_at),
            "decided_at": iso(self.decided_at),
            "applies": "from each session's next start" if self.state in ACCEPTED else None,
        }


# -- the ledgers of a project's sessions (the seam to the decisions feature) ------------------


async def project_ledgers(
    state: RelayState, account_id: str, project: str, sessions: Sequence[Session]
) -> list[SessionLedger]:
    """The ledgers of ``sessions`` (one project's, oldest first) as the decisions feature keeps
    them (the person's pins with the decisions), with the decisions each has marked "remember"."""
    marks = await decisions.remembered(state, project, account_id)
    return [
        SessionLedger(
            session.id,
            await decisions.ledger_for(state, session.id),
            frozenset(marks.get(session.id, ())),
        )
        for session in sessions
    ]


# -- the table ----------------------------------------------------------------------------------


def _upsert(conn: Connection, account_id: str, found: Sequence[Candidate], now: float) -> None:
    """Store new candidates as ``proposed``; refresh the text and evidence of those still
    proposed; leave every decided one as it is."""
    for c in found:
        rules = json.dumps(list(c.rules))
        evidence = json.dumps([e.to_json() for e in c.evidence])
        conn.execute(
            "INSERT INTO memory_candidates (account_id, id, project, text, rules, evidence, state,"
            " proposed_at) VALUES (?, ?, ?, ?, ?, ?, 'proposed', ?)"
            " ON CONFLICT (account_id, id) DO UPDATE SET text = excluded.text,"
            " rules = excluded.rules, evidence = excluded.evidence"
            " WHERE memory_candidates.state = 'proposed'",
            (account_id, c.id, c.project, c.text, rules, evidence, now),
        )


async def _rows(state: RelayState, account_id: str, project: str | None) -> list[Row]:
    where, params = "account_id = ?", [account_id]
    if project is not None:
        where += " AND project = ?"
        params.append(project)
    rows = await state.store.read(
        f"SELECT {_COLUMNS} FROM memory_candidates WHERE {where} ORDER BY proposed_at DESC, id",
        params,
    )
    return [Row.of(r) for r in rows]


async def _row(state: RelayState, account_id: str, candidate_id: str) -> Row:
    rows = await state.store.read(
        f"SELECT {_COLUMNS} FROM memory_candidates WHERE account_id = ? AND id = ?",
        (account_id, candidate_id),
    )
    if not rows:
        raise NotFound(f"no memory candidate {candidate_id}", code="unknown_candidate")
    return Row.of(rows[0])


def _projects(sessions: Iterable[Session]) -> dict[str, list[Session]]:
    by: dict[str, list[Session]] = {}
    for session in sorted(sessions, key=lambda s: (s.created_at, s.id)):
        if session.cwd:
            by.setdefault(session.cwd, []).append(session)
    return by


async def refresh(state: RelayState, account_id: str, project: str | None = None) -> None:
    """Propose what the project's (or every project's) sessions hold now."""
    projects = _projects(await state.store.list_sessions(account_id))
    chosen = [project] if project is not None else sorted(projects)[:MAX_PROJECTS]
    found: list[Candidate] = []
    for name in chosen:
        sessions = projects.get(name, [])[-MAX_PROJECT_SESSIONS:]  # oldest first: the newest
        if sessions:
            found.extend(propose(name, await project_ledgers(state, account_id, name, sessions)))
    if found:
        now = time.time()
        await state.store.write(lambda conn: _upsert(conn, account_id, found, now))


# -- writing to the Mac -------------------------------------------------------------------------


async def _holder(state: RelayState, account_id: str, project: str) -> Session:
    """A session of the project whose Mac is online (the newest), else the newest of all (its
    Mac's offline refusal then says which Mac to start)."""
    sessions = _projects(await state.store.list_sessions(account_id)).get(project, [])
    if not sessions:
        raise Conflict(
            f"no session works in {project!r} any more: start one there to write its memory",
            code="no_project_session",
        )
    newest = sorted(sessions, key=lambda s: s.updated_at, reverse=True)
    for session in newest:
        link = state.live.link(session.device_id)
        if link is not None and not link.closed:
            return session
    return newest[0]


async def _facts_for(
    state: RelayState, account_id: str, project: str, file: str, skip: str
) -> list[str]:
    """The facts accepted for ``file`` of ``project`` (oldest decision first), but ``skip``."""
    rows = await _rows(state, account_id, project)
    kept = sorted(
        (r for r in rows if r.state in ACCEPTED and r.file == file and r.id != skip),
        key=lambda r: (r.decided_at or 0, r.id),
    )
    return [r.fact for r in kept]


async def _write(
    state: RelayState, session: Session, project: str, file: MemoryFileName, facts: list[str],
    dry_run: bool,
) -> dict[str, Any]:  # fmt: skip
    if len(facts) > MAX_MEMORY_FACTS:
        raise Conflict(
            f"{file} of {project!r} would hold {len(facts)} facts, over {MAX_MEMORY_FACTS}:"
            " dismiss some first",
            code="too_many_facts",
        )
    args = WriteMemoryArgs(cwd=project, file=file, facts=facts, dry_run=dry_run)
    return await send_command(state, session, args)


def _checked(text: str) -> str:
    try:
        return check_fact(text)
    except SectionError as exc:
        raise Unprocessable(str(exc), code="bad_fact") from None


class Writes:
    """The running part: one write at a time per project and file (two taps at once must not
    each write the section without the other's fact; one relay node's guard)."""

    def __init__(self) -> None:
        self.locks: dict[tuple[str, str], asyncio.Lock] = {}

    def lock(self, account_id: str, project: str) -> asyncio.Lock:
        return self.locks.setdefault((account_id, project), asyncio.Lock())

    async def close(self) -> None:
        self.locks.clear()


def _lock(state: RelayState, account_id: str, project: str) -> asyncio.Lock:
    part = state.part(Writes)
    if part is None:  # not started (a store opened without the app): no one to race
        return asyncio.Lock()
    return part.lock(account_id, project)


async def start(state: RelayState) -> Writes:
    return Writes()


# -- routes -------------------------------------------------------------------------------------

ProjectQuery = Annotated[str | None, Query(min_length=1, max_length=MAX_CWD_CHARS)]
FileQuery = Annotated[MemoryFileName | None, Query()]
TextQuery = Annotated[str | None, Query(max_length=4000)]


def _check_id(candidate_id: str) -> None:
    if not ID_RE.fullmatch(candidate_id):
        raise NotFound(f"no memory candidate {candidate_id[:40]!r}", code="unknown_candidate")


async def _titles(state: RelayState, account_id: str) -> dict[str, str]:
    return {s.id: s.title for s in await state.store.list_sessions(account_id)}


@router.get("/memory")
async def list_candidates(
    principal: Phone, state: State, project: ProjectQuery = None
) -> dict[str, Any]:
    """The memory candidates of one project (or of every project), newest first; what the
    sessions hold now is proposed first."""
    await refresh(state, principal.account_id, project)
    rows = await _rows(state, principal.account_id, project)
    titles = await _titles(state, principal.account_id)
    projects = sorted(_projects(await state.store.list_sessions(principal.account_id)))
    return {
        "candidates": [r.to_json(titles) for r in rows],
        "projects": projects[:MAX_PROJECTS],
        "files": list(MEMORY_FILES),
        "default_file": DEFAULT_FILE,
    }


@router.get("/memory/{candidate_id}/diff")
async def candidate_diff(
    candidate_id: str, principal: Phone, state: State, file: FileQuery = None,
    text: TextQuery = None,
) -> dict[str, Any]:  # fmt: skip
    """What accepting the candidate (its text, or ``text``) into ``file`` would change."""
    _check_id(candidate_id)
    row = await _row(state, principal.account_id, candidate_id)
    chosen: MemoryFileName = file or _file_of(row)
    fact = _checked(text if text is not None else row.fact)
    facts = [*await _facts_for(state, principal.account_id, row.project, chosen, row.id), fact]
    session = await _holder(state, principal.account_id, row.project)
    done = await _write(state, session, row.project, chosen, facts, dry_run=True)
    return {"diff": done.get("diff", ""), "path": done.get("path"), "file": chosen}


def _file_of(row: Row) -> MemoryFileName:
    return "CLAUDE.md" if row.file == "CLAUDE.md" else DEFAULT_FILE


class MemoryAction(Body):
    action: Literal["accept", "dismiss"]
    text: str | None = Field(default=None, max_length=4000)
    file: MemoryFileName | None = None


@router.post("/memory/{candidate_id}")
async def decide(
    candidate_id: str, body: MemoryAction, principal: Phone, state: State
) -> dict[str, Any]:
    """Accept (written to the Mac, then kept as accepted or edited) or dismiss a candidate."""
    _check_id(candidate_id)
    account = principal.account_id
    row = await _row(state, account, candidate_id)
    async with _lock(state, account, row.project):
        return await _decide(state, account, await _row(state, account, candidate_id), body)


async def _decide(state: RelayState, account: str, row: Row, body: MemoryAction) -> dict[str, Any]:
    candidate_id = row.id
    now = time.time()
    if body.action == "dismiss":
        if row.state in ACCEPTED and row.file is not None:
            # Taken out of its file again: the section holds the others.
            old: MemoryFileName = _file_of(row)
            others = await _facts_for(state, account, row.project, old, row.id)
            session = await _holder(state, account, row.project)
            await _write(state, session, row.project, old, others, dry_run=False)
        await state.store.write(
            lambda conn: conn.execute(
                "UPDATE memory_candidates SET state = 'dismissed', decided_at = ?"
                " WHERE account_id = ? AND id = ?",
                (now, account, candidate_id),
            )
        )
    else:
        fact = _checked(body.text if body.text is not None else row.fact)
        file: MemoryFileName = body.file or _file_of(row)
        session = await _holder(state, account, row.project)
        facts = [*await _facts_for(state, account, row.project, file, row.id), fact]
        done = await _write(state, session, row.project, file, facts, dry_run=False)
        if row.state in ACCEPTED and row.file is not None and row.file != file:
            old_file = _file_of(row)
            others = await _facts_for(state, account, row.project, old_file, row.id)
            await _write(state, session, row.project, old_file, others, dry_run=False)
        fate = "accepted" if fact == check_fact(row.text) else "edited"
        path = done.get("path")
        await state.store.write(
            lambda conn: conn.execute(
                "UPDATE memory_candidates SET state = ?, decided_at = ?, written_text = ?,"
                " file = ?, path = ?, device_id = ? WHERE account_id = ? AND id = ?",
                (fate, now, fact, file, path, session.device_id, account, candidate_id),
            )
        )
    updated = await _row(state, account, candidate_id)
    return {"candidate": updated.to_json(await _titles(state, account))}


# -- what the usage report reads ----------------------------------------------------------------


async def fates(
    state: RelayState, account_id: str, since: float, until: float
) -> list[tuple[str, str, str, float]]:
    """(candidate id, project, fate, at) of every fate of the account's candidates that happened
    in ``since <= at < until`` (a candidate's proposal and its decision)."""
    rows = await state.store.read(
        "SELECT id, project, state, proposed_at, decided_at FROM memory_candidates"
        " WHERE account_id = ? AND ((proposed_at >= ? AND proposed_at < ?)"
        " OR (decided_at >= ? AND decided_at < ?))",
        (account_id, since, until, since, until),
    )
    out: list[tuple[str, str, str, float]] = []
    for id_, project, fate, proposed, decided in rows:
        if since <= proposed < until:
            out.append((str(id_), str(project), "proposed", float(proposed)))
        if decided is not None and fate != "proposed" and since <= decided < until:
            out.append((str(id_), str(project), str(fate), float(decided)))
    return out


FEATURE = Feature("memory", schema=setup, start=start, router=router)
