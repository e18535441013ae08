"""A session in a git worktree of its own, on a new branch.

Where it goes is where Claude Code's own ``--worktree NAME`` puts one (2.1.332):
``<repository top>/.claude/worktrees/<name>``. The agent makes it itself with ``git worktree
add -b BRANCH``, and launches claude in it like any folder, rather than passing ``--worktree``
to claude: Claude Code ties its worktree to that one process — an ``/exit`` removes an
unchanged worktree and its branch, a changed one asks "Keep worktree / Remove worktree" — while
a session of the bridge keeps its worktree through reopen and revive, and its branch is the name
the person gave (Claude Code names it ``worktree-<name>``). Ending or deleting the session
leaves the worktree and its branch alone: they are the person's work.

The pure parts take plain values: :func:`check_branch` (git's rules for a branch name, as
``git check-ref-format --branch`` applies them), :func:`plan` (the branch and folder for what was
asked) and :func:`add_argv`; the shell around them asks git where the repository is and whether
the branch exists, and runs ``git worktree add`` — through agent/git.py, like every git of the
agent. The worktree is added without a checkout and checked out by a second git run in it: a
repository's config may include files only on some branch (``includeIf "onbranch:…"``), and the
new branch's config is read, and made unable to start programs, only by a git run on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from agent import git
from agent.errors import CommandFailed
from agent.git import Deadline
from wire import protocol

WORKTREES = PurePosixPath(".claude") / "worktrees"  # under the repository's top, as Claude Code
MAX_BRANCH_CHARS = protocol.MAX_BRANCH_CHARS
AUTO_PREFIX = "worktree-"  # Claude Code's prefix of a worktree's branch
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


class BadBranch(CommandFailed):
    def __init__(self, message: str) -> None:
        super().__init__("bad_branch", message)


def check_branch(name: str) -> str:
    """``name`` as a new branch's name, or :class:`BadBranch` saying which rule it breaks
    (git's check-ref-format rules for ``refs/heads/<name>``). Pure."""
    if not name:
        raise BadBranch("a branch name cannot be empty")
    if len(name) > MAX_BRANCH_CHARS:
        raise BadBranch(f"a branch name is at most {MAX_BRANCH_CHARS} characters")
    bad = _FORBIDDEN.search(name)
    if bad:
        shown = repr(bad.group()) if bad.group().isprintable() else "a control character"
        raise BadBranch(
            f"{name[:80]!r} is not a valid branch name: it cannot hold {shown} "
            "(nor spaces, ~ ^ : ? * [ \\)"
        )
    if name.startswith("-"):
        raise BadBranch(f"{name[:80]!r} is not a valid branch name: it cannot start with '-'")
    if name == "@" or "@{" in name:
        raise BadBranch(f"{name[:80]!r} is not a valid branch name: '@' alone and '@{{' are git's")
    if ".." in name:
        raise BadBranch(f"{name[:80]!r} is not a valid branch name: it cannot hold '..'")
    if name.startswith("/") or name.endswith("/") or "//" in name:
        raise BadBranch(
            f"{name[:80]!r} is not a valid branch name: no '/' at either end, nor two together"
        )
    if name.endswith("."):
        raise BadBranch(f"{name[:80]!r} is not a valid branch name: it cannot end with '.'")
    for part in name.split("/"):
        if part.startswith("."):
            raise BadBranch(
                f"{name[:80]!r} is not a valid branch name: no part of it can start with '.'"
            )
        if part.endswith(".lock"):
            raise BadBranch(
                f"{name[:80]!r} is not a valid branch name: no part of it can end with '.lock'"
            )
    return name


@dataclass(frozen=True)
class Plan:
    branch: str
    folder: PurePosixPath  # relative to the repository's top


def plan(asked: bool | str, session_id: str) -> Plan:
    """The branch and the worktree's folder for ``worktree: true`` (a name of the session's
    id, on ``worktree-<name>`` as Claude Code names it) or ``worktree: "branch"`` (that branch;
    its folder is the name with each ``/`` as ``-``). Pure."""
    if asked is True:
        name = session_id.split("-")[0]
        return Plan(AUTO_PREFIX + name, WORKTREES / name)
    if not isinstance(asked, str):
        raise BadBranch("worktree is true or a branch name")
    branch = check_branch(asked.strip())
    return Plan(branch, WORKTREES / branch.replace("/", "-"))


def add_argv(path: Path, branch: str) -> list[str]:
    """git's arguments to add the worktree at ``path`` on a new ``branch`` from HEAD, its files
    not checked out yet (``checkout_argv`` does, run in it). Pure."""
    return ["worktree", "add", "--no-checkout", "-b", branch, "--", str(path), "HEAD"]


def checkout_argv() -> list[str]:
    """git's arguments, run in a worktree added without a checkout, to check out its files."""
    return ["reset", "-q", "--hard", "HEAD", "--"]


async def run_git(cwd: Path, args: list[str], timeout: float, limit: int) -> git.GitResult:
    return await git.run(cwd, args, timeout=timeout, limit=limit)


@dataclass(frozen=True)
class Made:
    repo: Path  # the repository's top
    root: Path  # the worktree's top
    cwd: Path  # where the session runs: the same subfolder as asked, when the worktree has it
    branch: str


async def make(cwd: Path, asked: bool | str, session_id: str, timeout: float) -> Made:
    """Add the worktree for a session started in ``cwd``; clear errors for a folder outside git,
    a repository without a commit, a branch or folder that exists."""
    chosen = plan(asked, session_id)
    deadline = Deadline(timeout)
    top = await run_git(cwd, ["rev-parse", "--show-toplevel"], deadline.left(), 65536)
    if top.code != 0:
        if "not a git repository" in top.err.lower():
            raise CommandFailed(
                "not_a_repo",
                f"{cwd} is not in a git repository: a worktree needs one (git init, or drop "
                "the worktree option)",
            )
        raise CommandFailed("git_failed", top.err[:300] or f"git exited {top.code}")
    root = Path(top.out.decode("utf-8", "replace").strip())
    head = await run_git(root, ["rev-parse", "--verify", "--quiet", "HEAD"], deadline.left(), 4096)
    if head.code != 0:
        raise CommandFailed(
            "no_commit", f"the repository at {root} has no commit yet: commit once, then try again"
        )
    exists = await run_git(
        root,
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{chosen.branch}"],
        deadline.left(),
        4096,
    )
    if exists.code == 0:
        raise CommandFailed(
            "branch_exists",
            f"the branch {chosen.branch!r} already exists in {root}: choose another name",
        )
    path = root / chosen.folder
    if path.exists():
        raise CommandFailed(
            "worktree_exists", f"{path} already exists: choose another name for the worktree"
        )
    added = await run_git(root, add_argv(path, chosen.branch), deadline.left(), 65536)
    if added.code != 0:
        raise CommandFailed(
            "git_failed", added.err[:300] or f"git worktree add exited {added.code}"
        )
    made = Made(repo=root, root=path, cwd=path, branch=chosen.branch)
    try:
        filled = await run_git(path, checkout_argv(), deadline.left(), 65536)
    except BaseException:
        await undo(made, timeout)
        raise
    if filled.code != 0:
        await undo(made, timeout)
        raise CommandFailed("git_failed", filled.err[:300] or f"git reset exited {filled.code}")
    return Made(repo=root, root=path, cwd=same_place(cwd, root, path), branch=chosen.branch)


def same_place(cwd: Path, repo: Path, worktree: Path) -> Path:
    """The folder of the worktree that is where ``cwd`` is in the repository (a session started
    in ``repo/pkg`` runs in ``worktree/pkg``), or the worktree's top when it has no such folder."""
    try:
        inside = cwd.resolve().relative_to(repo.resolve())
    except ValueError:
        return worktree
    here = worktree / inside
    return here if here.is_dir() else worktree


async def undo(made: Made, timeout: float) -> None:
    """Remove a worktree made for a session that never started (and its new branch)."""
    deadline = Deadline(timeout)
    await run_git(
        made.repo, ["worktree", "remove", "--force", str(made.root)], deadline.left(), 4096
    )
    await run_git(made.repo, ["branch", "-D", "--", made.branch], deadline.left(), 4096)
