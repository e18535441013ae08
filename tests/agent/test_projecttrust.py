"""agent/projecttrust.py: whether this Mac's Claude Code trusts a folder (the cases captured from
2.1.332, tests/e2e/test_project_trust.py runs each against the real binary), and which files of
a folder are Claude Code project files that can run programs."""

from __future__ import annotations

import hashlib
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agent.foldersync import FolderManifest
from agent.projecttrust import (
    changed,
    digest,
    git_root_of,
    program_files,
    read_config,
    refusal,
    runs_programs,
    trusted_by,
)


def config(*trusted: str, value: Any = True) -> dict[str, Any]:
    return {"projects": {p: {"hasTrustDialogAccepted": value} for p in trusted}}


# (folder, git root, trusted paths, what 2.1.332 does: the path it goes by, or None = it asks)
CAPTURED = [
    ("/w/x", None, ["/w/x"], "/w/x"),  # the folder itself
    ("/w/x", None, [], None),
    ("/w/x/sub", None, ["/w/x"], "/w/x"),  # a folder above, out of any repository
    ("/w/x/a/b", None, ["/w/x"], "/w/x"),
    ("/w/x/a/b", None, ["/"], "/"),
    ("/w/repo/sub", "/w/repo", ["/w/repo"], "/w/repo"),  # the repository's top
    ("/w/p/repo/sub", "/w/p/repo", ["/w/p"], None),  # above the repository: not counted
    ("/w/p/repo", "/w/p/repo", ["/w/p"], None),
    ("/w/repo", "/w/repo", ["/w/repo/sub"], None),  # a folder below: not counted
    ("/w/repo/a/b", "/w/repo", ["/w/repo/a"], "/w/repo/a"),  # between it and the top
    ("/w/p/repo/sub", "/w/p/repo", ["/w/p/repo/sub"], "/w/p/repo/sub"),
    ("/home/ada", None, ["/home/ada"], "/home/ada"),  # the home folder, when recorded
    ("/home/ada/proj", None, ["/home/ada"], "/home/ada"),
    ("/w/x", None, ["/w/x/"], None),  # keys are exact: no trailing slash
]


@pytest.mark.parametrize(("folder", "top", "trusted", "by"), CAPTURED)
def test_trust_is_read_as_claude_code_reads_it(
    folder: str, top: str | None, trusted: list[str], by: str | None
) -> None:
    assert trusted_by(config(*trusted), folder, top, {}) == by


def test_the_sandbox_variable_trusts_every_folder_and_values_count_as_javascript_reads_them() -> (
    None
):
    assert trusted_by({}, "/w/x", None, {"CLAUDE_CODE_SANDBOXED": "1"}) is not None
    assert trusted_by({}, "/w/x", None, {"CLAUDE_CODE_SANDBOXED": ""}) is None
    for value, counts in [(1, True), ("yes", True), ([], True), ({}, True), (0, False),
                          ("", False), (None, False), (False, False), (float("nan"), False)]:  # fmt: skip
        assert (trusted_by(config("/w", value=value), "/w", None, {}) is not None) is counts
    broken: dict[str, Any]
    for broken in ({}, {"projects": []}, {"projects": {"/w": "yes"}}, {"projects": {"/w": None}}):
        assert trusted_by(broken, "/w", None, {}) is None


def test_the_config_is_read_beside_claudes_home_and_a_repository_by_any_dot_git(
    tmp_path: Path,
) -> None:
    home = tmp_path / ".claude"
    assert read_config(home) == {}
    (tmp_path / ".claude.json").write_text("{not json")
    assert read_config(home) == {}
    (tmp_path / ".claude.json").write_text('{"projects": {"/w": {}}}')
    assert read_config(home) == {"projects": {"/w": {}}}
    deep = tmp_path / "a" / "b" / "c"
    assert git_root_of(str(deep)) is None  # not made yet: its parents are looked at
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / ".git").write_text("gitdir: /elsewhere\n")  # a .git file counts
    assert git_root_of(str(deep)) == str(tmp_path / "a")
    (tmp_path / "a" / "b" / ".git").mkdir()  # an empty .git folder too, the nearest wins
    assert git_root_of(str(deep)) == str(tmp_path / "a" / "b")


