"""The command write_memory (agent/memoryfiles.py) on an agent whose tmux and link are in memory:
the dry run answers the diff and writes nothing, the write keeps the text outside the section,
a new file is 0600 and an existing one keeps its mode, and nothing is written outside the
session's folder (a folder beside it, a symlink out, a relative path)."""

from __future__ import annotations

import os
import stat
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.errors import CommandFailed
from agent.memoryfiles import memory_path, write_memory
from agent.registry import SessionRecord
from tests.support.agent_fakes import Parts, with_agent
from wire.memory_section import BEGIN_MARKER, END_MARKER
from wire.protocol import WriteMemoryArgs


def run(tmp_path: Path, folder: Path, body: Callable[[Parts, str], Awaitable[None]]) -> None:
    async def go(p: Parts) -> None:
        sid = str(uuid.uuid4())
        p.agent.sessions.add(
            SessionRecord(id=sid, cwd=str(folder), created_at=time.time(), alive=False)
        )
        await body(p, sid)

    with_agent(tmp_path, go)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def test_a_dry_run_answers_the_diff_and_writes_nothing(tmp_path: Path, folder: Path) -> None:
    async def body(p: Parts, sid: str) -> None:
        result = await p.link.command(
            "write_memory", sid, cwd=str(folder), facts=["Use pnpm, not npm"], dry_run=True
        )
        assert result.ok, result.error
        assert "+- Use pnpm, not npm" in result.data["diff"]
        assert result.data["path"] == str(folder / "CLAUDE.local.md")
        assert result.data["written"] is False and result.data["changed"] is True
        assert not (folder / "CLAUDE.local.md").exists()

    run(tmp_path, folder, body)


def test_a_new_file_is_0600_and_holds_the_section(tmp_path: Path, folder: Path) -> None:
    async def body(p: Parts, sid: str) -> None:
        result = await p.link.command(
            "write_memory", sid, cwd=str(folder), facts=["Use pnpm, not npm", "Tabs, not spaces"]
        )
        assert result.ok, result.error
        written = folder / "CLAUDE.local.md"
        assert stat.S_IMODE(written.stat().st_mode) == 0o600
        text = written.read_text()
        assert text.startswith(BEGIN_MARKER) and END_MARKER in text
        assert "- Use pnpm, not npm\n- Tabs, not spaces\n" in text
        assert result.data["facts"] == ["Use pnpm, not npm", "Tabs, not spaces"]
        again = await p.link.command(
            "write_memory", sid, cwd=str(folder), facts=["Use pnpm, not npm", "Tabs, not spaces"]
        )
        assert again.ok and again.data["changed"] is False and again.data["diff"] == ""

    run(tmp_path, folder, body)


def test_a_shared_file_keeps_its_text_and_mode(tmp_path: Path, folder: Path) -> None:
    shared = folder / "CLAUDE.md"
    shared.write_text("# Project\r\n\r\nBuild with make.\r\n")
    os.chmod(shared, 0o644)

    async def body(p: Parts, sid: str) -> None:
        result = await p.link.command(
            "write_memory", sid, cwd=str(folder), file="CLAUDE.md", facts=["Run make check"]
        )
        assert result.ok, result.error
        text = shared.read_bytes().decode()
        assert text.startswith("# Project\r\n\r\nBuild with make.\r\n")
        assert "- Run make check\r\n" in text
        assert stat.S_IMODE(shared.stat().st_mode) == 0o644
        assert not (folder / "CLAUDE.local.md").exists()

    run(tmp_path, folder, body)


def test_a_subfolder_is_inside_but_a_folder_beside_is_not(tmp_path: Path, folder: Path) -> None:
    (folder / "pkg").mkdir()
    beside = tmp_path / "project-other"
    beside.mkdir()

    async def body(p: Parts, sid: str) -> None:
        inside = await p.link.command("write_memory", sid, cwd=str(folder / "pkg"), facts=["x y"])
        assert inside.ok and (folder / "pkg" / "CLAUDE.local.md").exists()
        out = await p.link.command("write_memory", sid, cwd=str(beside), facts=["x y"])
        assert not out.ok and out.code == "outside_folder"
        up = await p.link.command("write_memory", sid, cwd=f"{folder}/pkg/../..", facts=["x y"])
        assert not up.ok and up.code == "outside_folder"
        relative = await p.link.command("write_memory", sid, cwd="project", facts=["x y"])
        assert not relative.ok and relative.code == "bad_path"
        assert not (beside / "CLAUDE.local.md").exists()

    run(tmp_path, folder, body)


def test_a_symlinked_memory_file_that_leads_out_is_refused(tmp_path: Path, folder: Path) -> None:
    target = tmp_path / "elsewhere.md"
    target.write_text("mine\n")
    (folder / "CLAUDE.local.md").symlink_to(target)

    async def body(p: Parts, sid: str) -> None:
        result = await p.link.command("write_memory", sid, cwd=str(folder), facts=["x y"])
        assert not result.ok and result.code == "outside_folder"
        assert target.read_text() == "mine\n"

    run(tmp_path, folder, body)


def test_broken_markers_and_bad_args_are_refused_with_what_to_do(
    tmp_path: Path, folder: Path
) -> None:
    broken = folder / "CLAUDE.local.md"
    broken.write_text(f"{END_MARKER}\nnotes\n")

    async def body(p: Parts, sid: str) -> None:
        result = await p.link.command("write_memory", sid, cwd=str(folder), facts=["x y"])
        assert not result.ok and result.code == "memory_section"
        assert "by hand" in (result.error or "")
        assert broken.read_text() == f"{END_MARKER}\nnotes\n"
        wrong = await p.link.command(
            "write_memory", sid, cwd=str(folder), file="../CLAUDE.md", facts=["x"]
        )
        assert not wrong.ok and wrong.code == "bad_args"
        unknown = await p.link.command("write_memory", "nope", cwd=str(folder), facts=["x"])
        assert not unknown.ok and unknown.code == "unknown_session"

    run(tmp_path, folder, body)


@settings(max_examples=30, deadline=None)
@given(
    before=st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200).filter(
        lambda t: "claude-bridge:memory" not in t
    ),
    facts=st.lists(
        st.text(alphabet="abc xyz\n", min_size=1, max_size=30).filter(lambda t: t.strip()),
        max_size=4,
    ),
)
def test_the_text_outside_the_section_is_kept_whatever_it_is(
    tmp_path_factory: pytest.TempPathFactory, before: str, facts: list[str]
) -> None:
    folder = tmp_path_factory.mktemp("memory")
    path = folder / "CLAUDE.md"
    path.write_bytes(before.encode())
    result = write_memory(
        str(folder), WriteMemoryArgs(cwd=str(folder), file="CLAUDE.md", facts=facts)
    )
    after = path.read_bytes().decode()
    assert after.startswith(before)
    assert result["changed"] == (after != before)


def test_the_path_check_alone_is_strict(tmp_path: Path, folder: Path) -> None:
    assert memory_path(str(folder), str(folder), "CLAUDE.md") == folder.resolve() / "CLAUDE.md"
    with pytest.raises(CommandFailed) as gone:
        memory_path(str(tmp_path / "missing"), str(folder), "CLAUDE.md")
    assert gone.value.code == "not_found"
