"""A claude that ends before its session was ever live (agent/driver.py, agent/startfail.py), with
real tmux and the fake Claude Code made to refuse its start the way the real 2.1.332 does (its
words from tests/fixtures/claude/2.1.332/startup/): the session carries Claude Code's reason and
what to do (``error`` and ``failure``), its held message stays held, and once the cause is gone
the next message starts the conversation afresh under its id (``--session-id``, not a
``--resume`` of a conversation never saved) and the held message is delivered."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.bridge import Bridge
from tests.support.journeys import events, snapshot, start_session, wait_event
from tests.support.waits import wait_for

STARTUP = Path(__file__).resolve().parent.parent / "fixtures" / "claude" / "2.1.332" / "startup"
_DEAD = re.compile(r"^Pane is dead .*$", re.MULTILINE)


def refusal_of(case: str, into: Path) -> Path:
    """The words the real claude printed before it exited in ``case`` (no tmux line)."""
    text = (STARTUP / case / "01_exited_120x40.with_history_plain.txt").read_text()
    into.write_text(_DEAD.sub("", text).rstrip() + "\n")
    return into


def test_a_claude_that_exits_at_start_says_why_and_the_held_message_waits(fake: Bridge) -> None:
    refusal = refusal_of("fresh_home_no_key_offline", fake.root / "refusal.txt")
    fake.start_agent(env={**fake.env(), "FAKECLAUDE_START_EXIT": str(refusal)})
    cwd = fake.folder()
    with fake.phone() as phone:
        session_id = start_session(phone, fake, cwd, permission_mode="manual")
        failed = wait_for(
            lambda: (s := snapshot(phone, session_id))["failure"] and s, 30, "the failure"
        )
        failure = failed["failure"]
        assert failure["code"] == "claude_offline"
        assert failure["reason"] == "Unable to connect to Anthropic services"
        assert "Failed to connect to api.anthropic.com: ENOTFOUND" in failure["last_lines"]
        assert "e2e mac" in failure["action"]
        # tmux 3.3a may miss the exit status of a program that ended this fast (FINDINGS §0.3)
        assert failure["status"] in (1, None)
        assert failed["state"] == "ended"
        assert "Unable to connect to Anthropic services" in failed["error"]
        # The session list says it as well.
        listed = phone.get("/api/sessions").json()["sessions"]
        assert next(s for s in listed if s["id"] == session_id)["failure"]["code"] == (
            "claude_offline"
        )

        # A message now: claude is started again, refuses again, and the message stays held.
        sent = phone.post(f"/api/sessions/{session_id}/messages", json={"text": "hello there"})
        assert sent.status_code in (200, 201, 202), sent.text
        held = wait_for(
            lambda: (s := snapshot(phone, session_id))["failure"] and s["held"] and s,
            30,
            "the held message after the second refusal",
        )
        assert [(h["text"], h["state"]) for h in held["held"]] == [("hello there", "held")]
        assert not [e for e in events(phone, session_id) if e["kind"] == "user"]

        # The agent restarts (the Mac rebooted, `up` again): why it did not start is still said.
        fake.stop_agent()
        # Offline, the relay keeps saying it (last known); the live error goes.
        wait_for(lambda: snapshot(phone, session_id)["error"] is None, 30, "the Mac offline")
        fake.start_agent(env={**fake.env(), "FAKECLAUDE_START_EXIT": str(refusal)})
        again = wait_for(
            lambda: (s := snapshot(phone, session_id))["error"] and s["failure"] and s,
            30,
            "the failure told again by the restarted agent",
        )
        assert again["failure"]["code"] == "claude_offline"

        # The cause is fixed: the next message starts the conversation afresh, under its id,
        # and both messages are typed.
        refusal.unlink()
        phone.post(f"/api/sessions/{session_id}/messages", json={"text": "second one"})
        typed = wait_event(phone, session_id, lambda e: e["kind"] == "user", "the messages")
        assert typed["text"] == "hello there\n\nsecond one"  # what was held goes as one
        wait_for(lambda: snapshot(phone, session_id)["failure"] is None, 30, "the failure gone")
        assert snapshot(phone, session_id)["error"] is None
    transcripts = list((fake.home / ".claude" / "projects").rglob(f"{session_id}.jsonl"))
    assert transcripts, "the conversation was started under the session's own id"
