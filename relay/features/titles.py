"""Session titles: Claude Code's own name when the transcript has one, else one derived from the work.

The id of a session never changes; its title is only what a person reads. The rules:

* **Claude Code's title wins** over a derived one: ``custom-title`` (``claude -n NAME`` or
  ``/rename``) beats ``ai-title`` (the title Claude Code generates) beats ``summary`` (older
  versions); among lines of one kind the latest wins. Claude Code appends these lines again on
  resume, in any order, so the kind decides, not the position.
* **Otherwise it is derived from the work**, not blindly from the first message:

  1. the gist of the first *substantive* prompt. Only typed prompts count (slash commands, ``!``
     shell lines, tool results and reminders never reach here as prompts, and a prompt starting
     with ``/`` is skipped too). Leading greetings and polite fillers go ("hi claude, could you
     …"), a pasted log or code block is cut off (only the words before it count), and what is
     left must say something: two words or eight letters, not only acknowledgements ("yes",
     "thanks", "continue"). The gist is the first sentence or line, at most
     :data:`TITLE_MAX_CHARS` characters, cut at a word, first letter capitalised;
  2. a *weak* gist (fewer than three words, e.g. ``WRITE_FILE``) gets the name of the first file
     the session touched: ``WRITE_FILE · hello.txt``;
  3. with no substantive prompt, the names of the first files touched: ``hello.txt, app.py``;
  4. else nothing: a session that only said "hello there" is better named by its folder, which
     lists show when the title is empty.

  Each piece is fixed the first time it appears, so the title does not keep changing while the
  session goes on.
* **A person's title is never replaced**: after a rename from the phone (``PATCH
  /api/sessions/{id}``) or the CLI (:func:`rename`), neither Claude Code's lines nor derivation
  touch it. ``rename(…, None)`` gives the session back its automatic title.

The pure part (:func:`prompt_gist`, :func:`derive_title`, :func:`claude_title`) takes and returns
plain values; :class:`TitleObserver` keeps the pieces in the ``session_titles`` table and applies
the title inside the ingest transaction (a ``LineObserver``, relay/hookspecs.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from relay.convert import Conversion
from relay.db import Connection
from relay.db.migrations import MIGRATION_LOCK, add_column
from relay.errors import BadRequest
from relay.feature import Feature
from relay.hookspecs import NewLines
from relay.state import RelayState
from relay.store import Session, Store, sessions
from wire.markers import BRIDGE_CONVERSATION
from wire.protocol import EventKind, LineRecord

__all__ = [
    "CLAUDE_TITLE_RANK",
    "TITLE_MAX_CHARS",
    "Shape",
    "TitleObserver",
    "TitlePieces",
    "auto_title",
    "claude_title",
    "derive_title",
    "is_main_conversation",
    "prompt_gist",
    "rename",
    "save_pieces",
    "shape_of",
    "shown_auto_title",
]

_log = logging.getLogger("relay.features.titles")

TITLE_MAX_CHARS: Final = 60  # a derived title: one line of a phone's list
CLAUDE_TITLE_MAX_CHARS: Final = 200  # Claude Code's or a person's own words are kept longer
PERSON_TITLE_MAX_CHARS: Final = 500  # as PATCH /api/sessions/{id} allows
_FILES_KEPT: Final = 3

# Which of Claude Code's title lines wins (higher beats lower; equal: the latest).
CLAUDE_TITLE_RANK: Final[dict[str, int]] = {"custom-title": 3, "ai-title": 2, "summary": 1}
AI_TITLE: Final = "ai-title"
CUSTOM_TITLE: Final = "custom-title"  # ``/rename`` or ``claude -n``: a person named it at the desk
# A title as lists show it: (the automatic title, the session's folder) → the shown title
# (relay/features/title_convention.py sets the ``title_format`` convention here).
Shape = Callable[[str, str], str]

# -- the gist of a prompt --------------------------------------------------------------------

_GREETING_RE: Final = re.compile(
    r"^(?:(?:(?:hi|hello|hey|hiya|howdy|yo|greetings|good\s+(?:morning|afternoon|evening)|"
    r"안녕하세요|안녕)(?:\s+there)?|claude(?=\s*[,:!.])|클로드(?=\s*[,:!.])|ok|okay|so)"
    r"(?![\w'])[\s,.!:;~-]*)+",
    re.IGNORECASE,
)
_FILLER_RE: Final = re.compile(
    r"^(?:(?:please|pls|plz|(?:can|could|would|will)\s+you(?:\s+please)?|"
    r"i\s+(?:want|need|would\s+like|'d\s+like)\s+you\s+to|i'd\s+like\s+you\s+to)\b[\s,]*)+",
    re.IGNORECASE,
)
_TRAILING_FILLER_RE: Final = re.compile(
    r"[\s,]*(?:please|pls|thanks|thank\s+you|thx|부탁해요|부탁해)[\s.!?]*$", re.IGNORECASE
)
# Words that say nothing about the work on their own ("ok thanks", "yes go ahead").
_ACK_WORDS: Final = frozenset(
    [
        "yes",
        "no",
        "ok",
        "okay",
        "sure",
        "thanks",
        "thank",
        "you",
        "continue",
        "go",
        "on",
        "ahead",
        "proceed",
        "done",
        "great",
        "cool",
        "nice",
        "good",
        "fine",
        "yep",
        "yeah",
        "nope",
        "y",
        "n",
        "do",
        "it",
        "that",
        "this",
        "again",
        "now",
        "please",
        "네",
        "응",
        "예",
        "계속",
        "고마워",
        "감사합니다",
        "좋아",
    ]
)
# A line that belongs to a pasted log, trace or terminal output rather than to a sentence.
_LOG_LINE_RE: Final = re.compile(
    r"^\s*(?:"
    r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d"  # timestamps
    r"|traceback \(most recent call last\)"
    r"|at \S+[.(]|file \"[^\"]+\", line \d+"  # JS / Python stack frames
    r"|(?:error|warn|warning|info|debug|fatal|trace|panic)\b[:\]]"
    r"|\[(?:error|warn|warning|info|debug|fatal)\]"
    r"|[\w.]*(?:error|exception):\s"
    r"|\$ |>>> |\d+\s*\|"  # shell prompts, numbered listings
    r")",
    re.IGNORECASE,
)
_FENCE: Final = "```"
_MARKUP_RE: Final = re.compile(r"^[#>*+\-\s]+|[*`]+")
_SENTENCE_END_RE: Final = re.compile(r"(?<=[.!?。？！])\s+")
_PLACEHOLDER_RE: Final = re.compile(r"\[(?:image|document)\]")
_WORD_RE: Final = re.compile(r"\w+")


def _prose_head(text: str) -> str:
    """The part of a prompt before a pasted log or code block (all of it when there is none)."""
    kept: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith(_FENCE) or _LOG_LINE_RE.match(line):
            break
        kept.append(line)
    return "\n".join(kept)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def _first_sentence(text: str) -> str:
    for line in text.splitlines():
        line = _MARKUP_RE.sub("", line).strip()
        if _WORD_RE.search(line):
            return _SENTENCE_END_RE.split(line, maxsplit=1)[0]
    return ""


def prompt_gist(text: str, limit: int = TITLE_MAX_CHARS) -> tuple[str, bool]:
    """The gist of a typed prompt and whether it is substantive (see the module's rules).

    >>> prompt_gist("hi claude, could you fix the flaky login test? it fails on CI")
    ('Fix the flaky login test?', True)
    >>> prompt_gist("thanks!")
    ('Thanks!', False)
    """
    text = _PLACEHOLDER_RE.sub(" ", text).strip()
    plain = shorten(_first_sentence(text), limit)
    plain = plain[:1].upper() + plain[1:]
    if not text or text.startswith("/"):
        return plain, False
    head = _first_sentence(_prose_head(text))
    head = _FILLER_RE.sub("", _GREETING_RE.sub("", head))
    head = _TRAILING_FILLER_RE.sub("", head).strip(" ,;:-")
    words = _WORD_RE.findall(head)
    letters = sum(len(w) for w in words)
    substantive = (len(words) >= 2 or letters >= 8) and not all(
        w.lower() in _ACK_WORDS for w in words
    )
    if not substantive:
        return plain, False
    gist = shorten(head, limit)
    return gist[:1].upper() + gist[1:], True


# -- the title from its pieces -----------------------------------------------------------------


@dataclass(frozen=True)
class TitlePieces:
    """What a title is made from; each derived piece is fixed the first time it appears."""

    claude_title: str = ""
    claude_rank: int = 0
    gist: str = ""  # of the first substantive prompt
    files: tuple[str, ...] = field(default_factory=tuple)  # names of the first files touched
    ai_title: str = ""  # the newest ai-title Claude Code wrote ("Regenerate" takes it)


def claude_title(pieces: TitlePieces, line_type: str, title: str) -> TitlePieces:
    """``pieces`` after one of Claude Code's title lines (custom-title, ai-title, summary)."""
    rank = CLAUDE_TITLE_RANK.get(line_type, 0)
    text = shorten(title, CLAUDE_TITLE_MAX_CHARS)
    if line_type == AI_TITLE and text:
        pieces = replace(pieces, ai_title=text)
    if not rank or not text or rank < pieces.claude_rank:
        return pieces
    return replace(pieces, claude_title=text, claude_rank=rank)


def derive_title(pieces: TitlePieces) -> str:
    """The title made from the work alone (rules 1–4 of the module docstring)."""
    if pieces.gist:
        if len(_WORD_RE.findall(pieces.gist)) < 3 and pieces.files:
            return f"{pieces.gist} · {pieces.files[0]}"
        return pieces.gist
    return ", ".join(pieces.files)


def auto_title(pieces: TitlePieces) -> str:
    """The title a session shows when no person set one."""
    return pieces.claude_title or derive_title(pieces)


def is_main_conversation(conversation_id: str, agent_id: str | None) -> bool:
    """Lines of the session's own conversation: not a subagent's, not the bridge's markers."""
    return (
        agent_id is None
        and not conversation_id.startswith("agent-")
        and conversation_id != BRIDGE_CONVERSATION
    )


def _add_files(pieces: TitlePieces, paths: Iterable[str]) -> TitlePieces:
    files = list(pieces.files)
    for path in paths:
        if len(files) >= _FILES_KEPT:
            break
        name = os.path.basename(path.rstrip("/")) or path
        if name not in files:
            files.append(name)
    return replace(pieces, files=tuple(files)) if len(files) != len(pieces.files) else pieces


def update_pieces(
    pieces: TitlePieces, conversation_id: str, lines: Iterable[tuple[LineRecord, Conversion]]
) -> TitlePieces:
    """``pieces`` after a batch of new lines (pure)."""
    for _, conversion in lines:
        facts = conversion.facts
        if facts.title and facts.line_type:
            pieces = claude_title(pieces, facts.line_type, facts.title)
        if facts.files_touched and len(pieces.files) < _FILES_KEPT:
            pieces = _add_files(pieces, facts.files_touched)
        if pieces.gist or not is_main_conversation(conversation_id, facts.agent_id):
            continue
        for event in conversion.events:
            if event.kind != EventKind.USER or not event.text:
                continue
            gist, substantive = prompt_gist(event.text)
            if substantive:
                pieces = replace(pieces, gist=gist)
                break
    return pieces


# -- stored pieces and the observer -------------------------------------------------------------

_TABLE: Final = """CREATE TABLE IF NOT EXISTS session_titles (
        session_id TEXT PRIMARY KEY,
        claude_title TEXT NOT NULL DEFAULT '',
        claude_rank INTEGER NOT NULL DEFAULT 0,
        gist TEXT NOT NULL DEFAULT '',
        files TEXT NOT NULL DEFAULT '[]',
        ai_title TEXT NOT NULL DEFAULT ''
    ) WITHOUT ROWID"""
_FORGET: Final = "DELETE FROM session_titles WHERE session_id = OLD.id;"
SCHEMA: Final = (
    _TABLE,
    f"""CREATE TRIGGER IF NOT EXISTS session_titles_forget AFTER DELETE ON sessions BEGIN
        {_FORGET}
    END""",
)
# PostgreSQL: the same table (relay/db/postgres.py spells its types), the trigger as a plpgsql
# function; relay nodes starting together take turns (CREATE OR REPLACE is not safe side by side).
PG_SCHEMA: Final = (
    f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})",
    _TABLE,
    f"""CREATE OR REPLACE FUNCTION session_titles_forget() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN {_FORGET} RETURN NULL; END $$""",
    "CREATE OR REPLACE TRIGGER session_titles_forget AFTER DELETE ON sessions FOR EACH ROW"
    " EXECUTE FUNCTION session_titles_forget()",
)


