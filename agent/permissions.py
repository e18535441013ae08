"""A session's permissions on this Mac: its policy (wire/policy.py), the grants of its running
claude (agent/grants.py), and the verdict on each permission Claude Code asks for.

The phone replaces or changes the policy (``set_policy``, ``change_policy``) and ends a grant
(``revoke_grant``); every ``PermissionRequest`` hook is answered here before its dialog is
drawn — allowed or denied by the policy or a grant (and told to the audit log,
agent/decisions.py), or left to the person as a card.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from agent import grants as grantrules
from agent.commands import Handler
from agent.driver import SessionDriver, policy_of, set_policy
from agent.errors import CommandFailed
from agent.hookserver import HookAnswer, permission_decision
from agent.registry import SessionRecord
from agent.state import RunningTool
from wire import policy as policyrules
from wire.protocol import ChangePolicyArgs, MarkerKind, RevokeGrantArgs, SetPolicyArgs

_log = logging.getLogger("agent")


class PermissionsHost(Protocol):
    """What permissions need of the sessions (agent/sessions.py's ``Sessions``)."""

    def record(self, session_id: str) -> SessionRecord: ...
    def driver(self, record: SessionRecord) -> SessionDriver: ...
    def add_marker(self, record: SessionRecord, marker: MarkerKind, text: str) -> None: ...
    def save(self) -> None: ...


class AuditLog(Protocol):
    """Where the policy's and the grants' answers go (agent/decisions.py's ``DecisionLog``)."""

    def note(
        self,
        session_id: str,
        verdict: policyrules.Verdict,
        payload: Mapping[str, Any],
        running: Sequence[RunningTool] = (),
        allow_all_until: float | None = None,
        grant: grantrules.Grant | None = None,
    ) -> None: ...


class Permissions:
    """The commands set_policy, change_policy and revoke_grant, and the PermissionRequest
    hook's verdict."""

    def __init__(self, sessions: PermissionsHost, audit: AuditLog) -> None:
        self.sessions = sessions
        self.audit = audit

    def handlers(self) -> list[Handler]:
        return [
            (SetPolicyArgs, self.set_policy),
            (ChangePolicyArgs, self.change_policy),
            (RevokeGrantArgs, self.revoke_grant),
        ]

    async def set_policy(self, session_id: str, args: SetPolicyArgs) -> dict[str, Any]:
        """Replace the session's permission policy (wire/policy.py); it applies to the next
        PermissionRequest and is kept in the registry, so it survives reopen and revive."""
        return self._apply(session_id, lambda _: policyrules.Policy.from_json(args.policy))

    async def change_policy(self, session_id: str, args: ChangePolicyArgs) -> dict[str, Any]:
        """Change some rules of the session's policy, keeping the others as this Mac holds them
        (a card's "always allow" that came in meanwhile is not lost, as it would be by a
        read-then-replace from the phone)."""
        return self._apply(session_id, lambda held: held.changed(args.changes))

    def _apply(
        self, session_id: str, make: Callable[[policyrules.Policy], policyrules.Policy]
    ) -> dict[str, Any]:
        """The session's policy becomes ``make(the one held now)``; kept with the session and
        answered as now held. A policy that does not read is ``bad_args``, and nothing changes."""
        record = self.sessions.record(session_id)
        try:
            policy = make(policy_of(record))
        except policyrules.PolicyError as exc:
            raise CommandFailed("bad_args", f"policy: {exc}") from exc
        set_policy(record, policy)
        self.sessions.save()
        return {"policy": policy.to_json()}

    async def revoke_grant(self, session_id: str, args: RevokeGrantArgs) -> dict[str, Any]:
        """End one grant of the running claude; ``unknown_grant`` when it holds none of that
        id (revoked already, or ended with its process)."""
        rt = self.sessions.driver(self.sessions.record(session_id))
        record = rt.record
        grants, gone = grantrules.revoke(grantrules.of_record(record), args.grant_id)
        if gone is None or not rt.pane_alive:
            raise CommandFailed(
                "unknown_grant",
                f"the session's running claude holds no grant {args.grant_id} (revoked already, "
                "or ended with its process)",
            )
        grantrules.keep(record, grants)
        self.sessions.add_marker(record, MarkerKind.GRANT, grantrules.revoked_line(gone))
        self.sessions.save()
        _log.info("session %s: grant %s revoked", record.id, gone.describe())
        await rt.send_update()
        return {"revoked": gone.to_json(), "grants": [g.to_json() for g in grants]}

    def verdict(self, rt: SessionDriver, payload: dict[str, Any], now: float) -> HookAnswer:
        """A PermissionRequest: allow before the dialog is drawn, deny with a reason, or None =
        ask (the dialog becomes a card, sent before it is drawn). Questions and plans always
        ask. An "allow all" past its time is off; a grant of this claude process may allow."""
        record = rt.record
        tool = payload.get("tool_name")
        tool = tool if isinstance(tool, str) else None
        policy = policy_of(record)
        verdict, grant = grantrules.decide(policy, grantrules.of_record(record), tool, now)
        self.audit.note(
            record.id, verdict, payload, rt.hooks.tools,
            allow_all_until=policy.allow_all_until, grant=grant,
        )  # fmt: skip
        if verdict.rule == "allow":
            return permission_decision("allow")
        if verdict.rule == "deny":
            _log.info("session %s: policy denied %s", record.id, tool)
            return permission_decision("deny", verdict.deny_message(tool or "this tool"))
        if tool is not None:
            rt.ask_card(tool, payload, now)  # its card, before the dialog is drawn
        return None
