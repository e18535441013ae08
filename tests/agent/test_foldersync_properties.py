"""The unpacker of a moved folder (agent/foldersync.py unpack) against random archives
(Hypothesis): trees of files, folders, symlink chains, hard links and odd names — unicode,
dot names, very long names, names differing only in case or in their Unicode form. Whatever
the archive, nothing lands outside the folder, and it either unpacks exactly (the tree is the
archive's) or is refused with nothing left behind."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import posixpath
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent import foldersync as fs
from agent.foldersync import FolderManifest, FolderSyncError

NAMES = [
    "a", "A", "b", "src", "README.md", ".hidden", "..dots", "x.", "é", "e\u0301", "ü ü",
    "名前", "🙂", "a b", "-dash", "~tilde", "%20", "x" * 200, "y" * 255,
]  # fmt: skip
HOSTILE_NAMES = [
    "..", ".", ".git", ".GIT", ".g\u200cit", ".git.", "z" * 256, "HEAD", "objects", "refs",
    "config", "",
]  # fmt: skip
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@dataclass(frozen=True)
class Member:
    path: str
    kind: str  # file, dir, link, hardlink, device
    data: bytes = b""
    target: str = ""
    executable: bool = False
    mtime: float = 1_700_000_000.0


# -- archives ------------------------------------------------------------------------------------


def archive_of(members: list[Member], where: Path) -> tuple[Path, FolderManifest]:
    """A plain folder's archive holding ``members`` in that order, and a manifest whose budgets
    are exactly what they need (so only their content can get them refused)."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for m in members:
            info = tarfile.TarInfo(m.path)
            info.pax_headers = {"mtime": repr(m.mtime)}  # any time, NaN too, as a source may
            info.mode = 0o755 if m.executable else 0o644
            if m.kind == "file":
                info.size = len(m.data)
                tar.addfile(info, io.BytesIO(m.data))
                continue
            info.type = {
                "dir": tarfile.DIRTYPE, "link": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE,
                "device": tarfile.CHRTYPE,
            }[m.kind]  # fmt: skip
            info.linkname = m.target
            tar.addfile(info)
    outer = io.BytesIO()
    with tarfile.open(fileobj=outer, mode="w") as tar:
        info = tarfile.TarInfo(fs.FILES)
        info.size = len(inner.getvalue())
        tar.addfile(info, io.BytesIO(inner.getvalue()))
    archive = where / "a.tar"
    archive.write_bytes(outer.getvalue())
    files = [m for m in members if m.kind != "dir"]
    folders = {
        "/".join(parts[:i])
        for m in members
        for parts in [m.path.split("/")]
        for i in range(1, len(parts) + (m.kind == "dir"))
    }
    content = sum(len(m.data) + len(os.fsencode(m.target)) for m in files)
    manifest = FolderManifest(
        "plain", None, None, len(files), len(outer.getvalue()),
        hashlib.sha256(outer.getvalue()).hexdigest(),
        content_bytes=content + fs.ENTRY_BYTES * (len(files) + len(folders)),
        folders=len(folders),
    )  # fmt: skip
    return archive, manifest


# -- what a folder holds -------------------------------------------------------------------------


def tree(root: Path) -> dict[str, tuple[str, bytes, bool]]:
    """Every entry under ``root``: its kind and bytes (a file's), target (a symlink's), bit."""
    found: dict[str, tuple[str, bytes, bool]] = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = ("link", os.readlink(path).encode(), False)
            elif path.is_dir():
                found[rel] = ("dir", b"", False)
            else:
                found[rel] = ("file", path.read_bytes(), bool(path.stat().st_mode & 0o100))
    return found


def expected(members: list[Member]) -> dict[str, tuple[str, bytes, bool]]:
    """The tree ``members`` make when laid down as they are."""
    found: dict[str, tuple[str, bytes, bool]] = {}
    for m in members:
        parts = [p for p in m.path.split("/") if p not in ("", ".")]  # as check_member has it
        path = "/".join(parts)
        for i in range(1, len(parts)):
            found["/".join(parts[:i])] = ("dir", b"", False)
        if m.kind == "dir":
            found[path] = ("dir", b"", False)
        elif m.kind == "link":
            found[path] = ("link", m.target.encode(), False)
        else:
            found[path] = ("file", m.data, m.executable)
    return found


@contextmanager
def scene() -> Iterator[tuple[Path, Path]]:
    """A place with a folder to unpack into (``in/target``, made by the unpack) and, beside
    it, someone else's files a hostile archive would like to reach."""
    base = Path(tempfile.mkdtemp(prefix="unpack-"))
    try:
        outside = base / "outside"
        (outside / "folder").mkdir(parents=True)
        (outside / "victim").write_text("not the archive's\n")
        yield base, base / "in" / "target"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def lay_down(members: list[Member]) -> None:
    with scene() as (base, target):
        archive, manifest = archive_of(members, base)
        before = tree(base / "outside")
        try:
            asyncio.run(fs.unpack(archive, target, manifest))
        except FolderSyncError as exc:
            assert exc.code == "bad_archive", exc.message
            assert sorted(p.name for p in base.iterdir()) == ["a.tar", "outside"]
        else:
            assert tree(target) == expected(members)
            assert sorted(p.name for p in base.iterdir()) == ["a.tar", "in", "outside"]
            assert [p.name for p in (base / "in").iterdir()] == ["target"]
            for rel, (kind, _, _) in tree(target).items():
                if kind == "link":  # every symlink resolves inside, outside any .git
                    real = os.path.realpath(target / rel)
                    assert real == str(target) or real.startswith(f"{target}/"), rel
                    assert ".git" not in Path(real).relative_to(target).parts
        assert tree(base / "outside") == before