@pytest.mark.parametrize(
    ("path", "runs"),
    [
        (".claude/settings.json", True),
        (".claude/settings.local.json", True),
        (".claude/hooks/format.sh", True),
        (".claude/agents/reviewer.md", True),
        (".claude", True),  # a symlink named so
        ("sub/dir/.claude/skills/x/SKILL.md", True),
        (".mcp.json", True),
        ("tools/.mcp.json", True),
        (".lsp.json", True),
        (".claude-plugin/plugin.json", True),
        (".Claude/Settings.json", True),  # as macOS compares names
        (".CLAUDE\u200c/settings.json", True),
        (".MCP.JSON", True),
        ("app.py", False),
        ("claude/settings.json", False),
        (".claudeignore", False),
        ("docs/.claude.md", False),
        ("mcp.json", False),
        ("CLAUDE.md", False),  # instructions, not a program
    ],
)
def test_which_files_can_run_programs(path: str, runs: bool) -> None:
    assert runs_programs(path) is runs


NAME = st.text(string.ascii_letters + string.digits + "._-", min_size=1, max_size=12)


@settings(derandomize=True, database=None, max_examples=200)
@given(
    st.lists(NAME, min_size=1, max_size=5),
    st.integers(0, 5),
    st.sampled_from([".claude", ".Claude", ".CLAUDE", ".claude-plugin"]),
)
def test_a_claude_folder_anywhere_on_a_path_makes_it_a_program_file(
    parts: list[str], at: int, spelling: str
) -> None:
    plain = [p for p in parts if not runs_programs(p)]  # names that are none of them
    assume(plain)
    assert not runs_programs("/".join(plain))
    assert runs_programs("/".join([*plain[:at], spelling, *plain[at:]]))


def test_what_a_move_changes_among_them_and_the_refusal(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{}")
    (tmp_path / "app.py").write_text("1")
    (tmp_path / ".mcp.json").symlink_to("app.py")
    found = program_files(tmp_path, [".claude/settings.json", "app.py", ".mcp.json", "gone.json"])
    assert found == {
        ".claude/settings.json": hashlib.sha256(b"{}").hexdigest(),
        ".mcp.json": hashlib.sha256(b"symlink\x00app.py").hexdigest(),
    }
    assert digest(tmp_path, ".claude") is None  # a folder holds nothing to compare
    same = dict(found)
    assert changed(found, same) == []
    assert changed({**found, ".claude/settings.json": "0" * 64}, same) == [".claude/settings.json"]
    assert changed({}, same) == [".claude/settings.json", ".mcp.json"]  # removed: a change
    error = refusal("/w/shop", "/w", [f".claude/f{n}" for n in range(7)])
    assert error.code == "trusted_folder_settings"
    assert ".claude/f4 …" in error.message and ".claude/f5" not in error.message
    assert "another folder" in error.message


def test_a_manifests_claude_files_are_checked_as_any_path_from_another_mac() -> None:
    good = {"kind": "plain", "files": 0, "bytes": 0, "sha256": "0" * 64}
    ok = FolderManifest.from_json({**good, "claude_files": [[".claude/settings.json", "a" * 64]]})
    assert ok.claude_files == ((".claude/settings.json", "a" * 64),)
    assert FolderManifest.from_json(ok.to_json()) == ok
    for bad in (
        [["../.claude/settings.json", "a" * 64]],
        [["/etc/passwd", "a" * 64]],
        [[".claude/settings.json", "nothex"]],
        [[".claude/settings.json"]],
        [[".git/config", "a" * 64]],
        [[".claude/x", "a" * 64]] * 1001,
    ):
        with pytest.raises(ValueError):
            FolderManifest.from_json({**good, "claude_files": bad})