def load_pieces(conn: Connection, session_id: str) -> TitlePieces:
    row = conn.execute(
        "SELECT claude_title, claude_rank, gist, files, ai_title FROM session_titles"
        " WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return TitlePieces()
    return TitlePieces(row[0], row[1], row[2], tuple(json.loads(row[3])), row[4])


def save_pieces(conn: Connection, session_id: str, p: TitlePieces) -> None:
    conn.execute(
        "INSERT INTO session_titles (session_id, claude_title, claude_rank, gist, files, ai_title)"
        " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
        " claude_title = excluded.claude_title, claude_rank = excluded.claude_rank,"
        " gist = excluded.gist, files = excluded.files, ai_title = excluded.ai_title",
        (session_id, p.claude_title, p.claude_rank, p.gist, json.dumps(p.files), p.ai_title),
    )


def shown_auto_title(conn: Connection, session_id: str, shape: Shape | None) -> str:
    """The automatic title of a session in the convention (``shape``), from its pieces."""
    title = auto_title(load_pieces(conn, session_id))
    if shape is None:
        return title
    session = sessions.find(conn, session_id)
    return shape(title, session.cwd if session is not None else "")


class TitleObserver:
    """Keeps each session's title pieces and applies the automatic title while no person set one.

    Runs inside the ingest transaction (relay/hookspecs.py ``LineObserver``), in its own savepoint: a
    failure here is logged and undone, and never refuses the Mac's lines. ``shape`` puts the
    title in the ``title_format`` convention (None: as it is)."""

    def __init__(self) -> None:
        self.shape: Shape | None = None

    def setup(self, conn: Connection) -> None:
        for statement in PG_SCHEMA if conn.dialect.postgres else SCHEMA:
            conn.execute(statement)
        add_column(conn, "session_titles", "ai_title", "TEXT NOT NULL DEFAULT ''")

    async def close(self) -> None:
        return None

    def on_lines(self, conn: Connection, new: NewLines) -> None:
        session_id, conversation_id, lines = new.session_id, new.conversation_id, new.lines
        if not any(_may_matter(c) for _, c in lines):
            return
        conn.execute("SAVEPOINT titles")
        try:
            before = load_pieces(conn, session_id)
            after = update_pieces(before, conversation_id, lines)
            if after != before:
                save_pieces(conn, session_id, after)
                sessions.set_derived_title(
                    conn, session_id, shown_auto_title(conn, session_id, self.shape)
                )
        except Exception:
            conn.execute("ROLLBACK TO titles")
            _log.exception("titles of session %s not updated", session_id)
        finally:
            conn.execute("RELEASE titles")


def _may_matter(conversion: Conversion) -> bool:
    facts = conversion.facts
    return bool(
        facts.title
        or facts.files_touched
        or any(e.kind == EventKind.USER for e in conversion.events)
    )


# -- renaming (phone and CLI) -------------------------------------------------------------------


async def rename(
    store: Store, account_id: str, session_id: str, title: str | None, shape: Shape | None = None
) -> Session:
    """Rename a session as a person; ``None`` or a blank title gives back the automatic title.

    A person's title is kept as typed (whitespace collapsed, at most 500 characters) and never
    replaced by Claude Code's or a derived one. The session id does not change. Raises NotFound
    for a session that is not in ``account_id`` (the same answer as for one that does not exist).
    """
    text = " ".join((title or "").split())
    if len(text) > PERSON_TITLE_MAX_CHARS:
        raise BadRequest(
            f"a title is limited to {PERSON_TITLE_MAX_CHARS} characters; shorten it",
            code="title_too_long",
        )
    if text:
        return await store.update_session(account_id, session_id, title=text)

    def job(conn: Connection) -> None:
        derived = shown_auto_title(conn, session_id, shape)
        sessions.give_back_title(conn, account_id, session_id, derived)

    await store.write(job)
    return await store.get_session(account_id, session_id)


def shape_of(state: RelayState) -> Shape | None:
    """The title convention in force (None: titles as they are)."""
    observer = state.part(TitleObserver)
    return observer.shape if observer is not None else None


async def start(state: RelayState) -> TitleObserver:
    """Keep each session's derived and Claude Code's titles as lines arrive."""
    observer = TitleObserver()
    state.store.add_observer(observer)
    return observer


FEATURE = Feature("titles", start=start)
