"""Resume scopes with the real Claude Code 2.1.332 and the fake API, whose every request body is
kept: a ``fresh`` reopen's first request carries every decision of the ledger verbatim and none
of the earlier turns' text; a ``summary`` reopen compacts (Claude Code's own ``/compact``) before
the held message, whose request no longer carries the earlier turns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.ledger_rules import build_ledger
from relay.recent_work import HANDOFF_OPENING
from tests.support.bridge import Bridge, fake_api, seed_home
from tests.support.journeys import (
    events,
    say_and_wait_answer,
    snapshot,
    start_session,
    wait_answered,
    wait_card,
    wait_event,
    wait_state,
)
from tests.support.relay import RelayServer
from wire.protocol import NumberedEvent

pytestmark = pytest.mark.e2e

EARLIER = "hello from the earlier turn ZEBRA"  # a turn that must not reach a lean start
ANSWER_TIMEOUT = 60


@pytest.fixture
def dumps(tmp_path: Path) -> Path:
    return tmp_path / "requests"


@pytest.fixture
def mac(relay: RelayServer, claude_bin: str, tmp_path: Path, dumps: Path) -> Iterator[Bridge]:
    """A Mac whose fake API keeps each request's body in ``dumps``."""
    with fake_api(tmp_path / "api.log", dumps) as url:
        b = Bridge(relay, relay.account(), tmp_path / "mac", claude_bin, url)
        seed_home(b.home, [])
        try:
            yield b
        finally:
            b.stop_agent()
            b.kill_tmux()


def requests_after(dumps: Path, seen: set[str]) -> list[dict[str, Any]]:
    """The request bodies the fake API got since ``seen`` (their file names), oldest first."""
    files = sorted((p for p in dumps.glob("*.json") if p.name not in seen), key=lambda p: p.name)
    return [json.loads(p.read_text(encoding="utf-8")) for p in files]


def texts_of(request: dict[str, Any]) -> list[str]:
    """Each message's text (text blocks and tool results joined)."""
    out = []
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
            continue
        parts = []
        for block in content or []:
            if isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                parts.append(json.dumps(block.get("content")))
        out.append("\n".join(parts))
    return out


def session_with_a_decision(phone: httpx.Client, mac: Bridge) -> str:
    """A session of three turns — a plain one, a question answered "Blue", a plain one — ended."""
    session_id = start_session(phone, mac, mac.folder(), prompt=EARLIER, permission_mode="manual")
    wait_answered(phone, session_id)
    phone.post(f"/api/sessions/{session_id}/messages", json={"text": "ASK_ME something"})
    card = wait_card(phone, session_id, "question")
    blue = next(o["key"] for o in card["options"] if o["label"].startswith("Blue"))
    phone.post(f"/api/sessions/{session_id}/cards/{card['id']}", json={"key": blue})
    wait_event(phone, session_id, lambda e: e["kind"] == "tool_result", "the answer")
    wait_state(phone, session_id, "idle", ANSWER_TIMEOUT)
    say_and_wait_answer(phone, session_id, "thanks, that is all", ANSWER_TIMEOUT, "the last turn")
    wait_state(phone, session_id, "idle")
    assert phone.post(f"/api/sessions/{session_id}/end").status_code == 200
    wait_state(phone, session_id, "ended")
    return session_id


def test_a_fresh_reopen_carries_every_decision_and_no_earlier_turn(
    mac: Bridge, dumps: Path
) -> None:
    mac.start_agent()
    with mac.phone() as phone:
        session_id = session_with_a_decision(phone, mac)
        before = snapshot(phone, session_id)["conversation_id"]
        ledger = build_ledger(NumberedEvent.model_validate(e) for e in events(phone, session_id))
        decisions = [d.text for d in ledger.decisions]
        assert decisions and any("Blue" in text for text in decisions), decisions
        figures = phone.get(f"/api/sessions/{session_id}/reopen").json()
        assert figures["scopes"]["fresh"]["decisions"] == len(decisions)
        seen = {p.name for p in dumps.glob("*.json")}

        reopened = phone.post(f"/api/sessions/{session_id}/reopen", json={"scope": "fresh"})
        assert reopened.status_code == 200, reopened.text
        wait_event(
            phone,
            session_id,
            # Claude Code writes a long paste inside <pasted_content …>: the event shows the text.
            lambda e: e["kind"] == "user" and e["text"].startswith(HANDOFF_OPENING),
            "the handoff",
        )
        wait_answered(phone, session_id)
        after = snapshot(phone, session_id)
        listed = events(phone, session_id)

    assert after["conversation_id"] != before
    assert [e["text"] for e in listed if e.get("marker") == "resumed"] == [
        f"resumed fresh from {len(decisions)} decision" + ("" if len(decisions) == 1 else "s")
    ]
    sent = [r for r in requests_after(dumps, seen) if r.get("messages")]
    first = sent[0]
    body = "\n".join(texts_of(first))
    assert HANDOFF_OPENING in body
    for text in decisions:
        assert text in body, f"decision {text!r} is not in the first request"
    assert "ZEBRA" not in json.dumps(first)  # nothing of the earlier turns
    assert "ASK_ME" not in json.dumps(first)  # the question's turn is in the ledger, not replayed


def test_a_summary_reopen_compacts_before_the_held_message(mac: Bridge, dumps: Path) -> None:
    mac.start_agent()
    with mac.phone() as phone:
        session_id = start_session(
            phone, mac, mac.folder(), prompt=EARLIER, permission_mode="manual"
        )
        wait_answered(phone, session_id)
        say_and_wait_answer(phone, session_id, "and a second turn", ANSWER_TIMEOUT, "the second")
        wait_state(phone, session_id, "idle")
        before = snapshot(phone, session_id)["conversation_id"]
        assert phone.post(f"/api/sessions/{session_id}/end").status_code == 200
        wait_state(phone, session_id, "ended")
        phone.put(f"/api/sessions/{session_id}/resume_scope", json={"scope": "summary"})
        seen = {p.name for p in dumps.glob("*.json")}

        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "after the summary"})
        wait_event(
            phone,
            session_id,
            lambda e: e["kind"] == "user" and e["text"] == "after the summary",
            "the held message",
        )
        wait_answered(phone, session_id)
        listed = events(phone, session_id)
        after = snapshot(phone, session_id)

    assert after["conversation_id"] == before  # Claude Code's compaction keeps the conversation
    kinds = [(e["kind"], e.get("marker")) for e in listed]
    resumed = kinds.index(("marker", "resumed"))
    compacted = kinds.index(("marker", "compacted"))
    held = next(i for i, e in enumerate(listed) if e.get("text") == "after the summary")
    assert resumed < compacted < held
    sent = [r for r in requests_after(dumps, seen) if r.get("messages")]
    compaction = [r for r in sent if "detailed summary" in "\n".join(texts_of(r)).lower()]
    assert compaction, "no compaction request"
    carrying = [r for r in sent if "after the summary" in "\n".join(texts_of(r))]
    assert carrying and "ZEBRA" not in json.dumps(carrying[0]["messages"])
