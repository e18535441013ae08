"""The decisions ledger through a real relay's API: captured Claude Code 2.1.332 transcripts
pushed by a scripted Mac, pins typed and taken from messages, "remember" marks, open items."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relay.features.decisions import CONSTRAINTS_MAX, Decisions, ledger_for, remembered
from relay.features.memory import project_ledgers
from relay.ledger_rules import ENTRY_MAX_CHARS
from tests.support.relay import Account, RelayServer, mac, phone_client
from tests.support.transcripts import CLAUDE_332, tool_result_line, tool_use_line, transcript
from wire.protocol import Card, HeldMessage, LineRecord, SessionInfo
from wire.transcript import read_lines

QUESTION = "Which colour should the widget be?"
PLAN_PROMPT = "MAKE_PLAN again"
CWD = "/work/widgets"


def lines_of(path: Path) -> list[LineRecord]:
    return list(read_lines(path.read_bytes()))


def push(relay: RelayServer, account: Account, session_id: str, *paths: Path) -> None:
    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            for path in paths:
                await link.send_lines(session_id, str(uuid.uuid4()), lines_of(path), cwd=CWD)

    asyncio.run(run())


def get_ledger(client: httpx.Client, session_id: str) -> dict[str, Any]:
    response = client.get(f"/api/sessions/{session_id}/decisions")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.fixture
def session_id(relay: RelayServer, account: Account) -> str:
    """A session of the captured question, plan and task-list runs, in that order."""
    found = str(uuid.uuid4())
    push(
        relay,
        account,
        found,
        transcript("f_ask_question"),
        transcript("g_plan_approval"),
        CLAUDE_332 / "tasks" / "tasks_v2" / "transcript.jsonl",
    )
    return found


def test_the_ledger_of_captured_runs(relay: RelayServer, account: Account, session_id: str) -> None:
    with phone_client(relay, account.phone_token) as client:
        body = get_ledger(client, session_id)
    kinds = [(d["kind"], d["text"]) for d in body["decisions"]]
    # The question answered from its card, the declined plan answered by the next prompt, and
    # the switch into plan mode the g run made (a permission-mode fact, kept as lines arrive).
    assert ("answer", "Blue") in kinds and ("plan_rejected", PLAN_PROMPT) in kinds
    assert ("mode", "plan") in [(k, t) for k, t in kinds]
    answer = next(d for d in body["decisions"] if d["kind"] == "answer")
    assert answer["context"] == QUESTION and answer["remembered"] is False
    assert answer["source"]["at"] == "2026-11-29T21:35:26.389Z"
    seqs = [d["source"]["seq"] for d in body["decisions"]]
    assert seqs == sorted(seqs) and all(isinstance(s, int) for s in seqs)
    # The task list as the tasks_v2 run left it: its open tasks, where it last changed.
    tasks = [(o["text"], o["status"]) for o in body["open_items"] if o["kind"] == "task"]
    assert tasks == [("Add parser tests", "in_progress"), ("Update the docs", "pending")]
    assert body["constraints"] == [] and body["session_id"] == session_id


def test_pins_typed_and_from_messages_are_verbatim_editable_and_removable(
    relay: RelayServer, account: Account, session_id: str
) -> None:
    with phone_client(relay, account.phone_token) as client:
        decision = next(
            d for d in get_ledger(client, session_id)["decisions"] if d["kind"] == "plan_rejected"
        )
        prompt_seq = decision["source"]["seq"]
        typed = client.post(
            f"/api/sessions/{session_id}/constraints", json={"text": "  Never touch prod.  "}
        )
        assert typed.status_code == 200, typed.text
        assert typed.json()["text"] == "Never touch prod." and typed.json()["created_at"]
        pinned = client.post(f"/api/sessions/{session_id}/constraints", json={"seq": prompt_seq})
        assert pinned.status_code == 200, pinned.text
        assert pinned.json()["text"] == PLAN_PROMPT
        assert pinned.json()["source"]["seq"] == prompt_seq
        part = client.post(
            f"/api/sessions/{session_id}/constraints", json={"seq": prompt_seq, "text": "again"}
        )
        assert part.json()["text"] == "again"
        invented = client.post(
            f"/api/sessions/{session_id}/constraints", json={"seq": prompt_seq, "text": "nope"}
        )
        assert invented.status_code == 400 and invented.json()["error"]["code"] == "not_in_message"
        constraints = get_ledger(client, session_id)["constraints"]
        assert [c["text"] for c in constraints] == ["Never touch prod.", PLAN_PROMPT, "again"]

        cid = typed.json()["id"]
        edited = client.patch(
            f"/api/sessions/{session_id}/constraints/{cid}", json={"text": "Never touch prod"}
        )
        assert edited.status_code == 200 and edited.json()["text"] == "Never touch prod"
        assert client.delete(f"/api/sessions/{session_id}/constraints/{cid}").status_code == 200
        gone = client.delete(f"/api/sessions/{session_id}/constraints/{cid}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "unknown_constraint"
        texts = [c["text"] for c in get_ledger(client, session_id)["constraints"]]
        assert texts == [PLAN_PROMPT, "again"]

    # The store reads off any event loop (a thread of its own): the caller's is fine.
    ledger = asyncio.run(ledger_for(relay.state, session_id))
    assert [c.text for c in ledger.constraints] == [PLAN_PROMPT, "again"]


def test_pins_that_cannot_be_taken_are_refused_with_what_to_do(
    relay: RelayServer, account: Account, session_id: str
) -> None:
    with phone_client(relay, account.phone_token) as client:
        body = get_ledger(client, session_id)
        answer_seq = next(d for d in body["decisions"] if d["kind"] == "answer")["source"]["seq"]
        url = f"/api/sessions/{session_id}/constraints"
        tool_result = client.post(url, json={"seq": answer_seq})
        assert (
            tool_result.status_code == 400 and tool_result.json()["error"]["code"] == "not_pinnable"
        )
        missing = client.post(url, json={"seq": 999_999})
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "unknown_event"
        assert client.post(url, json={"text": "   "}).status_code == 400
        assert client.post(url, json={"text": "x" * (ENTRY_MAX_CHARS + 1)}).status_code == 400
        other = phone_client(relay, relay.account().phone_token)
        with other:
            assert other.get(f"/api/sessions/{session_id}/decisions").status_code == 404
            assert other.post(url, json={"text": "mine"}).status_code == 404
        read_only = client.post(url, json={"text": "x"}, headers={"X-CB-Read-Only": "1"})
        assert read_only.status_code == 409


def test_a_session_keeps_at_most_its_constraints(relay: RelayServer, account: Account) -> None:
    session_id = str(uuid.uuid4())
    push(relay, account, session_id, transcript("b_idle"))
    with phone_client(relay, account.phone_token) as client:
        url = f"/api/sessions/{session_id}/constraints"
        for n in range(CONSTRAINTS_MAX):
            assert client.post(url, json={"text": f"rule {n}"}).status_code == 200
        over = client.post(url, json={"text": "one more"})
        assert over.status_code == 409 and over.json()["error"]["code"] == "too_many_constraints"


def test_remembered_decisions_feed_the_projects_memory(
    relay: RelayServer, account: Account, session_id: str
) -> None:
    session = asyncio.run(relay.state.store.get_session(account.account_id, session_id))
    with phone_client(relay, account.phone_token) as client:
        answer = next(
            d for d in get_ledger(client, session_id)["decisions"] if d["kind"] == "answer"
        )
        url = f"/api/sessions/{session_id}/remember"
        marked = client.post(url, json={"decision_id": answer["id"]})
        assert marked.status_code == 200 and marked.json()["remembered"] == [answer["id"]]
        by_text = client.post(url, json={"text": "MAKE_PLAN again"})
        assert by_text.status_code == 200 and len(by_text.json()["remembered"]) == 1
        client.delete(f"{url}/{by_text.json()['remembered'][0]}")
        unknown = client.post(url, json={"decision_id": "e99999.0"})
        assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_decision"
        again = next(
            d for d in get_ledger(client, session_id)["decisions"] if d["id"] == answer["id"]
        )
        assert again["remembered"] is True
        client.post(f"/api/sessions/{session_id}/constraints", json={"text": "Use pnpm"})

        found = asyncio.run(remembered(relay.state, CWD, account.account_id))
        assert found[session_id] == frozenset({answer["id"]})
        assert asyncio.run(remembered(relay.state, "/elsewhere", account.account_id)) == {}
        # What memory candidates are proposed from (relay/features/memory.py).
        ledgers = asyncio.run(project_ledgers(relay.state, account.account_id, CWD, [session]))
        assert ledgers[0].remembered == frozenset({answer["id"]})
        assert [c.text for c in ledgers[0].ledger.constraints] == ["Use pnpm"]

        forgot = client.delete(f"{url}/{answer['id']}")
        assert forgot.status_code == 200
        assert not next(
            d for d in get_ledger(client, session_id)["decisions"] if d["id"] == answer["id"]
        )["remembered"]


def test_a_waiting_card_and_held_messages_are_open_items(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())

    async def run() -> dict[str, Any]:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, "conv", lines_of(transcript("b_idle")), cwd=CWD)
            card = Card(id="k1", kind="question", title="Pick a colour")
            held = [HeldMessage(id="h1", text="and add tests", created_at=1_770_000_000.0)]
            await link.update(
                SessionInfo(session_id=session_id, state="waiting", card=card, held=held)
            )
            async with httpx.AsyncClient(
                base_url=relay.url, headers={"Authorization": f"Bearer {account.phone_token}"}
            ) as client:
                for _ in range(100):
                    body: dict[str, Any] = (
                        await client.get(f"/api/sessions/{session_id}/decisions")
                    ).json()
                    if len(body["open_items"]) == 2:
                        return body
                    await asyncio.sleep(0.05)
            return body

    body = asyncio.run(run())
    items = {(o["kind"], o["text"], o["ref"]) for o in body["open_items"]}
    assert items == {("card", "Pick a colour", "k1"), ("held", "and add tests", "h1")}
    with phone_client(relay, account.phone_token) as client:
        # The Mac went away: what it said of its screen is no longer known.
        assert get_ledger(client, session_id)["open_items"] == []


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(text=st.text(min_size=1, max_size=300).filter(lambda t: t.strip()))
def test_any_typed_constraint_is_kept_as_typed_trimmed(
    relay: RelayServer, account: Account, text: str
) -> None:
    session_id = str(uuid.uuid4())
    push(relay, account, session_id, transcript("b_idle"))
    with phone_client(relay, account.phone_token) as client:
        made = client.post(f"/api/sessions/{session_id}/constraints", json={"text": text})
        assert made.status_code == 200, made.text
        assert get_ledger(client, session_id)["constraints"][0]["text"] == text.strip()


def task_lines() -> tuple[list[LineRecord], list[LineRecord]]:
    """Two tasks made (as 2.1.332 writes TaskCreate and its result), then the first one done."""
    made = [
        tool_use_line("TaskCreate", {"subject": "Write the parser"}, "toolu_t1"),
        tool_result_line("toolu_t1", "Task #1 created successfully: Write the parser"),
        tool_use_line("TaskCreate", {"subject": "Update the docs"}, "toolu_t2"),
        tool_result_line("toolu_t2", "Task #2 created successfully: Update the docs"),
    ]
    done = [
        tool_use_line("TaskUpdate", {"taskId": "1", "status": "completed"}, "toolu_t3"),
        tool_result_line("toolu_t3", "Updated task #1 status"),
    ]
    records = [LineRecord(offset=n * 100, text=text) for n, text in enumerate(made + done)]
    return records[: len(made)], records[len(made) :]


def test_the_task_list_survives_a_restart_and_ends_with_its_conversation(
    relay: RelayServer, account: Account
) -> None:
    session_id = str(uuid.uuid4())
    before, after = task_lines()
    part = relay.state.part(Decisions)
    assert part is not None

    async def run() -> None:
        async with mac(relay, account.device_token) as link:
            await link.send_lines(session_id, "c-tasks", before, cwd=CWD)
            part.reader.trackers.clear()  # what a restarted relay holds in memory: nothing
            await link.send_lines(session_id, "c-tasks", after, cwd=CWD)

    asyncio.run(run())
    with phone_client(relay, account.phone_token) as client:
        tasks = [
            (o["text"], o["status"], o["ref"])
            for o in get_ledger(client, session_id)["open_items"]
            if o["kind"] == "task"
        ]
        # The update after the restart applied to the list kept before it.
        assert tasks == [("Update the docs", "pending", "2")]

    # /clear (or a fresh start): Claude Code's next conversation keeps a list of its own.
    push(relay, account, session_id, transcript("b_idle"))
    with phone_client(relay, account.phone_token) as client:
        assert get_ledger(client, session_id)["open_items"] == []
