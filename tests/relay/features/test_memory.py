"""Memory with a tap through the real relay, the real link and the real agent (the fake claude):
a correction given in two sessions of a folder is proposed once, nothing is written until the
person accepts, the diff comes first, an accepted (edited) fact lands in CLAUDE.local.md (0600)
and is never proposed again, a dismissal takes it out again, and the fates are kept."""

from __future__ import annotations

import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.features import decisions
from relay.ledger import Constraint, Decision, Ledger, Source
from tests.support.api import error_of
from tests.support.bridge import Bridge
from tests.support.journeys import snapshot, start_session, wait_state
from tests.support.relay import Account, RelayServer, phone_client
from tests.support.transcripts import tool_result_line, tool_use_line
from tests.support.waits import wait_for
from tests.support.web import LoopThread, ScriptedMac, new_sid, user_line
from wire.memory_section import BEGIN_MARKER

REJECTED_SAID = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). To tell you how to proceed, "
    "the user said:\n"
)


def say_no(bridge: Bridge, phone: httpx.Client, session_id: str, words: str, tool_id: str) -> None:
    """Claude Code writes a Bash use rejected with the person's words into the transcript."""
    conversation = wait_for(
        lambda: snapshot(phone, session_id)["conversation_id"], 30, "a conversation"
    )
    found = wait_for(
        lambda: list((bridge.home / ".claude" / "projects").glob(f"*/{conversation}.jsonl")),
        30,
        "the transcript",
    )
    with found[0].open("a", encoding="utf-8") as out:
        out.write(tool_use_line("Bash", {"command": "npm install"}, tool_id) + "\n")
        out.write(tool_result_line(tool_id, REJECTED_SAID + words, is_error=True) + "\n")


def candidates(phone: httpx.Client, project: str) -> list[dict[str, Any]]:
    response = phone.get("/api/memory", params={"project": project})
    assert response.status_code == 200, response.text
    return list(response.json()["candidates"])