# -- strategies ----------------------------------------------------------------------------------


@st.composite
def benign(draw: st.DrawFn) -> list[Member]:
    """A folder a person could have: folders, files, and symlinks (chains too) to its own
    entries, written as relative paths from where each symlink is."""
    folders = sorted(
        {
            "/".join(p)
            for p in draw(
                st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3), max_size=6)
            )
        }
    )
    members: list[Member] = [Member(f, "dir") for f in folders]
    taken = set(folders) | {"/".join(f.split("/")[:i]) for f in folders for i in range(1, 4)}
    places = ["", *taken]
    for _ in range(draw(st.integers(0, 8))):
        where = draw(st.sampled_from(sorted(places)))
        name = draw(st.sampled_from(NAMES))
        path = posixpath.join(where, name) if where else name
        if path in taken:
            continue
        taken.add(path)
        if draw(st.booleans()) or len(members) == len(folders):
            data = draw(st.binary(max_size=64))
            members.append(Member(path, "file", data, executable=draw(st.booleans())))
        else:
            aim = draw(st.sampled_from([m.path for m in members]))
            start = posixpath.dirname(path) or "."
            members.append(Member(path, "link", target=posixpath.relpath(aim, start)))
    return draw(st.permutations(members)) if draw(st.booleans()) else members


@SETTINGS
@given(benign())
def test_a_folder_a_person_could_have_unpacks_exactly(members: list[Member]) -> None:
    with scene() as (base, target):
        archive, manifest = archive_of(members, base)
        asyncio.run(fs.unpack(archive, target, manifest))
        assert tree(target) == expected(members)
        assert sorted(p.name for p in base.iterdir()) == ["a.tar", "in", "outside"]


def rarely(draw: st.DrawFn, common: list[str], rare: list[str], odds: int = 10) -> str:
    """Mostly one of ``common``; one time in ``odds`` one of ``rare``."""
    return draw(st.sampled_from(rare if draw(st.integers(1, odds)) == 1 else common))


def hostile_member(draw: st.DrawFn, taken: list[str]) -> Member:
    """One member a hostile source might add: mostly an ordinary one (a symlink whose target
    climbs, or runs through other symlinks, most of all), now and then an impossible one."""
    known = [n for t in taken for n in t.split("/")][-6:] or ["a"]
    parts = [rarely(draw, NAMES + known, HOSTILE_NAMES) for _ in range(draw(st.integers(1, 3)))]
    path = ("/" if draw(st.integers(0, 39)) == 0 else "") + "/".join(parts)
    kind = rarely(draw, ["file", "dir", "link", "link"], ["hardlink", "device"], 30)
    pieces = [
        draw(st.sampled_from(["..", "..", ".", *known, *taken[-3:], ".git", "outside"]))
        for _ in range(draw(st.integers(1, 4)))
    ]
    target = ("/" if draw(st.integers(0, 39)) == 0 else "") + "/".join(pieces)
    mtime = 1_700_000_000.0
    if draw(st.integers(0, 39)) == 0:
        mtime = draw(st.sampled_from([float("nan"), float("inf"), -5.0, 2.0**40]))
    return Member(path, kind, draw(st.binary(max_size=16)), target, draw(st.booleans()), mtime)


@st.composite
def hostile(draw: st.DrawFn) -> list[Member]:
    members = draw(benign())
    taken = [m.path for m in members]
    added = [hostile_member(draw, taken) for _ in range(draw(st.integers(1, 5)))]
    if draw(st.booleans()):  # a chain: a symlink that climbs one folder, another through it
        folder = draw(st.sampled_from([m.path for m in members if m.kind == "dir"] or ["x"]))
        climbs = "/".join([".."] * draw(st.integers(0, 3)))
        added += [
            Member(f"{folder}/up", "link", target=".."),
            Member("via", "link", target=f"{folder}/up/{climbs}".rstrip("/")),
        ]
    for made in added:
        members.insert(draw(st.integers(0, len(members))), made)
    return members


@SETTINGS
@given(hostile())
def test_any_archive_unpacks_exactly_or_is_refused_leaving_nothing(
    members: list[Member],
) -> None:
    lay_down(members)


def test_the_known_escapes_are_each_refused() -> None:
    """The shapes the strategies above reach at random, each once for certain."""
    escapes = [
        [Member("x", "dir"), Member("x/b", "link", target=".."),
         Member("a", "link", target="x/b/../outside/victim")],
        [Member("l", "link", target="."), Member("l/f", "file", b"through a link")],
        [Member("h", "hardlink", target="/etc/passwd")],
        [Member("../outside/victim", "file", b"up")],
        [Member("HEAD", "file", b"ref: refs/heads/main\n"), Member("objects", "dir"),
         Member("refs", "dir")],
        [Member("f", "file", b"x", mtime=float("nan"))],
        [Member("A", "file", b"1"), Member("A", "file", b"2")],
    ]  # fmt: skip
    for members in escapes:
        with scene() as (base, target):
            archive, manifest = archive_of(members, base)
            try:
                asyncio.run(fs.unpack(archive, target, manifest))
            except FolderSyncError as exc:
                assert exc.code == "bad_archive"
            else:
                raise AssertionError(f"unpacked: {members}")
            assert sorted(p.name for p in base.iterdir()) == ["a.tar", "outside"]
            assert (base / "outside" / "victim").read_text() == "not the archive's\n"
