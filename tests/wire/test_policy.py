"""Per-session permission policies: the pure rules, the API with a scripted Mac, and the
real agent with the fake Claude Code answering PermissionRequest hooks by the policy."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.api import SMALL, error_of, new_id, push
from tests.support.bridge import Bridge
from tests.support.journeys import events, snapshot, start_session, wait_card, wait_event
from tests.support.relay import Account, RelayServer, mac, phone_client
from tests.support.waits import await_until, wait_for
from wire.policy import (
    CATEGORIES,
    NEVER_AUTO,
    TOOL_CATEGORIES,
    Policy,
    PolicyError,
    category_of,
    from_record,
)
from wire.protocol import Card, CardOption, Command, CommandResult, SessionInfo

# -- the rules (pure) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "category"),
    [
        ("Read", "read"),
        ("Glob", "read"),
        ("Grep", "read"),
        ("LS", "read"),
        ("NotebookRead", "read"),
        ("Write", "edit"),
        ("Edit", "edit"),
        ("MultiEdit", "edit"),
        ("NotebookEdit", "edit"),
        ("Bash", "execute"),
        ("BashOutput", "execute"),
        ("KillShell", "execute"),
        ("WebFetch", "web"),
        ("WebSearch", "web"),
        ("mcp__github__create_issue", "mcp"),
        ("Task", None),
        ("TodoWrite", None),
        ("AskUserQuestion", None),
        (None, None),
    ],
)
def test_tools_map_to_their_categories(tool: str | None, category: str | None) -> None:
    assert category_of(tool) == category


def test_default_policy_asks_for_everything() -> None:
    policy = Policy()
    assert {policy.decide(t) for t in [*TOOL_CATEGORIES, "mcp__x__y", "Task"]} == {"ask"}


def test_category_rules_and_a_tool_rule_beating_its_category() -> None:
    policy = Policy.from_json(
        {
            "categories": {"execute": "allow", "read": "allow", "web": "deny"},
            "tools": {"Bash": "deny", "WebFetch": "ask"},
        }
    )
    assert policy.decide("BashOutput") == "allow"  # the category
    assert policy.decide("Bash") == "deny"  # its own rule beats the category
    assert policy.decide("Grep") == "allow"
    assert policy.decide("WebSearch") == "deny"
    assert policy.decide("WebFetch") == "ask"  # a tool's "ask" beats its category's "deny"
    assert policy.decide("Write") == "ask"  # no rule for edit
    assert policy.decide("Task") == "ask"  # no category, no rule
    verdict = policy.verdict("Bash")
    assert (verdict.rule, verdict.source) == ("deny", "tool")
    assert policy.verdict("WebSearch").source == "category"


def test_mcp_tools_follow_the_mcp_category_and_their_own_rules() -> None:
    policy = Policy.from_json(
        {"categories": {"mcp": "allow"}, "tools": {"mcp__prod__drop_table": "deny"}}
    )
    assert policy.decide("mcp__github__list_issues") == "allow"
    assert policy.decide("mcp__prod__drop_table") == "deny"


def test_allow_all_allows_what_no_rule_names_and_rules_still_win() -> None:
    everything = Policy(allow_all=True)
    assert everything.decide("Bash") == "allow"
    assert everything.decide("Task") == "allow"  # no category: allowed too
    assert everything.decide("mcp__a__b") == "allow"
    but_bash = Policy.from_json(
        {"allow_all": True, "tools": {"Bash": "deny"}, "categories": {"web": "ask"}}
    )
    assert but_bash.decide("Bash") == "deny"
    assert but_bash.decide("WebFetch") == "ask"
    assert but_bash.decide("Write") == "allow"
    assert but_bash.verdict("Write").source == "allow_all"


@pytest.mark.parametrize("tool", sorted(NEVER_AUTO))
def test_questions_and_plans_are_never_answered_by_a_rule(tool: str) -> None:
    for policy in [
        Policy(allow_all=True),
        Policy.from_json({"tools": {tool: "allow"}}),
        Policy.from_json({"allow_all": True, "tools": {tool: "deny"}}),
    ]:
        assert policy.decide(tool) == "ask"
        assert policy.always_allow(tool) == policy  # "always" on one changes nothing


def test_always_allow_grants_the_tools_category() -> None:
    policy = Policy.from_json({"tools": {"Bash": "ask", "Read": "deny"}})
    granted = policy.always_allow("Bash")
    assert granted.categories == {"execute": "allow"}
    assert granted.decide("Bash") == "allow" and granted.decide("KillShell") == "allow"
    assert "Bash" not in granted.tools and granted.tools["Read"] == "deny"  # others stay
    assert granted.decide("Write") == "ask"
    edits = Policy().always_allow("Edit")
    assert edits.decide("MultiEdit") == "allow" and edits.decide("Bash") == "ask"
    odd = Policy().always_allow("Task")  # no category: the tool itself
    assert odd.tools == {"Task": "allow"} and odd.categories == {}
    assert Policy().always_allow(None) == Policy()


def test_json_round_trip_and_clear_errors() -> None:
    text = {
        "allow_all": False,
        "categories": {"web": "deny", "read": "allow"},
        "tools": {"Bash": "ask"},
    }
    policy = Policy.from_json(text)
    assert Policy.from_json(policy.to_json()) == policy
    assert list(policy.to_json()["categories"]) == ["read", "web"]  # in CATEGORIES order
    assert Policy.from_json(None) == Policy.from_json({}) == Policy()
    bad: list[tuple[Any, str]] = [
        ({"categories": {"network": "allow"}}, "unknown category 'network'"),
        ({"categories": {"read": "yes"}}, "allow, ask or deny"),
        ({"tools": {"Bash": "never"}}, "allow, ask or deny"),
        ({"tools": {"": "allow"}}, "not a tool name"),
        ({"tools": {"rm -rf": "allow"}}, "not a tool name"),
        ({"allow_all": "yes"}, "true or false"),
        ({"colour": "blue"}, "unknown policy field"),
        ([], "JSON object"),
        ({"tools": ["Bash"]}, "object of name"),
    ]
    for data, message in bad:
        with pytest.raises(PolicyError, match=message):
            Policy.from_json(data)
    assert set(CATEGORIES) == {"read", "edit", "execute", "web", "mcp"}


def test_changes_merge_into_the_held_policy() -> None:
    held = Policy.from_json({"categories": {"execute": "allow"}, "tools": {"Bash": "ask"}})
    changed = held.changed({"categories": {"web": "deny"}, "tools": {"Bash": None}})
    assert changed.to_json() == {
        "allow_all": False,
        "categories": {"execute": "allow", "web": "deny"},
        "tools": {},
    }
    assert held.changed({"allow_all": True}).categories == {"execute": "allow"}
    assert held.changed({"reset": True, "tools": {"Read": "deny"}}) == Policy(
        tools={"Read": "deny"}
    )
    assert held.changed({"tools": {"Grep": None}}) == held  # dropping no rule is no change
    bad: list[tuple[Any, str]] = [
        ({"categories": {"network": "allow"}}, "unknown category 'network'"),
        ({"tools": {"Bash": "never"}}, "allow, ask or deny"),
        ({"reset": "yes"}, "reset must be true or false"),
        ({"allow_all": 1}, "true or false"),
        ({"policy": {}}, "unknown policy field"),
        ("allow", "JSON object"),
    ]
    for data, message in bad:
        with pytest.raises(PolicyError, match=message):
            held.changed(data)


def test_a_record_from_before_policies_keeps_its_allow_all() -> None:
    assert from_record({}, allow_all=True) == Policy(allow_all=True)
    assert from_record({"tools": {"Bash": "deny"}}, allow_all=False).decide("Bash") == "deny"
    assert from_record({"tools": {"Bash": 3}}, allow_all=False) == Policy()  # damaged: ask


def test_the_deny_message_says_it_was_the_sessions_policy() -> None:
    policy = Policy.from_json({"categories": {"execute": "deny"}})
    message = policy.verdict("Bash").deny_message("Bash")
    assert "policy denies Bash" in message and "execute" in message
    tool_rule = Policy.from_json({"tools": {"WebFetch": "deny"}}).verdict("WebFetch")
    assert "rule for WebFetch" in tool_rule.deny_message("WebFetch")


# -- the API, with a scripted Mac --------------------------------------------------------------


class PolicyMac:
    """A scripted Mac that keeps policies like the agent does and answers with them."""

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.policies: dict[str, dict[str, Any]] = {}

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        sid = command.session_id
        data: dict[str, Any] = {}
        if command.name == "set_policy":
            self.policies[sid] = Policy.from_json(command.args["policy"]).to_json()
            data["policy"] = self.policies[sid]
        elif command.name == "change_policy":
            held = Policy.from_json(self.policies.get(sid))
            self.policies[sid] = held.changed(command.args["changes"]).to_json()
            data["policy"] = self.policies[sid]
        elif command.name == "create_session":
            self.policies[sid] = Policy.from_json(command.args.get("policy")).to_json()
            data = {"cwd": command.args["cwd"], "policy": self.policies[sid]}
        elif command.name == "answer_card" and command.args.get("always"):
            now = Policy.from_json(self.policies.get(sid)).always_allow("Bash")
            self.policies[sid] = now.to_json()
            data = {"closed": True, "policy": self.policies[sid]}
        return CommandResult(command_id=command.command_id, ok=True, data=data)


def test_policy_is_shown_offline_and_changed_only_through_the_mac(
    relay: RelayServer, account: Account
) -> None:
    handler = PolicyMac()
    session_id = new_id()
    base = f"/api/sessions/{session_id}/policy"
    wanted = {"allow_all": False, "categories": {"execute": "allow"}, "tools": {"Bash": "deny"}}

    async def online() -> None:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            mac(relay, account.device_token, on_command=handler) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)
            first = (await client.get(base)).json()
            assert first["known"] is False and first["policy"] == {
                "allow_all": False,
                "categories": {},
                "tools": {},
            }
            assert first["device_online"] is True
            assert "Bash" in first["categories"]["execute"]
            put = await client.put(base, json=wanted)
            assert put.status_code == 200, put.text
            body = put.json()
            assert body["ok"] is True and body["known"] is True and body["policy"] == wanted
            command = handler.commands[-1]
            assert (command.name, command.session_id) == ("set_policy", session_id)
            assert command.args == {"policy": wanted}
            bad = await client.put(base, json={"categories": {"network": "allow"}})
            assert "unknown category" in error_of(bad, 400, "bad_request")["message"]
            error_of(await client.put(base, json={"rules": {}}), 400, "bad_request")
            assert handler.commands[-1] is command  # nothing bad reached the Mac

    asyncio.run(online())
    wait_until_offline(relay, account)
    with phone_client(relay, account.phone_token) as client:
        shown = client.get(base).json()
        assert shown["policy"] == wanted and shown["known"] is True
        assert shown["device_online"] is False
        offline = client.put(base, json={"allow_all": True})
        error_of(offline, 409, "device_offline")
        assert client.get(base).json()["policy"] == wanted  # unchanged
        error_of(client.get("/api/sessions/nope/policy"), 404, "unknown_session")
    with phone_client(relay, None) as anonymous:
        error_of(anonymous.get(base), 401, "unauthorized")
    other = relay.account()
    with phone_client(relay, other.phone_token) as stranger:
        error_of(stranger.get(base), 404, "unknown_session")


def test_always_on_a_card_answer_updates_the_relays_copy(
    relay: RelayServer, account: Account
) -> None:
    handler = PolicyMac()
    session_id = new_id()
    base = f"/api/sessions/{session_id}"
    card = Card(
        id="c1",
        kind="permission",
        title="Bash command",
        text="npm test",
        options=[CardOption(key="1", label="Yes"), CardOption(key="3", label="No")],
        tool="Bash",
    )

    async def go() -> None:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            mac(relay, account.device_token, on_command=handler) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)
            await link.update(SessionInfo(session_id=session_id, state="waiting", card=card))

            async def shown() -> bool:
                return bool((await client.get(base)).json()["card"])

            await await_until(shown, what="the card")
            answer = await client.post(f"{base}/cards/c1", json={"key": "1", "always": True})
            assert answer.status_code == 200, answer.text
            assert answer.json()["policy"]["categories"] == {"execute": "allow"}
            assert handler.commands[-1].args["always"] is True
            policy = (await client.get(f"{base}/policy")).json()
            assert policy["known"] is True and policy["policy"]["categories"] == {
                "execute": "allow"
            }

    asyncio.run(go())


def test_patch_changes_some_rules_and_keeps_what_the_mac_gained_meanwhile(
    relay: RelayServer, account: Account
) -> None:
    handler = PolicyMac()
    session_id = new_id()
    base = f"/api/sessions/{session_id}/policy"

    async def go() -> None:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            mac(relay, account.device_token, on_command=handler) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, session_id, SMALL)
            put = await client.put(base, json={"tools": {"Bash": "ask"}})
            assert put.status_code == 200, put.text
            # The phone read the policy; then a card's "always allow" changed it on the Mac.
            handler.policies[session_id] = (
                Policy.from_json(handler.policies[session_id]).always_allow("WebFetch").to_json()
            )
            patch = await client.patch(base, json={"tools": {"Bash": None, "Read": "deny"}})
            assert patch.status_code == 200, patch.text
            body = patch.json()
            assert body["ok"] is True and body["policy"] == {
                "allow_all": False,
                "categories": {"web": "allow"},
                "tools": {"Read": "deny"},
            }
            command = handler.commands[-1]
            assert (command.name, command.args) == (
                "change_policy",
                {"changes": {"tools": {"Bash": None, "Read": "deny"}}},
            )
            assert (await client.get(base)).json()["policy"] == body["policy"]
            reset = await client.patch(base, json={"reset": True, "allow_all": True})
            held = reset.json()["policy"]
            until = held.pop("allow_all_until")  # "allow all" with no duration: the default
            assert held == {"allow_all": True, "categories": {}, "tools": {}}
            assert abs(until - (time.time() + 3600)) < 60, until
            sent = len(handler.commands)
            for wrong, message in (
                ({}, "nothing to change"),
                ({"tools": {"Bash": "maybe"}}, "allow, ask or deny"),
                ({"categories": {"network": "allow"}}, "unknown category"),
            ):
                error = error_of(await client.patch(base, json=wrong), 400, "bad_request")
                assert message in error["message"], error
            error_of(await client.patch(base, json={"rules": {}}), 400, "bad_request")
            assert len(handler.commands) == sent  # nothing wrong reached the Mac
            marked = await client.patch(
                base, json={"allow_all": False}, headers={"X-CB-Read-Only": "1"}
            )
            error_of(marked, 409, "read_only")
            error_of(await client.patch("/api/sessions/nope/policy", json={"allow_all": True}),
                     404, "unknown_session")  # fmt: skip

    asyncio.run(go())
    wait_until_offline(relay, account)
    with phone_client(relay, account.phone_token) as client:
        error_of(client.patch(base, json={"allow_all": False}), 409, "device_offline")
        assert client.get(base).json()["policy"]["allow_all"] is True  # unchanged


def test_a_new_session_can_start_with_a_policy(relay: RelayServer, account: Account) -> None:
    handler = PolicyMac()
    first = {"allow_all": False, "categories": {"read": "allow", "edit": "allow"}, "tools": {}}

    async def go() -> None:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            mac(relay, account.device_token, on_command=handler),
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            body = {"device_id": account.device_id, "cwd": "/Users/test/p", "policy": first}
            created = await client.post("/api/sessions", json=body)
            assert created.status_code == 201, created.text
            new = created.json()["id"]
            assert handler.commands[-1].args["policy"] == first
            shown = (await client.get(f"/api/sessions/{new}/policy")).json()
            assert shown["policy"] == first and shown["known"] is True
            count = len(handler.commands)
            before = (await client.get("/api/sessions")).json()["sessions"]
            refused = await client.post(
                "/api/sessions",
                json={**body, "policy": {"categories": {"read": "sometimes"}}},
            )
            error_of(refused, 400, "bad_request")
            assert len(handler.commands) == count  # the Mac was never asked
            assert (await client.get("/api/sessions")).json()["sessions"] == before

    asyncio.run(go())


def wait_until_offline(relay: RelayServer, account: Account) -> None:
    wait_for(lambda: relay.state.live.link(account.device_id) is None, 10, "the Mac offline")


# -- the real agent with the fake Claude Code ------------------------------------------------


def _no_card_seen(phone: httpx.Client, session_id: str, until: Any) -> dict[str, Any]:
    """Watch the session until ``until(events)`` holds; fail if a card ever showed."""

    def check() -> dict[str, Any] | None:
        assert snapshot(phone, session_id)["card"] is None, "a card was shown"
        listed = events(phone, session_id)
        return next((e for e in listed if until(e)), None)

    found: dict[str, Any] = wait_for(check, 30, "the tool's result")
    return found


def _bash_ran(e: dict[str, Any]) -> bool:
    return e["kind"] == "tool_result" and "hi" in e.get("text", "")


def test_a_policy_allowing_execute_runs_bash_without_a_card(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(
            phone,
            fake,
            cwd,
            prompt="RUN_BASH please",
            permission_mode="manual",
            policy={"categories": {"execute": "allow"}},
        )
        _no_card_seen(phone, session_id, _bash_ran)
        listed = events(phone, session_id)
        assert any(e.get("marker") == "hook_allowed" for e in listed)
        assert (Path(cwd) / "bash_made.txt").exists()
        assert phone.get(f"/api/sessions/{session_id}/policy").json()["policy"]["categories"] == {
            "execute": "allow"
        }


def test_a_policy_denying_bash_denies_it_and_survives_an_agent_restart(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, prompt="hello", permission_mode="manual")
        wait_event(phone, session_id, lambda e: e["kind"] == "assistant", "the answer")
        # Allow execute as a category, but deny Bash itself: the tool's rule wins.
        put = phone.put(
            f"/api/sessions/{session_id}/policy",
            json={"categories": {"execute": "allow"}, "tools": {"Bash": "deny"}},
        )
        assert put.status_code == 200, put.text
        fake.stop_agent()  # the policy is in the registry: a new agent applies it
        fake.start_agent()
        wait_for(  # once the relay has the new agent's link
            lambda: (
                phone.post(
                    f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH now"}
                ).status_code
                == 200
            ),
            20,
            "the message sent through the new agent",
        )

        def denied(e: dict[str, Any]) -> bool:
            return "policy denies Bash" in e.get("text", "")

        found = _no_card_seen(phone, session_id, denied)
        assert "rule for Bash" in found["text"]
        assert not (Path(cwd) / "bash_made.txt").exists()
    record = fake.agent.registry.get(session_id) if fake.agent else None
    assert record is not None and record.policy["tools"] == {"Bash": "deny"}


def test_questions_are_never_auto_answered_even_with_allow_all(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(
            phone,
            fake,
            cwd,
            prompt="ASK_ME something",
            permission_mode="manual",
            policy={"allow_all": True, "tools": {"AskUserQuestion": "deny"}},
        )
        card = wait_card(phone, session_id, "question")
        assert card["options"]
