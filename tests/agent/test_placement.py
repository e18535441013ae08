"""Where the target's Claude Code finds a moved conversation (agent/placement.py): captured
transcripts laid out as Claude Code keeps them, packed and placed under another folder; and once
with the real Claude Code, which resumes the placed conversation in the new folder."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

from agent import placement
from agent.placement import ConversationManifest, PlacementError
from agent.transcript import project_slug
from tests.support.bridge import API_KEY, seed_home
from tests.support.paths import FIXTURES
from tests.support.waits import wait_for

TRANSCRIPTS = FIXTURES / "transcripts"
CONVERSATION = "b9a49076-7ef0-4409-b3eb-ff11c5c634e6"  # 2.1.328's subagent capture
AGENT = "agent-a0f2c7af82d1d7fd7"
OLD = "/Users/me/work/project"
NEW = "/Users/me/elsewhere/project copy"


def lay_out(home: Path, cwd: str = OLD) -> Path:
    """The capture as Claude Code keeps it: transcript, subagent transcript and its meta file."""
    folder = home / "projects" / project_slug(cwd)
    sub = folder / CONVERSATION / "subagents"
    sub.mkdir(parents=True)
    shutil.copyfile(
        TRANSCRIPTS / f"m_subagent__{CONVERSATION}.jsonl", folder / f"{CONVERSATION}.jsonl"
    )
    shutil.copyfile(TRANSCRIPTS / f"m_subagent__subagent__{AGENT}.jsonl", sub / f"{AGENT}.jsonl")
    (sub / f"{AGENT}.meta.json").write_text('{"agentType":"general-purpose"}')
    return folder


def test_the_files_of_a_conversation_are_its_transcript_and_its_folder(tmp_path: Path) -> None:
    home = tmp_path / ".claude"
    folder = lay_out(home)
    (folder / "other-conversation.jsonl").write_text("{}\n")  # another conversation: not its
    (folder / CONVERSATION / "subagents" / "link.jsonl").symlink_to("/etc/hostname")
    files = placement.conversation_files(home, OLD, CONVERSATION)
    assert [placement.relative_name(home, OLD, p) for p in files] == [
        f"{CONVERSATION}.jsonl",
        f"{CONVERSATION}/subagents/{AGENT}.jsonl",
        f"{CONVERSATION}/subagents/{AGENT}.meta.json",
    ]
    assert placement.conversation_files(home, NEW, CONVERSATION) == []
    with pytest.raises(ValueError):
        placement.conversation_files(home, OLD, "../../etc/passwd")


def test_a_conversation_packed_and_placed_under_another_folder(tmp_path: Path) -> None:
    source, target = tmp_path / "a" / ".claude", tmp_path / "b" / ".claude"
    folder = lay_out(source)
    with (folder / f"{CONVERSATION}.jsonl").open("a") as being_written:
        being_written.write('{"type":"user","half')  # a line Claude Code is writing
    archive = tmp_path / "conversation.tgz"
    manifest = placement.pack_conversation(source, OLD, CONVERSATION, archive)
    assert archive.stat().st_mode & 0o777 == 0o600 and len(manifest.names) == 3
    wire = ConversationManifest.from_json(json.loads(json.dumps(manifest.to_json())))
    assert wire == manifest

    placed = placement.place_conversation(target, NEW, CONVERSATION, archive, wire)
    new_folder = target / "projects" / project_slug(NEW)
    assert placed[-1] == new_folder / f"{CONVERSATION}.jsonl"  # the transcript last
    original = (TRANSCRIPTS / f"m_subagent__{CONVERSATION}.jsonl").read_bytes()
    assert (new_folder / f"{CONVERSATION}.jsonl").read_bytes() == original  # not the half line
    sub = new_folder / CONVERSATION / "subagents" / f"{AGENT}.jsonl"
    assert sub.read_bytes() == (TRANSCRIPTS / f"m_subagent__subagent__{AGENT}.jsonl").read_bytes()
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in placed)
    # Placing it again (a move retried) changes nothing; a longer copy replaces a beginning.
    assert placement.place_conversation(target, NEW, CONVERSATION, archive, wire) == placed
    (new_folder / f"{CONVERSATION}.jsonl").write_bytes(original[:1000])
    placement.place_conversation(target, NEW, CONVERSATION, archive, wire)
    assert (new_folder / f"{CONVERSATION}.jsonl").read_bytes() == original


def test_a_different_conversation_under_the_same_id_is_never_overwritten(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    lay_out(source)
    archive = tmp_path / "c.tgz"
    manifest = placement.pack_conversation(source, OLD, CONVERSATION, archive)
    mine = target / "projects" / project_slug(NEW) / f"{CONVERSATION}.jsonl"
    mine.parent.mkdir(parents=True)
    mine.write_text('{"type":"user","other":"history"}\n')
    with pytest.raises(PlacementError) as refused:
        placement.place_conversation(target, NEW, CONVERSATION, archive, manifest)
    assert refused.value.code == "conversation_exists"
    assert mine.read_text() == '{"type":"user","other":"history"}\n'
    assert not (mine.parent / CONVERSATION).exists()


def test_a_missing_conversation_and_bad_archives_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PlacementError) as missing:
        placement.pack_conversation(tmp_path, OLD, CONVERSATION, tmp_path / "x.tgz")
    assert missing.value.code == "no_conversation" and not (tmp_path / "x.tgz").exists()
    lay_out(tmp_path / "src")
    archive = tmp_path / "c.tgz"
    manifest = placement.pack_conversation(tmp_path / "src", OLD, CONVERSATION, archive)
    damaged = ConversationManifest.from_json({**manifest.to_json(), "sha256": "1" * 64})
    with pytest.raises(PlacementError, match="does not match"):
        placement.place_conversation(tmp_path / "t", NEW, CONVERSATION, archive, damaged)
    with pytest.raises(PlacementError, match="no manifest"):
        placement.place_conversation(tmp_path / "t", NEW, CONVERSATION, archive)
    # An archive whose member escapes: refused before anything is written.
    evil = tmp_path / "evil.tgz"
    with tarfile.open(evil, "w:gz") as tar:
        info = tarfile.TarInfo("../../escape.jsonl")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"{}\n"))
    data = evil.read_bytes()
    forged = ConversationManifest(
        CONVERSATION, (f"{CONVERSATION}.jsonl",), len(data), hashlib.sha256(data).hexdigest(), 3
    )
    with pytest.raises(PlacementError, match="holds"):
        placement.place_conversation(tmp_path / "t", NEW, CONVERSATION, evil, forged)
    assert not (tmp_path / "t").exists() and not (tmp_path / "escape.jsonl").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"conversation_id": "x"},
        {"names": []},
        {"names": [f"{CONVERSATION}/a.jsonl"]},  # the transcript first
        {"names": [f"{CONVERSATION}.jsonl", f"{CONVERSATION}/../x"]},
        {"names": [f"{CONVERSATION}.jsonl", "other/x"]},
        {"names": [f"{CONVERSATION}.jsonl", f"{CONVERSATION}.jsonl"]},
        {"bytes": -1},
        {"content_bytes": "3"},
        {"sha256": "g" * 64},
    ],
)
def test_a_conversation_manifest_from_the_wire_is_checked(change: dict[str, object]) -> None:
    good = {"conversation_id": CONVERSATION, "names": [f"{CONVERSATION}.jsonl"], "bytes": 1,
            "sha256": "0" * 64, "content_bytes": 1}  # fmt: skip
    assert ConversationManifest.from_json(good).names == (f"{CONVERSATION}.jsonl",)
    with pytest.raises(ValueError):
        ConversationManifest.from_json({**good, **change})


def test_the_project_memory_travels_but_never_replaces_the_targets(tmp_path: Path) -> None:
    source, target = tmp_path / "a", tmp_path / "b"
    folder = lay_out(source)
    (folder / "memory").mkdir()
    (folder / "memory" / "MEMORY.md").write_text("- from the first Mac\n")
    (folder / "memory" / "notes.md").write_text("notes\n")
    archive = tmp_path / "c.tgz"
    manifest = placement.pack_conversation(source, OLD, CONVERSATION, archive)
    assert "memory/MEMORY.md" in manifest.names
    mine = target / "projects" / project_slug(NEW) / "memory" / "MEMORY.md"
    mine.parent.mkdir(parents=True)
    mine.write_text("- the target's own\n")
    placed = placement.place_conversation(target, NEW, CONVERSATION, archive, manifest)
    assert mine.read_text() == "- the target's own\n" and mine not in placed
    assert (mine.parent / "notes.md").read_text() == "notes\n"


# -- with the real Claude Code -------------------------------------------------------------------


def tmux(socket: str, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", socket, *args], capture_output=True, text=True, check=False
    )
    return done.stdout


def claude_env(home: Path, api_url: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "ANTHROPIC_BASE_URL": api_url, "ANTHROPIC_API_KEY": API_KEY,
            "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "TERM": "xterm-256color",
            "LANG": "C.UTF-8"}  # fmt: skip


def start(socket: str, home: Path, api_url: str, cwd: Path, command: str) -> None:
    env = claude_env(home, api_url)
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    tmux(socket, "new-session", "-d", "-s", "c", "-x", "100", "-y", "32", "-c", str(cwd),
         f"env -i {exports} {command}")  # fmt: skip


def screen(socket: str) -> str:
    return tmux(socket, "capture-pane", "-p", "-t", "c")


def say(socket: str, text: str) -> None:
    tmux(socket, "send-keys", "-t", "c", "-l", text)
    time.sleep(0.3)  # Claude Code takes a pasted line and its Enter apart
    tmux(socket, "send-keys", "-t", "c", "Enter")


@pytest.mark.e2e
def test_the_real_claude_resumes_a_placed_conversation_in_another_folder(
    tmp_path: Path, claude_bin: str, mock_api: str
) -> None:
    """Two Macs (two homes): the conversation had on the first, placed by its new folder's slug
    on the second, lines unchanged; ``--resume`` there draws it and continues it."""
    first, second = tmp_path / "mac-a", tmp_path / "mac-b"
    old, new = first / "work", second / "elsewhere" / "new place"
    old.mkdir(parents=True)
    new.mkdir(parents=True)
    seed_home(first, [str(old)])
    seed_home(second, [str(new)])
    conversation = str(uuid.uuid4())
    socket = f"cbplace-{uuid.uuid4().hex[:8]}"
    try:
        start(socket, first, mock_api, old,
              f"{shlex.quote(claude_bin)} --permission-mode default --session-id {conversation}")  # fmt: skip
        wait_for(lambda: "❯" in screen(socket), 60, "claude's prompt on the first Mac")
        say(socket, "hello from the first Mac")
        wait_for(lambda: "This is the mock API" in screen(socket), 60, "the first answer")
        written = first / ".claude" / "projects" / project_slug(str(old)) / f"{conversation}.jsonl"
        wait_for(lambda: b'"type":"assistant"' in written.read_bytes(), 30, "the answer written")
        for _ in range(2):  # Ctrl-C twice: claude ends as a person ends it
            tmux(socket, "send-keys", "-t", "c", "C-c")
            time.sleep(0.3)
        wait_for(lambda: not tmux(socket, "list-sessions"), 30, "the first claude ended")

        archive = tmp_path / "conversation.tgz"
        manifest = placement.pack_conversation(first / ".claude", str(old), conversation, archive)
        placed = placement.place_conversation(
            second / ".claude", str(new), conversation, archive, manifest
        )
        transcript = (
            second / ".claude" / "projects" / project_slug(str(new)) / f"{conversation}.jsonl"
        )
        assert placed[-1] == transcript
        before = transcript.read_bytes()
        shutil.rmtree(old)  # the first Mac's folder is gone; its home is not the second's

        start(socket, second, mock_api, new,
              f"{shlex.quote(claude_bin)} --permission-mode default --resume {conversation}")  # fmt: skip

        def resumed() -> str | None:
            shown = screen(socket)
            idle = shown.rstrip().endswith(("shortcuts", "agents"))  # the footer: drawn, idle
            return shown if "❯ hello from the first Mac" in shown and idle else None

        drawn = wait_for(resumed, 60, "the earlier conversation drawn on the second Mac")
        # As the recorded capture (tests/fixtures/placement) shows it: the new folder in the
        # banner, the earlier prompt and answer re-drawn.
        record = (
            FIXTURES / "placement" / "resumed_in_another_folder_100x32.screen_plain.txt"
        ).read_text()
        for shown in ("❯ hello from mac a", "● Hello! This is the mock API. How can I help?"):
            assert shown in record
        assert (
            "elsewhere/new place" in drawn
            and "● Hello! This is the mock API. How can I help?" in drawn
        )
        say(socket, "a second message on the second Mac")
        wait_for(lambda: screen(socket).count("This is the mock API") >= 2, 60, "the second answer")
        seen = httpx.get(mock_api + "/__mock/requests", timeout=10).json()
        asked = [
            r for r in seen if "a second message on the second Mac" in (r.get("prompt_head") or "")
        ]
        assert asked and asked[-1]["n_messages"] >= 3  # the earlier turn went with it
        wait_for(lambda: transcript.stat().st_size > len(before), 30, "new lines in the transcript")
    finally:
        tmux(socket, "kill-server")
    lines = [json.loads(line) for line in transcript.read_bytes().splitlines()]
    assert transcript.read_bytes().startswith(before)  # appended to, in the new folder's slug
    cwds = [line["cwd"] for line in lines if "cwd" in line]
    assert str(old) in cwds and cwds[-1] == str(new)  # old lines as they were, new ones here
