"""Grants: a card's "always allow this kind of tool" for the running claude process.

The pure rules (agent/grants.py), the relay's routes with a scripted Mac, and the real agent in a
real tmux with the fake Claude Code: a grant given on a card, listed, used for the next request,
revoked, and gone after a reopen while the policy's own rules stay."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from agent import grants as grantrules
from agent.decisions import decision_for
from tests.support.api import SMALL, error_of, new_id, push
from tests.support.bridge import Bridge
from tests.support.journeys import events, snapshot, start_session, wait_card, wait_event
from tests.support.relay import Account, RelayServer, mac
from tests.support.waits import await_until, wait_for
from tests.support.web import Phone, ScriptedMac, actions, commands, new_sid
from wire.policy import Policy
from wire.protocol import Command, CommandResult, GrantInfo, SessionInfo

NOW = 1_764_700_000.0
LAUNCH = NOW - 600


def give(
    tool: str | None, policy: Policy | None = None, held: list[grantrules.Grant] | None = None
) -> tuple[list[grantrules.Grant], grantrules.Grant | None]:
    return grantrules.give(
        held or [], tool, policy or Policy(), card_id="card-1", launched_at=LAUNCH, now=NOW
    )


# -- the rules (pure) ----------------------------------------------------------------------------


def test_always_on_a_card_grants_the_tools_category_or_the_tool() -> None:
    grants, bash = give("Bash")
    assert bash is not None and (bash.kind, bash.name, bash.tool) == ("category", "execute", "Bash")
    assert bash.card_id == "card-1" and bash.granted_at == NOW and bash.launched_at == LAUNCH
    assert grantrules.GRANT_ID.fullmatch(bash.id) and grants == [bash]
    _, task = give("Task")  # no category: the tool itself
    assert task is not None and (task.kind, task.name) == ("tool", "Task")
    # a tool the policy names (here "ask") is granted by name: the rule for that one tool is
    # the person's, and a category grant never overrides it for the others
    _, grep = give("Grep", Policy(tools={"Grep": "ask"}))
    assert grep is not None and (grep.kind, grep.name) == ("tool", "Grep")


def test_nothing_is_granted_where_a_grant_would_change_nothing() -> None:
    for tool in (None, "", "AskUserQuestion", "ExitPlanMode"):
        assert give(tool) == ([], None)
    assert give("Bash", Policy(tools={"Bash": "deny"}))[1] is None  # a deny stays a deny
    assert give("Read", Policy(categories={"read": "allow"}))[1] is None  # allowed anyway
    grants, first = give("Bash")
    again, same = give("BashOutput", held=grants)  # the same category: the same grant
    assert same == first and again == grants


def test_decide_asks_the_grants_only_what_the_policy_would_ask() -> None:
    grants, bash = give("Bash")
    assert bash is not None
    verdict, grant = grantrules.decide(Policy(), grants, "Bash", NOW)
    assert (verdict.rule, verdict.source, grant) == ("allow", "grant", bash)
    assert grantrules.decide(Policy(), grants, "KillShell", NOW)[1] == bash  # its category
    assert grantrules.decide(Policy(), grants, "Write", NOW)[0].rule == "ask"  # another one
    # rules set deliberately win: a deny stays, a tool's own rule is not overridden by category
    denied = Policy(tools={"Bash": "deny"})
    assert grantrules.decide(denied, grants, "Bash", NOW) == (denied.verdict("Bash"), None)
    own = Policy(tools={"BashOutput": "ask"})
    assert grantrules.decide(own, grants, "BashOutput", NOW)[0].rule == "ask"
    assert grantrules.decide(Policy(), grants, "AskUserQuestion", NOW)[0].rule == "ask"
    tools, task = give("Task")
    assert grantrules.decide(Policy(tools={"Task": "ask"}), tools, "Task", NOW)[1] == task


def test_grants_of_an_earlier_process_and_damaged_entries_never_count() -> None:
    grants, bash = give("Bash")
    assert bash is not None
    kept = [g.to_json() for g in grants]
    assert grantrules.active(kept, LAUNCH) == grants
    assert grantrules.active(kept, LAUNCH + 1) == []  # another launch of claude
    damaged: list[Any] = [
        None, "x", {}, {**bash.to_json(), "id": "nope"}, {**bash.to_json(), "kind": "all"},
        {**bash.to_json(), "name": ""}, {**bash.to_json(), "granted_at": True},
        {**bash.to_json(), "launched_at": float("nan")}, {**bash.to_json(), "tool": 3},
    ]  # fmt: skip
    assert grantrules.active([*damaged, *kept], LAUNCH) == grants


def test_revoke_and_reset() -> None:
    grants, bash = give("Bash")
    grants, web = give("WebFetch", held=grants)
    assert bash is not None and web is not None
    left, gone = grantrules.revoke(grants, bash.id)
    assert gone == bash and left == [web]
    assert grantrules.revoke(left, bash.id) == (left, None)

    @dataclass
    class Record:
        launched_at: float = LAUNCH
        grants: list[dict[str, Any]] = field(default_factory=list)

    record = Record()
    grantrules.keep(record, grants)
    assert grantrules.of_record(record) == grants
    assert grantrules.reset_grants(record) == grants and record.grants == []
    assert grantrules.reset_grants(record) == []
    assert "(execute tools, web tools)" in grantrules.ended_line(grants)


def test_a_granted_request_is_audited_with_its_grant() -> None:
    grants, bash = give("Bash")
    assert bash is not None
    verdict, grant = grantrules.decide(Policy(), grants, "Bash", NOW)
    payload = {"tool_name": "Bash", "tool_input": {"command": "make test"}, "tool_use_id": "tu_1"}
    decision = decision_for("s1", verdict, payload, grant=grant, now=NOW)
    assert decision is not None and decision.decision == "allow" and decision.source == "policy"
    assert decision.rule == f"grant {bash.id} (this claude process): execute tools: allow"


def test_the_wire_form_is_range_checked() -> None:
    _, bash = give("Bash")
    assert bash is not None
    shown = grantrules.info(bash)
    assert "launched_at" not in shown and GrantInfo.model_validate(shown).id == bash.id
    for bad in ({"id": "g_XYZ"}, {"name": ""}, {"granted_at": -1}, {"kind": "other"}):
        with pytest.raises(ValueError):
            GrantInfo.model_validate({**shown, **bad})


# -- the relay's routes, with a scripted Mac ----------------------------------------------------------


@dataclass
class GrantMac:
    """A Mac holding one grant for its session; it revokes it once."""

    grant: dict[str, Any]
    commands: list[Command] = field(default_factory=list)

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        if command.name == "revoke_grant" and command.args["grant_id"] == self.grant["id"]:
            if self.grant.get("revoked"):
                return CommandResult(
                    command_id=command.command_id, ok=False, code="unknown_grant",
                    error="the session's running claude holds no such grant",
                )  # fmt: skip
            self.grant["revoked"] = True
            return CommandResult(command_id=command.command_id, ok=True, data={"grants": []})
        return CommandResult(command_id=command.command_id, ok=True)


def test_grants_are_listed_from_the_mac_and_revoked_through_it(
    relay: RelayServer, account: Account
) -> None:
    _, bash = give("Bash")
    assert bash is not None
    shown = grantrules.info(bash)
    handler = GrantMac(dict(shown))
    session_id = new_id()
    base = f"/api/sessions/{session_id}"

    async def go() -> None:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            mac(relay, account.device_token, on_command=handler) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)
            info = SessionInfo(
                session_id=session_id, state="idle", grants=[GrantInfo.model_validate(shown)]
            )
            await link.update(info)

            async def listed() -> bool:
                return bool((await client.get(f"{base}/grants")).json()["grants"])

            await await_until(listed, what="the grant listed")
            body = (await client.get(f"{base}/grants")).json()
            assert body["device_online"] is True
            assert [(g["id"], g["kind"], g["name"], g["tool"]) for g in body["grants"]] == [
                (bash.id, "category", "execute", "Bash")
            ]
            assert body["grants"][0]["card_id"] == "card-1"
            assert body["grants"][0]["granted"].endswith("Z")
            snap = (await client.get(base)).json()
            assert [g["id"] for g in snap["grants"]] == [bash.id]
            # ids are checked before anything is sent
            error_of(await client.delete(f"{base}/grants/nope"), 404, "unknown_grant")
            error_of(await client.delete(f"{base}/grants/g_{'0' * 13}"), 404, "unknown_grant")
            assert not [c for c in handler.commands if c.name == "revoke_grant"]
            revoked = await client.delete(f"{base}/grants/{bash.id}")
            assert revoked.status_code == 200, revoked.text
            assert revoked.json() == {"ok": True, "revoked": bash.id, "grants": []}
            assert handler.commands[-1].args == {"grant_id": bash.id}
            # the Mac holds it no more: its own answer, as a 404
            error_of(await client.delete(f"{base}/grants/{bash.id}"), 404, "unknown_grant")
            read_only = await client.delete(
                f"{base}/grants/{bash.id}", headers={"X-CB-Read-Only": "1"}
            )
            error_of(read_only, 409, "read_only")
            # an ended claude holds none
            await link.update(SessionInfo(session_id=session_id, state="ended"))

            async def none_left() -> bool:
                return (await client.get(f"{base}/grants")).json()["grants"] == []

            await await_until(none_left, what="no grants once claude ended")
        async with httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client:
            offline = await client.get(f"{base}/grants")
            assert offline.json()["device_online"] is False and offline.json()["grants"] == []
            error_of(await client.delete(f"{base}/grants/{bash.id}"), 409, "device_offline")
            error_of(await client.get("/api/sessions/nope/grants"), 404, "unknown_session")

    asyncio.run(go())


# -- the real agent, the fake Claude Code in a real tmux --------------------------------------------


def _bash_ran(e: dict[str, Any]) -> bool:
    return e["kind"] == "tool_result" and "hi" in e.get("text", "")


def _ran(phone: httpx.Client, session_id: str) -> int:
    return len([e for e in events(phone, session_id) if _bash_ran(e)])


def _grants(phone: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    response = phone.get(f"/api/sessions/{session_id}/grants")
    assert response.status_code == 200, response.text
    return list(response.json()["grants"])


def _run_bash(phone: httpx.Client, session_id: str, text: str) -> None:
    wait_for(lambda: snapshot(phone, session_id)["state"] == "idle", 30, "idle")
    sent = phone.post(f"/api/sessions/{session_id}/messages", json={"text": text})
    assert sent.status_code == 200, sent.text


def _runs_without_a_card(phone: httpx.Client, session_id: str, before: int) -> None:
    def check() -> bool:
        assert snapshot(phone, session_id)["card"] is None, "a card was shown"
        return _ran(phone, session_id) > before

    wait_for(check, 30, "the Bash result, with no card")


def test_a_grant_lasts_for_the_running_claude_only(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(
            phone, fake, cwd, prompt="RUN_BASH one", permission_mode="manual",
            policy={"tools": {"Write": "deny"}},
        )  # fmt: skip
        card = wait_card(phone, session_id, "permission")
        assert card["tool"] == "Bash"
        answer = phone.post(
            f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1", "always": True}
        )
        assert answer.status_code == 200, answer.text
        grant = answer.json()["grant"]
        assert (grant["kind"], grant["name"], grant["card_id"]) == (
            "category",
            "execute",
            card["id"],
        )
        assert "policy" not in answer.json()  # the policy is not changed by a grant
        wait_event(phone, session_id, _bash_ran, "the first result")
        listed = wait_for(lambda: _grants(phone, session_id), 15, "the grant listed")
        assert [g["id"] for g in listed] == [grant["id"]]
        assert [g["id"] for g in snapshot(phone, session_id)["grants"]] == [grant["id"]]
        policy = phone.get(f"/api/sessions/{session_id}/policy").json()["policy"]
        assert policy["categories"] == {} and policy["tools"] == {"Write": "deny"}

        # the next Bash runs without a card: the grant answered its PermissionRequest
        before = _ran(phone, session_id)
        _run_bash(phone, session_id, "RUN_BASH two")
        _runs_without_a_card(phone, session_id, before)

        def audited() -> bool:
            page = phone.get("/api/audit", params={"session_id": session_id}).json()
            return any(
                str(e.get("rule")).startswith(f"grant {grant['id']}") for e in page["entries"]
            )

        wait_for(audited, 15, "the grant's decision in the audit log")
        lines = [e["text"] for e in events(phone, session_id) if e.get("marker") == "grant"]
        assert any("execute tools allowed" in line for line in lines), lines

        # revoked from the phone: the next Bash asks again
        revoked = phone.delete(f"/api/sessions/{session_id}/grants/{grant['id']}")
        assert revoked.status_code == 200, revoked.text
        assert revoked.json()["grants"] == [] and _grants(phone, session_id) == []
        error_of(
            phone.delete(f"/api/sessions/{session_id}/grants/{grant['id']}"), 404, "unknown_grant"
        )
        _run_bash(phone, session_id, "RUN_BASH three")
        card = wait_card(phone, session_id, "permission")
        again = phone.post(
            f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": "1", "always": True}
        )
        assert again.status_code == 200, again.text
        second = again.json()["grant"]
        wait_for(lambda: _grants(phone, session_id), 15, "the new grant listed")

        # a reopen is a new claude process: the grant is gone, the policy's rule stays
        assert phone.post(f"/api/sessions/{session_id}/end").status_code == 200
        wait_for(lambda: snapshot(phone, session_id)["state"] == "ended", 30, "ended")
        assert _grants(phone, session_id) == []
        assert phone.post(f"/api/sessions/{session_id}/reopen").status_code == 200
        wait_for(lambda: snapshot(phone, session_id)["state"] == "idle", 30, "reopened")
        assert _grants(phone, session_id) == []

        def ended(e: dict[str, Any]) -> bool:
            return e.get("marker") == "grant" and "ended with the previous" in e["text"]

        wait_event(phone, session_id, ended, "the grants' end in the conversation")
        policy = phone.get(f"/api/sessions/{session_id}/policy").json()["policy"]
        assert policy["tools"] == {"Write": "deny"}
        _run_bash(phone, session_id, "RUN_BASH four")
        assert wait_card(phone, session_id, "permission")["tool"] == "Bash"
    record = fake.agent.registry.get(session_id) if fake.agent else None
    assert record is not None and record.grants == []
    assert second["id"] != grant["id"]


# -- the page ---------------------------------------------------------------------------------------


def test_the_permissions_panel_lists_the_grants_and_revokes_one(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    sid = new_sid()
    _, bash = give("Bash")
    assert bash is not None
    scripted.send_transcript(sid, "d_bash")
    scripted.update(sid, state="idle", grants=[GrantInfo.model_validate(grantrules.info(bash))])
    page = phone.login(account).open(f"/#/s/{sid}")
    actions(page, "Permissions")
    row = page.locator(f"dialog .grant[data-grant='{bash.id}']")
    expect(row).to_contain_text("Execute tools")
    expect(row).to_contain_text("from the Bash card")
    phone.shot("40-grants", full=True)
    row.get_by_role("button", name="Revoke Execute tools").click()
    (revoke,) = commands(scripted, "revoke_grant")
    assert revoke.args == {"grant_id": bash.id}
    expect(page.locator("dialog .gr-none")).to_be_visible()


# -- the real Claude Code 2.1.332 -------------------------------------------------------------------


def test_a_grant_answers_the_real_claudes_next_request_until_a_reopen(bridge: Bridge) -> None:
    bridge.start_agent()
    cwd = bridge.folder()
    with bridge.phone() as phone:
        sid = start_session(phone, bridge, cwd, prompt="RUN_BASH one", permission_mode="manual")
        card = wait_card(phone, sid, "permission", timeout=60)
        answer = phone.post(
            f"/api/sessions/{sid}/cards/{card['id']}", json={"key": "1", "always": True}
        )
        assert answer.status_code == 200, answer.text
        grant = answer.json()["grant"]
        wait_for(lambda: snapshot(phone, sid)["state"] == "idle", 60, "idle")
        assert [g["id"] for g in _grants(phone, sid)] == [grant["id"]]
        before = _ran(phone, sid)
        _run_bash(phone, sid, "RUN_BASH two")
        _runs_without_a_card(phone, sid, before)
        assert phone.post(f"/api/sessions/{sid}/end").status_code == 200
        wait_for(lambda: snapshot(phone, sid)["state"] == "ended", 30, "ended")
        assert phone.post(f"/api/sessions/{sid}/reopen").status_code == 200
        wait_for(lambda: snapshot(phone, sid)["state"] == "idle", 60, "reopened")
        assert _grants(phone, sid) == []
        _run_bash(phone, sid, "RUN_BASH three")
        assert wait_card(phone, sid, "permission", timeout=60)["tool"] == "Bash"
