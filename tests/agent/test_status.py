"""agent.status: Claude Code's ~/.claude/sessions/<pid>.json."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent.status import ClaudeStatus, find_for_session, parse_status, read_status

# Shaped like the files of the c_busy capture (2.1.328): pid 8720, its session and folder;
# times in ms since the epoch, as Claude Code writes them.
SESSION = "46228304-4fd8-48f5-b435-68dfecf4f255"


def real(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "pid": 8720,
        "sessionId": SESSION,
        "cwd": "/tmp/realclaude/work-c_busy_80x24",
        "startedAt": 1795987961582,
        "updatedAt": 1795987963911,
        "statusUpdatedAt": 1795987963650,
        "status": "busy",
        "name": "claude",
        "messagingSocketPath": "/tmp/cc-socks/8720.sock",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_parse_a_real_shaped_file() -> None:
    got = parse_status(json.dumps(real()))
    assert got == ClaudeStatus(
        pid=8720,
        session_id=SESSION,
        cwd="/tmp/realclaude/work-c_busy_80x24",
        status="busy",
        updated_at=1795987963.911,
        name="claude",
        started_at=1795987961.582,
        status_updated_at=1795987963.65,
        messaging_socket_path="/tmp/cc-socks/8720.sock",
    )
    assert got is not None and got.status_at == 1795987963.65


@pytest.mark.parametrize("status", ["idle", "busy", "waiting"])
def test_each_status(status: str) -> None:
    got = parse_status(json.dumps(real(status=status)))
    assert got is not None and got.status == status


def test_times_in_seconds_and_iso_strings() -> None:
    got = parse_status(json.dumps(real(updatedAt=1795987963.5, startedAt="2026-11-30T02:23:00Z")))
    assert got is not None
    assert got.updated_at == 1795987963.5
    assert got.started_at == datetime(2026, 11, 30, 2, 23, tzinfo=UTC).timestamp()
    naive = parse_status(json.dumps(real(startedAt="2026-11-30T02:23:00")))
    assert naive is not None and naive.started_at == got.started_at  # read as UTC


def test_status_at_falls_back_to_updated_at() -> None:
    got = parse_status(json.dumps(real(statusUpdatedAt=None)))
    assert got is not None and got.status_updated_at is None
    assert got.status_at == got.updated_at == 1795987963.911


def test_missing_optional_keys_are_none() -> None:
    got = parse_status(json.dumps({"pid": 42}))
    assert got == ClaudeStatus(42, None, None, None, None, None)


def test_odd_values_are_dropped_not_fatal() -> None:
    got = parse_status(
        json.dumps(real(status=3, cwd=["x"], updatedAt=True, startedAt="yesterday", name=None))
    )
    assert got is not None
    assert (got.status, got.cwd, got.updated_at, got.started_at, got.name) == (
        None,
        None,
        None,
        None,
        None,
    )


def test_pid_from_the_file_name_when_the_object_has_none() -> None:
    text = json.dumps(real(pid=None))
    assert parse_status(text) is None
    got = parse_status(text, pid=8720)
    assert got is not None and got.pid == 8720


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        json.dumps(real())[:57],  # caught while being rewritten
        '{"pid": 8720, "status": "idle"',
        "null",
        "[1, 2]",
        '"idle"',
        '{"pid": "8720"}',
        '{"pid": true}',
        '{"pid": -1}',
        "\x00\x00\x00",
    ],
)
def test_malformed_or_partial_is_none(text: str) -> None:
    assert parse_status(text) is None


def write(home: Path, name: str, content: str | dict[str, Any]) -> Path:
    sessions = home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    path = sessions / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def test_read_status(tmp_path: Path) -> None:
    write(tmp_path, "8720.json", real())
    write(
        tmp_path, "8720.b225a2b41716877cc90283c9a416901dbc886e228a2e65088a0f9628c9a28fdc.key", "k"
    )
    got = read_status(tmp_path, 8720)
    assert got is not None and got.status == "busy" and got.session_id == SESSION


def test_read_status_absent_or_broken(tmp_path: Path) -> None:
    assert read_status(tmp_path, 8720) is None  # no sessions folder at all
    write(tmp_path, "8720.json", '{"pid": 87')
    assert read_status(tmp_path, 8720) is None
    (tmp_path / "sessions" / "8721.json").write_bytes(b"\xff\xfe{")
    assert read_status(tmp_path, 8721) is None


def test_find_for_session(tmp_path: Path) -> None:
    write(tmp_path, "100.json", real(pid=100, sessionId="other"))
    write(tmp_path, "200.json", real(pid=200))
    write(tmp_path, "300.json", "{half")
    write(tmp_path, "300.abc.key", "not json")
    got = find_for_session(tmp_path, SESSION)
    assert got is not None and got.pid == 200
    assert find_for_session(tmp_path, "nobody") is None
    assert find_for_session(tmp_path / "missing", SESSION) is None


def test_find_for_session_prefers_the_newest(tmp_path: Path) -> None:
    # a claude killed with -9 leaves its file behind
    write(tmp_path, "100.json", real(pid=100, updatedAt=1795987000000, status="busy"))
    write(tmp_path, "200.json", real(pid=200, updatedAt=1795987999000, status="idle"))
    got = find_for_session(tmp_path, SESSION)
    assert got is not None and (got.pid, got.status) == (200, "idle")


def test_find_for_session_uses_the_file_name_pid(tmp_path: Path) -> None:
    write(tmp_path, "555.json", real(pid=None))
    got = find_for_session(tmp_path, SESSION)
    assert got is not None and got.pid == 555
