"""The agent's small parts with plain inputs: transcript following, archive, registry and revive,
held-message rules, the claude command line."""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import pytest

from agent import held
from agent.archive import DiskArchive
from agent.cli import resolve_claude_args
from agent.launch import BadClaudeArgs, check_claude_args, claude_argv, session_env, version_warning
from agent.registry import Registry, RegistryDamaged, SessionRecord, revive_candidates
from agent.transcript import TranscriptFollower, project_slug, transcript_path
from wire.protocol import NumberedEvent
from wire.transcript import read_complete_lines, read_lines


def line(n: int) -> bytes:
    return (
        json.dumps({"type": "user", "uuid": f"u{n}", "message": {"content": f"m{n}"}}).encode()
        + b"\n"
    )


# -- transcripts -----------------------------------------------------------------------


def test_slug_and_path_follow_claude_codes_layout(tmp_path: Path) -> None:
    assert project_slug("/tmp/realclaude/work-ij_clear_compact_80x24") == (
        "-tmp-realclaude-work-ij-clear-compact-80x24"
    )
    path = transcript_path(tmp_path, "/Users/me/my app", "abc")
    assert path == tmp_path / "projects" / "-Users-me-my-app" / "abc.jsonl"


def test_only_complete_lines_are_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(line(1) + line(2) + b'{"type": "user", "uu')
    records, after = read_complete_lines(path, 0)
    assert [r.uuid for r in records] == ["u1", "u2"]
    assert records[1].offset == len(line(1))
    assert after == len(line(1)) + len(line(2))
    with path.open("ab") as handle:
        handle.write(b'id": "u3"}\n')
    more, _ = read_complete_lines(path, after)
    assert [(r.offset, r.uuid) for r in more] == [(after, "u3")]


def test_bad_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"type": "user", "x": "\xff\xfe"}\n')
    records, _ = read_complete_lines(path, 0)
    assert "\ufffd" in records[0].text


def test_a_line_longer_than_a_chunk_is_read_to_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    long = json.dumps({"type": "user", "uuid": "big", "x": "y" * 100}).encode() + b"\n"
    path.write_bytes(long + line(2))
    records, after = read_complete_lines(path, 0, max_bytes=16)
    assert [r.uuid for r in records] == ["big"]  # the chunk that found its newline, nothing more
    assert after == len(long)
    rest, end = read_complete_lines(path, after, max_bytes=16)
    assert [(r.offset, r.uuid) for r in rest] == [(len(long), "u2")]
    assert end == len(long) + len(line(2))


def test_a_line_over_the_bound_without_a_newline_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"x" * 64 + b"\n")
    assert read_complete_lines(path, 0, max_bytes=8, max_line=32) == ([], 0)


def test_bad_utf8_gets_no_uuid_in_both_readers(tmp_path: Path) -> None:
    raw = b'{"type": "user", "uuid": "u9", "x": "\xff"}\n'
    path = tmp_path / "t.jsonl"
    path.write_bytes(raw)
    [record] = read_complete_lines(path, 0)[0]
    assert record.uuid is None and "\ufffd" in record.text
    assert list(read_lines(raw)) == [record]


def test_empty_lines_and_a_partial_last_line(tmp_path: Path) -> None:
    data = b"\n" + line(1) + b"\n" + b'{"partial'
    records = list(read_lines(data))
    assert [(r.offset, r.text, r.uuid) for r in records] == [
        (0, "", None),
        (1, line(1).decode().rstrip("\n"), "u1"),
        (1 + len(line(1)), "", None),
    ]
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    assert read_complete_lines(path, 0) == (records, 2 + len(line(1)))
    assert list(read_lines(data, start=1)) == records[1:]
    assert read_complete_lines(tmp_path / "missing.jsonl", 5) == ([], 5)


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


# -- archive -------------------------------------------------------------------------------


def event(seq: int, epoch: str = "e1") -> NumberedEvent:
    return NumberedEvent(kind="user", text=f"t{seq}", session_id="s1", seq=seq, epoch=epoch)


