"""Grants: "always allow this kind of tool for this session", given on a card, for one claude run.

Answering a permission card with ``always`` gives a **grant**: the card's tool's category (read,
edit, execute, web, mcp; wire/policy.py) is allowed from then on, or the tool itself by name
when it has no category, or when the policy has a rule of its own for it (so a category grant
never overrides a rule the person set for one tool). A grant lasts while that claude process
runs: a reopen, a revive or a move starts a new process and the grants are gone
(:func:`reset_grants`), while the rules set deliberately in the policy persist. An agent that
restarts while claude keeps running (tmux outlives it) keeps them: they are kept in the
session's record (``SessionRecord.grants``), each with the ``launched_at`` of the process it was
given to, so a grant of an earlier process never counts even where a reset was missed.

How a permission request is decided (:func:`decide`): the policy first. A rule that allows or
denies stands (a deny is never turned into an allow); questions and plans always ask. Only what
the policy would ask about is looked up in the grants: a tool grant for that tool, else a
category grant for its category unless the policy names that tool.

Pure: plain values in and out, no I/O and no clock (``now`` is given).

The JSON form, in the registry, in ``session_update`` (``grants``) and in the API::

    {"id": "g_3f9a0c1d2e4b", "kind": "category", "name": "execute", "tool": "Bash",
     "card_id": "1a2b3c4d5e-3", "granted_at": 1764700000.0, "launched_at": 1764699000.0}
"""

from __future__ import annotations

import math
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeGuard

from wire.policy import NEVER_AUTO, Policy, Verdict, category_of
from wire.protocol import GrantInfo

GrantKind = Literal["category", "tool"]
GRANT_KINDS: tuple[GrantKind, ...] = ("category", "tool")
GRANT_ID = re.compile(r"g_[0-9a-f]{12}")
MAX_GRANTS = 64  # per session; more is surely a loop: the oldest go first
MAX_NAME = 200


class HasGrants(Protocol):
    """A session's record as far as grants go (agent/registry.py's ``SessionRecord``)."""

    grants: list[dict[str, Any]]
    launched_at: float


@dataclass(frozen=True)
class Grant:
    id: str
    kind: GrantKind
    name: str  # the category, or the tool's name
    tool: str  # the tool of the card it was given on
    card_id: str | None
    granted_at: float
    launched_at: float  # the claude process it belongs to (the record's launched_at then)

    def matches(self, tool: str, policy: Policy) -> bool:
        if self.kind == "tool":
            return self.name == tool
        return self.name == category_of(tool) and tool not in policy.tools

    def describe(self) -> str:
        """What it allows, in words (the audit log's rule, the conversation's line)."""
        if self.kind == "category":
            return f"{self.name} tools"
        return self.name

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "tool": self.tool,
            "card_id": self.card_id,
            "granted_at": self.granted_at,
            "launched_at": self.launched_at,
        }

    @classmethod
    def from_json(cls, data: Any) -> Grant | None:
        """A grant as kept; None for anything that does not read as one (never raises)."""
        if not isinstance(data, Mapping):
            return None
        gid, kind, name, tool = (data.get(k) for k in ("id", "kind", "name", "tool"))
        card_id = data.get("card_id")
        granted_at, launched_at = data.get("granted_at"), data.get("launched_at")
        if not (isinstance(gid, str) and GRANT_ID.fullmatch(gid)) or kind not in GRANT_KINDS:
            return None
        if not (_name(name) and _name(tool) and (card_id is None or _name(card_id))):
            return None
        if not (_number(granted_at) and _number(launched_at)):
            return None
        return cls(gid, kind, name, tool, card_id, granted_at, launched_at)


