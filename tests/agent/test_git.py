"""Every git the agent runs (agent/git.py): no program a repository names runs, and no folder
laid out like a repository is taken for one. Real repositories in tmp_path with a config that
names a program for every key that can (in .git/config, in a file it includes, in one it
includes on a branch), driven through every operation the agent performs on a folder: the
Changes view, a worktree, packing a move, describing and unpacking into an existing checkout,
taking a move back. Each program, run, would leave a marker file named after its key."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import textwrap
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import foldersync, git, landing, workspace, worktree
from agent.errors import CommandFailed

LIMITS = workspace.Limits(file_bytes=10_000, entries=100, diff_bytes=100_000, git_timeout=30.0)
LIMIT = 50 * 1024 * 1024

# Every key of git's config that names a program (git 2.39 … 2.55), each planted with a script
# that leaves a marker named after it; a driver's keys go with a .gitattributes naming it.
PROGRAM_KEYS = (
    "core.fsmonitor",
    "core.sshCommand",
    "core.gitProxy",
    "core.askPass",
    "core.editor",
    "core.pager",
    "core.alternateRefsCommand",
    "sequence.editor",
    "diff.external",
    "diff.evil.command",
    "diff.evil.textconv",
    "filter.evil.clean",
    "filter.evil.smudge",
    "filter.evil.process",
    "merge.evil.driver",
    "credential.helper",
    "gpg.program",
    "gpg.ssh.program",
    "uploadpack.packObjectsHook",
    "remote.origin.uploadpack",
    "remote.origin.receivepack",
    "pager.status",
    "pager.diff",
    "pager.log",
    "hook.evil.command",  # with hook.evil.event (git 2.54+)
    "alias.status",
    "difftool.evil.cmd",
    "mergetool.evil.cmd",
    "trailer.evil.command",
)
HOOKS = (
    "post-checkout",
    "post-index-change",
    "reference-transaction",
    "post-rewrite",
    "pre-auto-gc",
    "post-merge",
    "pre-commit",
    "fsmonitor-watchman",
)


def sh(folder: Path, *args: str) -> str:
    """The tests' own git (not the agent's), for setting repositories up."""
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout


def run(coro: object) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


@dataclass
class Plant:
    marks: Path  # markers land here
    scripts: Path

    def script(self, name: str) -> str:
        path = self.scripts / name
        path.write_text(f'#!/bin/sh\ncat >/dev/null 2>&1 </dev/null\ntouch "{self.marks}/{name}"\n')
        path.chmod(0o755)
        return str(path)

    def config(self) -> str:
        """Config text naming a program for every key of PROGRAM_KEYS."""
        lines: dict[str, list[str]] = {}
        for key in PROGRAM_KEYS:
            section, _, rest = key.partition(".")
            name, _, var = rest.rpartition(".")
            header = f'[{section} "{name}"]' if name else f"[{section}]"
            value = f"!{self.script(key)}" if section == "alias" else self.script(key)
            lines.setdefault(header, []).append(f"\t{var} = {value}")
        lines['[hook "evil"]'].append("\tevent = post-checkout")
        lines['[filter "evil"]'].append("\trequired = true")
        lines['[remote "origin"]'] = [*lines['[remote "origin"]'], "\turl = /nowhere/at/all"]
        lines["[log]"] = ["\tshowSignature = true"]
        lines["[core]"].append(f"\thooksPath = {self.scripts / 'hooks'}")
        return "\n".join(f"{h}\n" + "\n".join(body) for h, body in lines.items()) + "\n"

    def hooks(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for hook in HOOKS:
            target = folder / hook
            shutil.copy(self.script(f"hook-{hook}"), target)
            target.chmod(0o755)

    def found(self) -> list[str]:
        return sorted(p.name for p in self.marks.iterdir())


@pytest.fixture
def plant(tmp_path: Path) -> Plant:
    marks, scripts = tmp_path / "marks", tmp_path / "scripts"
    marks.mkdir()
    scripts.mkdir()
    made = Plant(marks, scripts)
    made.hooks(scripts / "hooks")
    return made


ATTRIBUTES = "* filter=evil diff=evil merge=evil\n"


def project(tmp_path: Path) -> tuple[Path, Path, str]:
    """A repository with history, staged, unstaged and untracked changes and attributes naming
    the evil drivers; a clone of it at its first commit (an existing checkout on another Mac);
    and that first commit."""
    repo = tmp_path / "src" / "project"
    repo.mkdir(parents=True)
    sh(repo, "init", "-q", "-b", "main")
    (repo / ".gitattributes").write_text(ATTRIBUTES)
    (repo / "tracked.txt").write_text("one\n")
    sh(repo, "add", ".")
    sh(repo, "commit", "-q", "-m", "first")
    first = sh(repo, "rev-parse", "HEAD").strip()
    target = tmp_path / "mac2" / "project"
    sh(tmp_path, "clone", "-q", "--no-local", str(repo), str(target))
    sh(repo, "switch", "-q", "-c", "feature/x")
    (repo / "tracked.txt").write_text("two\n")
    (repo / "added.txt").write_text("added\n")
    sh(repo, "add", ".")
    sh(repo, "commit", "-q", "-m", "second")
    (repo / "tracked.txt").write_text("three\n")
    (repo / "staged.txt").write_text("staged\n")
    sh(repo, "add", "staged.txt")
    (repo / "tracked.txt").write_text("four\n")  # unstaged over the staged
    (repo / "untracked.txt").write_text("untracked\n")
    return repo, target, first


def planted_in(repo: Path, plant: Plant, where: str) -> None:
    """The program-naming config in ``repo``'s .git/config itself, or in a file it includes
    (always, or on any branch), and hooks in its own hooks folder."""
    text = plant.config()
    config = repo / ".git" / "config"
    if where == "config":
        config.write_text(config.read_text() + text)
    else:
        included = repo.parent / f"{repo.name}-{where}.inc"
        included.write_text(text)
        header = "[include]" if where == "include" else '[includeIf "onbranch:**"]'
        config.write_text(config.read_text() + f"{header}\n\tpath = {included}\n")
    plant.hooks(repo / ".git" / "hooks")


async def every_operation(repo: Path, target: Path, first: str, tmp_path: Path) -> None:
    """What the agent does with a folder: the page's Changes view and diffs, a worktree made
    and removed, a move packed on the source, probed, described, unpacked into an existing
    checkout and taken back, a new folder unpacked."""
    status = await workspace.git_status(repo, LIMITS)
    assert {e["path"] for e in status["entries"]} >= {"tracked.txt", "untracked.txt"}
    for path in ("tracked.txt", "staged.txt", "untracked.txt"):
        await workspace.git_diff(repo, path, LIMITS)
    made = await worktree.make(repo, "wt/one", str(uuid.uuid4()), 30)
    assert (made.root / "tracked.txt").read_text() == "two\n"
    await worktree.undo(made, 30)
    archive = tmp_path / "move.tar"
    manifest = await foldersync.pack(repo, archive, limit=LIMIT, have=[first])
    assert manifest.bundle and manifest.staged and manifest.unstaged and manifest.files == 1
    assert await foldersync.have_commits(target) == [first]
    state = await foldersync.describe(target, against=manifest)
    assert state.kind == "git" and foldersync.differences(manifest, state) == []
    ledger = tmp_path / "laid.json"
    await foldersync.unpack(archive, target, manifest, ledger=ledger)
    assert (target / "untracked.txt").read_text() == "untracked\n"
    assert (target / "tracked.txt").read_text() == "four\n"
    laid = landing.Ledger.load(ledger)
    assert laid is not None and laid.kind == "update"
    await landing.take_back(laid)
    assert (target / "tracked.txt").read_text() == "one\n"
    assert not (target / "untracked.txt").exists()
    fresh = tmp_path / "mac3" / "project"  # a new folder takes the whole history
    whole = await foldersync.pack(repo, tmp_path / "whole.tar", limit=LIMIT)
    await foldersync.unpack(tmp_path / "whole.tar", fresh, whole)
    assert (fresh / "tracked.txt").read_text() == "four\n"


@pytest.mark.parametrize("where", ["config", "include", "onbranch"])
def test_no_program_a_repository_names_runs_through_any_operation(
    tmp_path: Path, plant: Plant, where: str
) -> None:
    repo, target, first = project(tmp_path)
    planted_in(repo, plant, where)
    planted_in(target, plant, where)
    run(every_operation(repo, target, first, tmp_path))
    assert plant.found() == []


def test_the_planted_config_runs_programs_in_a_plain_git(tmp_path: Path, plant: Plant) -> None:
    """The control: the same repository, with git run as a person would, does run them — the
    test above would see it."""
    repo, _, _ = project(tmp_path)
    planted_in(repo, plant, "include")
    (repo / "tracked.txt").write_text("five\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    subprocess.run(["git", "status"], cwd=repo, env=env, capture_output=True, check=False)
    subprocess.run(["git", "diff"], cwd=repo, env=env, capture_output=True, check=False)
    found = plant.found()
    assert "core.fsmonitor" in found and "filter.evil.process" in found


# -- a folder laid out like a repository --------------------------------------------------------


def bare_layout(folder: Path, plant: Plant) -> None:
    """HEAD, objects/, refs/ and a config saying the folder is its own work tree, with a
    program for git status to run."""
    (folder / "objects").mkdir(parents=True, exist_ok=True)
    (folder / "refs").mkdir(exist_ok=True)
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(
        textwrap.dedent(f"""\
        [core]
        \trepositoryformatversion = 0
        \tbare = false
        \tworktree = .
        \tfsmonitor = {plant.script("planted.fsmonitor")}
        """)
    )
    (folder / "notes.txt").write_text("hello\n")


def test_a_planted_repository_layout_is_never_taken_for_a_repository(
    tmp_path: Path, plant: Plant, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "moved"
    bare_layout(folder, plant)
    with pytest.raises(CommandFailed) as refused:
        run(workspace.git_status(folder, LIMITS))
    assert refused.value.code == "unsafe_repository" and str(folder) in refused.value.message
    for call in (foldersync.describe(folder), foldersync.locate(folder)):
        with pytest.raises(CommandFailed) as refused:
            run(call)
        assert refused.value.code == "unsafe_repository"
    with pytest.raises(CommandFailed):
        run(worktree.make(folder, "x", str(uuid.uuid4()), 10))
    # Below a real repository's top too: git would take the planted folder first.
    repo = tmp_path / "repo"
    repo.mkdir()
    sh(repo, "init", "-q")
    bare_layout(repo / "sub", plant)
    with pytest.raises(CommandFailed) as refused:
        run(workspace.git_status(repo / "sub", LIMITS))
    assert refused.value.code == "unsafe_repository"
    # Without the agent's own check, git itself refuses it (safe.bareRepository=explicit).
    monkeypatch.setattr(git, "planted", lambda cwd, ceiling=None: None)
    result = run(git.run(folder, ["status"], timeout=10))
    assert isinstance(result, git.GitResult) and result.code != 0
    assert "bare repository" in result.err
    assert plant.found() == []
    # And git as a person runs it would have: what the layout is for.
    subprocess.run(["git", "status"], cwd=folder, capture_output=True, check=False)
    assert plant.found() == ["planted.fsmonitor"]


@pytest.mark.parametrize(
    ("names", "looks"),
    [
        (["HEAD", "objects", "refs"], True),
        (["HEAD", "config"], True),
        (["head", "Objects"], True),  # macOS's file system: any case
        (["HE\u200cAD", "refs"], True),  # and an ignorable code point dropped
        (["HEAD", "commondir"], True),
        (["HEAD", "README.md", "src"], False),
        (["objects", "refs", "config"], False),
        ([".git", "src"], False),
    ],
)
def test_what_looks_like_a_repositorys_own_folder(names: list[str], looks: bool) -> None:
    assert git.looks_like_git_dir(names) is looks


def test_planted_stops_at_the_folder_holding_dot_git(tmp_path: Path, plant: Plant) -> None:
    bare_layout(tmp_path / "outer", plant)
    inner = tmp_path / "outer" / "repo" / "deep"
    inner.mkdir(parents=True)
    assert git.planted(inner) == Path(os.path.realpath(tmp_path / "outer"))
    (tmp_path / "outer" / "repo" / ".git").mkdir()
    assert git.planted(inner) is None  # git finds repo/.git before the planted folder
    assert git.planted(tmp_path / "outer", ceiling=tmp_path / "outer") is None


# -- the pure parts ------------------------------------------------------------------------------


def test_neutralising_turns_off_each_named_driver_and_hook() -> None:
    keys = [
        "filter.lfs.clean", "filter.a=b'c.smudge", "diff.x.textconv", "merge.m.driver",
        "hook.lint.command", "remote.origin.url", "credential.https://h.helper", "user.name",
        "core.fsmonitor",
    ]  # fmt: skip
    pairs = dict(git.neutralising(keys))
    assert pairs["core.fsmonitor"] == "false" and pairs["core.hooksPath"] == os.devnull
    assert pairs["safe.bareRepository"] == "explicit" and pairs["protocol.allow"] == "never"
    for key in ("filter.lfs.clean", "filter.lfs.smudge", "filter.lfs.process"):
        assert pairs[key] == ""
    assert pairs["filter.a=b'c.process"] == "" and pairs["filter.a=b'c.required"] == "false"
    assert pairs["diff.x.textconv"] == pairs["diff.x.command"] == ""
    assert pairs["merge.m.driver"] == "" and pairs["hook.lint.enabled"] == "false"
    assert pairs["hook.lint.event"] == "" and pairs["remote.origin.uploadpack"] == ""
    assert pairs["credential.https://h.helper"] == ""
    assert not any(k.startswith("user.") for k in pairs)


names = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\n"), min_size=1,
    max_size=20,
)  # fmt: skip


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(name=names, value=names)
def test_parameters_reach_git_as_one_key_whatever_the_name_holds(
    tmp_path_factory: pytest.TempPathFactory, name: str, value: str
) -> None:
    """A driver's name from a repository's config (quotes, '=', '!', spaces, any script) is
    one key to git: its override cannot be split into another key."""
    key = f"filter.{name}.clean"
    env = git.environment()
    env["GIT_CONFIG_PARAMETERS"] = git.parameters([(key, value)])
    listed = subprocess.run(
        ["git", "config", "--list", "-z"], cwd=tmp_path_factory.getbasetemp(), env=env,
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    entries = [e.split(b"\n", 1) for e in listed.split(b"\x00") if e]
    mine = [(k.decode(), v.decode()) for k, v in entries if k.startswith(b"filter.")]
    assert mine == [(f"filter.{name}.clean", value)]


def test_hardened_flags_of_each_subcommand() -> None:
    assert git.hardened(["diff", "--cached"]) == [
        "diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "--cached"
    ]  # fmt: skip
    assert git.hardened(["status", "-z"]) == ["status", "--ignore-submodules=dirty", "-z"]
    assert git.hardened(["rev-parse", "HEAD"]) == ["rev-parse", "HEAD"]
    with pytest.raises(ValueError):
        git.hardened(["status", "--ignore-submodules=none"])


def test_the_environment_carries_nothing_of_the_agents_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in {
        "GIT_DIR": "/elsewhere", "GIT_EXTERNAL_DIFF": "/bin/evil", "GIT_SSH_COMMAND": "evil",
        "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='/bin/evil'", "SSH_ASKPASS": "/bin/evil",
        "LD_PRELOAD": "/evil.so",
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    env = git.environment(ceiling=tmp_path)
    assert "GIT_DIR" not in env and "GIT_EXTERNAL_DIFF" not in env and "SSH_ASKPASS" not in env
    assert "LD_PRELOAD" not in env and "GIT_SSH_COMMAND" not in env
    assert "/bin/evil" not in env["GIT_CONFIG_PARAMETERS"]
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert env["GIT_CEILING_DIRECTORIES"] == str(tmp_path) and env["GIT_ALLOW_PROTOCOL"] == ""
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_OPTIONAL_LOCKS"] == "0"


def test_git_reaches_no_other_repository(tmp_path: Path) -> None:
    """No transport at all (the agent reads bundles from files): not a local path, not file://,
    not ext:: (a command), however the repository's config rewrites URLs."""
    other = tmp_path / "other"
    other.mkdir()
    sh(other, "init", "-q")
    here = tmp_path / "here"
    here.mkdir()
    sh(here, "init", "-q")
    marker = tmp_path / "ran"
    (here / ".git" / "config").write_text(
        (here / ".git" / "config").read_text()
        + f'[url "ext::sh -c touch% {marker}% #"]\n\tinsteadOf = nowhere:\n'
    )
    for url in (str(other), f"file://{other}", "nowhere:x", f"ext::sh -c touch% {marker}"):
        result = run(git.run(here, ["ls-remote", url], timeout=10))
        assert isinstance(result, git.GitResult) and result.code != 0
        assert "not allowed" in result.err, (url, result.err)
    assert not marker.exists()


