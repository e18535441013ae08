"""A working folder packed on one Mac and made again on another (agent/foldersync.py): real git
repositories in tmp_path, archives made by hand for the hostile cases, pure decisions tested on
plain values."""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
from collections import namedtuple
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent import foldersync as fs
from agent import landing
from agent.errors import CommandFailed
from agent.foldersync import FolderManifest, FolderState, FolderSyncError, FolderTooBig

LIMIT = 50 * 1024 * 1024
Usage = namedtuple("Usage", "total used free")
A, B, C = "a" * 40, "b" * 40, "c" * 40


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    out = subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return out.stdout.decode()


def status(root: Path) -> str:
    """``git status --porcelain`` less what never travels (node_modules, a symlink out)."""
    out = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all").split("\x00")
    return "\x00".join(e for e in out if not e.startswith(("?? node_modules/", "?? to-etc")))


def tree_of(root: Path) -> dict[str, tuple[str, bool, bytes]]:
    """Every file and symlink outside .git: its kind, executable bit and bytes (or target)."""
    found: dict[str, tuple[str, bool, bytes]] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names + [d for d in dirs if (Path(folder) / d).is_symlink()]:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", False, os.readlink(path).encode())
            else:
                found[rel] = ("file", bool(path.stat().st_mode & 0o111), path.read_bytes())
    return found