def test_archive_appends_once_and_survives_a_restart(tmp_path: Path) -> None:
    archive = DiskArchive(tmp_path / "events")
    archive.add("s1", "e1", [event(1), event(2)])
    archive.add("s1", "e1", [event(2), event(3)])  # 2 sent again after a reconnect
    lines = (tmp_path / "events" / "s1.jsonl").read_text().splitlines()
    assert [json.loads(x)["seq"] for x in lines] == [1, 2, 3]
    # Transcripts are private whatever the umask: the folder 0700, its files 0600.
    assert (tmp_path / "events").stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "events" / "s1.jsonl").stat().st_mode & 0o777 == 0o600
    again = DiskArchive(tmp_path / "events")
    [pos] = again.positions()
    assert (pos.session_id, pos.last_seq, pos.epoch) == ("s1", 3, "e1")
    assert [e.seq for e in again.read("s1", 2, 9)] == [2, 3]


def test_archive_ignores_a_torn_last_line(tmp_path: Path) -> None:
    archive = DiskArchive(tmp_path)
    archive.add("s1", "e1", [event(1), event(2)])
    with (tmp_path / "s1.jsonl").open("a") as handle:
        handle.write('{"kind": "user", "seq": 3, "ep')  # the crash came mid-write
    assert DiskArchive(tmp_path).last_seq("s1") == 2


def test_archive_refuses_path_tricks(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        DiskArchive(tmp_path).path("../../etc/passwd")


# -- registry and revive ----------------------------------------------------------------------


def test_registry_round_trip_keeps_held_messages(tmp_path: Path) -> None:
    registry = Registry(tmp_path / "sessions.json")
    record = SessionRecord(id="s1", cwd="/w", created_at=1.0)
    record.held.append(held.new_message("later please", now=2.0))
    record.acked["conv"] = 120
    registry.add(record)
    loaded = Registry(tmp_path / "sessions.json").load()
    again = loaded.sessions["s1"]
    assert again.held[0].text == "later please" and again.acked == {"conv": 120}


def test_a_damaged_registry_is_kept_aside_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.json"
    path.write_text("{not json")
    with pytest.raises(RegistryDamaged, match="kept as"):
        Registry(path).load()
    assert any(p.name.startswith("sessions.broken-") for p in tmp_path.iterdir())


def test_revive_picks_the_newest_five_alive_within_twelve_hours() -> None:
    now = time.time()
    records = [
        SessionRecord(id=f"s{i}", cwd="/w", created_at=0, last_alive_at=now - i * 600)
        for i in range(8)
    ]
    records.append(SessionRecord(id="old", cwd="/w", created_at=0, last_alive_at=now - 13 * 3600))
    records.append(
        SessionRecord(id="ended", cwd="/w", created_at=0, last_alive_at=now, ended_by_person=True)
    )
    chosen = revive_candidates(records, now, window_hours=12, limit=5)
    assert [r.id for r in chosen] == ["s0", "s1", "s2", "s3", "s4"]


def test_revive_breaks_a_tie_of_last_alive_by_creation() -> None:
    now = time.time()  # all six alive until the reboot: saved alive at the same moment
    records = [
        SessionRecord(id=f"c{i}", cwd="/w", created_at=now - 3600 + i * 60, last_alive_at=now)
        for i in (3, 0, 5, 1, 4, 2)
    ]
    chosen = revive_candidates(records, now, window_hours=12, limit=5)
    assert [r.id for r in chosen] == ["c5", "c4", "c3", "c2", "c1"]


# -- held messages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "card", "now", "expected"),
    [
        ("idle", None, False, held.Delivery.TYPE_NOW),
        ("busy", None, False, held.Delivery.HOLD),
        ("busy", None, True, held.Delivery.INTERRUPT_THEN_TYPE),
        ("starting", None, False, held.Delivery.HOLD),
        ("waiting", "permission", False, held.Delivery.HOLD),
        ("waiting", "keyed", True, held.Delivery.HOLD),
        ("waiting", "question", False, held.Delivery.DISMISS_THEN_TYPE),
        ("waiting", "plan", False, held.Delivery.DISMISS_THEN_TYPE),
        ("waiting", "dialog", False, held.Delivery.DISMISS_THEN_TYPE),
        ("waiting", "stuck", False, held.Delivery.TYPE_NOW),
        ("ended", None, False, held.Delivery.REOPEN_THEN_TYPE),
    ],
)
def test_when_a_message_is_typed(
    state: str, card: str | None, now: bool, expected: held.Delivery
) -> None:
    assert held.decide(held.Situation(state, card), now) is expected


