"""The target Mac's side of a move into a folder (agent/moving.py over agent/foldersync.py and
agent/landing.py), driven as the relay drives it — ``move_accept``, ``move_write``,
``move_place``, ``move_finish`` — on an agent whose tmux and link are in memory
(tests/support/agent_fakes.py), with a source that sends what it likes: one move at a time holds a
folder, across a restart too; an abort takes back only what that move laid down, never a folder
another session works in; a moved folder cannot make this Mac's git run a program, nor
overwrite the person's ignored files; ``.git`` is never read through the files API."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import tarfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from agent import foldersync as fs
from agent.foldersync import FolderManifest
from agent.registry import SessionRecord
from tests.support.agent_fakes import FakeLink, Parts, with_agent
from wire.protocol import CommandResult

LIMIT = 50 * 1024 * 1024


def sh(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def sid() -> str:
    return str(uuid.uuid4())


def move_id() -> str:
    return uuid.uuid4().hex[:16]


class Source:
    """What a source Mac sends for one move: the folder's archive and the session's record."""

    def __init__(self, archive: Path, manifest: FolderManifest, session_id: str) -> None:
        record = SessionRecord(
            id=session_id, cwd="/Users/someone/elsewhere", created_at=time.time(), alive=False
        )
        self.manifest = manifest
        self.session_id = session_id
        self.files = {
            "folder.bin": archive.read_bytes(),
            "session.json": json.dumps(record.to_json()).encode(),
        }

    def listing(self) -> list[dict[str, Any]]:
        return [
            {"name": n, "size": len(b), "sha256": hashlib.sha256(b).hexdigest()}
            for n, b in self.files.items()
        ]


async def accept(link: FakeLink, source: Source, move: str, cwd: Path) -> CommandResult:
    return await link.command(
        "move_accept", source.session_id, move_id=move, cwd=str(cwd),
        manifest=source.manifest.to_json(), files=source.listing(),
    )  # fmt: skip


async def send_and_place(link: FakeLink, source: Source, move: str) -> CommandResult:
    for name, data in source.files.items():
        wrote = await link.command(
            "move_write", source.session_id, move_id=move, file=name, offset=0,
            data=base64.b64encode(data).decode(),
        )  # fmt: skip
        assert wrote.ok, wrote.error
    while True:
        placed = await link.command("move_place", source.session_id, move_id=move, wait=5)
        if not placed.ok or placed.data.get("status") in ("ready", "failed"):
            return placed


async def finish(link: FakeLink, source: Source, move: str, outcome: str) -> None:
    done = await link.command("move_finish", source.session_id, move_id=move, outcome=outcome)
    assert done.ok, done.error


def plain_source(tmp_path: Path, name: str = "src") -> Source:
    folder = tmp_path / name
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "notes.md").write_text("- moved\n")
    archive = tmp_path / f"{name}.tar"
    return Source(archive, run_pack(folder, archive), sid())


def run_pack(folder: Path, archive: Path, have: list[str] | None = None) -> FolderManifest:
    import asyncio

    return asyncio.run(fs.pack(folder, archive, limit=LIMIT, have=have or []))


def on_agent(tmp_path: Path, body: Callable[[Parts], Awaitable[None]]) -> None:
    """``body`` on an agent of this Mac (its data in tmp_path: a second call is the same Mac
    started again, its moves recovered from their journals)."""

    async def started(parts: Parts) -> None:
        parts.agent.moving.recover()
        await body(parts)

    with_agent(tmp_path / "mac", started)


# -- one move at a time holds a folder ----------------------------------------------------------


def test_a_second_move_into_a_held_folder_is_refused_even_after_a_restart(
    tmp_path: Path,
) -> None:
    first, second = plain_source(tmp_path, "one"), plain_source(tmp_path, "two")
    folder = tmp_path / "projects" / "here"
    a, b = move_id(), move_id()

    async def hold(parts: Parts) -> None:
        assert (await accept(parts.link, first, a, folder)).ok
        for where in (folder, folder / "inside", folder.parent):
            refused = await accept(parts.link, second, b, where)
            assert not refused.ok and refused.code == "folder_busy", where
            assert a in (refused.error or "")
        assert (await accept(parts.link, first, a, folder)).ok  # the same move, asked again

    async def after_restart(parts: Parts) -> None:
        refused = await accept(parts.link, second, b, folder)
        assert refused.code == "folder_busy"
        placed = await send_and_place(parts.link, first, a)
        assert placed.data == {"status": "ready"}, placed
        assert (folder / "sub" / "notes.md").is_file()
        await finish(parts.link, first, a, "abort")
        assert not folder.exists() and not (tmp_path / "projects").exists()
        assert (await accept(parts.link, second, b, folder)).ok  # free again

    on_agent(tmp_path, hold)
    on_agent(tmp_path, after_restart)


def test_an_abort_never_removes_a_folder_another_session_works_in(tmp_path: Path) -> None:
    source = plain_source(tmp_path)
    folder = tmp_path / "here"
    move = move_id()

    async def body(parts: Parts) -> None:
        assert (await accept(parts.link, source, move, folder)).ok
        assert (await send_and_place(parts.link, source, move)).data == {"status": "ready"}
        other = SessionRecord(id=sid(), cwd=str(folder / "sub"), created_at=time.time())
        parts.agent.registry.add(other)  # the person started a session in it meanwhile
        await finish(parts.link, source, move, "abort")
        assert (folder / "sub" / "notes.md").is_file()

    on_agent(tmp_path, body)


def test_an_abort_leaves_a_folder_that_was_there_before(tmp_path: Path) -> None:
    """A move into an empty folder the person had: the abort takes back the files, not the
    folder (nor its mode)."""
    source = plain_source(tmp_path)
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o700)
    move = move_id()

    async def body(parts: Parts) -> None:
        assert (await accept(parts.link, source, move, folder)).ok
        assert (await send_and_place(parts.link, source, move)).data == {"status": "ready"}
        assert folder.stat().st_mode & 0o777 == 0o700
        await finish(parts.link, source, move, "abort")

    on_agent(tmp_path, body)
    assert list(folder.iterdir()) == [] and folder.stat().st_mode & 0o777 == 0o700


# -- a hostile source ------------------------------------------------------------------------------


def planted_archive(tmp_path: Path, marker: Path) -> tuple[Path, FolderManifest]:
    """A plain folder whose top is a bare repository's layout, its config naming a program
    for git status (core.fsmonitor) with the folder as its own work tree."""
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    script.chmod(0o755)
    config = f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = {script}\n".encode()
    files = {"HEAD": b"ref: refs/heads/main\n", "config": config, "notes.txt": b"hi\n"}
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for folder in ("objects", "refs", "refs/heads"):
            info = tarfile.TarInfo(folder)
            info.type = tarfile.DIRTYPE
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w") as tar:
        info = tarfile.TarInfo(fs.FILES)
        info.size = len(inner.getvalue())
        tar.addfile(info, io.BytesIO(inner.getvalue()))
    archive = tmp_path / "planted.tar"
    archive.write_bytes(outer.getvalue())
    manifest = FolderManifest(
        "plain", None, None, 3, len(outer.getvalue()), hashlib.sha256(outer.getvalue()).hexdigest(),
        content_bytes=100_000, folders=3,
    )  # fmt: skip
    return archive, manifest


def test_a_moved_folder_cannot_make_this_macs_git_run_a_program(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    archive, manifest = planted_archive(tmp_path, marker)
    source = Source(archive, manifest, sid())
    folder = tmp_path / "here"
    move = move_id()

    async def body(parts: Parts) -> None:
        assert (await accept(parts.link, source, move, folder)).ok
        placed = await send_and_place(parts.link, source, move)
        assert placed.data["status"] == "failed" and placed.data["code"] == "bad_archive"
        assert "laid out like a git repository" in placed.data["error"]
        assert not folder.exists()
        await finish(parts.link, source, move, "abort")
        # Such a folder, however it came (an older agent laid it down): the Changes view and
        # a later move into it do not run git there.
        folder.mkdir()
        with tarfile.open(archive) as outer:
            files = outer.extractfile(fs.FILES)
            assert files is not None
            with tarfile.open(fileobj=files, mode="r:gz") as inner:
                inner.extractall(folder)
        record = SessionRecord(id=sid(), cwd=str(folder), created_at=time.time(), alive=False)
        parts.agent.registry.add(record)
        status = await parts.link.command("git_status", record.id)
        assert not status.ok and status.code == "unsafe_repository"
        probe = await parts.link.command("move_probe", sid(), move_id=move_id(), cwd=str(folder))
        assert not probe.ok and probe.code == "unsafe_repository"

    on_agent(tmp_path, body)
    assert not marker.exists()


def test_a_move_into_a_checkout_keeps_the_persons_ignored_files(tmp_path: Path) -> None:
    """The session's history tracks .env; the target's checkout, behind, has its own .env,
    ignored there: the move is refused, the file and the repository untouched; and a move
    that does go in is taken back whole by an abort."""
    repo = tmp_path / "src"
    repo.mkdir()
    sh(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("one\n")
    sh(repo, "add", ".")
    sh(repo, "commit", "-q", "-m", "first")
    target = tmp_path / "checkout"
    sh(tmp_path, "clone", "-q", "--no-local", str(repo), str(target))
    sh(target, "remote", "remove", "origin")
    old = sh(target, "rev-parse", "HEAD").strip()
    (target / ".git" / "info" / "exclude").write_text(".env\n*.log\n")
    (target / ".env").write_text("SECRET=mine\n")
    (target / "debug.log").write_text("the person's log\n")
    (repo / ".env").write_text("SECRET=the session's\n")
    sh(repo, "add", ".env")
    sh(repo, "commit", "-q", "-m", "track .env")
    (repo / "new.txt").write_text("untracked\n")
    tracking = Source(tmp_path / "a.tar", run_pack(repo, tmp_path / "a.tar", [old]), sid())
    sh(repo, "rm", "-q", "--cached", ".env")
    sh(repo, "commit", "-q", "-m", "untrack .env")
    (repo / ".env").unlink()
    clean = Source(tmp_path / "b.tar", run_pack(repo, tmp_path / "b.tar", [old]), sid())
    a, b = move_id(), move_id()

    async def body(parts: Parts) -> None:
        assert (await accept(parts.link, tracking, a, target)).ok
        placed = await send_and_place(parts.link, tracking, a)
        assert placed.data["status"] == "failed" and placed.data["code"] == "folder_differs"
        assert ".env" in placed.data["error"]
        await finish(parts.link, tracking, a, "abort")
        assert (target / ".env").read_text() == "SECRET=mine\n"
        assert sh(target, "rev-parse", "HEAD").strip() == old
        assert (await accept(parts.link, clean, b, target)).ok
        assert (await send_and_place(parts.link, clean, b)).data == {"status": "ready"}
        assert (target / "new.txt").is_file() and sh(target, "rev-parse", "HEAD").strip() != old
        await finish(parts.link, clean, b, "abort")

    on_agent(tmp_path, body)
    assert (target / ".env").read_text() == "SECRET=mine\n"
    assert (target / "debug.log").read_text() == "the person's log\n"
    assert sh(target, "rev-parse", "HEAD").strip() == old and not (target / "new.txt").exists()
    assert sh(target, "status", "--porcelain") == ""


def test_a_big_folder_that_differs_is_refused_at_accept_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = plain_source(tmp_path)
    big = tmp_path / "big"
    for d in range(10):
        (big / f"d{d}").mkdir(parents=True)
        for i in range(50):
            (big / f"d{d}" / f"{i}").write_bytes(b"x" * 10)
    hashed: list[Path] = []

    def noted_digest(path: Path) -> str:
        hashed.append(path)
        return "0" * 64

    monkeypatch.setattr(fs, "_file_digest", noted_digest)

    async def body(parts: Parts) -> None:
        refused = await accept(parts.link, source, move_id(), big)
        assert not refused.ok and refused.code == "folder_differs"

    on_agent(tmp_path, body)
    assert hashed == []


# -- the files API ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", [".git/config", ".GIT/config", ".g\u200cit/config", "sub/../.git/HEAD", "togit",
             "tohooks/pre-commit", ".git"],
)  # fmt: skip
def test_git_s_own_folder_is_never_read_through_the_files_api(tmp_path: Path, path: str) -> None:
    folder = tmp_path / "work"
    (folder / "sub").mkdir(parents=True)
    sh(folder, "init", "-q")
    (folder / ".GIT").mkdir()  # as macOS would find .git under this name
    (folder / ".GIT" / "config").write_text("[core]\n")
    (folder / ".g\u200cit").mkdir()
    (folder / ".g\u200cit" / "config").write_text("[core]\n")
    (folder / "togit").symlink_to(".git/config")
    (folder / "tohooks").symlink_to(".git/hooks")

    async def body(parts: Parts) -> None:
        record = SessionRecord(id=sid(), cwd=str(folder), created_at=time.time(), alive=False)
        parts.agent.registry.add(record)
        read = await parts.link.command("read_file", record.id, path=path)
        assert not read.ok and read.code == "bad_path", read
        listed = await parts.link.command("list_files", record.id, path=path)
        assert not listed.ok and listed.code in ("bad_path", "not_a_folder"), listed
        top = await parts.link.command("list_files", record.id, path="")
        entries = {e["name"]: e["kind"] for e in top.data["entries"]}
        assert set(entries) == {"sub", "togit", "tohooks"}
        assert entries["togit"] == entries["tohooks"] == "outside"

    on_agent(tmp_path, body)
