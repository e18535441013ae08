"""Per-session permission policies from the phone: ``GET`` / ``PUT`` / ``PATCH
/api/sessions/{id}/policy``.

The rules themselves are ``wire/policy.py`` (allow / ask / deny by tool and by category, a
tool's rule beating its category's, "allow all"; questions and plans always ask).

Where a policy lives:

* **The Mac is the authority.** The agent keeps each session's policy in its registry
  (``sessions.json``) and applies it to every PermissionRequest hook, so it holds across the
  agent's restarts, ``reopen`` and revive, and whether or not the relay is reachable.
* **The relay keeps a copy** (table ``session_policies``) so the phone can show a session's
  policy while its Mac is offline. The copy is only ever written from what the Mac answered:
  ``set_policy``, ``change_policy``, ``create_session`` and an ``answer_card`` with ``always``
  return the policy
  the Mac now holds (``data.policy``), and the relay stores that. A session with no copy (one
  started before policies existed) shows the default, with ``known: false``.
* **Changes need the Mac.** ``PUT`` forwards a ``set_policy`` command (replace the whole
  policy), ``PATCH`` a ``change_policy`` command (only the rules named; the Mac merges them into
  what it holds, so a card's "always allow" given meanwhile is kept). Both answer 409
  ``device_offline`` when the Mac is offline (the copy is not changed then), so the phone never
  shows a policy the Mac does not apply.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from relay.db import Connection
from relay.deps import (
    AllowAllFor,
    Phone,
    State,
    allow_all_for,
    check_policy,
    refuse_read_only,
    send_command,
    session_or_404,
)
from relay.errors import BadRequest, Conflict
from relay.feature import Feature
from relay.state import RelayState, iso
from wire.policy import CATEGORIES, TOOL_CATEGORIES, Policy, PolicyError
from wire.protocol import ChangePolicyArgs, SetPolicyArgs

# A read-only view (X-CB-Read-Only) may read but not change: same guard as relay/routes.py
# (relay/deps.py refuse_read_only).
router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

TABLE = """
CREATE TABLE IF NOT EXISTS session_policies (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    policy TEXT NOT NULL,
    updated_at REAL NOT NULL
) WITHOUT ROWID
"""


def setup(conn: Connection) -> None:
    """The relay's copy table (the feature's schema, made as the store opens)."""
    conn.execute(TABLE)


async def start(state: RelayState) -> None:
    """Read the policy in every Mac's answer (at start-up)."""

    async def read(session_id: str, data: Mapping[str, Any]) -> None:
        await remember_from_result(state, session_id, data)

    state.hooks.result_readers.append(read)


async def remember(state: RelayState, session_id: str, data: Any) -> None:
    """Store the policy a Mac reported for a session (ignored when it is not a valid one)."""
    try:
        policy = Policy.from_json(data)
    except PolicyError:
        return
    text = json.dumps(policy.to_json(), separators=(",", ":"))
    now = time.time()

    def job(conn: Connection) -> None:
        if conn.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone():
            conn.execute(
                "INSERT INTO session_policies (session_id, policy, updated_at) VALUES (?, ?, ?)"
                " ON CONFLICT (session_id) DO UPDATE SET policy = excluded.policy,"
                " updated_at = excluded.updated_at",
                (session_id, text, now),
            )

    await state.store.write(job)


async def remember_from_result(state: RelayState, session_id: str, data: Mapping[str, Any]) -> None:
    """After any command: a Mac that answers with ``policy`` changed it (e.g. "always allow")."""
    if "policy" in data:
        await remember(state, session_id, data["policy"])


async def stored(state: RelayState, session_id: str) -> tuple[Policy, float | None]:
    rows = await state.store.read(
        "SELECT policy, updated_at FROM session_policies WHERE session_id = ?", (session_id,)
    )
    if not rows:
        return Policy(), None
    try:
        policy = Policy.from_json(json.loads(rows[0][0]))
    except (ValueError, PolicyError):
        return Policy(), None
    if policy.allow_all and not policy.allowing_all():
        policy = policy.without_allow_all()  # past its time: the Mac has ended it too
    return policy, float(rows[0][1])