def run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on a branch with history, staged, unstaged and binary changes, untracked
    and ignored files, a node_modules nobody ignored, an executable, symlinks, odd names."""
    root = tmp_path / "src" / "project"
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    (root / "app.py").write_text("print('one')\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    (root / "pic.bin").write_bytes(bytes(range(256)) * 4)
    (root / "gone.txt").write_text("soon deleted\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    git(root, "switch", "-q", "-c", "feature/move")
    for i in range(3):
        (root / "app.py").write_text(f"print('one')\nprint({i})\n")
        git(root, "commit", "-q", "-am", f"step {i}")
    (root / "app.py").write_text("print('one')\nprint(2)\nstaged = True\n")
    (root / "new file ü.txt").write_text("added and staged\n")
    (root / "pic.bin").write_bytes(bytes(range(255, -1, -1)) * 4)  # a binary change, staged
    git(root, "add", "app.py", "new file ü.txt", "pic.bin")
    (root / "app.py").write_text("print('one')\nprint(2)\nstaged = True\nunstaged = True\n")
    (root / "gone.txt").unlink()  # an unstaged deletion
    (root / "notes").mkdir()
    (root / "notes" / "todo list ✓.md").write_text("- move\n")  # untracked
    (root / "notes" / "tool").write_text("#!/bin/sh\n")
    (root / "notes" / "tool").chmod(0o755)
    (root / "to-notes").symlink_to("notes/todo list ✓.md")  # untracked symlink, inside
    (root / "to-etc").symlink_to("/etc/hostname")  # points outside: stays
    (root / "debug.log").write_text("ignored\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"\x7fELF")
    (root / "node_modules" / "left").mkdir(parents=True)
    (root / "node_modules" / "left" / "index.js").write_text("module.exports = 1\n")
    return root


def travelling(root: Path) -> dict[str, tuple[str, bool, bytes]]:
    """What should arrive: the tree less what never travels."""
    return {
        k: v
        for k, v in tree_of(root).items()
        if not k.startswith(("node_modules/", "build/")) and k not in ("debug.log", "to-etc")
    }


def test_a_git_folder_arrives_with_its_branch_head_changes_and_untracked_files(
    repo: Path, tmp_path: Path
) -> None:
    archive = tmp_path / "folder.tgz"
    manifest = run(fs.pack(repo, archive, limit=LIMIT))
    assert archive.stat().st_mode & 0o777 == 0o600
    assert manifest.kind == "git" and manifest.branch == "feature/move" and manifest.bundle
    assert manifest.head == git(repo, "rev-parse", "HEAD").strip()
    assert manifest.staged and manifest.unstaged and manifest.files == 3
    assert manifest.bytes == archive.stat().st_size
    assert manifest.sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    assert any(s.startswith("node_modules/") for s in manifest.skipped)
    assert any(s.startswith("to-etc ") for s in manifest.skipped)
    wire = json.loads(json.dumps(manifest.to_json()))
    assert FolderManifest.from_json(wire) == manifest

    target = tmp_path / "other mac" / "project"
    assert run(fs.describe(target)) == FolderState(False, "absent")
    assert fs.differences(manifest, run(fs.describe(target))) == []
    run(fs.unpack(archive, target, manifest))

    assert status(target) == status(repo)
    assert git(target, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    assert git(target, "branch", "--show-current").strip() == "feature/move"
    assert git(target, "diff", "--cached", "--binary") == git(repo, "diff", "--cached", "--binary")
    assert travelling(target) == travelling(repo)
    assert not (target / "node_modules").exists() and not (target / "debug.log").exists()
    assert (target / "notes" / "tool").stat().st_mode & 0o111
    # What the target holds now is exactly what travelled: a second unpack has nothing to do.
    state = run(fs.describe(target, against=manifest))
    assert state.head == manifest.head and state.changes == manifest.changes and state.dirty
    assert fs.same_state(manifest, state) and fs.differences(manifest, state) == []
    assert state == FolderState.from_json(json.loads(json.dumps(state.to_json())))
    run(fs.unpack(archive, target, manifest))
    assert status(target) == status(repo)
    assert [p.name for p in target.parent.iterdir()] == ["project"]  # no build folder left


def test_a_target_with_the_repository_at_an_older_commit_gets_a_thin_bundle(
    repo: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target"
    git(tmp_path, "clone", "-q", "--no-local", "-b", "main", str(repo), str(target))
    git(target, "remote", "remove", "origin")  # the target knows main only, at "first"
    old = git(target, "rev-parse", "HEAD").strip()
    have = run(fs.have_commits(target))
    assert have == [old]

    full = run(fs.pack(repo, tmp_path / "full.tgz", limit=LIMIT))
    thin = run(fs.pack(repo, tmp_path / "thin.tgz", limit=LIMIT, have=[*have, C]))
    assert thin.based_on == (old,) and thin.bundle and thin.content_bytes < full.content_bytes
    state = run(fs.describe(target))
    assert state.kind == "git" and state.head == old and not state.dirty
    assert fs.differences(thin, state) == []
    assert fs.differences(full, state) != []  # without the target's commits: not known behind

    run(fs.unpack(tmp_path / "thin.tgz", target, thin))
    assert status(target) == status(repo)
    assert git(target, "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    assert git(target, "branch", "--show-current").strip() == "feature/move"
    assert git(target, "rev-parse", "main").strip() == old  # the target's own branch is kept
    assert travelling(target) == travelling(repo)


def test_a_failed_update_puts_the_target_repository_back(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "target"
    git(tmp_path, "clone", "-q", "--no-local", "-b", "main", str(repo), str(target))
    git(target, "remote", "remove", "origin")
    old = git(target, "rev-parse", "HEAD").strip()
    manifest = run(fs.pack(repo, tmp_path / "a.tgz", limit=LIMIT, have=[old]))
    members = read_members(tmp_path / "a.tgz")
    members[fs.UNSTAGED] = (b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
                            b"@@ -1 +1 @@\n-nothing like this\n+x\n")  # fmt: skip
    bad, manifest = rewrite(tmp_path / "bad.tgz", members, manifest)
    with pytest.raises(FolderSyncError) as failed:
        run(fs.unpack(bad, target, manifest))
    assert failed.value.code == "git_failed"
    assert git(target, "rev-parse", "HEAD").strip() == old
    assert git(target, "branch", "--show-current").strip() == "main"
    assert status(target) == "" and not (target / "notes").exists()
    assert "feature/move" not in git(target, "branch")


def test_a_target_folder_that_differs_is_refused(repo: Path, tmp_path: Path) -> None:
    manifest = run(fs.pack(repo, tmp_path / "a.tgz", limit=LIMIT))
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "mine.txt").write_text("the person's\n")
    with pytest.raises(FolderSyncError) as refused:
        run(fs.unpack(tmp_path / "a.tgz", plain, manifest))
    assert refused.value.code == "folder_differs" and "not empty" in refused.value.message
    assert [p.name for p in plain.iterdir()] == ["mine.txt"]

    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", "--no-local", "-b", "main", str(repo), str(other))
    (other / "app.py").write_text("local edit\n")
    state = run(fs.describe(other))
    assert fs.differences(manifest, state) == [
        "the folder is a git repository at "
        f"{state.head[:7] if state.head else ''} on main, the session's is at "
        f"{manifest.head[:7] if manifest.head else ''} on feature/move",
        "the folder has uncommitted changes or untracked files",
    ]

    empty = tmp_path / "empty"
    empty.mkdir()
    run(fs.unpack(tmp_path / "a.tgz", empty, manifest))
    assert status(empty) == status(repo)


def test_a_folder_over_the_limit_is_refused_before_the_archive_is_written(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "data").mkdir()
    (repo / "data" / "huge.bin").write_bytes(os.urandom(300_000))
    out = tmp_path / "a.tgz"
    with pytest.raises(FolderTooBig) as refused:
        run(fs.pack(repo, out, limit=200_000))
    assert refused.value.code == "too_big" and isinstance(refused.value, CommandFailed)
    assert "200000" not in refused.value.message and "195.3 KiB" in refused.value.message
    assert "data/ 293.0 KiB" in refused.value.message and "move_max_bytes" in refused.value.message
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["src"]


def test_the_session_folder_in_a_subfolder_moves_its_whole_repository(
    repo: Path, tmp_path: Path
) -> None:
    located = run(fs.locate(repo / "notes"))
    assert located.root == repo.resolve() and located.subdir == "notes" and located.kind == "git"
    manifest = run(fs.pack(repo / "notes", tmp_path / "a.tgz", limit=LIMIT))
    assert manifest.subdir == "notes"
    root = Path(fs.tree_root(str(tmp_path / "t" / "project" / "notes"), manifest.subdir))
    assert root == tmp_path / "t" / "project"
    run(fs.unpack(tmp_path / "a.tgz", root, manifest))
    assert (root / "notes" / "todo list ✓.md").read_text() == "- move\n"


def test_a_plain_folder_round_trip(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "a b ü.txt").write_text("text\n")
    (root / "sub" / "deeper" / "data.bin").write_bytes(os.urandom(5000))
    (root / "sub" / "x.sh").write_text("#!/bin/sh\n")
    (root / "sub" / "x.sh").chmod(0o4755)  # set-uid on the source: never on the target
    (root / "link").symlink_to("sub/deeper")
    (root / "out").symlink_to("../../etc")
    (root / "node_modules" / "m").mkdir(parents=True)
    (root / "node_modules" / "m" / "i.js").write_text("1\n")
    (root / "env" / "lib").mkdir(parents=True)
    (root / "env" / "pyvenv.cfg").write_text("home = /usr\n")  # a virtualenv by any name
    (root / "nested" / ".git").mkdir(parents=True)
    (root / "nested" / ".git" / "config").write_text("[core]\n")
    (root / "nested" / "kept.txt").write_text("kept\n")
    manifest = run(fs.pack(root, tmp_path / "p.tgz", limit=LIMIT))
    assert manifest.kind == "plain" and manifest.head is None and not manifest.bundle
    assert {s.split(" ")[0] for s in manifest.skipped} == {
        "node_modules/", "env/", "nested/.git/", "out"
    }  # fmt: skip

    target = tmp_path / "far" / "plain"
    run(fs.unpack(tmp_path / "p.tgz", target, manifest))
    expected = {
        k: v
        for k, v in tree_of(root).items()
        if k.split("/")[0] not in ("node_modules", "env", "out") and ".git" not in k
    }
    assert tree_of(target) == expected
    assert (target / "empty").is_dir() and (target / "link").is_symlink()
    assert not (target / "sub" / "x.sh").stat().st_mode & 0o7000
    assert (target / "sub" / "x.sh").stat().st_mode & 0o111
    state = run(fs.describe(target, against=manifest))
    assert state.kind == "plain" and fs.differences(manifest, state) == []
    (target / "a b ü.txt").write_text("changed\n")
    assert fs.differences(manifest, run(fs.describe(target, against=manifest))) == [
        "the folder exists and is not empty (5 entries)"
    ]


# -- hostile archives ----------------------------------------------------------------------------


def read_members(archive: Path) -> dict[str, bytes]:
    """The archive's own members (bundle, patches, files.tgz) as they are stored."""
    with tarfile.open(archive) as tar:
        out = {}
        for m in tar.getmembers():
            f = tar.extractfile(m)
            assert f is not None
            out[m.name] = f.read()
        return out


