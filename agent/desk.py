"""The Mac's Claude Code conversations, as the phone lists them: newest first, per folder.

Pure: the agent's shell lists the files and reads a bounded part of each; this module decides
what they say. No I/O, no clock. Claude Code 2.1.332 keeps (tests/fixtures/claude/2.1.332/desk/,
FINDINGS.md §6):

* ``~/.claude/projects/<slug>/<conversation id>.jsonl``: one conversation per file, named by its
  id. The slug is lossy (every character but ``A-Za-z0-9`` becomes ``-``, and a folder longer
  than 200 characters is cut and hashed), so the folder is read from the lines' ``cwd``, never
  from the slug.
* ``~/.claude/sessions/<pid>.json`` while a claude runs: ``pid``, ``sessionId``, ``cwd``,
  ``status`` (``idle`` / ``busy`` / ``waiting``), ``name``. It is removed when that claude ends
  (but a crash leaves it): a conversation is **live** when such a file names it and its pid is
  in ``live_pids`` (checking a pid is I/O, the caller's).

What the shell gives, per transcript (:class:`TranscriptFile`): the folder and file name, size,
mtime, and its first and last complete lines: the first ``HEAD_BYTES`` and the last
``TAIL_BYTES`` of the file (a line cut by either edge left out). Titles and mode lines are
written again after every turn, so the tail holds the latest title and the last activity; the
head holds the first prompt.

What :func:`list_conversations` returns for each conversation (:class:`Conversation`):

* ``title``: the latest ``custom-title`` (``claude -n`` / ``/rename``) beats the latest
  ``ai-title`` beats the latest ``summary`` beats the gist of the first typed prompt (its first
  line, at most ``MAX_TITLE_CHARS``, cut at a word); ``title_source`` says which;
* ``cwd`` (None when no line read says it), ``git_branch`` (the latest; ``HEAD`` outside a git
  repository or on a detached head, as Claude Code writes it), ``version``;
* ``last_activity``: the newest ``timestamp`` of a line read, else the file's mtime; ``size``;
* ``live`` (and ``live_pid``, ``live_status``) and ``by_bridge`` (its id is one of
  ``bridge_ids``, the conversations the bridge started).

Bounds: at most ``MAX_FILES`` files are read (the newest by mtime), ``MAX_LINES_PER_FILE`` lines
of each, lines over ``MAX_LINE_CHARS`` skipped, ``MAX_SESSION_FILES`` session files, and at
most ``limit`` (≤ ``MAX_CONVERSATIONS``) conversations returned, the newest, grouped by folder
(the folder of the newest conversation first). A name that is not ``<uuid>.jsonl``, an empty
file, a line that is not a JSON object, a field of the wrong type: skipped, never raised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

__all__ = [
    "HEAD_BYTES",
    "MAX_CONVERSATIONS",
    "MAX_FILES",
    "TAIL_BYTES",
    "Conversation",
    "DeskFolder",
    "DeskListing",
    "TranscriptFile",
    "list_conversations",
    "prompt_gist",
]

HEAD_BYTES = 64 * 1024  # read from the start of each transcript (the first prompt)
TAIL_BYTES = 64 * 1024  # read from its end (the latest title, branch and activity)
MAX_FILES = 2000  # transcripts read, the newest by mtime
MAX_LINES_PER_FILE = 200  # of the head, and as many of the tail (its last ones)
MAX_LINE_CHARS = 256 * 1024  # a longer line (a big paste) is skipped
MAX_SESSION_FILES = 500  # ~/.claude/sessions/*.json read
MAX_CONVERSATIONS = 500  # returned at most
DEFAULT_LIMIT = 200
MAX_TITLE_CHARS = 80
MAX_FIELD_CHARS = 4096  # a cwd, a branch, a version: longer is not Claude Code's

TitleSource = Literal["custom", "ai", "summary", "prompt", "none"]

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
_TITLE_KINDS: dict[str, tuple[str, TitleSource]] = {
    "custom-title": ("customTitle", "custom"),
    "ai-title": ("aiTitle", "ai"),
    "summary": ("summary", "summary"),
}
_RANK: dict[TitleSource, int] = {"custom": 0, "ai": 1, "summary": 2, "prompt": 3, "none": 4}
LIVE_STATUSES = frozenset({"idle", "busy", "waiting"})


@dataclass(frozen=True)
class TranscriptFile:
    """One ``~/.claude/projects/<slug>/<name>`` as listed and partly read by the shell."""

    slug: str
    name: str
    size: int
    mtime: float
    head: Sequence[str] = ()
    tail: Sequence[str] = ()


@dataclass(frozen=True)
class Conversation:
    id: str
    slug: str
    cwd: str | None
    title: str
    title_source: TitleSource
    last_activity: float
    size: int
    git_branch: str | None
    version: str | None
    live: bool
    live_pid: int | None
    live_status: str | None
    by_bridge: bool


@dataclass(frozen=True)
class DeskFolder:
    cwd: str | None  # None: no line read names the folder (``slug`` of its conversations)
    conversations: tuple[Conversation, ...]  # newest first


@dataclass(frozen=True)
class DeskListing:
    folders: tuple[DeskFolder, ...]  # the folder of the newest conversation first
    found: int  # conversations found, before the limit
    truncated: bool  # more were found (or more files listed) than returned


def _clean(text: str, limit: int) -> str:
    return " ".join(_CONTROL_RE.sub(" ", text).split())[:limit]


def _field(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    if not isinstance(value, str) or not value or len(value) > MAX_FIELD_CHARS:
        return None
    return value


def _shown(value: str | None) -> str | None:
    return _clean(value, MAX_TITLE_CHARS) or None if value is not None else None


def _objects(lines: Iterable[str], most: int = MAX_LINES_PER_FILE) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in lines:
        if len(out) >= most:
            break
        if not isinstance(line, str) or len(line) > MAX_LINE_CHARS:
            continue
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str) or len(value) > MAX_TITLE_CHARS:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except (ValueError, OverflowError, OSError):
        return None


def _prompt_text(line: dict[str, Any]) -> str | None:
    """A typed prompt's text: a user line that is not meta, a command, a reminder or a result."""
    if line.get("type") != "user" or line.get("isMeta") or line.get("isCompactSummary"):
        return None
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        content = next((t for t in texts if isinstance(t, str)), None)
    if not isinstance(content, str):
        return None
    text = content.strip()
    if not text or text.startswith(("<", "/", "[Request interrupted")):
        return None
    return text