def test_a_correction_given_twice_is_written_only_with_a_tap(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder("shop")
    memory_file = Path(cwd) / "CLAUDE.local.md"
    with fake.phone() as phone:
        first = start_session(phone, fake, cwd, prompt="hello", permission_mode="manual")
        second = start_session(phone, fake, cwd, prompt="again", permission_mode="manual")
        for sid in (first, second):
            wait_state(phone, sid, "idle")
        say_no(fake, phone, first, "Use pnpm, not npm.", "toolu_first")
        assert candidates(phone, cwd) == []  # once is not twice
        say_no(fake, phone, second, "use pnpm,  not npm", "toolu_second")

        found = wait_for(lambda: candidates(phone, cwd), 30, "a memory candidate")
        assert len(found) == 1
        candidate = found[0]
        assert candidate["state"] == "proposed" and candidate["project"] == cwd
        assert candidate["rules"] == ["corrected_twice"]
        assert {e["session_id"] for e in candidate["evidence"]} == {first, second}
        assert not memory_file.exists()  # proposing writes nothing

        diff = phone.get(f"/api/memory/{candidate['id']}/diff").json()
        assert diff["file"] == "CLAUDE.local.md"
        assert "+- use pnpm,  not npm" in diff["diff"] and not memory_file.exists()

        edited = "Use pnpm, never npm"
        accepted = phone.post(
            f"/api/memory/{candidate['id']}", json={"action": "accept", "text": edited}
        )
        assert accepted.status_code == 200, accepted.text
        kept = accepted.json()["candidate"]
        assert kept["state"] == "edited" and kept["text"] == edited
        assert kept["file"] == "CLAUDE.local.md" and kept["applies"]
        text = memory_file.read_text()
        assert text.startswith(BEGIN_MARKER) and f"- {edited}\n" in text
        assert stat.S_IMODE(memory_file.stat().st_mode) == 0o600

        again = candidates(phone, cwd)  # found again in the ledgers: not proposed again
        assert [(c["id"], c["state"]) for c in again] == [(candidate["id"], "edited")]

        dismissed = phone.post(f"/api/memory/{candidate['id']}", json={"action": "dismiss"})
        assert dismissed.json()["candidate"]["state"] == "dismissed"
        assert edited not in memory_file.read_text()

        error_of(phone.post("/api/memory/0123456789abcdef", json={"action": "dismiss"}), 404,
                 "unknown_candidate")  # fmt: skip
        error_of(phone.post("/api/memory/NOT-AN-ID", json={"action": "dismiss"}), 404,
                 "unknown_candidate")  # fmt: skip
        forget = phone.post(f"/api/memory/{candidate['id']}", json={"action": "forget"})
        assert forget.status_code in (400, 422), forget.text
        error_of(
            phone.post(f"/api/memory/{candidate['id']}", json={"action": "accept", "text": " "}),
            422,
            "bad_fact",
        )
        stranger = fake.relay.account()
        with httpx.Client(
            base_url=fake.relay.url, headers={"Authorization": f"Bearer {stranger.phone_token}"}
        ) as other:
            assert other.get("/api/memory").json()["candidates"] == []
            error_of(other.post(f"/api/memory/{candidate['id']}", json={"action": "dismiss"}),
                     404, "unknown_candidate")  # fmt: skip


def test_accepting_while_the_mac_is_offline_says_so_and_writes_nothing(fake: Bridge) -> None:
    fake.start_agent()
    cwd = fake.folder("quiet")
    with fake.phone() as phone:
        sessions = [start_session(phone, fake, cwd, prompt="hi", permission_mode="manual")]
        sessions.append(start_session(phone, fake, cwd, prompt="hey", permission_mode="manual"))
        for n, sid in enumerate(sessions):
            wait_state(phone, sid, "idle")
            say_no(fake, phone, sid, "Always run the linter first", f"toolu_{n}")
        candidate = wait_for(lambda: candidates(phone, cwd), 30, "a memory candidate")[0]
        fake.stop_agent()
        wait_for(
            lambda: fake.relay.state.live.link(fake.account.device_id) is None, 15, "Mac offline"
        )
        error_of(phone.post(f"/api/memory/{candidate['id']}", json={"action": "accept"}), 409,
                 "device_offline")  # fmt: skip
        assert candidates(phone, cwd)[0]["state"] == "proposed"
        assert not (Path(cwd) / "CLAUDE.local.md").exists()


def test_pins_and_remember_marks_come_from_the_decisions_feature(
    relay: RelayServer, account: Account, loop: LoopThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seam (relay/features/memory.py ``project_ledgers``): the decisions feature's
    ``ledger_for`` and ``remembered`` give the pins and marks; a constraint pinned in two
    sessions and a decision marked "remember" are proposed, each once."""
    mac = ScriptedMac(relay, account.device_token, loop).connect()
    project = "/Users/ada/src/pins"
    sids = [new_sid(), new_sid()]
    try:
        for sid in sids:
            mac.send_json_lines(sid, [user_line("start", f"u-{sid[:8]}")], cwd=project)
    finally:
        mac.close()
    source = Source(seq=1, at=None)
    decision = Decision("e1.0", "typed_answer", "Postgres 16", source, context="Which database?")

    async def ledger_for(state: object, session_id: str) -> Ledger:
        pinned = (Constraint(f"c-{session_id[:4]}", "Never touch the billing folder", source),)
        return Ledger(decisions=(decision,) if session_id == sids[0] else (), constraints=pinned)

    async def remembered(state: object, where: str, account_id: str) -> dict[str, frozenset[str]]:
        assert where == project and account_id == account.account_id
        return {sids[0]: frozenset({"e1.0"})}

    monkeypatch.setattr(decisions, "ledger_for", ledger_for)
    monkeypatch.setattr(decisions, "remembered", remembered)
    with phone_client(relay, account.phone_token) as phone:
        found = {c["text"]: c["rules"] for c in candidates(phone, project)}
    assert found == {
        "Never touch the billing folder": ["pinned_twice"],
        "Which database? → Postgres 16": ["remembered"],
    }


def test_two_taps_at_once_both_end_up_in_the_file(
    fake: Bridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Accepts of one project are written one at a time: neither overwrites the other's fact."""
    fake.start_agent()
    cwd = fake.folder("twice")
    with fake.phone() as phone:
        sid = start_session(phone, fake, cwd, prompt="hello", permission_mode="manual")
        wait_state(phone, sid, "idle")
        source = Source(seq=1, at=None)
        marked = (
            Decision("e1.0", "typed_answer", "Postgres 16", source, context="Which database?"),
            Decision("e2.0", "typed_answer", "Tabs", source, context="Tabs or spaces?"),
        )

        async def ledger_for(state: object, session_id: str) -> Ledger:
            return Ledger(decisions=marked)

        async def remembered(
            state: object, where: str, account_id: str
        ) -> dict[str, frozenset[str]]:
            return {sid: frozenset({"e1.0", "e2.0"})}

        monkeypatch.setattr(decisions, "ledger_for", ledger_for)
        monkeypatch.setattr(decisions, "remembered", remembered)
        ids = [c["id"] for c in candidates(phone, cwd)]
        assert len(ids) == 2
        with ThreadPoolExecutor(2) as pool:
            answers = list(
                pool.map(
                    lambda cid: phone.post(f"/api/memory/{cid}", json={"action": "accept"}), ids
                )
            )
        assert [a.status_code for a in answers] == [200, 200]
        text = (Path(cwd) / "CLAUDE.local.md").read_text()
        assert "Which database? → Postgres 16" in text and "Tabs or spaces? → Tabs" in text
