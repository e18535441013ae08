"""The audit log (relay/features/audit.py): every decision on every card, append-only, per account.

A phone's answer with who / which card / what / when; the Mac's own decisions over the link
(``decision``) and, with the real agent and the fake Claude Code, a policy's automatic allow with
its rule; accounts kept apart; paging and range checks; retention keeping a deleted session's
rows until their own age; SQLite and PostgreSQL refusing UPDATE and DELETE.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent import held as heldrules
from agent.decisions import decision_for, rule_text
from agent.state import RunningTool
from relay.features import audit as auditfeature
from tests.support.api import SMALL, error_of, new_id, push
from tests.support.bridge import Bridge
from tests.support.cli import cli
from tests.support.journeys import events, start_session
from tests.support.postgres import PostgresCluster
from tests.support.relay import Account, RelayServer, free_port, mac, phone_client
from tests.support.retention import FAST, Clock, Mac, retention_of, run
from tests.support.waits import await_until, wait_for
from tests.support.web import PortRelay, permission_card
from wire.client import MacLink
from wire.policy import Policy
from wire.protocol import (
    Card,
    CardOption,
    Command,
    CommandResult,
    Decision,
    SessionInfo,
    input_digest,
)


@pytest.fixture
def pg_url(postgres: PostgresCluster) -> str:
    """An empty database of the test's own on the run's PostgreSQL cluster."""
    return postgres.new_database("audit")


BASH_INPUT = {"command": "touch bash_made.txt && echo hi", "description": "Create a file"}


def canonical_digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def audit(client: httpx.Client, **params: Any) -> dict[str, Any]:
    response = client.get("/api/audit", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def a_decision(session_id: str, **fields: Any) -> Decision:
    base: dict[str, Any] = {
        "id": f"dec_{secrets.token_hex(8)}",
        "session_id": session_id,
        "at": time.time(),
        "source": "policy",
        "rule": "tool Bash: allow",
        "decision": "allow",
        "tool": "Bash",
        "input_digest": input_digest(BASH_INPUT),
        "summary": "touch bash_made.txt && echo hi",
    }
    return Decision(**{**base, **fields})


def dated(server: RelayServer, account: Account, session_id: str, at: float, **fields: Any) -> None:
    """A Mac's decision stored as if the relay had heard of it at ``at`` (the relay dates each
    row by its own clock: only a stored row can be older than the test)."""
    entry = auditfeature.of_decision(
        account.account_id, account.device_id, a_decision(session_id, **fields), now=at
    )
    server.state.store.db.writer.run_sync(lambda conn, _: auditfeature.insert(conn, entry))


async def stored(server: RelayServer, account_id: str, count: int) -> None:
    async def enough() -> bool:
        rows = await server.state.store.read(
            "SELECT COUNT(*) FROM audit WHERE account_id = ?", (account_id,)
        )
        return int(rows[0][0]) >= count

    await await_until(enough, 10, f"{count} audit entries stored")


# -- pure parts ------------------------------------------------------------------------------


def test_the_digest_is_of_the_canonical_json_whatever_the_key_order() -> None:
    one = {"command": "ls", "description": "List", "timeout": 5}
    other = {"timeout": 5, "description": "List", "command": "ls"}
    assert input_digest(one) == input_digest(other) == canonical_digest(one)
    assert input_digest({"command": "ls -a"}) != input_digest({"command": "ls"})
    assert input_digest({"text": "한글"}) == canonical_digest({"text": "한글"})
    assert input_digest(None) is None


def test_the_rule_that_decided_is_named() -> None:
    policy = Policy.from_json(
        {"allow_all": True, "categories": {"read": "allow"}, "tools": {"Bash": "deny"}}
    )
    assert rule_text(policy.verdict("Bash"), "Bash") == "tool Bash: deny"
    assert rule_text(policy.verdict("Grep"), "Grep") == "category read: allow"
    assert rule_text(policy.verdict("Write"), "Write") == "allow all"
    until = rule_text(policy.verdict("Write"), "Write", allow_all_until=1_800_000_000)
    assert until == "allow all until 2027-01-15T08:00:00Z"
    payload = {"tool_name": "Bash", "tool_input": BASH_INPUT, "tool_use_id": "toolu_1"}
    made = decision_for("s1", policy.verdict("Bash"), payload)
    assert made is not None and (made.source, made.decision) == ("policy", "deny")
    assert made.input_digest == canonical_digest(BASH_INPUT) and "touch" in made.summary
    everything = decision_for("s1", policy.verdict("Write"), {"tool_name": "Write"})
    assert everything is not None and everything.source == "allow_all"
    assert decision_for("s1", Policy().verdict("Bash"), payload) is None  # asks: a card
    # Claude Code's PermissionRequest has no tool_use_id: the PreToolUse before it names it.
    running = [RunningTool("toolu_r", "Read", 1.0), RunningTool("toolu_b", "Bash", 2.0)]
    unnamed = {"tool_name": "Bash", "tool_input": BASH_INPUT}
    found = decision_for("s1", policy.verdict("Bash"), unnamed, running=running)
    assert found is not None and found.tool_use_id == "toolu_b"


# -- a phone's answer --------------------------------------------------------------------------


class CardMac:
    """Answers answer_card ok, or refuses it when ``refuse`` is set."""

    def __init__(self) -> None:
        self.commands: list[Command] = []
        self.refuse = False

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        if command.name == "answer_card" and self.refuse:
            return CommandResult(
                command_id=command.command_id, ok=False, code="card_still_open", error="no"
            )
        return CommandResult(command_id=command.command_id, ok=True, data={"closed": True})


async def show_card(
    server: RelayServer, link: MacLink, client: httpx.AsyncClient, sid: str, card_id: str
) -> None:
    await link.update(SessionInfo(session_id=sid, state="waiting", card=permission_card(card_id)))

    async def shown() -> bool:
        body = (await client.get(f"/api/sessions/{sid}")).json()
        return bool(body.get("card")) and body["card"]["id"] == card_id

    await await_until(shown, 10, "the card on the relay")


def test_a_phone_answer_is_recorded_with_who_which_card_and_what(
    relay: RelayServer, account: Account
) -> None:
    handler = CardMac()
    sid = new_id()
    token_id = relay.state.store.authenticate(account.phone_token).token_id

    async def go() -> None:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            mac(relay, account.device_token, on_command=handler) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, sid, SMALL)
            await show_card(relay, link, client, sid, "card-a1")
            started = time.time()
            answer = await client.post(f"/api/sessions/{sid}/cards/card-a1", json={"key": "1"})
            assert answer.status_code == 200, answer.text
            # An answer the Mac refused changed nothing: it is not a decision.
            await show_card(relay, link, client, sid, "card-a2")
            handler.refuse = True
            refused = await client.post(
                f"/api/sessions/{sid}/cards/card-a2", json={"key": "3", "always": True}
            )
            assert refused.status_code == 409, refused.text
            handler.refuse = False
            again = await client.post(
                f"/api/sessions/{sid}/cards/card-a2", json={"keys": ["1"], "always": True}
            )
            assert again.status_code == 200, again.text
            assert time.time() - started < 60

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as client:
        body = audit(client, session_id=sid)
        assert body["has_more"] is False and body["next_before"] is None
        second, first = body["entries"]  # newest first
        assert first["source"] == "phone" and first["rule"] is None
        assert first["who"] == {
            "phone_id": account.phone_id,
            "name": "test phone",
            "token_id": token_id,
            "address": "127.0.0.1",
        }
        assert first["session_id"] == sid and first["device_id"] == account.device_id
        assert first["card"] == {
            "id": "card-a1",
            "kind": "permission",
            "tool": "Bash",
            "tool_use_id": None,
            "title": "Bash command",
            "input_digest": canonical_digest(BASH_INPUT),
            "summary": "touch bash_made.txt && echo hi",
        }
        assert first["answer"] == {"keys": ["1"], "labels": ["Yes"], "text": None, "always": False}
        assert first["at"].endswith("Z")
        assert second["card"]["id"] == "card-a2"
        assert second["answer"] == {
            "keys": ["1"],
            "labels": ["Yes"],
            "text": None,
            "always": True,
        }
        assert audit(client)["entries"][:2] == body["entries"]  # the account's whole log


def test_another_account_sees_nothing(relay: RelayServer, account: Account) -> None:
    other = relay.account()
    sid = new_id()

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, sid, SMALL)
            await link.send_raw(a_decision(sid).model_dump_json())
            await stored(relay, account.account_id, 1)
        # The other account's Mac cannot write into this account's session either.
        async with mac(relay, other.device_token) as intruder:
            await push(intruder, new_id(), SMALL)
            await intruder.send_raw(a_decision(sid).model_dump_json())
            await await_until(lambda: _has(intruder.errors, 1), 10, "the link's error")
            assert intruder.errors[0].code == "unknown_session"

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as mine:
        assert len(audit(mine, session_id=sid)["entries"]) == 1
    with phone_client(relay, other.phone_token) as theirs:
        assert audit(theirs)["entries"] == []
        assert audit(theirs, session_id=sid)["entries"] == []


def test_a_mac_speaks_only_for_its_own_sessions_and_a_resent_decision_is_kept_once(
    relay: RelayServer, account: Account
) -> None:
    sid = new_id()
    second_mac, _, _ = relay.state.store.create_token(account.account_id, "device", "other mac")

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, sid, SMALL)
            decision = a_decision(sid)
            await link.send_raw(decision.model_dump_json())
            await link.send_raw(decision.model_dump_json())  # sent again after a reconnect
            await link.send_raw(a_decision(sid, rule="category read: allow").model_dump_json())
            await stored(relay, account.account_id, 2)
        async with mac(relay, second_mac) as other:
            await other.send_raw(a_decision(sid).model_dump_json())
            await await_until(lambda: _has(other.errors, 1), 10, "the link's error")
            assert other.errors[0].code == "unknown_session"

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as client:
        listed = audit(client, session_id=sid)["entries"]
        assert [e["rule"] for e in listed] == ["category read: allow", "tool Bash: allow"]
        assert listed[1]["who"] is None and listed[1]["device_id"] == account.device_id
        assert listed[1]["answer"] == {"decision": "allow"}

    async def from_the_future() -> None:
        async with mac(relay, account.device_token) as link:
            later = a_decision(sid, at=time.time() + 86400, rule="later")
            await link.send_raw(later.model_dump_json())
            await stored(relay, account.account_id, 3)

    asyncio.run(from_the_future())
    with phone_client(relay, account.phone_token) as client:
        (later,) = [e for e in audit(client, session_id=sid)["entries"] if e["rule"] == "later"]
        assert later["at"] <= _iso(time.time())  # never after the relay heard of it


def test_paging_newest_first_with_a_cursor_and_checked_limits(
    relay: RelayServer, account: Account
) -> None:
    sid, other_sid = new_id(), new_id()
    day = 86400.0
    now = time.time()

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, sid, SMALL)
            await push(link, other_sid, SMALL)

    asyncio.run(go())
    for i in range(7):
        dated(relay, account, sid, now - (7 - i) * day, rule=f"rule {i}")
    dated(relay, account, other_sid, now, rule="elsewhere")
    with phone_client(relay, account.phone_token) as client:
        seen: list[str] = []
        before: int | None = None
        pages = 0
        while True:
            params: dict[str, Any] = {"session_id": sid, "limit": 3}
            if before is not None:
                params["before"] = before
            body = audit(client, **params)
            pages += 1
            seen += [e["rule"] for e in body["entries"]]
            if not body["has_more"]:
                assert body["next_before"] is None
                break
            before = body["next_before"]
            assert before == body["entries"][-1]["id"]
        assert pages == 3 and seen == [f"rule {i}" for i in reversed(range(7))]
        assert [e["rule"] for e in audit(client, limit=1)["entries"]] == ["elsewhere"]
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 2.5 * day))
        recent = audit(client, session_id=sid, since=since)["entries"]
        assert [e["rule"] for e in recent] == ["rule 6", "rule 5"]
        until = str(now - 5.5 * day)  # epoch seconds work too
        old = audit(client, session_id=sid, until=until)["entries"]
        assert [e["rule"] for e in old] == ["rule 1", "rule 0"]
        for params, code in (
            ({"limit": 0}, "bad_limit"),
            ({"limit": 201}, "bad_limit"),
            ({"before": 0}, "bad_before"),
            ({"before": 2**63}, "bad_before"),
            ({"since": "last tuesday"}, "bad_date"),
        ):
            error_of(client.get("/api/audit", params=params), 400, code)
        error_of(client.get("/api/audit", params={"limit": "x"}), 400, "bad_request")
        assert len(audit(client, session_id=sid)["entries"]) == 7  # nothing lost
    with httpx.Client(base_url=relay.url) as anonymous:
        error_of(anonymous.get("/api/audit"), 401, "unauthorized")


def test_bad_decision_messages_are_refused_and_the_link_stays(
    relay: RelayServer, account: Account
) -> None:
    sid = new_id()
    errors: list[str] = []

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, sid, SMALL)
            good = a_decision(sid).model_dump()
            for wrong in (
                {**good, "source": "phone"},  # only the relay records phones
                {**good, "input_digest": "abc"},
                {**good, "id": "x"},
            ):
                await link.send_raw(json.dumps(wrong))
            await link.send_raw(json.dumps({**good, "at": 1e300}))
            await await_until(lambda: _has(link.errors, 4), 10, "four errors")
            await push(link, new_id(), SMALL)  # still linked
            errors.extend(e.code for e in link.errors)

    asyncio.run(go())
    assert errors == ["bad_message"] * 4, errors
    with phone_client(relay, account.phone_token) as client:
        assert audit(client, session_id=sid)["entries"] == []


async def _has(values: list[Any], count: int) -> bool:
    return len(values) >= count


# -- retention and append-only ---------------------------------------------------------------


def test_retention_keeps_a_deleted_sessions_audit_until_its_own_age_counted_by_the_relay(
    make_relay: Callable[..., RelayServer],
) -> None:
    """A Mac's time for a decision is kept beside the relay's (``mac_at``), never instead: a
    decision told 100 days late, or dated back by a lying Mac, is kept as long as any other."""
    server = make_relay(**FAST)
    acct = server.account()
    clock = Clock()
    retention_of(server).clock = clock
    handler = Mac()
    sid = new_id()

    async def go() -> None:
        async with mac(server, acct.device_token, on_command=handler) as link:
            await push(link, sid, SMALL)
            older = clock.start - 100 * 86400  # told by a Mac 100 days late
            await link.send_raw(a_decision(sid, at=older).model_dump_json())
            await link.send_raw(a_decision(sid, at=clock.start).model_dump_json())
            await stored(server, acct.account_id, 2)
            # The phone's calls run in a thread: a retention run asks this Mac (on this loop) to
            # delete its archive, and waits for the answer.
            with phone_client(server, acct.phone_token) as client:
                clock.days(31)
                report = await asyncio.to_thread(run, client)
                assert [s["session_id"] for s in report["archived"]] == [sid]
                clock.days(31 + 181)
                report = await asyncio.to_thread(run, client)
                assert [s["session_id"] for s in report["deleted"]] == [sid]
                assert report["audit_expired"] == 0
                gone = await asyncio.to_thread(client.get, f"/api/sessions/{sid}")
                error_of(gone, 404, "unknown_session")
                # The session is gone; its audit rows are not.
                listed = await asyncio.to_thread(audit, client, session_id=sid)
                assert len(listed["entries"]) == 2
                assert sorted(e["mac_at"] for e in listed["entries"]) == [
                    _iso(older),
                    _iso(clock.start),
                ]
                clock.days(266)  # past the Mac's date of the older one: nothing goes by it
                assert (await asyncio.to_thread(run, client))["audit_expired"] == 0
                left = (await asyncio.to_thread(audit, client, session_id=sid))["entries"]
                assert len(left) == 2
                clock.days(366)  # both past audit_keep_days (365) counted from the relay's time
                report = await asyncio.to_thread(run, client)
                assert report["audit_expired"] == 2 and report["audit_keep_days"] == 365
                assert (await asyncio.to_thread(audit, client, session_id=sid))["entries"] == []

    asyncio.run(go())


def _iso(ts: float) -> str:
    from relay.state import iso

    found = iso(ts)
    assert found is not None
    return found


def _one_decision(server: RelayServer) -> tuple[Account, str]:
    """A session with one decision of its Mac in the audit log: its account and id."""
    acct = server.account()
    sid = new_id()

    async def go() -> None:
        async with mac(server, acct.device_token) as link:
            await push(link, sid, SMALL)
            await link.send_raw(a_decision(sid).model_dump_json())
            await stored(server, acct.account_id, 1)

    asyncio.run(go())
    return acct, sid


def test_sqlite_refuses_update_and_delete_of_audit_rows(
    make_relay: Callable[..., RelayServer], tmp_path: Path
) -> None:
    server = make_relay(database_url="")  # SQLite, whatever the suite's backend
    _, sid = _one_decision(server)
    path = server.state.store.path
    assert path is not None  # SQLite keeps a file
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit SET rule = 'nothing happened' WHERE session_id = ?", (sid,))
        with pytest.raises(sqlite3.IntegrityError, match="only retention deletes them"):
            conn.execute("DELETE FROM audit WHERE session_id = ?", (sid,))
        with pytest.raises(sqlite3.IntegrityError, match="only moves forward"):
            conn.execute("UPDATE audit_expiry SET cutoff = -1")
        with pytest.raises(sqlite3.IntegrityError, match="never removed"):
            conn.execute("DELETE FROM audit_expiry")
        # Deleting the session row (as retention does) leaves the audit row alone.
        conn.execute("PRAGMA foreign_keys = ON")
        rows = conn.execute("SELECT rule FROM audit WHERE session_id = ?", (sid,)).fetchall()
        assert rows == [("tool Bash: allow",)]
    finally:
        conn.close()


def test_postgres_refuses_update_and_delete_of_audit_rows(
    pg_url: str, make_relay: Callable[..., RelayServer]
) -> None:
    import psycopg

    server = make_relay(database_url=pg_url)
    acct, sid = _one_decision(server)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.IntegrityError, match="append-only"):
            conn.execute("UPDATE audit SET rule = 'nothing happened' WHERE session_id = %s", (sid,))
        with pytest.raises(psycopg.errors.IntegrityError, match="only retention deletes them"):
            conn.execute("DELETE FROM audit WHERE session_id = %s", (sid,))
        with pytest.raises(psycopg.errors.IntegrityError, match="append-only"):
            conn.execute("TRUNCATE audit")
        with pytest.raises(psycopg.errors.IntegrityError, match="only moves forward"):
            conn.execute("UPDATE audit_expiry SET cutoff = -1")
        with pytest.raises(psycopg.errors.IntegrityError, match="never removed"):
            conn.execute("DELETE FROM audit_expiry")
        # Deleting the session row (as retention does) leaves the audit row alone.
        conn.execute("DELETE FROM sessions WHERE id = %s", (sid,))
        rows = conn.execute("SELECT rule FROM audit WHERE session_id = %s", (sid,)).fetchall()
        assert rows == [("tool Bash: allow",)]
    # The relay reads it as before.
    with phone_client(server, acct.phone_token) as client:
        entries = audit(client, session_id=sid)["entries"]
    assert [e["rule"] for e in entries] == ["tool Bash: allow"]


# -- the real agent with the fake Claude Code ------------------------------------------------


def test_an_automatic_allow_by_policy_is_recorded_with_its_rule(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder()
    with fake.phone() as phone:
        by_rule = start_session(
            phone,
            fake,
            cwd,
            prompt="RUN_BASH please",
            permission_mode="manual",
            policy={"categories": {"execute": "allow"}},
        )
        found = wait_for(
            lambda: audit(phone, session_id=by_rule)["entries"], 30, "the policy's decision"
        )
        (entry,) = found
        assert entry["source"] == "policy" and entry["rule"] == "category execute: allow"
        assert entry["answer"] == {"decision": "allow"} and entry["who"] is None
        assert entry["device_id"] == fake.account.device_id
        card = entry["card"]
        assert card["tool"] == "Bash" and card["kind"] == "permission"
        assert card["tool_use_id"]
        used = wait_for(
            lambda: next(
                (e for e in events(phone, by_rule) if e.get("tool_use_id") == card["tool_use_id"]),
                None,
            ),
            30,
            "the tool use in the conversation",
        )
        assert card["input_digest"] == canonical_digest(used["input"])
        assert used["input"]["command"] in card["summary"]

        everything = start_session(
            phone, fake, fake.folder(), prompt="RUN_BASH too", permission_mode="manual",
            allow_all=True,
        )  # fmt: skip
        (all_entry,) = wait_for(
            lambda: audit(phone, session_id=everything)["entries"], 30, "allow all's decision"
        )
        # "Allow all" is bounded (an hour by default): the rule names its end.
        assert all_entry["source"] == "allow_all"
        until = all_entry["rule"].removeprefix("allow all until ")
        ends = datetime.fromisoformat(until.replace("Z", "+00:00")).timestamp()
        assert 3500 < ends - time.time() <= 3600, all_entry["rule"]


# -- claude-bridge audit -----------------------------------------------------------------------


def test_the_audit_command_lists_decisions_by_session_and_date(
    relay: RelayServer, account: Account
) -> None:
    sid = new_id()
    now = time.time()

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, sid, SMALL)

    asyncio.run(go())
    for i, rule in enumerate(("tool Bash: allow", "category read: allow", "allow all")):
        source = "allow_all" if rule == "allow all" else "policy"
        dated(relay, account, sid, now - (2 - i) * 86400, rule=rule, source=source)
    out = cli(relay, account.phone_token, "audit", "--session", sid).stdout
    lines = out.splitlines()
    assert len(lines) == 6, out  # two lines per decision, newest first
    assert "Bash touch bash_made.txt && echo hi" in lines[0] and "→ allow" in lines[0]
    digest = input_digest(BASH_INPUT)
    assert digest is not None
    assert f"(sha256 {digest[:12]})" in lines[0]
    assert lines[1].strip() == f"by allow_all: allow all (on test mac) · session {sid}"
    assert "policy: category read: allow" in lines[3] and "policy: tool Bash: allow" in lines[5]
    body = json.loads(cli(relay, account.phone_token, "audit", f"--session={sid}", "--json").stdout)
    assert [e["rule"] for e in body["entries"]] == [
        "allow all",
        "category read: allow",
        "tool Bash: allow",
    ]
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 1.5 * 86400))
    recent = cli(relay, account.phone_token, "audit", "--session", sid, "--since", since, "--json")
    assert len(json.loads(recent.stdout)["entries"]) == 2
    one = cli(relay, account.phone_token, "audit", "--limit", "1", "--json").stdout
    assert [e["rule"] for e in json.loads(one)["entries"]] == ["allow all"]
    newest = cli(relay, account.phone_token, "audit", "--session", "-1", "--json").stdout
    assert json.loads(newest) == body  # -1: the session created last, as `sessions` numbers it
    gone = cli(relay, account.phone_token, "audit", "--session", new_id()).stdout
    assert gone.strip() == "No decisions in the audit log for this choice."
    bad = cli(relay, account.phone_token, "audit", "--since", "soon", code=2)
    assert "bad_date" in bad.stderr


# -- a hook's decisions ------------------------------------------------------------------------

HOOK_FIXTURE = "n_permissionrequest_allow_hook"  # the person's hook allowed Bash, Write and Bash


def test_a_hooks_decision_is_recorded_unless_the_mac_told_its_own(
    relay: RelayServer, account: Account
) -> None:
    sid = new_id()
    told = "toolu_90060ccb79e04289b3cb250f"  # the first Bash: answered by the Mac's policy

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, sid, SMALL)
            await link.send_raw(a_decision(sid, tool_use_id=told).model_dump_json())
            await stored(relay, account.account_id, 1)
            await push(link, sid, HOOK_FIXTURE)
            await stored(relay, account.account_id, 3)  # after the grace: the other two

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as client:
        listed = audit(client, session_id=sid)["entries"]
        by_use: dict[str, list[dict[str, Any]]] = {}
        for entry in listed:
            by_use.setdefault(entry["card"]["tool_use_id"], []).append(entry)
        assert [e["source"] for e in by_use[told]] == ["policy"]  # not logged twice
        hooks = [e for e in listed if e["source"] == "hook"]
        assert len(hooks) == 2, listed
        assert {e["card"]["tool"] for e in hooks} == {"Write", "Bash"}
        for entry in hooks:
            assert entry["rule"] == "Allowed by PermissionRequest hook"
            assert entry["answer"] == {"decision": "allow"} and entry["who"] is None
            assert entry["device_id"] == account.device_id and entry["card"]["summary"]


def test_the_macs_decisions_are_kept_on_disk_until_the_relay_acknowledges_them(
    relay: RelayServer, account: Account, tmp_path: Path
) -> None:
    """A decision made while the relay is away waits in the data folder (private), is still
    there after the agent restarts, and leaves only once the relay has it in the audit log."""
    from agent.decisions import DecisionLog
    from tests.support.relay import agent_link

    sid = new_id()
    path = tmp_path / "agent" / "decisions.json"
    payload = {"tool_name": "Bash", "tool_input": BASH_INPUT, "tool_use_id": "toolu_kept"}

    async def while_the_relay_is_away() -> None:
        async with mac(relay, account.device_token) as link:
            await push(link, sid, SMALL)  # the session runs on this Mac
        nowhere = agent_link("http://127.0.0.1:9", account.device_token)  # nothing listens there
        log = DecisionLog(nowhere, path)
        log.note(sid, Policy.from_json({"tools": {"Bash": "allow"}}).verdict("Bash"), payload)
        await log.close()

    asyncio.run(while_the_relay_is_away())
    kept = json.loads(path.read_text())
    assert [d["tool_use_id"] for d in kept] == ["toolu_kept"]
    assert path.stat().st_mode & 0o777 == 0o600

    async def after_a_restart() -> None:
        link = agent_link(relay.url, account.device_token)
        log = DecisionLog(link, path)
        assert list(log.pending) == [kept[0]["id"]]
        link.start()
        log.start()
        try:
            await await_until(lambda: _empty(log.pending), 15, "the relay's acknowledgement")
        finally:
            await log.close()
            await link.stop()

    asyncio.run(after_a_restart())
    assert json.loads(path.read_text()) == []
    with phone_client(relay, account.phone_token) as client:
        listed = audit(client, session_id=sid)["entries"]
    assert [(e["rule"], e["card"]["tool_use_id"]) for e in listed] == [
        ("tool Bash: allow", "toolu_kept")
    ]


async def _empty(values: dict[str, Any]) -> bool:
    return not values


# -- a card closed by a message ------------------------------------------------------------------


def a_card(kind: str, card_id: str) -> Card:
    if kind == "permission":
        return permission_card(card_id)
    titles = {"question": "Toppings", "plan": "Ready to code?", "dialog": "Trust this folder?"}
    return Card(
        id=card_id,
        kind=kind,  # type: ignore[arg-type]
        title=titles[kind],
        text="Which one?\nPick one",
        options=[CardOption(key="1", label="Yes"), CardOption(key="2", label="No")],
    )


class MessageMac:
    """Answers a send as the agent does (agent/held.py): with a question, plan or dialog card
    open the card is closed and the message typed; with a permission card it is held."""

    def __init__(self) -> None:
        self.card: str | None = None
        self.sends: list[Command] = []

    async def __call__(self, command: Command) -> CommandResult:
        data: dict[str, Any] = {}
        if command.name == "send":
            self.sends.append(command)
            delivery = heldrules.decide(heldrules.Situation("waiting", self.card), False)
            typed = delivery is heldrules.Delivery.DISMISS_THEN_TYPE
            data = {"message_id": command.args["message_id"], "state": "typed" if typed else "held"}
        return CommandResult(command_id=command.command_id, ok=True, data=data)


def test_a_question_or_plan_card_a_message_closed_is_in_the_audit_log(
    relay: RelayServer, account: Account
) -> None:
    handler = MessageMac()
    sid = new_id()
    token_id = relay.state.store.authenticate(account.phone_token).token_id

    async def go() -> None:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            mac(relay, account.device_token, on_command=handler) as link,
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            await push(link, sid, SMALL)
            for kind, card_id, text in (
                ("question", "card-q1", "none of these: use olive oil"),
                ("plan", "card-p1", "not yet, first read the tests"),
                ("permission", "card-b1", "after this, tidy up"),  # held: the card stays
            ):
                card = a_card(kind, card_id)
                await link.update(SessionInfo(session_id=sid, state="waiting", card=card))

                async def shown(card_id: str = card_id) -> bool:
                    body = (await client.get(f"/api/sessions/{sid}")).json()
                    return bool(body.get("card")) and body["card"]["id"] == card_id

                await await_until(shown, 10, "the card on the relay")
                handler.card = kind
                message = {"text": text, "id": f"phone-{card_id}"}
                sent = await client.post(f"/api/sessions/{sid}/messages", json=message)
                assert sent.status_code == 200, sent.text
                # sent again (its answer was lost): still one entry for the card
                again = await client.post(f"/api/sessions/{sid}/messages", json=message)
                assert again.status_code == 200, again.text

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as client:
        entries = audit(client, session_id=sid)["entries"]
    assert [(e["card"]["kind"], e["rule"]) for e in entries] == [
        ("plan", "closed by a message"),
        ("question", "closed by a message"),
    ]
    plan, question = entries
    assert question["source"] == "phone" and question["who"] == {
        "phone_id": account.phone_id,
        "name": "test phone",
        "token_id": token_id,
        "address": "127.0.0.1",
    }
    assert question["card"]["id"] == "card-q1" and question["card"]["title"] == "Toppings"
    assert question["answer"] == {
        "closed_by": "message",
        "text": "none of these: use olive oil",
        "message_id": "phone-card-q1",
    }
    assert plan["card"]["title"] == "Ready to code?" and plan["device_id"] == account.device_id


def test_a_log_from_before_the_macs_own_time_was_kept_apart_is_migrated_in_place(
    tmp_path: Path, relay_overrides: Callable[[], dict[str, Any]]
) -> None:
    """An audit table without ``mac_at`` (an older relay's) gets the column as the relay opens:
    its rows stay as they were, still append-only."""
    data, port, store = tmp_path / "data", free_port(), relay_overrides()
    server = PortRelay(data, port, **store).start()
    try:
        acct, sid = _one_decision(server)
        server.state.store.db.writer.run_sync(
            lambda conn, _: conn.execute("ALTER TABLE audit DROP COLUMN mac_at")
        )
    finally:
        server.stop()
    server = PortRelay(data, port, **store).start()
    try:
        with phone_client(server, acct.phone_token) as client:
            [kept] = audit(client, session_id=sid)["entries"]
            assert kept["rule"] == "tool Bash: allow" and kept["mac_at"] is None
        with pytest.raises(Exception, match="append-only"):
            server.state.store.db.writer.run_sync(
                lambda conn, _: conn.execute("UPDATE audit SET rule = 'changed'")
            )
        newer, _ = _one_decision(server)  # a new decision keeps the Mac's time again
        with phone_client(server, newer.phone_token) as client:
            assert audit(client, limit=1)["entries"][0]["mac_at"] is not None
    finally:
        server.stop()