# -- bounds ---------------------------------------------------------------------------------------


def test_output_past_the_limit_is_cut_and_git_stopped(tmp_path: Path) -> None:
    sh(tmp_path, "init", "-q")
    (tmp_path / "big.txt").write_text("x\n" * 100_000)
    sh(tmp_path, "add", ".")
    result = run(git.run(tmp_path, ["diff", "--cached"], timeout=10, limit=1000))
    assert isinstance(result, git.GitResult)
    assert result.cut and result.code == 0 and len(result.out) == 1000
    fed = run(git.run(tmp_path, ["hash-object", "--stdin"], timeout=10, stdin=b"hello\n"))
    assert isinstance(fed, git.GitResult)
    assert fed.out.strip() == b"ce013625030ba8dba906f756967f9e9ca394464a"  # git's "hello\n"


def test_a_cancelled_git_is_stopped_with_what_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A move given up stops its git and the processes git started (a pack-objects …)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    child = tmp_path / "child.pid"
    (bin_dir / "git").write_text(
        '#!/bin/sh\nfor a in "$@"; do [ "$a" = config ] && exit 0; done\n'
        f'sleep 30 &\necho $! > "{child}"\nwait\n'
    )
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    async def go() -> None:
        task = asyncio.ensure_future(git.run(tmp_path, ["status"], timeout=30))
        for _ in range(200):
            if child.exists() and child.read_text().strip():
                break
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert not alive(int(child.read_text()))


def alive(pid: int) -> bool:
    """The process runs (a zombie waiting to be reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