def write_tar(path: Path, members: dict[str, bytes], mode: Literal["w", "w:gz"] = "w") -> Path:
    with tarfile.open(path, mode) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def rewrite(
    path: Path, members: dict[str, bytes], manifest: FolderManifest
) -> tuple[Path, FolderManifest]:
    return write_tar(path, members), sealed(path, manifest)


def sealed(path: Path, manifest: FolderManifest, **fields: Any) -> FolderManifest:
    data = path.read_bytes()
    values = {**manifest.to_json(), **fields}
    values.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
    return FolderManifest.from_json(values)


def hostile(
    tmp_path: Path, *members: tarfile.TarInfo, data: bytes = b"evil\n", outer: tuple[str, ...] = ()
) -> Path:
    """An archive whose files.tgz holds ``members`` (and ``outer`` members beside it)."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info in members:
            if info.isreg():
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return write_tar(
        tmp_path / "evil.tar", {**dict.fromkeys(outer, b"x"), fs.FILES: inner.getvalue()}
    )


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, 0o644
    return info


PLAIN = FolderManifest("plain", None, None, 10, 0, "0" * 64, content_bytes=10_000, folders=5)


@pytest.mark.parametrize(
    ("members", "outer", "why"),
    [
        ([member("../escaped")], (), "goes up a folder"),
        ([member("/tmp/escaped")], (), "absolute"),
        ([member("a/../../escaped")], (), "goes up a folder"),
        ([member("link", tarfile.SYMTYPE, "../escaped")], (), "points outside"),
        ([member("link", tarfile.SYMTYPE, "/etc")], (), "points outside"),
        ([member("d", tarfile.SYMTYPE, "."), member("d/x")], (), "not a folder"),
        ([member(".git/config")], (), ".git"),
        ([member("sub/.GIT/hooks/post-checkout")], (), ".git"),
        ([member(".g\u200cit/config")], (), ".git"),
        ([member("h", tarfile.LNKTYPE, "x")], (), "not a file, folder or symlink"),
        ([member("dev", tarfile.CHRTYPE)], (), "not a file, folder or symlink"),
        ([], ("bundle",), "unexpected member 'bundle'"),
        ([], ("elsewhere",), "unexpected member"),
        ([member("x"), member("x")], (), "same path twice"),
    ],
)
def test_a_hostile_archive_is_refused_and_leaves_nothing(
    tmp_path: Path, members: list[tarfile.TarInfo], outer: tuple[str, ...], why: str
) -> None:
    archive = hostile(tmp_path, *members, outer=outer)
    manifest = sealed(archive, PLAIN)
    target = tmp_path / "in" / "target"
    with pytest.raises(FolderSyncError) as refused:
        run(fs.unpack(archive, target, manifest))
    assert refused.value.code == "bad_archive" and why in refused.value.message
    assert not (tmp_path / "in").exists() and not (tmp_path / "escaped").exists()


def test_an_archive_with_more_than_it_declares_or_a_wrong_sha_is_refused(tmp_path: Path) -> None:
    archive = hostile(tmp_path, member("big"), data=b"x" * 5000)
    with pytest.raises(FolderSyncError, match="more bytes than its manifest"):
        run(fs.unpack(archive, tmp_path / "t", sealed(archive, PLAIN, content_bytes=5000)))
    good = sealed(archive, PLAIN, content_bytes=5000 + fs.ENTRY_BYTES)
    damaged = FolderManifest.from_json({**good.to_json(), "sha256": "1" * 64})
    with pytest.raises(FolderSyncError, match="does not match its sha256") as refused:
        run(fs.unpack(archive, tmp_path / "t", damaged))
    assert refused.value.code == "bad_archive"
    with pytest.raises(FolderSyncError, match="was cut or changed"):
        run(
            fs.unpack(
                archive, tmp_path / "t", FolderManifest.from_json({**good.to_json(), "bytes": 1})
            )
        )
    assert not (tmp_path / "t").exists()
    run(fs.unpack(archive, tmp_path / "t", good))
    assert (tmp_path / "t" / "big").read_bytes() == b"x" * 5000


def test_a_full_disk_is_said_before_anything_is_made(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = run(fs.pack(repo, tmp_path / "a.tgz", limit=LIMIT))
    monkeypatch.setattr(shutil, "disk_usage", lambda _: Usage(10**12, 10**12, 1000))
    with pytest.raises(FolderSyncError) as full:
        run(fs.unpack(tmp_path / "a.tgz", tmp_path / "t", manifest))
    assert full.value.code == "disk_full" and "1000 bytes free" in full.value.message
    assert not (tmp_path / "t").exists()


# -- pure decisions ------------------------------------------------------------------------------


def git_manifest(**fields: Any) -> FolderManifest:
    base: dict[str, Any] = {"kind": "git", "branch": "main", "head": A, "files": 0, "bytes": 1,
                            "sha256": "0" * 64}  # fmt: skip
    return FolderManifest(**{**base, **fields})


@pytest.mark.parametrize(
    ("target", "lines"),
    [
        (FolderState(False, "absent"), []),
        (FolderState(True, "plain", entries=0), []),
        (FolderState(True, "git", A, "main"), []),
        (FolderState(True, "git", A, "other"), []),  # clean at the same commit: checked out
        (FolderState(True, "git", B, "main"), []),  # B is in based_on: behind
        (FolderState(True, "git", None, "main"), []),  # a repository with no commit yet
        (
            FolderState(True, "git", C, "main"),
            [
                "the folder is a git repository at ccccccc on main, the session's is at aaaaaaa on main"
            ],
        ),
        (
            FolderState(True, "git", A, "main", dirty=True, changes="1" * 64),
            ["the folder has uncommitted changes or untracked files"],
        ),
        (
            FolderState(True, "git", C, None, dirty=True, changes="1" * 64),
            [
                "the folder is a git repository at ccccccc (detached), the session's is at aaaaaaa on main",
                "the folder has uncommitted changes or untracked files",
            ],
        ),
        (
            FolderState(True, "plain", entries=3, changes="1" * 64),
            [
                "the folder exists, is not empty (3 entries) and is not a git repository; the session's is a git repository at aaaaaaa on main"
            ],
        ),
        (FolderState(True, "plain", entries=-1), ["the folder's path is a file, not a folder"]),
    ],
)
def test_differences_of_a_git_folder(target: FolderState, lines: list[str]) -> None:
    assert fs.differences(git_manifest(based_on=(B,)), target) == lines


def test_differences_of_a_plain_folder() -> None:
    manifest = FolderManifest("plain", None, None, 2, 1, "0" * 64, changes="2" * 64)
    assert fs.differences(manifest, FolderState(True, "plain", entries=1, changes="2" * 64)) == []
    assert fs.differences(manifest, FolderState(True, "plain", entries=1, changes="3" * 64)) == [
        "the folder exists and is not empty (1 entry)"
    ]
    assert fs.differences(manifest, FolderState(True, "git", A, "main")) == [
        "the folder is a git repository at aaaaaaa on main, the session's is a plain folder"
    ]


commits = st.sampled_from([A, B, C, None])
digests = st.sampled_from(["", "1" * 64, "2" * 64])
branches = st.sampled_from(["main", "feature/x", None])


@st.composite
def states(draw: st.DrawFn) -> FolderState:
    kind = draw(st.sampled_from(["git", "plain", "absent"]))
    if kind == "absent":
        return FolderState(False, "absent")
    if kind == "plain":
        return FolderState(True, "plain", entries=draw(st.integers(-1, 3)), changes=draw(digests))
    changes = draw(digests)
    return FolderState(True, "git", draw(commits), draw(branches), bool(changes), changes, 1)


@st.composite
def manifests(draw: st.DrawFn) -> FolderManifest:
    if draw(st.booleans()):
        return FolderManifest(
            "plain", None, None, draw(st.integers(0, 3)), 1, "0" * 64, changes=draw(digests)
        )
    based_on = tuple(draw(st.lists(st.sampled_from([A, B, C]), max_size=2, unique=True)))
    return git_manifest(head=draw(st.sampled_from([A, B])), branch=draw(branches),
                        based_on=based_on, changes=draw(digests))  # fmt: skip


def may_go_there(m: FolderManifest, t: FolderState) -> bool:
    """The rule, said once more in other words: nothing on the target would be lost."""
    if t.kind == "absent" or (t.kind == "plain" and t.entries == 0):
        return True
    if m.kind == "plain":
        return t.kind == "plain" and t.changes == m.changes
    if t.kind != "git":
        return False
    if (t.head, t.branch, t.changes) == (m.head, m.branch, m.changes):
        return True
    return not t.dirty and (t.head in (None, m.head) or t.head in m.based_on)


@given(manifests(), states())
def test_differences_are_empty_exactly_when_the_folder_may_take_the_archive(
    m: FolderManifest, t: FolderState
) -> None:
    lines = fs.differences(m, t)
    assert (lines == []) == may_go_there(m, t)
    assert all(isinstance(line, str) and line for line in lines)
    assert fs.differences(m, fs.expected_state(m)) == []


@pytest.mark.parametrize(
    "change",
    [
        {"kind": "zip"},
        {"head": "xyz"},
        {"head": A.upper()},
        {"branch": "a..b"},
        {"branch": "-x"},
        {"branch": 3},
        {"files": -1},
        {"files": True},
        {"bytes": 2**60},
        {"sha256": "0" * 63},
        {"based_on": ["nope"]},
        {"based_on": [A] * 1001},
        {"subdir": "../up"},
        {"subdir": "/abs"},
        {"remotes": [["origin"]]},
        {"remotes": [["-x", "u"]]},
        {"remotes": [["origin", "u\nv"]]},
        {"bundle": "yes"},
        {"kind": "plain"},  # a plain folder has no head
    ],
)
def test_a_manifest_from_the_wire_is_range_checked(change: dict[str, Any]) -> None:
    good = git_manifest().to_json()
    assert FolderManifest.from_json(good) == git_manifest()
    with pytest.raises(ValueError):
        FolderManifest.from_json({**good, **change})


def test_a_state_from_the_wire_is_range_checked() -> None:
    bad: object
    for bad in ({"exists": True, "kind": "absent"}, {"exists": False, "kind": "git"},
                {"exists": True, "kind": "plain", "entries": -2}, [], {"exists": 1, "kind": "plain"}):  # fmt: skip
        with pytest.raises(ValueError):
            FolderState.from_json(bad)


def test_paths_links_and_names_pure() -> None:
    assert fs.check_member("a/./b//c") == "a/b/c"
    for bad in ("", "/x", "a/../b", ".git/x", "x/.Git/y", "a\x00b", ".git. /x"):
        with pytest.raises(ValueError):
            fs.check_member(bad)
    assert fs.link_stays_inside("a/b", "../c") and not fs.link_stays_inside("a/b", "../../c")
    assert fs.link_stays_inside("a", "x/../y") and not fs.link_stays_inside("a", "/x")
    assert fs.tree_root("/u/p/notes", "notes") == "/u/p" and fs.tree_root("/u/q", "notes") == "/u/q"
    assert fs.valid_branch("feature/move") and not fs.valid_branch("x.lock")
    message = fs.too_big_message(
        3 << 30, 500 << 20, [("data/", 2 << 30), ("the git history", 1 << 30)]
    )
    assert message.startswith(
        "the working folder is 3.0 GiB to copy, more than the limit of 500.0 MiB"
    )
    assert "biggest parts: data/ 2.0 GiB, the git history 1.0 GiB" in message


def test_the_skip_setting_is_the_default_list() -> None:
    from wire import config

    assert fs.skip_folders(config.load(environ={}).str("move_skip_folders")) == fs.SKIP_FOLDERS
    assert fs.skip_folders(" a, b ,,a,x/y") == ("a", "b")


def test_a_detached_head_and_a_repository_without_commits_arrive_too(
    repo: Path, tmp_path: Path
) -> None:
    git(repo, "stash", "-q", "--include-untracked")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    manifest = run(fs.pack(repo, tmp_path / "d.tar", limit=LIMIT))
    assert manifest.branch is None and not manifest.changes
    run(fs.unpack(tmp_path / "d.tar", tmp_path / "detached", manifest))
    assert git(tmp_path / "detached", "rev-parse", "HEAD") == git(repo, "rev-parse", "HEAD")
    assert git(tmp_path / "detached", "branch", "--show-current") == ""

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q", "-b", "trunk")
    (fresh / "first.txt").write_text("staged before any commit\n")
    git(fresh, "add", "first.txt")
    (fresh / "loose.txt").write_text("untracked\n")
    manifest = run(fs.pack(fresh, tmp_path / "f.tar", limit=LIMIT))
    assert manifest.head is None and manifest.branch == "trunk" and not manifest.bundle
    run(fs.unpack(tmp_path / "f.tar", tmp_path / "fresh copy", manifest))
    assert status(tmp_path / "fresh copy") == status(fresh)
    assert git(tmp_path / "fresh copy", "symbolic-ref", "--short", "HEAD").strip() == "trunk"


# -- a moved folder that would make git run a program -------------------------------------------


def folder_member(name: str) -> tarfile.TarInfo:
    return member(name, tarfile.DIRTYPE)


@pytest.mark.parametrize("top", ["", "notes/"])
def test_an_archive_laid_out_like_a_repository_is_refused(tmp_path: Path, top: str) -> None:
    """HEAD, objects/, refs/ and a config at the top of the folder (or where the session works,
    ``subdir``): git there would take them for a bare repository and run what the config says."""
    layout = [folder_member(f"{top}objects"), folder_member(f"{top}refs"),
              member(f"{top}HEAD"), member(f"{top}config")]  # fmt: skip
    archive = hostile(tmp_path, *([folder_member("notes")] if top else []), *layout)
    manifest = sealed(archive, PLAIN, subdir=top.rstrip("/"))
    target = tmp_path / "in" / "target"
    with pytest.raises(FolderSyncError) as refused:
        run(fs.unpack(archive, target, manifest))
    assert refused.value.code == "bad_archive"
    assert "laid out like a git repository" in refused.value.message
    assert not (tmp_path / "in").exists()
    # The same names deeper in the folder (a fixture of a project) are the project's.
    deeper = hostile(tmp_path, folder_member("fixtures"), folder_member("fixtures/r.git"),
                     *(member(f"fixtures/r.git/{m.name.removeprefix(top)}", m.type) for m in layout))  # fmt: skip
    run(fs.unpack(deeper, tmp_path / "fine", sealed(deeper, PLAIN)))
    assert (tmp_path / "fine" / "fixtures" / "r.git" / "HEAD").is_file()


def test_a_repository_whose_top_is_laid_out_like_one_is_refused(tmp_path: Path) -> None:
    """The same layout among the tracked files of the moved repository."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "objects").mkdir()
    (repo / "objects" / "keep").write_text("")
    (repo / "config").write_text("[core]\n\tworktree = .\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "planted")
    manifest = run(fs.pack(repo, tmp_path / "a.tar", limit=LIMIT))
    with pytest.raises(FolderSyncError) as refused:
        run(fs.unpack(tmp_path / "a.tar", tmp_path / "t" / "repo", manifest))
    assert refused.value.code == "bad_archive" and "its top" in refused.value.message
    assert not (tmp_path / "t").exists()


# -- symlinks judged where they resolve ----------------------------------------------------------


@pytest.mark.parametrize(
    ("links", "why"),
    [
        # Each link reads as inside; together they lead out.
        ([("x/b", ".."), ("a", "x/b/..")], "resolves outside"),
        ([("a", "x/b/.."), ("x/b", "..")], "resolves outside"),  # laid before what it uses
        ([("x/b", ".."), ("d", "x/b"), ("e", "d/../etc")], "resolves outside"),
        ([("x/b", "../x"), ("x/c", "b/../.."), ("f", "x/c/..")], "resolves outside"),
        ([("g", "sub/../.git/config")], "into a .git"),
        ([("x/b", ".."), ("h", "x/b/.GIT")], "into a .git"),
    ],
)
def test_a_symlink_is_judged_by_where_it_resolves(
    tmp_path: Path, links: list[tuple[str, str]], why: str
) -> None:
    members = [folder_member("x"), folder_member("sub"), member("sub/file")]
    members += [member(path, tarfile.SYMTYPE, target) for path, target in links]
    archive = hostile(tmp_path, *members)
    for path, target in links:
        assert fs.link_stays_inside(path, target)  # the text alone would pass
    with pytest.raises(FolderSyncError) as refused:
        run(fs.unpack(archive, tmp_path / "in" / "t", sealed(archive, PLAIN)))
    assert refused.value.code == "bad_archive" and why in refused.value.message
    assert not (tmp_path / "in").exists()


def test_a_chain_of_symlinks_that_stays_inside_arrives(tmp_path: Path) -> None:
    members = [folder_member("x"), folder_member("x/y"), member("x/y/file")]
    members += [member(p, tarfile.SYMTYPE, t) for p, t in
                [("a", "b"), ("b", "x/c"), ("x/c", "y/file"), ("d", "x/y/.."), ("e", "d/y")]]  # fmt: skip
    archive = hostile(tmp_path, *members)
    run(fs.unpack(archive, tmp_path / "t", sealed(archive, PLAIN)))
    assert (tmp_path / "t" / "a").read_bytes() == b"evil\n"
    assert (tmp_path / "t" / "e" / "file").read_bytes() == b"evil\n"


# -- budgets, times, modes -----------------------------------------------------------------------


def test_folders_count_against_the_declared_budgets(tmp_path: Path) -> None:
    many = hostile(tmp_path, *(folder_member(f"d{i}") for i in range(50)))
    with pytest.raises(FolderSyncError, match="more folders than its manifest"):
        run(fs.unpack(many, tmp_path / "t", sealed(many, PLAIN, folders=10)))
    deep = hostile(tmp_path, member("/".join(["d"] * 40) + "/f"))  # folders made for a path
    with pytest.raises(FolderSyncError, match="more folders than its manifest"):
        run(fs.unpack(deep, tmp_path / "t", sealed(deep, PLAIN, folders=10)))
    costly = hostile(tmp_path, *(folder_member(f"d{i}") for i in range(50)))
    with pytest.raises(FolderSyncError, match="more bytes than its manifest"):
        run(
            fs.unpack(costly, tmp_path / "t", sealed(costly, PLAIN, folders=50, content_bytes=5000))
        )
    assert not (tmp_path / "t").exists()
    run(
        fs.unpack(costly, tmp_path / "t", sealed(costly, PLAIN, folders=50, content_bytes=50 * 512))
    )
    assert len(list((tmp_path / "t").iterdir())) == 50


@pytest.mark.parametrize("when", [float("nan"), float("inf"), -1.0, 2.0**40, 1e300])
def test_a_member_with_a_time_no_file_has_is_refused(tmp_path: Path, when: float) -> None:
    info = member("f")
    info.pax_headers = {"mtime": repr(when)}
    info.mtime = 0
    archive = hostile(tmp_path, info)
    with pytest.raises(FolderSyncError) as refused:
        run(fs.unpack(archive, tmp_path / "in" / "t", sealed(archive, PLAIN)))
    assert refused.value.code == "bad_archive" and "time no file has" in refused.value.message
    assert not (tmp_path / "in").exists()


def test_an_empty_target_folder_keeps_its_mode(repo: Path, tmp_path: Path) -> None:
    for name, archive, manifest in (
        ("git", tmp_path / "g.tar", run(fs.pack(repo, tmp_path / "g.tar", limit=LIMIT))),
        ("plain", tmp_path / "p.tar", None),
    ):
        if manifest is None:
            plain = tmp_path / "plainsrc"
            plain.mkdir()
            (plain / "a.txt").write_text("a\n")
            manifest = run(fs.pack(plain, archive, limit=LIMIT))
        target = tmp_path / f"empty-{name}"
        target.mkdir(mode=0o700)
        target.chmod(0o710)
        run(fs.unpack(archive, target, manifest))
        assert stat_mode(target) == 0o710 and len(list(target.iterdir())) > 0


def stat_mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


# -- a move into an existing checkout -------------------------------------------------------------


def checkout_behind(repo: Path, tmp_path: Path) -> tuple[Path, str]:
    """A clone of ``repo`` at its first commit, as on another Mac, with the person's own
    ignored and untracked-but-ignored files."""
    target = tmp_path / "target"
    git(tmp_path, "clone", "-q", "--no-local", "-b", "main", str(repo), str(target))
    git(target, "remote", "remove", "origin")
    return target, git(target, "rev-parse", "HEAD").strip()


def snapshot(root: Path) -> dict[str, tuple[str, bool, bytes]]:
    """Every file and symlink outside .git, and the folders (for what a put-back leaves)."""
    found = tree_of(root)
    for folder, dirs, _ in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for d in dirs:
            found[(Path(folder) / d).relative_to(root).as_posix() + "/"] = ("dir", False, b"")
    return found


def test_a_move_never_overwrites_the_targets_ignored_files(repo: Path, tmp_path: Path) -> None:
    """The session's history tracks .env and config/local.json; on the target both are the
    person's own ignored files. git checkout would overwrite them without a word, and a
    put-back delete them."""
    target, old = checkout_behind(repo, tmp_path)
    (target / ".git" / "info" / "exclude").write_text(".env\nconfig/\n")  # ignored there
    (target / ".env").write_text("SECRET=the person's own\n")
    (target / "config").mkdir()
    (target / "config" / "local.json").write_text('{"mine": true}\n')
    git(repo, "stash", "-q", "--include-untracked")
    (repo / ".env").write_text("SECRET=the session's\n")
    (repo / "config").mkdir()
    (repo / "config" / "local.json").write_text('{"theirs": true}\n')
    git(repo, "add", "-f", ".env", "config/local.json")
    git(repo, "commit", "-q", "-m", "track .env")
    git(repo, "stash", "pop", "-q")
    before = snapshot(target)
    manifest = run(fs.pack(repo, tmp_path / "a.tar", limit=LIMIT, have=[old]))
    assert fs.differences(manifest, run(fs.describe(target, against=manifest))) == []
    with pytest.raises(FolderSyncError) as refused:
        run(fs.unpack(tmp_path / "a.tar", target, manifest, ledger=tmp_path / "laid.json"))
    assert refused.value.code == "folder_differs"
    assert ".env" in refused.value.message and "config/local.json" in refused.value.message
    assert snapshot(target) == before
    assert git(target, "rev-parse", "HEAD").strip() == old and not (tmp_path / "laid.json").exists()


def test_a_put_back_restores_exactly_what_was_there(repo: Path, tmp_path: Path) -> None:
    """A move into an existing checkout, failing late (its unstaged patch does not apply) or
    taken back after it was laid down: the folder is as it was, ignored files and folders
    included; what the move made is gone."""
    target, old = checkout_behind(repo, tmp_path)
    (target / "debug.log").write_text("the person's log\n")  # ignored: never touched
    (target / "build").mkdir()
    (target / "build" / "cache.o").write_text("ignored folder\n")
    before = snapshot(target)
    refs = git(target, "show-ref")
    manifest = run(fs.pack(repo, tmp_path / "a.tar", limit=LIMIT, have=[old]))
    ledger = tmp_path / "laid.json"
    run(fs.unpack(tmp_path / "a.tar", target, manifest, ledger=ledger))
    assert status(target) == status(repo) and (target / "notes" / "tool").exists()
    laid = landing.Ledger.load(ledger)
    assert laid is not None and laid.kind == "update" and "notes/tool" in laid.created
    run(landing.take_back(laid))
    assert snapshot(target) == before and git(target, "show-ref") == refs
    assert git(target, "status", "--porcelain") == "" and not ledger.exists()

    members = read_members(tmp_path / "a.tar")
    members[fs.UNSTAGED] = (b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n"
                            b"@@ -1 +1 @@\n-nothing like this\n+x\n")  # fmt: skip
    bad, bad_manifest = rewrite(tmp_path / "bad.tar", members, manifest)
    with pytest.raises(FolderSyncError) as failed:
        run(fs.unpack(bad, target, bad_manifest, ledger=ledger))
    assert failed.value.code == "git_failed"
    assert snapshot(target) == before and git(target, "show-ref") == refs
    assert not ledger.exists()


def test_an_abort_takes_back_only_what_the_move_made(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "f.txt").write_text("f\n")
    manifest = run(fs.pack(source, tmp_path / "p.tar", limit=LIMIT))
    target = tmp_path / "new" / "deeper" / "project"
    ledger = tmp_path / "laid.json"
    run(fs.unpack(tmp_path / "p.tar", target, manifest, ledger=ledger))
    laid = landing.Ledger.load(ledger)
    assert laid is not None and laid.parents == [str(target.parent), str(tmp_path / "new")]
    # Another session works in it now: nothing is removed.
    run(landing.take_back(laid, busy=[str(target / "sub")]))
    assert (target / "sub" / "f.txt").exists()
    # The folder is no longer the one the move made (replaced since): left as it is.
    laid = landing.Ledger(str(target), inode=[1, 2], parents=[str(tmp_path / "new")])
    run(landing.take_back(laid))
    assert (target / "sub" / "f.txt").exists()
    # The move's own folder, nobody in it: removed, and the folders made for it.
    st = target.stat()
    laid = landing.Ledger(str(target), inode=[st.st_dev, st.st_ino],
                          parents=[str(target.parent), str(tmp_path / "new")])  # fmt: skip
    (tmp_path / "keep").mkdir()
    run(landing.take_back(laid))
    assert not (tmp_path / "new").exists() and (tmp_path / "keep").exists()


# -- a big folder that differs is told in seconds ------------------------------------------------


def test_a_big_target_folder_that_differs_is_refused_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "src"
    source.mkdir()
    for i in range(3):
        (source / f"{i}.txt").write_text(f"{i}\n")
    manifest = run(fs.pack(source, tmp_path / "p.tar", limit=LIMIT))
    big = tmp_path / "big"
    for d in range(20):
        (big / f"d{d}").mkdir(parents=True)
        for i in range(100):
            (big / f"d{d}" / f"{i}.bin").write_bytes(b"x" * 100)
    looked: list[str] = []
    hashed: list[Path] = []
    classify, digest = fs._classify, fs._file_digest

    def noted_classify(root: Path, rel: str) -> object:
        looked.append(rel)
        return classify(root, rel)

    def noted_digest(path: Path) -> str:
        hashed.append(path)
        return digest(path)

    monkeypatch.setattr(fs, "_classify", noted_classify)
    monkeypatch.setattr(fs, "_file_digest", noted_digest)
    state = run(fs.describe(big, against=manifest))
    assert fs.differences(manifest, state) == ["the folder exists and is not empty (20 entries)"]
    assert hashed == [] and len(looked) <= 200  # one folder's files, not the 2000
    # Same count and sizes but other bytes: the sample tells them apart, still unhashed.
    same = tmp_path / "same"
    same.mkdir()
    for i in range(3):
        (same / f"{i}.txt").write_text(f"{i + 1}\n"[:2])
    state = run(fs.describe(same, against=manifest))
    assert not fs.same_state(manifest, state) and hashed == []


def test_a_move_given_up_does_no_more_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Comparing a folder with the archive (the same files: each is read) or laying it down, in
    a thread: cancelled, the thread stops at its next file and is waited for; nothing is left."""
    source = tmp_path / "src"
    source.mkdir()
    for i in range(200):
        (source / f"{i:03}.txt").write_text(f"{i}\n")
    manifest = run(fs.pack(source, tmp_path / "p.tar", limit=LIMIT))
    work = {"now": False, "done": 0}

    def slowly(real: Any) -> Any:
        def step(*args: Any) -> Any:
            work["now"] = True
            try:
                work["done"] += 1
                time.sleep(0.01)
                return real(*args)
            finally:
                work["now"] = False

        return step

    monkeypatch.setattr(fs, "_file_digest", slowly(fs._file_digest))
    monkeypatch.setattr(fs, "_extract_member", slowly(fs._extract_member))

    async def cancelled(call: Any) -> None:
        work["done"] = 0
        task = asyncio.ensure_future(call)
        while work["done"] < 5:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert work["now"] is False
        done = work["done"]
        await asyncio.sleep(0.1)
        assert work["done"] == done < 200

    run(cancelled(fs.describe(source, against=manifest)))
    monkeypatch.setattr(fs, "check_archive", lambda *_: None)  # its own hash is read at once
    run(cancelled(fs.unpack(tmp_path / "p.tar", tmp_path / "t", manifest)))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.tar", "src"]
