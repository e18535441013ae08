"""A session in a git worktree of its own (agent/worktree.py): branch names as git checks them,
where the worktree goes (Claude Code's place), the errors a person can act on, and the agent's
create_session with ``worktree`` on the in-memory seams (tests/support/agent_fakes.py)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path, PurePosixPath

import pytest
from playwright.sync_api import expect

from agent import worktree
from agent.daemon import Agent
from agent.errors import CommandFailed
from tests.support import agent_fakes as fakes
from tests.support.agent_fakes import FakeLink, FakeMux
from tests.support.relay import Account
from tests.support.web import Phone, ScriptedMac, commands

# -- branch names (pure) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["feat", "feat/ways", "fix-12", "a.b", "user/é-branch", "x" * 200, "release/v1.2"]
)
def test_good_branch_names_pass_as_they_are(name: str) -> None:
    assert worktree.check_branch(name) == name


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "empty"),
        ("x" * 201, "at most 200"),
        ("two words", "' '"),
        ("tab\there", "control character"),
        ("a~1", "'~'"),
        ("a^b", "'^'"),
        ("a:b", "':'"),
        ("what?", "'?'"),
        ("star*", "'*'"),
        ("[x", "'['"),
        ("back\\slash", "'\\\\'"),
        ("-flag", "start with '-'"),
        ("@", "'@' alone"),
        ("a@{1}", "'@{'"),
        ("a..b", "'..'"),
        ("/lead", "either end"),
        ("trail/", "either end"),
        ("a//b", "two together"),
        ("dot.", "end with '.'"),
        (".hidden", "start with '.'"),
        ("a/.b", "start with '.'"),
        ("x.lock", "'.lock'"),
        ("x.lock/y", "'.lock'"),
    ],
)
def test_bad_branch_names_say_which_rule(name: str, says: str) -> None:
    with pytest.raises(worktree.BadBranch) as caught:
        worktree.check_branch(name)
    assert caught.value.code == "bad_branch" and says in caught.value.message


def test_the_rules_agree_with_git(tmp_path: Path) -> None:
    # ("@" is left out: `check-ref-format --branch` reads it as the current branch.)
    for name in ["feat/ways", "a..b", "x.lock", "a b", "-x", "a/.b", "dot.", "ok-1", "a@{b"]:
        by_git = subprocess.run(
            ["git", "check-ref-format", "--branch", name], capture_output=True, check=False
        )
        try:
            worktree.check_branch(name)
        except worktree.BadBranch:
            ours = False
        else:
            ours = True
        assert ours == (by_git.returncode == 0), name


def test_the_plan_puts_it_where_claude_code_does() -> None:
    sid = "1234abcd-0000-4000-8000-000000000000"
    auto = worktree.plan(True, sid)
    assert auto == worktree.Plan("worktree-1234abcd", PurePosixPath(".claude/worktrees/1234abcd"))
    named = worktree.plan("feat/ways", sid)
    assert named == worktree.Plan("feat/ways", PurePosixPath(".claude/worktrees/feat-ways"))
    with pytest.raises(worktree.BadBranch):
        worktree.plan("a..b", sid)
    argv = worktree.add_argv(Path("/r/.claude/worktrees/x"), "x")
    assert argv == [
        "worktree", "add", "--no-checkout", "-b", "x", "--", "/r/.claude/worktrees/x", "HEAD"
    ]  # fmt: skip


# -- on a real repository -----------------------------------------------------------------------


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def repo(tmp_path: Path, *, commit: bool = True) -> Path:
    folder = tmp_path / "repo"
    (folder / "pkg").mkdir(parents=True)
    git(folder, "init", "-q", "-b", "main")
    (folder / "pkg" / "a.txt").write_text("a\n")
    if commit:
        git(folder, "add", ".")
        git(folder, "commit", "-q", "-m", "one")
    return folder


def test_make_adds_the_worktree_on_a_new_branch_in_the_same_subfolder(tmp_path: Path) -> None:
    folder = repo(tmp_path)
    made = asyncio.run(worktree.make(folder / "pkg", "feat/one", str(uuid.uuid4()), 10))
    root = folder / ".claude" / "worktrees" / "feat-one"
    assert made.root == root and made.branch == "feat/one" and made.repo == folder
    assert made.cwd == root / "pkg" and (root / "pkg" / "a.txt").read_text() == "a\n"
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "feat/one"
    assert str(root) in git(folder, "worktree", "list")
    asyncio.run(worktree.undo(made, 10))
    assert not root.exists() and "feat/one" not in git(folder, "branch", "--list")


def test_make_refuses_with_what_to_do(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    sid = str(uuid.uuid4())

    def refused(cwd: Path, asked: bool | str) -> CommandFailed:
        with pytest.raises(CommandFailed) as caught:
            asyncio.run(worktree.make(cwd, asked, sid, 10))
        return caught.value

    outside = refused(plain, True)
    assert outside.code == "not_a_repo" and "git repository" in outside.message
    empty = repo(tmp_path / "empty", commit=False)
    assert refused(empty, True).code == "no_commit"
    folder = repo(tmp_path)
    git(folder, "branch", "taken")
    taken = refused(folder, "taken")
    assert taken.code == "branch_exists" and "'taken' already exists" in taken.message
    (folder / ".claude" / "worktrees" / "busy").mkdir(parents=True)
    assert refused(folder, "busy").code == "worktree_exists"
    assert refused(folder, "a b").code == "bad_branch"
    assert "busy" not in git(folder, "branch", "--list")  # nothing half made


# -- the agent ----------------------------------------------------------------------------------


def with_agent(tmp_path: Path, body: Callable[[Agent, FakeMux, FakeLink], Awaitable[None]]) -> None:
    fakes.with_agent(tmp_path, lambda p: body(p.agent, p.mux, p.link))


def test_a_worktree_session_runs_in_it_and_keeps_it_when_reopened(tmp_path: Path) -> None:
    folder = repo(tmp_path)
    sid = str(uuid.uuid4())
    root = os.path.realpath(folder / ".claude" / "worktrees" / "feat-x")

    async def body(agent: Agent, mux: FakeMux, link: FakeLink) -> None:
        result = await link.command("create_session", sid, cwd=str(folder), worktree="feat/x")
        assert result.ok, result
        assert result.data["cwd"] == root and result.data["worktree"] == root
        assert result.data["branch"] == "feat/x"
        (_, cwd, argv, _) = mux.started[-1]
        assert cwd == root and "--worktree" not in argv and "-w" not in argv
        await link.command("end", sid)
        reopened = await link.command("reopen", sid)
        assert reopened.ok, reopened
        assert mux.started[-1][1] == root  # the same worktree, not a new one
        record = agent.registry.get(sid)
        assert record is not None and (record.worktree, record.branch) == (root, "feat/x")

    with_agent(tmp_path, body)
    assert "feat/x" in git(folder, "branch", "--list")


def test_a_worktree_session_that_cannot_start_takes_its_worktree_back(tmp_path: Path) -> None:
    folder = repo(tmp_path)
    sid = str(uuid.uuid4())

    async def body(agent: Agent, mux: FakeMux, link: FakeLink) -> None:
        mux.fail_launch = "no server running"
        failed = await link.command("create_session", sid, cwd=str(folder), worktree=True)
        assert (failed.ok, failed.code) == (False, "launch_failed")
        taken = await link.command("create_session", sid, cwd=str(folder), worktree="a b")
        assert (taken.ok, taken.code) == (False, "bad_branch")
        assert agent.registry.get(sid) is None

    with_agent(tmp_path, body)
    assert git(folder, "branch", "--list").split() == ["*", "main"]
    assert not (folder / ".claude" / "worktrees" / sid.split("-")[0]).exists()


# -- the page -----------------------------------------------------------------------------------


def test_the_page_starts_a_worktree_session_forks_it_and_deletes_the_fork(
    phone: Phone, scripted: ScriptedMac, account: Account
) -> None:
    tree = "/Users/ada/src/app/.claude/worktrees/feat-page"
    scripted.answers["create_session"] = {"cwd": tree, "branch": "feat/page"}
    page = phone.login(account).open("/")
    page.get_by_role("link", name="+ New session").click()
    page.fill("#ns-cwd", "/Users/ada/src/app")
    expect(page.locator("#ns-branch")).to_be_hidden()
    page.get_by_text("In a new git worktree").click()
    page.fill("#ns-branch", "feat/page")
    page.get_by_role("button", name="Start").click()
    (create,) = commands(scripted, "create_session")
    assert create.args["worktree"] == "feat/page" and create.args["cwd"] == "/Users/ada/src/app"
    parent = create.session_id
    expect(page).to_have_url(re.compile(f"#/s/{parent}$"))
    expect(page.locator(".session-meta")).to_contain_text("⎇ feat/page")

    page.get_by_role("button", name="Session actions").click()
    page.get_by_role("button", name="Fork", exact=True).click()
    forked = commands(scripted, "create_session", 2)[1]
    assert forked.args["fork_of"] == parent and forked.session_id != parent
    expect(page).to_have_url(re.compile(f"#/s/{forked.session_id}$"))
    expect(page.locator(".session-meta")).to_contain_text("fork of")

    page.get_by_role("button", name="Session actions").click()
    page.get_by_role("button", name="Delete", exact=True).click()
    dialog = page.locator("dialog")
    expect(dialog).to_contain_text("Claude Code's own transcript on the Mac is kept")
    dialog.get_by_role("button", name="Delete", exact=True).click()
    (deleted,) = commands(scripted, "delete_history")
    assert deleted.session_id == forked.session_id
    expect(page).to_have_url(re.compile(r"#/$"))
    expect(page.locator(f'a[href="#/s/{forked.session_id}"]')).to_have_count(0)