def _name(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME and value.isprintable()


def _number(value: Any) -> TypeGuard[float]:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def active(kept: Iterable[Any], launched_at: float) -> list[Grant]:
    """The grants of the running claude process (given since ``launched_at``), oldest first;
    unreadable entries and those of an earlier process are left out."""
    found = (Grant.from_json(item) for item in kept)
    return [g for g in found if g is not None and g.launched_at == launched_at]


def kind_for(tool: str, policy: Policy) -> tuple[GrantKind, str]:
    """What "always" on a card of ``tool`` grants: its category, or the tool itself when it has
    none or the policy names it."""
    category = category_of(tool)
    if category is None or tool in policy.tools:
        return "tool", tool
    return "category", category


def give(
    grants: Sequence[Grant],
    tool: str | None,
    policy: Policy,
    *,
    card_id: str | None,
    launched_at: float,
    now: float,
    new_id: str | None = None,
) -> tuple[list[Grant], Grant | None]:
    """``grants`` with the one "always" on a card of ``tool`` gives, and that grant.

    Nothing is given for a question or a plan, for no tool, or for a tool the policy already
    allows or denies by rule (a grant would change nothing, or would be overridden anyway);
    the grant already held for the same kind and name is answered instead of a second one."""
    if not tool or tool in NEVER_AUTO or not _name(tool):
        return list(grants), None
    if policy.verdict(tool, now).rule != "ask":
        return list(grants), None
    kind, name = kind_for(tool, policy)
    held = next((g for g in grants if (g.kind, g.name) == (kind, name)), None)
    if held is not None:
        return list(grants), held
    grant = Grant(
        id=new_id or new_grant_id(),
        kind=kind,
        name=name,
        tool=tool,
        card_id=card_id[:MAX_NAME] if card_id else None,
        granted_at=now,
        launched_at=launched_at,
    )
    return [*grants, grant][-MAX_GRANTS:], grant


def new_grant_id() -> str:
    return "g_" + secrets.token_hex(6)


def revoke(grants: Sequence[Grant], grant_id: str) -> tuple[list[Grant], Grant | None]:
    """``grants`` without the one of that id, and that grant (None: no such grant)."""
    gone = next((g for g in grants if g.id == grant_id), None)
    return [g for g in grants if g is not gone], gone


def decide(
    policy: Policy, grants: Sequence[Grant], tool: str | None, now: float
) -> tuple[Verdict, Grant | None]:
    """The verdict for a permission request of ``tool``, and the grant that allowed it if one
    did (see the module's docstring for the order)."""
    verdict = policy.verdict(tool, now)
    if verdict.rule != "ask" or verdict.source == "never_auto" or not tool:
        return verdict, None
    grant = next((g for g in reversed(grants) if g.matches(tool, policy)), None)
    if grant is None:
        return verdict, None
    return Verdict("allow", "grant", verdict.category), grant


def info(grant: Grant) -> dict[str, Any]:
    """The grant as ``session_update`` and the API show it (wire/protocol.py ``GrantInfo``)."""
    data = grant.to_json()
    del data["launched_at"]
    return GrantInfo.model_validate(data).model_dump()


# The conversation's lines (MarkerKind.GRANT).


def given_line(grant: Grant) -> str:
    return (
        f"✅ {grant.describe()} allowed without asking until this claude process ends "
        f"(“always” on the {grant.tool} card)"
    )


def revoked_line(grant: Grant) -> str:
    return f"🔒 Grant for {grant.describe()} revoked from the phone: it asks again"


def ended_line(grants: Sequence[Grant]) -> str:
    what = ", ".join(g.describe() for g in grants)
    return f"🔒 Grants ended with the previous claude process ({what}): those tools ask again"


# -- the session's record ------------------------------------------------------------------------


def of_record(record: HasGrants) -> list[Grant]:
    """The grants of the session's running claude process."""
    return active(record.grants, record.launched_at)


def keep(record: HasGrants, grants: Sequence[Grant]) -> None:
    record.grants = [g.to_json() for g in grants]


def reset_grants(record: HasGrants) -> list[Grant]:
    """End every grant of the session: call it whenever a new claude process is started for it
    (reopen, revive, a move's launch on the target Mac). Answers the grants that ended."""
    ended = of_record(record)
    record.grants = []
    return ended
