"""Where the target's Claude Code finds a moved conversation (agent/placement.py): captured
transcripts laid out as Claude Code keeps them, packed and placed under another folder; and once
with the real Claude Code, which resumes the placed conversation in the new folder."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest

from agent import placement
from agent.placement import ConversationManifest, PlacementError
from agent.transcript import project_slug

FIXTURES = Path(__file__).resolve().parent / "fixtures"
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
