"""Resume scope: how a stopped session starts again, chosen per session or as the account's
default, and what each choice would re-read (issue 23).

* ``GET/PUT /api/settings/resume_scope`` — the account's default (``full`` until the person
  picks; ``{"scope": null}`` puts it back).
* ``PUT /api/sessions/{id}/resume_scope {"scope": …|null}`` — the session's own (null: the
  account's). The session JSON carries ``resume_scope`` (its own, or null).
* ``GET /api/sessions/{id}/reopen`` — the reopen card's figures: each scope's estimated tokens
  (relay/resume_estimates.py; ``fresh`` is the handoff's size, relay/handoff.py, with ``fits``
  and ``needed``), the effective scope and the account's.
* ``POST /api/sessions/{id}/reopen {"scope"?}`` — start it again; with a scope that one this once.
  A fresh start carries the handoff built now. Without a body: the session's effective scope.

The Mac keeps the session's scope and handoff (``set_resume``) for every start it makes on its
own (a message to the stopped session, a revive after a reboot): the relay sends it whenever the
scope changes, and after every snapshot (relay/features/snapshots.py ``push_handoff`` calls
:meth:`ResumeState.tell_mac`: the handoff rebuilt then, a session's end included). A Mac offline
at that moment keeps what it had; a reopen from here always says the scope.

Usage for the estimates is tracked as lines arrive (a line observer, O(new lines)), one small row
per session (``session_resume``). The handoff is built from the session's decisions ledger
(relay/features/decisions.py ``handoff_for``: its pins and open items, over its latest snapshot).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, ValidationError

from relay.db import Connection
from relay.deps import Phone, State, refuse_read_only, send_command, session_or_404
from relay.errors import BadRequest, RelayError
from relay.feature import Feature
from relay.features import decisions
from relay.handoff import Handoff
from relay.hookspecs import NewLines
from relay.resume_estimates import UsageTrack, estimates, track_usage
from relay.state import RelayState
from relay.store import Session
from wire.protocol import (
    RESUME_SCOPES,
    ReopenArgs,
    ResumeScope,
    SetResumeArgs,
    args_problem,
)
from wire.tasks import TaskSet

_log = logging.getLogger("relay.features.resume")

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

DEFAULT_SCOPE: Final[ResumeScope] = "full"
SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS session_resume (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        scope TEXT,
        track TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS account_resume (
        account_id TEXT PRIMARY KEY,
        scope TEXT NOT NULL
    )""",
)


def setup(conn: Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)


def scope_or_none(value: object) -> ResumeScope | None:
    return next((scope for scope in RESUME_SCOPES if scope == value), None)


# What a Mac holds for a session it was never told of (agent/registry.py's defaults).
UNTOLD = SetResumeArgs(scope=None, handoff=None, decisions=0)


class ResumeState:
    """The feature's running part: each session's own scope, cached for the session JSON."""

    def __init__(self, state: RelayState) -> None:
        self.state = state
        self.scopes: dict[str, ResumeScope] = {}
        # What each session's Mac was last told; a Mac never told holds the default (no scope,
        # no handoff), so a session nobody gave a scope costs its Mac no command at all.
        self.told: dict[str, SetResumeArgs] = {}
        self.tasks = TaskSet("resume", _log)

    async def load(self) -> None:
        rows = await self.state.store.read(
            "SELECT session_id, scope FROM session_resume WHERE scope IS NOT NULL"
        )
        self.scopes = {str(r[0]): s for r in rows if (s := scope_or_none(r[1])) is not None}

    async def close(self) -> None:
        await self.tasks.close()

    # -- LineObserver ----------------------------------------------------------------------

    def setup(self, conn: Connection) -> None:
        setup(conn)

    def on_lines(self, conn: Connection, new: NewLines) -> None:
        row = conn.execute(
            "SELECT track FROM session_resume WHERE session_id = ?", (new.session_id,)
        ).fetchone()
        before = _track(row[0] if row else None)
        after = track_usage(before, new.lines)
        if after == before:
            return
        conn.execute(
            "INSERT INTO session_resume (session_id, track) VALUES (?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET track = excluded.track",
            (new.session_id, json.dumps(after.to_json())),
        )

    # -- scopes ------------------------------------------------------------------------------

    async def account_scope(self, account_id: str) -> ResumeScope | None:
        rows = await self.state.store.read(
            "SELECT scope FROM account_resume WHERE account_id = ?", (account_id,)
        )
        return scope_or_none(rows[0][0]) if rows else None

    async def effective(self, session: Session) -> ResumeScope:
        own = self.scopes.get(session.id)
        return own or await self.account_scope(session.account_id) or DEFAULT_SCOPE

    async def set_session_scope(self, session: Session, scope: ResumeScope | None) -> None:
        def job(conn: Connection) -> None:
            conn.execute(
                "INSERT INTO session_resume (session_id, scope) VALUES (?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET scope = excluded.scope",
                (session.id, scope),
            )

        await self.state.store.write(job)
        if scope is None:
            self.scopes.pop(session.id, None)
        else:
            self.scopes[session.id] = scope

    async def set_account_scope(self, account_id: str, scope: ResumeScope | None) -> None:
        def job(conn: Connection) -> None:
            if scope is None:
                conn.execute("DELETE FROM account_resume WHERE account_id = ?", (account_id,))
            else:
                conn.execute(
                    "INSERT INTO account_resume (account_id, scope) VALUES (?, ?)"
                    " ON CONFLICT (account_id) DO UPDATE SET scope = excluded.scope",
                    (account_id, scope),
                )

        await self.state.store.write(job)

    # -- figures -----------------------------------------------------------------------------

    async def track(self, session_id: str) -> UsageTrack:
        rows = await self.state.store.read(
            "SELECT track FROM session_resume WHERE session_id = ?", (session_id,)
        )
        return _track(rows[0][0] if rows else None)

    async def handoff(self, session: Session) -> Handoff:
        """The handoff a fresh start of the session would type first, built now from its
        decisions ledger (relay/features/decisions.py: pins, open items, the latest snapshot)."""
        return await decisions.handoff_for(self.state, session)

    async def reopen_figures(self, session: Session) -> dict[str, Any]:
        handoff = await self.handoff(session)
        figures = estimates(await self.track(session.id), handoff.tokens)
        return {
            "scopes": {
                "full": {"tokens": figures.full},
                "summary": {"tokens": figures.summary},
                "fresh": {
                    "tokens": figures.fresh,
                    "fits": handoff.fits,
                    "needed": handoff.needed,
                    "decisions": handoff.decisions,
                    "constraints": handoff.constraints,
                },
            },
            "fixed": figures.fixed,
            "scope": await self.effective(session),
            "session_scope": self.scopes.get(session.id),
            "account_scope": await self.account_scope(session.account_id),
            "budget": handoff.budget,
        }

    # -- telling the Mac ---------------------------------------------------------------------

    async def tell_mac(self, session: Session, *, changed: bool = False) -> bool:
        """Send the session's scope (and, for ``fresh``, a handoff built now) to its Mac; False
        when the Mac could not be told (offline): it keeps what it had. Not ``changed`` (after a
        snapshot): only a ``fresh`` session has something new to tell, its handoff."""
        # The scope somebody set (the session's, else the account's); None: nobody did, so the
        # Mac resumes in full and leaves Claude Code's own chooser to the person.
        scope = self.scopes.get(session.id) or await self.account_scope(session.account_id)
        if not changed and scope != "fresh":
            return True
        handoff = await self.handoff(session) if scope == "fresh" else None
        args = SetResumeArgs(
            scope=scope,
            handoff=handoff.text if handoff else None,
            decisions=handoff.decisions if handoff else 0,
        )
        if args == self.told.get(session.id, UNTOLD):
            return True  # the Mac holds this already
        try:
            await send_command(self.state, session, args)
        except RelayError as exc:
            _log.info("session %s: resume scope not sent now: %s", session.id, exc)
            return False
        self.told[session.id] = args
        return True

    async def tell_account(self, account_id: str) -> None:
        """After the account's default changed: every session that follows it."""
        for session in await self.state.store.list_sessions(account_id):
            if session.id not in self.scopes:
                await self.tell_mac(session, changed=True)