def test_held_messages_go_as_one_block_in_order_and_cancel_only_while_held() -> None:
    a, b = held.new_message("first", 1.0), held.new_message("second", 2.0)
    messages = [a, b]
    assert held.block_text(held.pending(messages)) == "first\n\nsecond"
    messages, done = held.cancel(messages, b.id)
    assert done and [m.state for m in messages] == ["held", "cancelled"]
    messages = held.mark(messages, {a.id}, "typed")
    messages, done = held.cancel(messages, a.id)
    assert not done  # typed text cannot be taken back


# -- the command line ------------------------------------------------------------------------


def test_claude_argv_for_new_resumed_and_moded_sessions() -> None:
    assert claude_argv("claude", "/d/hooks.json", session_id="s1") == [
        "claude", "--settings", "/d/hooks.json", "--session-id", "s1",
    ]  # fmt: skip
    assert claude_argv("claude", "/h", resume="c9", permission_mode="manual", model="opus") == [
        "claude",
        "--settings",
        "/h",
        "--resume",
        "c9",
        "--permission-mode",
        "manual",
        "--model",
        "opus",
    ]
    with pytest.raises(ValueError):
        claude_argv("claude", "/h", permission_mode="yolo")
    extra = ["--chrome", "--add-dir", "/Users/ada/shared"]
    assert claude_argv("claude", "/h", session_id="s1", extra=extra) == [
        "claude", "--settings", "/h", "--session-id", "s1", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    "args",
    [
        ["--chrome"],
        ["--add-dir", "/Users/ada/shared", "--add-dir=/tmp/more"],
        ["--mcp-config", "/Users/ada/mcp.json", "--dangerously-load-development-channels", "x"],
        [],
    ],
)
def test_extra_claude_args_a_person_may_give(args: list[str]) -> None:
    assert check_claude_args(args) == args


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["hello"], "is not a flag"),
        (["--model", "opus"], "--model is set by claude-bridge"),
        (["--permission-mode=bypassPermissions"], "--permission-mode is set by claude-bridge"),
        (["--chrome", "--dangerously-skip-permissions"], "--dangerously-skip-permissions"),
        (["-p"], "-p is set by claude-bridge"),
        (["--resume", "abc"], "--resume is set"),
        (["--add-dir", "a\nb"], "newline"),
    ],
)
def test_extra_claude_args_the_agent_refuses(args: list[str], why: str) -> None:
    with pytest.raises(BadClaudeArgs, match=re.escape(why)):
        check_claude_args(args)


def test_extra_claude_args_are_remembered_and_forgotten(tmp_path: Path) -> None:
    def options(**given: object) -> argparse.Namespace:
        return argparse.Namespace(**{"claude_arg": None, "no_claude_args": False, **given})

    assert resolve_claude_args(options(), tmp_path) == []
    given = ["--add-dir", "/Users/ada/shared"]
    assert resolve_claude_args(options(claude_arg=given), tmp_path) == given
    assert resolve_claude_args(options(), tmp_path) == given  # the next start, as a service
    with pytest.raises(SystemExit) as refused:
        resolve_claude_args(options(claude_arg=["--model", "opus"]), tmp_path)
    assert refused.value.code == 2
    assert resolve_claude_args(options(), tmp_path) == given  # a refused change changes nothing
    (tmp_path / "claude-args.json").write_text('{"not": "a list"}')
    with pytest.raises(SystemExit):
        resolve_claude_args(options(), tmp_path)
    assert resolve_claude_args(options(no_claude_args=True), tmp_path) == []
    assert resolve_claude_args(options(), tmp_path) == []


def test_session_env_keeps_the_agents_environment_and_drops_tmux() -> None:
    env = session_env(
        {"PATH": "/bin", "ANTHROPIC_BASE_URL": "http://x", "TMUX": "/tmp/t,1,0", "CB_HOOK": "old"},
        {"CB_HOOK": "s:secret:1"},
    )
    assert env["PATH"] == "/bin" and env["ANTHROPIC_BASE_URL"] == "http://x"
    assert "TMUX" not in env and env["CB_HOOK"] == "s:secret:1"


def test_untested_versions_are_warned_about() -> None:
    assert version_warning("2.1.328 (Claude Code)") is None
    assert "newer than this bridge was tested with" in (version_warning("2.2.0") or "")
    assert "not a version" in (version_warning("2.0.1") or "")
    assert "could not be read" in (version_warning("") or "")
