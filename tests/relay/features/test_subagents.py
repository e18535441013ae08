"""Subagent history on the captured transcripts of a real subagent run (``m_subagent``).

The main transcript and the subagent's (``agent-<id>``) arrive as two conversations of one session,
as the agent sends them; the relay links the subagent to the ``Agent`` tool call that started it,
shows one summary line, and pages its history like any other, forwards and back.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.features import subagents
from relay.store import Store
from tests.support.postgres import PostgresCluster
from tests.support.relay import TRANSCRIPTS, Account, RelayServer, mac, phone_client
from wire import config as configmod
from wire.transcript import read_lines

MAIN = TRANSCRIPTS / "m_subagent__b9a49076-7ef0-4409-b3eb-ff11c5c634e6.jsonl"
SUB = TRANSCRIPTS / "m_subagent__subagent__agent-a0f2c7af82d1d7fd7.jsonl"
MAIN_CONVERSATION = "b9a49076-7ef0-4409-b3eb-ff11c5c634e6"
AGENT = "a0f2c7af82d1d7fd7"
SUB_CONVERSATION = f"agent-{AGENT}"  # how the agent names a subagent's transcript
TOOL_USE = "toolu_af8f2c1bb1ca48698824454c"
PROMPT = "SUBTASK_PROMPT: please list the folder with LS_SUB and report."
OUTCOME = "Subagent report: the folder was listed."
SUB_EVENTS = 4  # the subagent's prompt, its Bash call and result, its report


@pytest.fixture
def pg_url(postgres: PostgresCluster) -> str:
    """An empty database of the test's own on the run's PostgreSQL cluster."""
    return postgres.new_database("subagents")


def new_id() -> str:
    return str(uuid.uuid4())  # a session id, as the relay takes it: a UUID


async def push_both(server: RelayServer, acct: Account, session_id: str, sub_first: bool) -> int:
    files = [(SUB, SUB_CONVERSATION), (MAIN, MAIN_CONVERSATION)]
    if not sub_first:
        files.reverse()
    async with mac(server, acct.device_token) as link:
        last = 0
        for path, conversation in files:
            lines = list(read_lines(path.read_bytes()))
            ack = await link.send_lines(session_id, conversation, lines, cwd="/work/m")
            last = ack.last_seq
        await link.wait_for_seq(session_id, last)
    return last


def wait_offline(server: RelayServer, acct: Account) -> None:
    deadline = time.monotonic() + 5
    while server.state.live.link(acct.device_id) is not None:
        assert time.monotonic() < deadline
        time.sleep(0.02)


def get(client: httpx.Client, url: str, status: int = 200, **params: Any) -> dict[str, Any]:
    response = client.get(url, params=params)
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


def seqs(page: dict[str, Any]) -> list[int]:
    return [e["seq"] for e in page["events"]]


# -- the summary line -----------------------------------------------------------------------


@pytest.mark.parametrize("sub_first", [False, True], ids=["main-first", "subagent-first"])
def test_the_parent_shows_one_summary_line_linked_to_its_tool_call(
    relay: RelayServer, account: Account, sub_first: bool
) -> None:
    session_id = new_id()
    last = asyncio.run(push_both(relay, account, session_id, sub_first))
    with phone_client(relay, account.phone_token) as client:
        listed = get(client, f"/api/sessions/{session_id}/subagents")
        assert listed["session_id"] == session_id
        (line,) = listed["subagents"]
        events = get(client, f"/api/sessions/{session_id}/events")["events"]
        call = next(
            e for e in events if e.get("tool_use_id") == TOOL_USE and e["kind"] == "tool_use"
        )
        own = [e["seq"] for e in events if e.get("agent_id") == AGENT]
        assert len(own) == SUB_EVENTS and last == len(events)

        assert line["agent_id"] == AGENT
        assert (line["agent_type"], line["description"], line["tool"]) == (
            "general-purpose", "Inspect folder", "Agent",
        )  # fmt: skip
        assert (line["tool_use_id"], line["call_seq"], line["caller"]) == (
            TOOL_USE, call["seq"], None,
        )  # fmt: skip
        assert line["prompt"] == PROMPT and line["outcome"] == OUTCOME
        assert line["status"] == "finished"  # the <task-notification> came back
        assert line["events"] == SUB_EVENTS
        assert (line["first_seq"], line["last_seq"]) == (own[0], own[-1])
        assert line["started_at"] == "2026-11-29T21:33:33.645Z"
        assert line["line"].startswith(
            "general-purpose · Inspect folder — finished: Subagent report: the folder was listed."
        )
        # Cost per subagent when the relay computes usage (relay/features/usage.py), else null.
        cost = client.get(f"/api/sessions/{session_id}/cost")
        if cost.status_code == 200:
            assert line["cost"] == cost.json()["by_agent"][AGENT]
            assert line["line"].endswith(f"· ${line['cost']['usd']:.4f}")
        else:
            assert line["cost"] is None

        # A session without subagents has none; another account sees nothing.
        other = relay.account()
        with phone_client(relay, other.phone_token) as stranger:
            refused = stranger.get(f"/api/sessions/{session_id}/subagents")
            assert refused.status_code == 404
            assert refused.json()["error"]["code"] == "unknown_session"


def test_a_running_subagent_before_its_transcript_arrives(
    relay: RelayServer, account: Account
) -> None:
    """Only the main transcript up to the launch: the call is listed, running, its id known."""
    session_id = new_id()
    lines = list(read_lines(MAIN.read_bytes()))
    launch = next(i for i, x in enumerate(lines) if "Async agent launched" in x.text)

    async def go() -> None:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, MAIN_CONVERSATION, lines[: launch + 1])

    asyncio.run(go())
    with phone_client(relay, account.phone_token) as client:
        (line,) = get(client, f"/api/sessions/{session_id}/subagents")["subagents"]
        assert (line["agent_id"], line["status"], line["events"]) == (AGENT, "running", 0)
        assert line["outcome"] is None and line["prompt"] == PROMPT
        assert line["line"] == "general-purpose · Inspect folder — running"
        missing = client.get(f"/api/sessions/{session_id}/subagents/{AGENT}/events")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "unknown_subagent"


# -- the subagent's history, a page at a time ---------------------------------------------------


def test_subagent_history_pages_forwards_and_back(relay: RelayServer, account: Account) -> None:
    session_id = new_id()
    last = asyncio.run(push_both(relay, account, session_id, sub_first=False))
    url = f"/api/sessions/{session_id}/subagents/{AGENT}/events"
    with phone_client(relay, account.phone_token) as client:
        everything = get(client, f"/api/sessions/{session_id}/events")
        own = [e for e in everything["events"] if e.get("agent_id") == AGENT]
        own_seqs = [e["seq"] for e in own]
        epoch = everything["epoch"]

        whole = get(client, url)
        assert whole["events"] == own and whole["has_more"] is False
        assert (whole["session_id"], whole["agent_id"], whole["epoch"]) == (
            session_id, AGENT, epoch,
        )  # fmt: skip
        assert (whole["agent_events"], whole["agent_first_seq"], whole["agent_last_seq"]) == (
            SUB_EVENTS, own_seqs[0], own_seqs[-1],
        )  # fmt: skip
        assert whole["last_seq"] == last
        assert whole["events"][0]["text"] == PROMPT and whole["events"][-1]["text"] == OUTCOME

        # Forwards by 2 (positions are the session's seqs).
        first = get(client, url, after=0, limit=2, epoch=epoch)
        assert seqs(first) == own_seqs[:2] and first["has_more"] is True
        second = get(client, url, after=seqs(first)[-1], limit=2)
        assert seqs(second) == own_seqs[2:] and second["has_more"] is False
        assert get(client, url, after=own_seqs[-1])["events"] == []
        assert seqs(get(client, url, after=own_seqs[0] - 1, limit=3)) == own_seqs[:3]

        # Back from the end, and from the middle.
        back = get(client, url, before=last + 1, limit=3)
        assert seqs(back) == own_seqs[1:] and back["has_more"] is True
        older = get(client, url, before=seqs(back)[0], limit=3)
        assert seqs(older) == own_seqs[:1] and older["has_more"] is False
        assert get(client, url, before=own_seqs[0])["events"] == []
        assert [e for p in (older, back) for e in p["events"]] == own

        # The same position rules and errors as the session's own events.
        for limit in (0, 501, -1):
            bad = client.get(url, params={"limit": limit})
            assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_limit"
        both = client.get(url, params={"after": 1, "before": 3})
        assert both.status_code == 400 and both.json()["error"]["code"] == "bad_after"
        for params, code in (
            ({"after": -1}, "bad_after"),
            ({"before": 0}, "bad_after"),
            ({"after": "x"}, "bad_request"),
        ):
            answer = client.get(url, params=params)
            assert answer.status_code == 400 and answer.json()["error"]["code"] == code, params
        beyond = client.get(url, params={"after": last + 1})
        assert beyond.status_code == 409 and beyond.json()["error"]["code"] == "after_beyond_last"
        stale = client.get(url, params={"after": 0, "epoch": "0ld"})
        assert stale.status_code == 409 and stale.json()["error"]["code"] == "epoch_mismatch"
        unknown = client.get(f"/api/sessions/{session_id}/subagents/nobody/events")
        assert unknown.status_code == 404
        assert unknown.json()["error"]["code"] == "unknown_subagent"
        nosession = client.get(f"/api/sessions/{new_id()}/subagents/{AGENT}/events")
        assert nosession.json()["error"]["code"] == "unknown_session"
        # The session's own history reads both ways too.
        session_back = get(client, f"/api/sessions/{session_id}/events", before=last, limit=2)
        assert seqs(session_back) == [last - 2, last - 1]


def test_subagent_history_older_than_the_relay_keeps_comes_from_the_mac(make_relay: Any) -> None:
    server: RelayServer = make_relay(events_kept=3)
    acct = server.account()
    session_id = new_id()
    url = f"/api/sessions/{session_id}/subagents/{AGENT}/events"
    headers = {"Authorization": f"Bearer {acct.phone_token}"}

    async def online() -> tuple[int, list[dict[str, Any]]]:
        async with mac(server, acct.device_token) as link:
            last = 0
            for path, conversation in ((SUB, SUB_CONVERSATION), (MAIN, MAIN_CONVERSATION)):
                lines = list(read_lines(path.read_bytes()))
                last = (await link.send_lines(session_id, conversation, lines)).last_seq
            await link.wait_for_seq(session_id, last)
            archive = [
                json.loads(e.model_dump_json(exclude_none=True))
                for e in link.archive.read(session_id, 1, last)
            ]
            own = [e for e in archive if e.get("agent_id") == AGENT]
            async with httpx.AsyncClient(
                base_url=server.url, headers=headers, timeout=15
            ) as client:
                # Its seqs 1..4 are older than the 3 events the relay keeps: the Mac sends them.
                whole = (await client.get(url)).json()
                assert whole["events"] == own and whole["oldest_seq"] == last - 2
                back = (await client.get(url, params={"before": 4, "limit": 2})).json()
                assert back["events"] == own[1:3] and back["has_more"] is True
        return last, own

    last, own = asyncio.run(online())
    assert [e["seq"] for e in own] == [1, 2, 3, 4] and last > 4
    wait_offline(server, acct)
    with phone_client(server, acct.phone_token) as client:
        gone = client.get(url)
        assert gone.status_code == 409
        error = gone.json()["error"]
        assert error["code"] == "history_unavailable" and error["oldest_seq"] == last - 2
        # The summary needs no Mac: it is kept on the relay.
        (line,) = get(client, f"/api/sessions/{session_id}/subagents")["subagents"]
        assert line["outcome"] == OUTCOME and line["prompt"] == PROMPT


# -- the command line ----------------------------------------------------------------------------


def test_read_only_open_shows_subagent_events_and_the_summary_line(
    relay: RelayServer, account: Account
) -> None:
    session_id = new_id()
    asyncio.run(push_both(relay, account, session_id, sub_first=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env.update(CB_RELAY=relay.url, CB_TOKEN=account.phone_token)
    result = subprocess.run(
        [sys.executable, "-m", "cli", "open", "--session", session_id, "--read-only"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Agent: general-purpose: Inspect folder" in out
    assert f"[subagent {AGENT[:8]}] you: {PROMPT}" in out
    assert f"[subagent {AGENT[:8]}] claude: {OUTCOME}" in out
    assert "Subagents:" in out
    assert f"general-purpose · Inspect folder — finished: {OUTCOME}" in out
    assert f"({SUB_EVENTS} events, {AGENT})" in out


# -- the index itself -------------------------------------------------------------------------


def _ingest(store: Store, session_id: str, files: list[tuple[Path, str]]) -> None:
    account = store.ensure_account()
    _, _, device = store.create_token(account, "device", "m")

    async def go() -> None:
        for path, conversation in files:
            await store.ingest(
                account, device, session_id, conversation, list(read_lines(path.read_bytes()))
            )

    asyncio.run(go())


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> configmod.Config:
    """The settings of a store in ``tmp_path`` (SQLite) or in a fresh PostgreSQL database."""
    settings: dict[str, Any] = {"data_dir": str(tmp_path)}
    if request.param == "postgres":
        settings["database_url"] = request.getfixturevalue("pg_url")
    return configmod.load(settings, environ={})


def _drop_index(config: configmod.Config) -> None:
    """Make the database one from before subagent history: no tables, no trigger."""
    tables = ("subagent_events", "subagents", "subagent_calls")
    url = config.str("database_url")
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute("DROP TRIGGER subagent_index ON events")
            for table in tables:
                pg.execute(f"DROP TABLE {table}")
        return
    conn = sqlite3.connect(config.data_path / "relay.db")
    conn.execute("DROP TRIGGER subagent_index")
    for table in tables:
        conn.execute(f"DROP TABLE {table}")
    conn.commit()
    conn.close()


def test_events_stored_before_the_index_existed_are_indexed_once(
    backend: configmod.Config,
) -> None:
    config = backend
    store = Store(config, schemas=[subagents.setup])
    _ingest(store, "s1", [(MAIN, MAIN_CONVERSATION), (SUB, SUB_CONVERSATION)])
    before = asyncio.run(subagents.summaries(store, "s1"))
    assert before and before[0]["agent_id"] == AGENT and before[0]["events"] == SUB_EVENTS
    # The trigger's cheap tests rely on stored events being compact JSON with "kind" first.
    stored = asyncio.run(store.read("SELECT data FROM events"))
    assert stored and all(str(r[0]).startswith('{"kind":"') for r in stored)
    store.close()
    _drop_index(config)
    store = Store(config, schemas=[subagents.setup])
    try:
        assert asyncio.run(subagents.summaries(store, "s1")) == before
        rows = asyncio.run(store.read("SELECT seq FROM subagent_events ORDER BY seq"))
        assert len(rows) == SUB_EVENTS
    finally:
        store.close()
    store = Store(config, schemas=[subagents.setup])  # opened again: nothing indexed twice
    try:
        rows = asyncio.run(store.read("SELECT count(*) FROM subagent_events"))
        assert rows[0][0] == SUB_EVENTS
        assert asyncio.run(subagents.summaries(store, "s1")) == before
    finally:
        store.close()


def test_text_that_looks_like_an_agent_id_is_not_a_subagent(
    backend: configmod.Config, tmp_path: Path
) -> None:
    store = Store(backend, schemas=[subagents.setup])
    line = {
        "type": "user",
        "uuid": "u1",
        "sessionId": "c",
        "message": {"role": "user", "content": 'look: {"agent_id":"fake","tool":"Agent"}'},
    }
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(line) + "\n")
    try:
        _ingest(store, "s2", [(path, "c")])
        assert asyncio.run(subagents.summaries(store, "s2")) == []
    finally:
        store.close()


# -- linking (pure) ---------------------------------------------------------------------------------


def agent_row(agent_id: str, first: int, prompt: str, outcome: str | None = None) -> Any:
    return subagents.AgentRow(agent_id, first, first + 3, 4, prompt, outcome, None, None)


def call_row(tool_use_id: str, seq: int, prompt: str, result: str | None = None) -> Any:
    return subagents.CallRow(
        tool_use_id, seq, "Task", None, "d", "Explore", prompt, result, False, None
    )


def test_link_by_named_id_then_by_prompt_in_order() -> None:
    agents = [
        agent_row("a1", 10, "same"),
        agent_row("a2", 20, "same"),
        agent_row("a3", 30, "named", "done"),
        agent_row("a4", 40, "lonely"),
    ]
    calls = [
        call_row("t1", 5, "same", "a long report without the id"),  # foreground, result cut
        call_row("t2", 6, "same"),
        call_row("t3", 7, "whatever", "Async agent launched successfully.\nagentId: a3 (…)"),
        call_row("t4", 8, "never started"),
    ]
    linked = subagents.link(agents, calls)
    assert [(s.call.tool_use_id if s.call else None, s.agent_id) for s in linked] == [
        ("t1", "a1"),
        ("t2", "a2"),
        ("t3", "a3"),
        ("t4", None),
        (None, "a4"),
    ]
    assert linked[0].call is not None and linked[0].call.status == "finished"
    assert linked[1].call is not None and linked[1].call.status == "running"
    assert linked[2].call is not None and linked[2].call.status == "running"
    assert linked[2].outcome == "done"
    lone = linked[4].to_json()
    assert lone["agent_type"] is None and lone["status"] is None and lone["line"] == "subagent"
    assert subagents.summary_line("Explore", "Scan", "failed", "boom\nmore", {"usd": 0.5}) == (
        "Explore · Scan — failed: boom · $0.5000"
    )