def _track(text: object) -> UsageTrack:
    if not isinstance(text, str):
        return UsageTrack()
    try:
        return UsageTrack.from_json(json.loads(text))
    except ValueError:
        return UsageTrack()


def _part(state: RelayState) -> ResumeState:
    part = state.part(ResumeState)
    assert part is not None, "the resume feature is not started"
    return part


class ScopeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scope: ResumeScope | None = None


@router.get("/settings/resume_scope")
async def get_account_scope(principal: Phone, state: State) -> dict[str, Any]:
    scope = await _part(state).account_scope(principal.account_id)
    return {"scope": scope or DEFAULT_SCOPE, "set": scope is not None}


@router.put("/settings/resume_scope")
async def put_account_scope(body: ScopeBody, principal: Phone, state: State) -> dict[str, Any]:
    part = _part(state)
    await part.set_account_scope(principal.account_id, body.scope)
    part.tasks.start(part.tell_account(principal.account_id), name="resume scope of an account")
    return {"scope": body.scope or DEFAULT_SCOPE, "set": body.scope is not None}


@router.put("/sessions/{session_id}/resume_scope")
async def put_session_scope(
    session_id: str, body: ScopeBody, principal: Phone, state: State
) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    part = _part(state)
    await part.set_session_scope(session, body.scope)
    told = await part.tell_mac(session, changed=True)
    state.publish_session(session)
    return {
        "session_scope": body.scope,
        "scope": await part.effective(session),
        "mac_told": told,
    }


@router.get("/sessions/{session_id}/reopen")
async def reopen_figures(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    return await _part(state).reopen_figures(session)


@router.post("/sessions/{session_id}/reopen")
async def reopen(
    session_id: str, request: Request, principal: Phone, state: State
) -> dict[str, Any]:
    """Start the session again (``{"scope"}``: this once; no body: its effective scope)."""
    session = await session_or_404(state, principal, session_id)
    try:
        body = ScopeBody.model_validate(await _json_body(request))
    except ValidationError as exc:
        raise BadRequest(f"scope: {args_problem(exc)}", code="bad_scope") from exc
    part = _part(state)
    scope = body.scope or await part.effective(session)
    args = ReopenArgs(scope=scope)
    if scope == "fresh":
        handoff = await part.handoff(session)
        args = ReopenArgs(scope=scope, handoff=handoff.text, decisions=handoff.decisions)
    answer = await send_command(state, session, args)
    session = await state.store.update_session(principal.account_id, session_id, mark=None)
    state.publish_session(session)
    return {**answer, "scope": scope}


async def _json_body(request: Request) -> Mapping[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BadRequest(f"the body is not JSON: {exc}") from exc
    if not isinstance(data, Mapping):
        raise BadRequest('the body is {"scope": "full" | "summary" | "fresh"}, or nothing')
    return data


async def start(state: RelayState) -> ResumeState:
    part = ResumeState(state)
    await part.load()
    state.store.add_observer(part)
    state.hooks.session_fields.append(lambda session: {"resume_scope": part.scopes.get(session.id)})
    return part


FEATURE = Feature(
    name="resume",
    schema=setup,
    start=start,
    router=router,
)
