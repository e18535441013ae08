"""A hostile source Mac against a target running the real Claude Code 2.1.332 (against the fake
API): what the real binary does with what a move lays down (tests/support/hostile.py; the fast
tests with the fake claude are tests/agent/test_move_trust.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.support.hostile import Cargo, file, folder_archive, hostile_world, record, transcript
from tests.support.journeys import say_and_wait_answer, wait_card, wait_state

pytestmark = pytest.mark.e2e


def test_a_moved_folders_claude_settings_never_run_a_program_on_the_target(
    make_relay: Any, tmp_path: Path, claude_bin: str, mock_api: str
) -> None:
    """The folder carries ``.claude/settings.json`` with a SessionStart hook: the target's own
    claude, resuming the conversation there, must not run it without the person saying so. The
    move is over once claude shows its trust dialog; the dialog is the person's card; their yes
    (only then does the hook run) and the session goes on."""
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
        assert move["phase"] == "done", move  # the move never waits for the person
        card = wait_card(world.phone, sid, "keyed", 60)
        assert "Evil Mac" in card["title"] and "project settings" in card["text"]
        assert "Yes, I trust this folder" in [o["label"] for o in card["options"]]
        assert Path(cwd, ".claude", "settings.json").is_file()  # laid down, not run
        assert not marker.exists(), "a hook from the moved folder ran before the person's yes"
        yes = next(o["key"] for o in card["options"] if o["label"].startswith("Yes"))
        answered = world.phone.post(f"/api/sessions/{sid}/cards/{card['id']}", json={"key": yes})
        assert answered.status_code == 200, answered.text
        wait_state(world.phone, sid, "idle", 60)
        assert marker.exists(), "the person trusted the folder: its hook runs from then on"
        say_and_wait_answer(world.phone, sid, "still there?", 90, "the conversation going on")
