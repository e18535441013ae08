"""Whether this Mac's Claude Code trusts a folder (it will not ask), and which of a folder's files
are Claude Code project files that can run programs: what a move may not lay down or change in
a folder Claude Code already trusts (agent/moving.py), since nobody would be asked.

**Trust**, as Claude Code 2.1.332 decides it (captured from the real binary, each case run in a
throw-away HOME: it asks, or starts without asking). It reads ``~/.claude.json`` (never written
here) and trusts the folder it starts in when:

* ``CLAUDE_CODE_SANDBOXED`` is set in its environment (every folder);
* ``projects[<git root>].hasTrustDialogAccepted`` is true, the git root being the nearest folder
  at or above the session's folder that holds a ``.git`` (a folder, a file, even an empty one);
* or ``projects[<p>].hasTrustDialogAccepted`` is true for the folder or a folder above it, ``p``
  going up no further than the git root (a folder above the repository does not count); out of
  any repository, up to ``/``. The home folder counts when recorded, as any folder.

Keys are exact real paths: the folder's real path (a symlink to a trusted folder is trusted, a
trusted symlink is not), no trailing ``/``; a value counts when JavaScript would take it for true.

**Project files that run programs** (from 2.1.332's own strings and Claude Code's settings
documentation): ``.claude/settings.json`` and ``.claude/settings.local.json`` (``hooks``,
``statusLine``, ``apiKeyHelper``, ``awsAuthRefresh``, ``otelHeadersHelper``, ``env``, plugins and
``enableAllProjectMcpServers``), ``.mcp.json`` (MCP servers, commands it starts), and the rest of
a ``.claude`` folder (its ``hooks/`` scripts, ``agents/``, ``skills/`` and ``commands/`` whose
front matter names hooks and MCP servers, ``scheduled_tasks.json``…), a ``.claude-plugin``
folder and ``.lsp.json`` (a folder that is a plugin). Any such name anywhere in the folder,
compared as macOS compares names.

Pure, apart from :func:`read_config` and :func:`git_root_of` (they read; nothing here writes).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from agent.errors import CommandFailed
from agent.git import fold

PROGRAM_FOLDERS = frozenset({".claude", ".claude-plugin"})
PROGRAM_FILES = frozenset({".mcp.json", ".lsp.json"})
SANDBOXED = "CLAUDE_CODE_SANDBOXED"
CONFIG_FILE = ".claude.json"  # beside ~/.claude: Claude Code's own record of trusted folders
MAX_NAMED = 5  # files a refusal names


def runs_programs(rel: str) -> bool:
    """``rel`` (a path inside a folder, ``/``-separated) is a Claude Code project file that can
    run programs, or lies in a folder of them. Pure."""
    parts = [fold(p).rstrip(". ") for p in rel.split("/") if p not in ("", ".")]
    if not parts:
        return False
    return any(p in PROGRAM_FOLDERS for p in parts) or parts[-1] in PROGRAM_FILES


def _accepted(value: Any) -> bool:
    """``hasTrustDialogAccepted`` as Claude Code's JavaScript reads it: truthy."""
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def trusted_by(
    config: Mapping[str, Any], folder: str, git_root: str | None, env: Mapping[str, str]
) -> str | None:
    """Why Claude Code, started in ``folder`` (a real path), would trust it without asking — the
    trusted path, or the variable — or None when it would ask. ``git_root``: the repository
    ``folder`` is in when Claude Code starts (None: none). ``config``: ``~/.claude.json``. Pure."""
    if env.get(SANDBOXED):
        return f"{SANDBOXED} is set"
    projects = config.get("projects")
    if not isinstance(projects, Mapping):
        return None

    def accepted(path: str) -> bool:
        entry = projects.get(path)
        return isinstance(entry, Mapping) and _accepted(entry.get("hasTrustDialogAccepted"))

    if git_root is not None and accepted(git_root):
        return git_root
    here = PurePosixPath(folder)
    top = PurePosixPath(git_root) if git_root is not None else None
    for candidate in (here, *here.parents):
        if top is not None and candidate != top and top not in candidate.parents:
            return None  # above the repository: Claude Code does not look there
        if accepted(str(candidate)):
            return str(candidate)
    return None


def read_config(claude_home: Path) -> dict[str, Any]:
    """Claude Code's ``~/.claude.json`` (beside ``claude_home``, ``~/.claude``), read only; ``{}``
    when it is missing or unreadable (Claude Code then trusts no folder by record)."""
    try:
        data = json.loads((claude_home.parent / CONFIG_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def git_root_of(folder: str) -> str | None:
    """The nearest folder at or above ``folder`` (a real path, made or not) holding a ``.git`` of
    any kind, as Claude Code finds the repository it starts in; None when there is none."""
    for candidate in (Path(folder), *Path(folder).parents):
        if os.path.lexists(candidate / ".git"):
            return str(candidate)
    return None


def digest(root: Path, rel: str) -> str | None:
    """What ``rel`` in ``root`` holds, as a move compares it: the sha256 of a file's bytes, or of
    a symlink's target; None when it is neither."""
    path = root / rel
    try:
        if path.is_symlink():
            return hashlib.sha256(b"symlink\x00" + os.fsencode(os.readlink(path))).hexdigest()
        if path.is_file():
            h = hashlib.sha256()
            with path.open("rb") as handle:
                while block := handle.read(1 << 20):
                    h.update(block)
            return h.hexdigest()
    except OSError:
        return None
    return None


def program_files(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """The Claude Code project files among ``paths`` (inside ``root``) that can run programs,
    by path: what each holds (:func:`digest`)."""
    found: dict[str, str] = {}
    for rel in paths:
        if runs_programs(rel) and (held := digest(root, rel)) is not None:
            found[rel] = held
    return found


def changed(declared: Mapping[str, str], here: Mapping[str, str]) -> list[str]:
    """The project files a move would lay down, change or remove: those ``declared`` (what the
    folder will hold) and ``here`` (what it holds) disagree on. Pure."""
    return sorted(p for p in {*declared, *here} if declared.get(p) != here.get(p))


def refusal(folder: str, trusted: str, files: list[str]) -> CommandFailed:
    """``trusted_folder_settings``: the move would lay down or change ``files`` in ``folder``,
    which this Mac's Claude Code trusts (``trusted``: why)."""
    named = ", ".join(files[:MAX_NAMED]) + (" …" if len(files) > MAX_NAMED else "")
    return CommandFailed(
        "trusted_folder_settings",
        f"the folder {folder} is one this Mac's Claude Code already trusts ({trusted}), so it "
        f"would not ask before it runs what the folder's project settings say, and the move "
        f"would lay down or change {named} (Claude Code project files that can run programs: "
        "hooks, a status line, MCP servers). Nothing was laid down. Move the session into "
        "another folder: Claude Code asks there whether to trust it, and the phone shows you",
    )
