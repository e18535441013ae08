"""What a hostile source Mac can send in a move, and what the target and the relay make of it
(issue 20): a real relay, a real target agent process (its own HOME, data folder and tmux socket,
the fake claude), the phone's real HTTP API, and a source that answers the move with whatever the
test crafted (tests/support/hostile.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.hostile import (
    Cargo,
    World,
    folder_archive,
    hostile_world,
    record,
    transcript,
)
from tests.support.relay import RelayServer
from tests.support.waits import wait_for

# A Mac gone is waited for a short while only; commands answer within seconds.
SETTINGS = {"move_reconnect_wait": 2.0, "move_chunk_bytes": 256 * 1024}


@pytest.fixture
def world(make_relay: Any, tmp_path: Path) -> Iterator[World]:
    relay: RelayServer = make_relay(**SETTINGS)
    with hostile_world(relay, tmp_path) as w:
        yield w


def honest_cargo(session_id: str, cwd: str, conversation_id: str, **fields: Any) -> Cargo:
    """What an honest source sends: an empty folder, the conversation, the session's record."""
    folder, manifest = folder_archive([])
    return Cargo(
        record=record(session_id, cwd, conversation_id, **fields),
        folder=folder,
        manifest=manifest,
        transcripts={
            f"{conversation_id}.jsonl": transcript(conversation_id, cwd, [("prompt 1", "answer 1")])
        },
    )


def test_an_honest_cargo_moves_whole_and_goes_on_there(world: World) -> None:
    """The harness itself: a source that tells the truth moves its session to the target."""
    sid, conversation = str(uuid.uuid4()), str(uuid.uuid4())
    world.report(sid, "/Users/eve/shop", conversation)
    cwd = world.target.folder("shop")
    world.move(sid, cwd, honest_cargo(sid, cwd, conversation))
    move = world.outcome(sid)
    assert move["phase"] == "done", move
    assert world.snapshot(sid)["device_id"] == world.target.device_id
    argv = wait_for(lambda: world.target.claude_argv(sid), 30, "its claude running")
    assert argv[argv.index("--resume") + 1] == conversation
    assert world.source.finishes() == ["commit"]
