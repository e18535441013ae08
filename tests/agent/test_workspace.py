"""A session's folder as the page reads it (agent/workspace.py): confined, limited, real git."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from agent import workspace
from agent.errors import CommandFailed
from agent.git import environment

LIMITS = workspace.Limits(file_bytes=1000, entries=50, diff_bytes=4000, git_timeout=10.0)


def code_of(call: object) -> str:
    assert isinstance(call, pytest.ExceptionInfo)
    assert isinstance(call.value, CommandFailed)
    return call.value.code


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "README.md").write_text("# project\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    return root


@pytest.mark.parametrize(
    "path",
    ["..", "../secret.txt", "src/../../secret.txt", "/etc/passwd", "~/x", "a\x00b", "\\etc", "C:x"],
)
def test_paths_that_leave_the_folder_are_refused(folder: Path, path: str) -> None:
    with pytest.raises(CommandFailed) as refused:
        workspace.read_text(folder, path, LIMITS)
    assert code_of(refused) == "bad_path"
    with pytest.raises(CommandFailed):
        workspace.list_folder(folder, path, LIMITS)


def test_a_symlink_out_is_named_but_never_followed(folder: Path) -> None:
    (folder / "leak").symlink_to(folder.parent / "secret.txt")
    (folder / "leakdir").symlink_to(folder.parent)
    (folder / "inner").symlink_to(folder / "src")
    listed = {e["name"]: e for e in workspace.list_folder(folder, "", LIMITS)["entries"]}
    assert listed["leak"]["kind"] == "outside" and listed["leak"]["link"] is True
    assert listed["leakdir"]["kind"] == "outside"
    assert listed["inner"]["kind"] == "dir"  # a link that stays inside is followed
    for path in ("leak", "leakdir/secret.txt"):
        with pytest.raises(CommandFailed) as refused:
            workspace.read_text(folder, path, LIMITS)
        assert code_of(refused) == "outside_folder"
    with pytest.raises(CommandFailed) as refused:
        workspace.list_folder(folder, "leakdir", LIMITS)
    assert code_of(refused) == "outside_folder"
    assert workspace.list_folder(folder, "inner", LIMITS)["entries"][0]["name"] == "app.py"


def test_a_folder_lists_folders_first_and_hides_git(folder: Path) -> None:
    (folder / ".git").mkdir()
    (folder / "b.txt").write_text("b")
    listed = workspace.list_folder(folder, "", LIMITS)
    assert [e["name"] for e in listed["entries"]] == ["src", "b.txt", "README.md"]
    assert listed["entries"][1] == {"name": "b.txt", "path": "b.txt", "kind": "file", "size": 1}
    assert workspace.list_folder(folder, "./src/", LIMITS)["entries"][0]["path"] == "src/app.py"


def test_a_big_folder_is_cut_at_the_entry_limit(folder: Path) -> None:
    for i in range(60):
        (folder / f"f{i:02}").write_text("")
    listed = workspace.list_folder(folder, "", LIMITS)
    assert len(listed["entries"]) == 50 and listed["total"] == 62 and listed["truncated"]


def test_a_huge_file_is_cut_and_a_binary_one_never_shown(folder: Path) -> None:
    (folder / "big.txt").write_text("é" * 3000)  # 6000 bytes; the cut falls inside a character
    big = workspace.read_text(folder, "big.txt", LIMITS)
    assert big["truncated"] and big["size"] == 6000 and big["binary"] is False
    assert big["text"] == "é" * 500
    (folder / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    pic = workspace.read_text(folder, "pic.png", LIMITS)
    assert pic["binary"] is True and pic["text"] is None and pic["size"] == 16
    (folder / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    assert workspace.read_text(folder, "latin1.txt", LIMITS)["binary"] is True


def test_missing_files_and_folders_say_so(folder: Path) -> None:
    for call, path, code in [
        (workspace.read_text, "nope.txt", "not_found"),
        (workspace.read_text, "src", "not_a_file"),
        (workspace.read_text, "", "not_a_file"),
        (workspace.list_folder, "README.md", "not_a_folder"),
        (workspace.list_folder, "gone", "not_found"),
    ]:
        with pytest.raises(CommandFailed) as refused:
            call(folder, path, LIMITS)
        assert code_of(refused) == code, (path, code)


def test_a_fifo_is_listed_but_never_read(folder: Path) -> None:
    os.mkfifo(folder / "pipe")
    listed = {e["name"]: e for e in workspace.list_folder(folder, "", LIMITS)["entries"]}
    assert listed["pipe"]["kind"] == "other"
    with pytest.raises(CommandFailed) as refused:
        workspace.read_text(folder, "pipe", LIMITS)  # would block if it were opened
    assert code_of(refused) == "not_a_file"


def test_a_name_that_is_not_utf8_is_listed_with_a_mark(folder: Path) -> None:
    os.close(os.open(os.fsencode(folder) + b"/caf\xe9.txt", os.O_CREAT | os.O_WRONLY, 0o600))
    entry = next(
        e for e in workspace.list_folder(folder, "", LIMITS)["entries"] if "caf" in e["name"]
    )
    assert entry["name"] == "caf\ufffd.txt" and entry["bad_name"] is True


def git(root: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


@pytest.fixture
def repo(folder: Path) -> Path:
    git(folder, "init", "-q", "-b", "main")
    (folder / "old.txt").write_text("old\n")
    (folder / "pic.bin").write_bytes(b"\x00\x01")
    git(folder, "add", ".")
    git(folder, "commit", "-q", "-m", "first")
    (folder / "src" / "app.py").write_text("print('hello')\nprint('more')\n")  # unstaged
    (folder / "README.md").write_text("# project\n\nstaged line\n")
    git(folder, "add", "README.md")  # staged
    (folder / "README.md").write_text("# project\n\nstaged line\nunstaged line\n")  # and more
    git(folder, "mv", "old.txt", "new.txt")  # renamed
    (folder / "notes").mkdir()
    (folder / "notes" / "todo.md").write_text("- one\n")  # untracked
    (folder / "pic.bin").write_bytes(b"\x00\x02")
    return folder


def test_git_status_lists_staged_unstaged_untracked_and_renamed(repo: Path) -> None:
    status = asyncio.run(workspace.git_status(repo, LIMITS))
    by_path = {e["path"]: e for e in status["entries"]}
    assert status["branch"] == "main" and not status["truncated"]
    assert by_path["src/app.py"] == {
        "path": "src/app.py", "staged": None, "unstaged": "modified", "untracked": False
    }  # fmt: skip
    assert by_path["README.md"]["staged"] == "modified"
    assert by_path["README.md"]["unstaged"] == "modified"
    assert by_path["new.txt"]["staged"] == "renamed" and by_path["new.txt"]["from"] == "old.txt"
    assert by_path["notes/todo.md"]["untracked"] is True


def test_a_deleted_file_is_listed_and_its_diff_shows_what_went(repo: Path) -> None:
    (repo / "pic.bin").unlink()
    (repo / "src" / "app.py").unlink()
    status = asyncio.run(workspace.git_status(repo, LIMITS))
    assert {e["path"]: e["unstaged"] for e in status["entries"]}["src/app.py"] == "deleted"
    gone = asyncio.run(workspace.git_diff(repo, "src/app.py", LIMITS))
    assert "-print('hi')" in gone["unstaged"] and "deleted file mode" in gone["unstaged"]


def test_git_status_from_a_subfolder_names_paths_from_there(repo: Path) -> None:
    status = asyncio.run(workspace.git_status(repo / "src", LIMITS))
    assert [e["path"] for e in status["entries"]] == ["app.py"]


def test_git_diff_of_each_kind_of_change(repo: Path) -> None:
    readme = asyncio.run(workspace.git_diff(repo, "README.md", LIMITS))
    assert "+staged line" in readme["staged"] and "+unstaged line" not in readme["staged"]
    assert "+unstaged line" in readme["unstaged"] and not readme["untracked"]
    todo = asyncio.run(workspace.git_diff(repo, "notes/todo.md", LIMITS))
    assert todo["untracked"] and "+- one" in todo["unstaged"] and todo["staged"] == ""
    pic = asyncio.run(workspace.git_diff(repo, "pic.bin", LIMITS))
    assert pic["binary"] is True and "\x00" not in pic["unstaged"]
    (repo / "src" / "app.py").write_text("x = 1\n" * 2000)
    big = asyncio.run(workspace.git_diff(repo, "src/app.py", LIMITS))
    assert big["truncated"] and len(big["unstaged"].encode()) <= LIMITS.diff_bytes


def test_git_diff_is_confined_like_files(repo: Path) -> None:
    (repo / "leak").symlink_to(repo.parent / "secret.txt")
    for path, code in [("../secret.txt", "bad_path"), ("leak", "outside_folder")]:
        with pytest.raises(CommandFailed) as refused:
            asyncio.run(workspace.git_diff(repo, path, LIMITS))
        assert code_of(refused) == code
    # Pathspec magic is read literally: ":(top)" is a file name, not the repository's top.
    assert asyncio.run(workspace.git_diff(repo / "src", ":(top)README.md", LIMITS))["staged"] == ""


def test_a_folder_outside_any_repository_is_not_a_repo(folder: Path) -> None:
    with pytest.raises(CommandFailed) as refused:
        asyncio.run(workspace.git_status(folder, LIMITS))
    assert code_of(refused) == "not_a_repo"
    with pytest.raises(CommandFailed) as refused:
        asyncio.run(workspace.git_diff(folder, "README.md", LIMITS))
    assert code_of(refused) == "not_a_repo"


def test_git_never_waits_past_its_timeout(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow = repo.parent / "bin"
    slow.mkdir()
    (slow / "git").write_text("#!/bin/sh\nsleep 5\n")
    (slow / "git").chmod(0o700)
    monkeypatch.setenv("PATH", f"{slow}:{os.environ['PATH']}")
    quick = workspace.Limits(git_timeout=0.3)
    with pytest.raises(CommandFailed) as refused:
        asyncio.run(workspace.git_status(repo, quick))
    assert code_of(refused) == "git_timeout"


def test_git_runs_without_optional_locks_or_pager() -> None:
    env = environment()
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and env["GIT_PAGER"] == "cat"
    assert env["GIT_LITERAL_PATHSPECS"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"


def test_status_parsing_is_pure() -> None:
    raw = b"R  new.txt\x00old.txt\x00 M a.py\x00?? caf\xe9\x00UU both.txt\x00!! ignored\x00"
    parsed = workspace.parse_status(raw, prefix="")
    assert [e["path"] for e in parsed] == ["new.txt", "a.py", "caf\ufffd", "both.txt"]
    assert parsed[0]["from"] == "old.txt" and parsed[2]["bad_name"] is True
    assert parsed[3]["staged"] == parsed[3]["unstaged"] == "conflict"


def test_recent_folders_are_distinct_newest_first() -> None:
    pairs = [("/a", 1.0), ("/b", 5.0), ("/a", 9.0), ("/c", 3.0), ("", 10.0)]
    assert workspace.recent_folders(pairs, 2) == ["/a", "/b"]


@pytest.mark.parametrize(
    "path", [".git/config", ".GIT/config", ".g\u200cit/config", "src/../.git/HEAD", "togit", ".git"]
)
def test_gits_own_folder_is_neither_listed_nor_read(repo: Path, path: str) -> None:
    """Its config and hooks are not the page's: .git in any spelling macOS takes for it, and a
    symlink into it, are refused; the folder's listing leaves them out."""
    (repo / ".GIT").mkdir(exist_ok=True)  # what macOS would find as .git
    (repo / ".GIT" / "config").write_text("[core]\n")
    (repo / ".g\u200cit").mkdir(exist_ok=True)
    (repo / ".g\u200cit" / "config").write_text("[core]\n")
    (repo / "togit").symlink_to(".git/config")
    with pytest.raises(CommandFailed) as refused:
        workspace.read_text(repo, path, LIMITS)
    assert code_of(refused) == "bad_path"
    names = {e["name"]: e["kind"] for e in workspace.list_folder(repo, "", LIMITS)["entries"]}
    assert not any(n.casefold().startswith((".git", ".g\u200cit")) for n in names)
    assert names["togit"] == "outside"


def test_git_is_not_run_in_a_folder_laid_out_like_a_repository(tmp_path: Path) -> None:
    """HEAD, objects/, refs/ and a config outside a .git: git would take the folder for a bare
    repository and run what its config says (here, for git status, core.fsmonitor)."""
    marker = tmp_path / "ran"
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\ntouch "{marker}"\n')
    script.chmod(0o755)
    folder = tmp_path / "moved"
    (folder / "objects").mkdir(parents=True)
    (folder / "refs").mkdir()
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(
        f"[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n"
        f"\tfsmonitor = {script}\n"
    )
    for call in (workspace.git_status(folder, LIMITS), workspace.git_diff(folder, "HEAD", LIMITS)):
        with pytest.raises(CommandFailed) as refused:
            asyncio.run(call)
        assert code_of(refused) == "unsafe_repository"
    assert not marker.exists()