def _body(
    state: RelayState, session_id: str, device_id: str, policy: Policy, at: float | None
) -> dict[str, Any]:
    link = state.live.link(device_id)
    return {
        "session_id": session_id,
        "policy": policy.to_json(),
        "known": at is not None,
        "updated_at": iso(at),
        "device_online": link is not None and not link.closed,
        # For the page's editor: the categories and which of Claude Code's tools are in each.
        "categories": {
            c: sorted(t for t, cat in TOOL_CATEGORIES.items() if cat == c) for c in CATEGORIES
        },
    }


class PolicyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    allow_all: bool = False
    # "allow all" ends: after allow_all_for (seconds, or "session"), or at allow_all_until
    # (Unix seconds, as GET shows it); neither given: the setting allow_all_default_minutes
    allow_all_for: AllowAllFor = None
    allow_all_until: float | None = Field(default=None, allow_inf_nan=False)
    categories: dict[str, str] = Field(default_factory=dict, max_length=16)
    tools: dict[str, str] = Field(default_factory=dict, max_length=200)


class PolicyChanges(BaseModel):
    """``PATCH`` body: only what changes; a rule of ``null`` drops it, ``reset`` starts over."""

    model_config = ConfigDict(extra="forbid")

    reset: bool = False
    allow_all: bool | None = None
    allow_all_for: AllowAllFor = None
    allow_all_until: float | None = Field(default=None, allow_inf_nan=False)
    categories: dict[str, str | None] = Field(default_factory=dict, max_length=16)
    tools: dict[str, str | None] = Field(default_factory=dict, max_length=200)


def _bounded(state: RelayState, data: dict[str, Any]) -> dict[str, Any]:
    """ "Allow all" turned on is never open-ended: with no bound given, the default duration."""
    if data.get("allow_all") is True and "allow_all_until" not in data:
        data["allow_all_for"] = allow_all_for(state, data.get("allow_all_for"))
    return data


@router.get("/sessions/{session_id}/policy")
async def get_policy(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    session = await session_or_404(state, principal, session_id)
    policy, at = await stored(state, session.id)
    live = state.live.sessions.get(session.id)
    ended = session.mark in ("ended", "resting") or (live is not None and live.state == "ended")
    if policy.allow_all and policy.allow_all_until is None and ended:
        policy = policy.without_allow_all()  # "until the session ends": the Mac ended it too
    return _body(state, session.id, session.device_id, policy, at)


@router.put("/sessions/{session_id}/policy")
async def put_policy(
    session_id: str, body: PolicyBody, principal: Phone, state: State
) -> dict[str, Any]:
    """Replace the session's policy on its Mac (409 ``device_offline`` when it is offline)."""
    session = await session_or_404(state, principal, session_id)
    data = _bounded(state, body.model_dump(exclude_none=True))
    policy = check_policy(data)
    # _command refuses archived sessions, and stores the policy the Mac answers with. The
    # duration goes as such: the Mac makes it an end time of its own clock.
    answer = await send_command(state, session, SetPolicyArgs(policy=data))
    if "policy" not in answer:  # a Mac that does not echo it: it took what was sent
        await remember(state, session.id, policy.to_json())
    now_policy, at = await stored(state, session.id)
    return {"ok": True, **_body(state, session.id, session.device_id, now_policy, at)}


@router.patch("/sessions/{session_id}/policy")
async def patch_policy(
    session_id: str, body: PolicyChanges, principal: Phone, state: State
) -> dict[str, Any]:
    """Change some rules on the session's Mac, which merges them into the policy it holds:
    nothing changed elsewhere meanwhile is lost (409 ``device_offline`` when it is offline)."""
    session = await session_or_404(state, principal, session_id)
    changes = _bounded(state, body.model_dump(exclude_defaults=True))
    if not changes:
        raise BadRequest("nothing to change: send reset, allow_all, categories or tools")
    try:
        Policy().changed(changes)  # 400 before the Mac is asked
    except PolicyError as exc:
        raise BadRequest(f"policy: {exc}") from None
    answer = await send_command(state, session, ChangePolicyArgs(changes=changes))
    if "policy" not in answer:
        raise Conflict("the Mac did not say which policy it now holds", code="bad_answer")
    now_policy, at = await stored(state, session.id)
    return {"ok": True, **_body(state, session.id, session.device_id, now_policy, at)}


FEATURE = Feature("permissions", schema=setup, start=start, router=router)
