"""A hostile source Mac against a target running the real Claude Code 2.1.332 (against the fake
API): what the real binary does with what a move lays down (tests/support/hostile.py; the fast
tests with the fake claude are tests/test_move_trust.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.hostile import Cargo, file, folder_archive, hostile_world, record, transcript
from tests.support.waits import wait_for

pytestmark = pytest.mark.e2e


@pytest.mark.xfail(
    strict=True,
    reason="issue 20 (found with this harness): the moved folder's Claude Code project settings "
    "(.claude/settings.json hooks) run on the target, whose agent passes Claude Code's folder "
    "trust dialog by itself (agent/autopass.py)",
)
def test_a_moved_folders_claude_settings_never_run_a_program_on_the_target(
    make_relay: Any, tmp_path: Path, claude_bin: str, mock_api: str
) -> None:
    """The folder carries ``.claude/settings.json`` with a SessionStart hook: the target's own
    claude, resuming the conversation there, must not run it without the person saying so."""
    marker = tmp_path / "hook-ran"
    hook = {"type": "command", "command": f"touch {marker}"}
    settings = {"hooks": {"SessionStart": [{"hooks": [hook]}]}}
    relay = make_relay(move_reconnect_wait=2.0)
    with hostile_world(relay, tmp_path, claude=claude_bin, api_url=mock_api) as world:
        sid, conversation = str(uuid.uuid4()), str(uuid.uuid4())
        world.report(sid, "/Users/eve/shop", conversation)
        cwd = str(world.target.mac.root / "shop")  # a folder the target never trusted
        archive, manifest = folder_archive(
            [file(".claude/settings.json", json.dumps(settings).encode()), file("app.py", b"1\n")]
        )
        cargo = Cargo(
            record=record(sid, cwd, conversation),
            folder=archive,
            manifest=manifest,
            transcripts={
                f"{conversation}.jsonl": transcript(conversation, cwd, [("hello", "hi there")])
            },
        )
        world.move(sid, cwd, cargo)
        move = world.outcome(sid)
        if move["phase"] == "done":
            wait_for(
                lambda: (
                    world.phone.get(f"/api/sessions/{sid}").json()["state"] in ("idle", "waiting")
                ),
                60,
                "its claude up",
            )
    assert not marker.exists(), "a hook from the moved folder ran on the target"
