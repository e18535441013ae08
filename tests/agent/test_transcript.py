"""agent/transcript.py: where Claude Code keeps a conversation's transcript, and the follower that
sends its new lines once, rewinds to the last acknowledged one and follows a cleared or subagent
conversation."""

from __future__ import annotations

import json
from pathlib import Path

from agent.transcript import TranscriptFollower, project_slug, transcript_path


def line(n: int) -> bytes:
    return (
        json.dumps({"type": "user", "uuid": f"u{n}", "message": {"content": f"m{n}"}}).encode()
        + b"\n"
    )


def test_slug_and_path_follow_claude_codes_layout(tmp_path: Path) -> None:
    assert project_slug("/tmp/realclaude/work-ij_clear_compact_80x24") == (
        "-tmp-realclaude-work-ij-clear-compact-80x24"
    )
    path = transcript_path(tmp_path, "/Users/me/my app", "abc")
    assert path == tmp_path / "projects" / "-Users-me-my-app" / "abc.jsonl"


def test_follower_sends_new_lines_once_and_rewinds_to_the_last_ack(tmp_path: Path) -> None:
    path = tmp_path / "c1.jsonl"
    path.write_bytes(line(1) + line(2))
    acked: dict[str, int] = {}
    follower = TranscriptFollower(acked)
    follower.follow("c1", path)
    [(conv, first)] = follower.poll()
    assert conv == "c1" and [r.uuid for r in first] == ["u1", "u2"]
    assert follower.poll() == []  # nothing new
    assert follower.ack("c1", first[0].offset)
    assert acked == {"c1": 0}
    follower.rewind()  # a reconnect: lines after the last ack are sent again
    [(_, again)] = follower.poll()
    assert [r.uuid for r in again] == ["u2"]


def test_a_new_agent_resumes_after_the_acknowledged_line(tmp_path: Path) -> None:
    path = tmp_path / "c1.jsonl"
    path.write_bytes(line(1) + line(2) + line(3))
    offset_2 = len(line(1))
    follower = TranscriptFollower({"c1": offset_2})
    follower.follow("c1", path)
    [(_, records)] = follower.poll()
    assert [r.uuid for r in records] == ["u3"]


def test_clear_switches_to_the_new_conversation_from_its_start(tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_bytes(line(1))
    follower = TranscriptFollower({})
    follower.follow("old", old)
    follower.poll()
    new.write_bytes(line(7) + line(8))
    follower.follow("new", new)
    batches = dict(follower.poll())
    assert [r.uuid for r in batches["new"]] == ["u7", "u8"]


def test_subagent_transcripts_are_followed_as_their_own_conversations(tmp_path: Path) -> None:
    main = tmp_path / "conv.jsonl"
    main.write_bytes(line(1))
    sub = tmp_path / "conv" / "subagents" / "agent-a0f2.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_bytes(line(5))
    follower = TranscriptFollower({})
    follower.follow("conv", main)
    batches = dict(follower.poll())
    assert set(batches) == {"conv", "agent-a0f2"}