def prompt_gist(text: str, limit: int = MAX_TITLE_CHARS) -> str:
    """A prompt's first line, spaces collapsed, at most ``limit`` characters cut at a word."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    gist = _clean(first, len(first) + 1)
    if len(gist) <= limit:
        return gist
    cut = gist[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + "…"


def _session_index(
    contents: Sequence[str], live_pids: Set[int]
) -> dict[str, tuple[int, str | None]]:
    """Conversation id → (pid, status) of a claude that runs it now."""
    live: dict[str, tuple[int, str | None]] = {}
    for text in contents[:MAX_SESSION_FILES]:
        if not isinstance(text, str) or len(text) > MAX_LINE_CHARS:
            continue
        (data,) = _objects([text]) or [{}]
        pid, cid = data.get("pid"), _field(data, "sessionId")
        if isinstance(pid, bool) or not isinstance(pid, int) or cid is None:
            continue
        if pid in live_pids:
            status = _field(data, "status")
            live[cid] = (pid, status if status in LIVE_STATUSES else None)
    return live


def _conversation(
    file: TranscriptFile,
    live: dict[str, tuple[int, str | None]],
    bridge_ids: Set[str],
) -> Conversation | None:
    cid = file.name.removesuffix(".jsonl")
    if not file.name.endswith(".jsonl") or not _UUID_RE.match(cid) or file.size <= 0:
        return None
    lines = _objects(file.head) + _objects(file.tail[-MAX_LINES_PER_FILE:])
    cwd = branch = version = None
    newest: float | None = None
    titles: dict[TitleSource, str] = {}
    first_prompt: str | None = None
    for line in lines:
        cwd = cwd or _field(line, "cwd")
        branch = _shown(_field(line, "gitBranch")) or branch
        version = _shown(_field(line, "version")) or version
        at = _timestamp(line.get("timestamp"))
        if at is not None and (newest is None or at > newest):
            newest = at
        kind = line.get("type")
        if isinstance(kind, str) and kind in _TITLE_KINDS:
            key, kind_source = _TITLE_KINDS[kind]
            value = _field(line, key)
            if value is not None and _clean(value, MAX_TITLE_CHARS):
                titles[kind_source] = _clean(value, MAX_TITLE_CHARS)  # the latest wins
        if first_prompt is None:
            first_prompt = _prompt_text(line)
    source: TitleSource = min(titles, key=_RANK.__getitem__, default="none")
    title = titles.get(source, "")
    if source == "none" and first_prompt is not None:
        source, title = "prompt", prompt_gist(first_prompt)
    running = live.get(cid)
    return Conversation(
        id=cid,
        slug=_clean(file.slug, MAX_FIELD_CHARS),
        cwd=cwd,
        title=title,
        title_source=source,
        last_activity=newest if newest is not None else file.mtime,
        size=file.size,
        git_branch=branch,
        version=version,
        live=running is not None,
        live_pid=running[0] if running else None,
        live_status=running[1] if running else None,
        by_bridge=cid in bridge_ids,
    )


def list_conversations(
    files: Sequence[TranscriptFile],
    session_files: Sequence[str] = (),
    live_pids: Set[int] = frozenset(),
    bridge_ids: Set[str] = frozenset(),
    *,
    limit: int = DEFAULT_LIMIT,
) -> DeskListing:
    """The conversations of ``files``, newest first, per folder (see the module's docstring)."""
    limit = max(0, min(limit, MAX_CONVERSATIONS))
    usable = [f for f in files if isinstance(f.mtime, int | float) and f.mtime == f.mtime]
    newest_files = sorted(usable, key=lambda f: f.mtime, reverse=True)[:MAX_FILES]
    live = _session_index(session_files, live_pids)
    seen: dict[str, Conversation] = {}
    for file in newest_files:
        conversation = _conversation(file, live, bridge_ids)
        if conversation is not None and conversation.id not in seen:
            seen[conversation.id] = conversation
    ordered = sorted(seen.values(), key=lambda c: (-c.last_activity, c.id))
    kept = ordered[:limit]
    folders: dict[str | None, list[Conversation]] = {}
    for conversation in kept:
        folders.setdefault(conversation.cwd, []).append(conversation)
    return DeskListing(
        folders=tuple(DeskFolder(cwd, tuple(group)) for cwd, group in folders.items()),
        found=len(ordered),
        truncated=len(ordered) > len(kept) or len(usable) > MAX_FILES,
    )
