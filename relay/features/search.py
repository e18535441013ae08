"""Search and browse sessions, and the summary snapshots shown in lists.

**What is indexed** — the named fields of a session, never every byte of its transcripts: title,
summary (below), files touched (paths from tool inputs, relative to the session's folder when
inside it), tools used, the Mac's name, the folder, the dates (created and last active, as
``2026-11-29 November 2026`` in the relay's local time), and its decisions and constraints
(the ledger's texts and what they answer, put there by relay/features/snapshots.py after each
snapshot and each change of a pin: :func:`index_decisions`). They live in one SQLite FTS5 table,
``session_fts`` (tokenizer ``unicode61``, diacritics folded, prefix indexes of 2 and 3 characters),
one row per session. SQL triggers keep its title, folder and Mac columns in step with the
``sessions`` and ``devices`` tables whoever writes them (a rename from the phone or the CLI, a Mac
renamed, a session moved to another Mac), and remove a deleted session's row; the observer below
fills summary, files, tools and dates from new transcript lines.

On PostgreSQL (setting ``database_url``) the same ``session_fts`` is a plain table with a
``tsvector`` column made from the fields (each in a weight class, see :data:`PG_CLASSES`) and a
GIN index; its words are made as ``unicode61`` makes them (see the PostgreSQL schema below), and
plpgsql triggers do what SQLite's do. A session's date from a trigger is in the database's time
zone until its first lines come in (then the relay's, as on SQLite).

**Ranking** — ``bm25`` with field weights (:data:`WEIGHTS`: a title match counts most, then
files, summary, folder, tools, Mac, date), ties broken by the most recently active session. On
PostgreSQL, ``ts_rank`` with the same weights (by class), each term's score added up.

**Queries** — typed words, all required (AND), each matching as a word prefix (``sto`` finds
``store.py``); ``"quoted words"`` match as a phrase; ``title:``, ``summary:``, ``file:``,
``tool:``, ``mac:``, ``folder:``, ``date:`` and ``decision:`` (or ``constraint:``) limit a term
to one field. Everything else is
plain text: FTS5 syntax (``*``, ``NEAR``, ``AND``/``OR``/``NOT``, parentheses, column filters of
another shape) is never passed through, so no query can fail with a syntax error. At most
:data:`MAX_TERMS` terms count; a query over :data:`MAX_QUERY_CHARS` characters is refused with a
clear 400 (``query_too_long``). An empty query browses: newest activity first, same filters.

**Here and elsewhere** — given ``device_id`` and/or ``cwd``, results are split into ``here`` (on
that Mac and/or in that folder or below it) and ``elsewhere`` (other places), each ranked and
limited on its own. Filters: ``state`` (live state, comma-separated: starting, idle, busy,
waiting, ended), ``group``, ``stage`` (active, archived: features/retention.py's stages; archived
sessions are searched like any other unless filtered out, deleted ones are gone from the relay
and from the index), ``since``/``until`` (dates or times: a session matches when it was active
in that span).

**Summary snapshots** — a short summary per session, taken at natural boundaries and stored, so
it is never regenerated when a list is opened:

* at the end of a turn (Claude Code's ``system`` lines ``stop_hook_summary`` / ``turn_duration``)
  when something happened since the last snapshot: ``<topic> → <answer> · <files>``, where the
  topic is the gist of the last substantive prompt (features/titles.py rules, 100 characters), the
  answer the first sentence(s) of the turn's last assistant text (up to 160 characters) and the
  files the names of those touched in the turn (at most 3);
* at compaction: Claude Code's own summary (the ``isCompactSummary`` user line) — its "Primary
  Request and Intent" and "Current Work" sections when present, else its text — replaces the
  summary; later turns add ``· Latest: <turn>`` to it;
* at session end (the Mac reports the session ended) when a turn was left open, e.g. interrupted.

There is no model to call: the summary is derived from the conversation only, at most
:data:`SUMMARY_MAX_CHARS` characters. Subagents' lines add their files and tools but not their
prompts (their task is the parent's).

The observer runs inside the ingest transaction (relay/hookspecs.py ``LineObserver``) in its own
savepoint: a failure is logged and undone and never refuses the Mac's lines. Sessions stored
before the index existed get their row at start-up (title, Mac, folder, date); their summary,
files and tools come with their next lines.

**Routes** (a phone's login, like every route): ``GET /api/search?q=&device_id=&cwd=&state=&
group=&stage=&since=&until=&limit=`` → ``{query, mode: search|browse, terms, here: [...],
elsewhere: [...], has_more: {here, elsewhere}}``, each item a session as ``GET /api/sessions``
lists it plus ``summary``, ``summary_kind``, ``summary_at``, ``files`` (first 10), ``tools``,
``mac`` (its name), ``rank`` and, with retention, ``stage``; ``GET /api/sessions/{id}/summary``
(the stored snapshot); ``DELETE /api/sessions/{id}/title`` (forget a person's title: the
automatic one comes back). Errors: 400 ``query_too_long``, ``bad_state``, ``bad_stage``,
``bad_date``, ``bad_limit``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Query

from relay.convert import Conversion
from relay.db import Connection
from relay.db.migrations import MIGRATION_LOCK, add_column
from relay.deps import Phone, State, refuse_read_only
from relay.errors import BadRequest, NotFound
from relay.feature import Feature
from relay.features import report, titles
from relay.hookspecs import NewLines
from relay.state import RelayState, iso
from relay.store import Session, Store
from wire.protocol import EventKind, LineRecord, SessionInfo
from wire.tasks import TaskSet

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_TERMS",
    "SUMMARY_MAX_CHARS",
    "WEIGHTS",
    "Digest",
    "Filters",
    "SearchIndex",
    "answer_gist",
    "compaction_gist",
    "compose_summary",
    "index_decisions",
    "match_expression",
    "router",
    "search",
    "start",
    "summaries",
]

_log = logging.getLogger("relay.features.search")

SUMMARY_MAX_CHARS: Final = 400
TOPIC_MAX_CHARS: Final = 100
ANSWER_MAX_CHARS: Final = 160
COMPACTION_MAX_CHARS: Final = 300
MAX_QUERY_CHARS: Final = 1000
MAX_TERMS: Final = 16
MAX_TERM_CHARS: Final = 64
FILES_KEPT: Final = 200  # distinct files indexed per session (first touched first)
TOOLS_KEPT: Final = 100
LIMIT_DEFAULT: Final = 20
LIMIT_MAX: Final = 100
DECISIONS_MAX_CHARS: Final = 50_000  # of a session's decisions and constraints indexed
TURN_END_SUBTYPES: Final = frozenset({"stop_hook_summary", "turn_duration"})
STATES: Final = frozenset({"starting", "idle", "busy", "waiting", "ended"})
STAGES: Final = frozenset(
    {"active", "archived"}
)  # relay/features/retention.py; deleted ones are gone

# bm25 weights, in the FTS table's column order.
WEIGHTS: Final[dict[str, float]] = {
    "title": 10.0,
    "summary": 4.0,
    "files": 5.0,
    "tools": 3.0,
    "mac": 2.0,
    "folder": 3.0,
    "date": 1.0,
    # The session's decisions and constraints (relay/features/decisions.py), verbatim.
    "decisions": 4.0,
}
# Field prefixes a person may type (``file:store``) → FTS column.
FIELDS: Final[dict[str, str]] = {
    "title": "title",
    "summary": "summary",
    "file": "files",
    "files": "files",
    "tool": "tools",
    "tools": "tools",
    "mac": "mac",
    "device": "mac",
    "folder": "folder",
    "dir": "folder",
    "cwd": "folder",
    "date": "date",
    "decision": "decisions",
    "decisions": "decisions",
    "constraint": "decisions",
    "pin": "decisions",
}
_MONTHS: Final = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

# -- schema -----------------------------------------------------------------------------------


def _day_sql(ts: str) -> str:
    """SQL for :func:`day_text` of the epoch seconds expression ``ts`` (used by triggers)."""
    months = " ".join(f"WHEN {i} THEN '{m}'" for i, m in enumerate(_MONTHS, 1))
    local = f"{ts}, 'unixepoch', 'localtime'"
    return (
        f"strftime('%Y-%m-%d', {local}) || ' ' || "
        f"CASE CAST(strftime('%m', {local}) AS INTEGER) {months} ELSE '' END || ' ' || "
        f"strftime('%Y', {local})"
    )


# The last column, never searched, names the session: whoever deletes a session's rows by
# ``session_id`` (features/retention.py does, in every table that has one) reaches this table too.
_FTS_COLUMNS: Final = ", ".join(WEIGHTS) + ", session_id"
_NEW_DOC: Final = f"""
    INSERT OR IGNORE INTO session_digest (session_id) VALUES (NEW.id);
    INSERT OR REPLACE INTO session_fts (rowid, {_FTS_COLUMNS})
    SELECT d.doc_id, NEW.title, '', '', '',
           COALESCE((SELECT name FROM devices WHERE id = NEW.device_id), ''), NEW.cwd,
           {_day_sql("NEW.created_at")}, '', NEW.id
    FROM session_digest d WHERE d.session_id = NEW.id;"""
_DOC_OF_NEW: Final = "(SELECT doc_id FROM session_digest WHERE session_id = NEW.id)"

_DIGEST_TABLE: Final = """CREATE TABLE IF NOT EXISTS session_digest (
    doc_id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE,
    topic TEXT NOT NULL DEFAULT '',
    answer TEXT NOT NULL DEFAULT '',
    turn_files TEXT NOT NULL DEFAULT '[]',
    files TEXT NOT NULL DEFAULT '[]',
    tools TEXT NOT NULL DEFAULT '[]',
    compaction TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    summary_kind TEXT NOT NULL DEFAULT '',
    summary_at REAL,
    pending INTEGER NOT NULL DEFAULT 0,
    active_day TEXT NOT NULL DEFAULT ''
)"""

SCHEMA: Final = (
    _DIGEST_TABLE,
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS session_fts USING fts5(
        {", ".join(WEIGHTS)}, session_id UNINDEXED,
        tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3'
    )""",
    f"CREATE TRIGGER IF NOT EXISTS search_session_new AFTER INSERT ON sessions BEGIN {_NEW_DOC} END",
    f"""CREATE TRIGGER IF NOT EXISTS search_session_title AFTER UPDATE OF title ON sessions
        WHEN NEW.title IS NOT OLD.title BEGIN
        UPDATE session_fts SET title = NEW.title WHERE rowid = {_DOC_OF_NEW};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS search_session_cwd AFTER UPDATE OF cwd ON sessions
        WHEN NEW.cwd IS NOT OLD.cwd BEGIN
        UPDATE session_fts SET folder = NEW.cwd WHERE rowid = {_DOC_OF_NEW};
    END""",
    f"""CREATE TRIGGER IF NOT EXISTS search_session_mac AFTER UPDATE OF device_id ON sessions
        WHEN NEW.device_id IS NOT OLD.device_id BEGIN
        UPDATE session_fts
        SET mac = COALESCE((SELECT name FROM devices WHERE id = NEW.device_id), '')
        WHERE rowid = {_DOC_OF_NEW};
    END""",
    # Browsing reads an account's sessions newest activity first.
    "CREATE INDEX IF NOT EXISTS search_sessions_recent ON sessions(account_id, updated_at)",
    """CREATE TRIGGER IF NOT EXISTS search_session_gone AFTER DELETE ON sessions BEGIN
        DELETE FROM session_fts
        WHERE rowid = (SELECT doc_id FROM session_digest WHERE session_id = OLD.id);
        DELETE FROM session_digest WHERE session_id = OLD.id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS search_device_name AFTER UPDATE OF name ON devices
        WHEN NEW.name IS NOT OLD.name BEGIN
        UPDATE session_fts SET mac = NEW.name WHERE rowid IN (
            SELECT d.doc_id FROM session_digest d JOIN sessions s ON s.id = d.session_id
            WHERE s.device_id = NEW.id);
    END""",
)

# Sessions stored before the index existed get their rows (idempotent; runs at start-up).
BACKFILL: Final = (
    """INSERT OR IGNORE INTO session_digest (session_id) SELECT id FROM sessions""",
    f"""INSERT INTO session_fts (rowid, {_FTS_COLUMNS})
        SELECT d.doc_id, s.title, d.summary, '', '',
               COALESCE((SELECT name FROM devices WHERE id = s.device_id), ''), s.cwd,
               {_day_sql("s.created_at")}, '', s.id
        FROM session_digest d JOIN sessions s ON s.id = d.session_id
        WHERE d.doc_id NOT IN (SELECT rowid FROM session_fts)""",
)


# -- schema (PostgreSQL) ----------------------------------------------------------------------
#
# The same tables and triggers, with PostgreSQL's full-text search in place of FTS5:
# ``session_fts`` is a plain table keyed by ``doc_id`` (SQLite's rowid) whose ``doc`` column, a
# tsvector made from the fields, has a GIN index. Words are made as FTS5's ``unicode61`` makes
# them: diacritics dropped (``normalize`` NFD, marks removed), every ASCII character that is not
# a letter or digit separates words (PostgreSQL's parser alone keeps ``docs/quokka.md`` as one
# word), no stemming and no stop words (the ``simple`` configuration). Each field's words start
# one position after the previous field's, so a phrase never matches across two fields.

# PostgreSQL has four weight classes (A–D) for WEIGHTS' seven fields: fields of close weight
# share one; a class weighs its fields' mean weight (ts_rank's weights, relative to the title's).
PG_CLASSES: Final[dict[str, str]] = {
    "title": "A",
    "files": "B",
    "summary": "B",
    "tools": "C",
    "folder": "C",
    "mac": "D",
    "date": "D",
    "decisions": "B",
}


def _class_weights() -> str:
    """ts_rank's weights array, in its order {D, C, B, A}."""
    top = max(WEIGHTS.values())
    weights = []
    for label in "DCBA":
        fields = [WEIGHTS[f] for f, c in PG_CLASSES.items() if c == label]
        weights.append(f"{sum(fields) / len(fields) / top:.3g}")
    return "{" + ",".join(weights) + "}"


_PG_RANK_WEIGHTS: Final = _class_weights()
# The same separators and marks in Python (query words) and in SQL (indexed words).
_PG_MARKS: Final = r"[\u0300-\u036f]"
_PG_SEPARATORS: Final = r"[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+"
_PG_MARKS_RE: Final = re.compile(_PG_MARKS)
_PG_SEPARATORS_RE: Final = re.compile(_PG_SEPARATORS)
# A word put before each field's words and removed from its tsvector: the gap between fields.
# It cannot be one of the words indexed (those have no ASCII punctuation).
_PG_GAP: Final = "-1"


def pg_words(text: str) -> list[str]:
    """The words PostgreSQL indexes of ``text`` (``search_words`` in SQL, split)."""
    folded = unicodedata.normalize("NFC", _PG_MARKS_RE.sub("", unicodedata.normalize("NFD", text)))
    return _PG_SEPARATORS_RE.sub(" ", folded).split()


# Each field's words are kept (``<field>_words``: a term limited to a field is matched and ranked
# on them) and made again only when the field changed; ``doc`` joins them, in weight classes.
_PG_FIELD_WORDS: Final = " ".join(
    f"IF TG_OP = 'INSERT' OR NEW.{c} IS DISTINCT FROM OLD.{c} THEN"
    f" NEW.{c}_words := search_vector(NEW.{c}); END IF;"
    for c in WEIGHTS
)
_PG_DOCUMENT: Final = " || ".join(f"setweight(NEW.{c}_words, '{PG_CLASSES[c]}')" for c in WEIGHTS)
_PG_FUNCTIONS: Final = (
    f"""CREATE OR REPLACE FUNCTION search_words(text) RETURNS text
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT regexp_replace(
            normalize(regexp_replace(normalize(coalesce($1, ''), NFD), '{_PG_MARKS}', '', 'g'), NFC),
            '{_PG_SEPARATORS}', ' ', 'g')
    $$""",
    f"""CREATE OR REPLACE FUNCTION search_vector(text) RETURNS tsvector
        LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT ts_delete(to_tsvector('simple', '{_PG_GAP} ' || search_words($1)), '{_PG_GAP}')
    $$""",
    # The relay's time zone is not known to the database: a session's date is written in the
    # database's time zone here, and in the relay's as soon as its first lines come in.
    """CREATE OR REPLACE FUNCTION search_day(double precision) RETURNS text
        LANGUAGE sql STABLE AS $$ SELECT to_char(to_timestamp($1), 'YYYY-MM-DD FMMonth YYYY') $$""",
)


def _pg_trigger(name: str, event: str, body: str, when: str = "") -> tuple[str, str]:
    """A plpgsql function and the row trigger that runs it (SQLite's trigger of that name)."""
    return (
        f"""CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN {body} RETURN NULL; END $$""",
        f"CREATE OR REPLACE TRIGGER {name} AFTER {event} FOR EACH ROW"
        f"{f' WHEN ({when})' if when else ''} EXECUTE FUNCTION {name}()",
    )


_PG_DOC_OF_NEW: Final = "(SELECT doc_id FROM session_digest WHERE session_id = NEW.id)"
_PG_FTS_VALUES: Final = ", ".join(f"{c} = excluded.{c}" for c in (*WEIGHTS, "session_id"))

PG_SCHEMA: Final = (
    # SQLite numbers doc_id as its rowid; PostgreSQL by an identity column (relay/db/postgres.py).
    _DIGEST_TABLE.replace("INTEGER PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT", 1),
    *_PG_FUNCTIONS,
    f"""CREATE TABLE IF NOT EXISTS session_fts (
        doc_id BIGINT PRIMARY KEY,
        {" ".join(f"{c} TEXT NOT NULL DEFAULT ''," for c in WEIGHTS)}
        {" ".join(f"{c}_words tsvector NOT NULL DEFAULT ''," for c in WEIGHTS)}
        session_id TEXT NOT NULL,
        doc tsvector NOT NULL DEFAULT ''
    )""",
    f"""CREATE OR REPLACE FUNCTION search_fts_words() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN {_PG_FIELD_WORDS} NEW.doc := {_PG_DOCUMENT}; RETURN NEW; END $$""",
    "CREATE OR REPLACE TRIGGER search_fts_words BEFORE INSERT OR UPDATE ON session_fts"
    " FOR EACH ROW EXECUTE FUNCTION search_fts_words()",
    "CREATE INDEX IF NOT EXISTS session_fts_doc ON session_fts USING gin (doc)",
    "CREATE INDEX IF NOT EXISTS session_fts_session ON session_fts (session_id)",
    *_pg_trigger(
        "search_session_new",
        "INSERT ON sessions",
        f"""INSERT INTO session_digest (session_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
        INSERT INTO session_fts (doc_id, {_FTS_COLUMNS})
        SELECT d.doc_id, NEW.title, '', '', '',
               COALESCE((SELECT name FROM devices WHERE id = NEW.device_id), ''), NEW.cwd,
               search_day(NEW.created_at), '', NEW.id
        FROM session_digest d WHERE d.session_id = NEW.id
        ON CONFLICT (doc_id) DO UPDATE SET {_PG_FTS_VALUES};""",
    ),
    *_pg_trigger(
        "search_session_title",
        "UPDATE OF title ON sessions",
        f"UPDATE session_fts SET title = NEW.title WHERE doc_id = {_PG_DOC_OF_NEW};",
        "NEW.title IS DISTINCT FROM OLD.title",
    ),
    *_pg_trigger(
        "search_session_cwd",
        "UPDATE OF cwd ON sessions",
        f"UPDATE session_fts SET folder = NEW.cwd WHERE doc_id = {_PG_DOC_OF_NEW};",
        "NEW.cwd IS DISTINCT FROM OLD.cwd",
    ),
    *_pg_trigger(
        "search_session_mac",
        "UPDATE OF device_id ON sessions",
        f"""UPDATE session_fts
        SET mac = COALESCE((SELECT name FROM devices WHERE id = NEW.device_id), '')
        WHERE doc_id = {_PG_DOC_OF_NEW};""",
        "NEW.device_id IS DISTINCT FROM OLD.device_id",
    ),
    "CREATE INDEX IF NOT EXISTS search_sessions_recent ON sessions(account_id, updated_at)",
    *_pg_trigger(
        "search_session_gone",
        "DELETE ON sessions",
        """DELETE FROM session_fts
        WHERE doc_id = (SELECT doc_id FROM session_digest WHERE session_id = OLD.id);
        DELETE FROM session_digest WHERE session_id = OLD.id;""",
    ),
    *_pg_trigger(
        "search_device_name",
        "UPDATE OF name ON devices",
        """UPDATE session_fts SET mac = NEW.name WHERE doc_id IN (
            SELECT d.doc_id FROM session_digest d JOIN sessions s ON s.id = d.session_id
            WHERE s.device_id = NEW.id);""",
        "NEW.name IS DISTINCT FROM OLD.name",
    ),
)

PG_BACKFILL: Final = (
    BACKFILL[0],  # INSERT OR IGNORE: relay/db/postgres.py spells it ON CONFLICT DO NOTHING
    f"""INSERT INTO session_fts (doc_id, {_FTS_COLUMNS})
        SELECT d.doc_id, s.title, d.summary, '', '',
               COALESCE((SELECT name FROM devices WHERE id = s.device_id), ''), s.cwd,
               search_day(s.created_at), '', s.id
        FROM session_digest d JOIN sessions s ON s.id = d.session_id
        WHERE NOT EXISTS (SELECT 1 FROM session_fts f WHERE f.doc_id = d.doc_id)""",
)


def _schema(conn: Connection) -> tuple[str, ...]:
    """The statements that make the index on ``conn``'s database (safe to run again)."""
    if conn.dialect.postgres:
        # Relay nodes starting together take turns (CREATE OR REPLACE is not safe side by side).
        return (f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})", *PG_SCHEMA, *PG_BACKFILL)
    return (*SCHEMA, *BACKFILL)


def day_text(ts: float) -> str:
    """How a date is indexed: ``2026-11-29 November 2026`` (the relay's local time)."""
    t = time.localtime(ts)
    return f"{time.strftime('%Y-%m-%d', t)} {_MONTHS[t.tm_mon - 1]} {t.tm_year}"


# -- summary snapshots (pure) -----------------------------------------------------------------

_SENTENCE_END_RE: Final = re.compile(r"(?<=[.!?。？！])\s+")
_MARKUP_RE: Final = re.compile(r"^[#>*+\-\s]+|[*`]+")
_REMINDER_RE: Final = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)
_SECTION_RE: Final = re.compile(r"^\s*\d+\.\s+([^\n:]{3,60}):[ \t]*", re.MULTILINE)
_COMPACT_TAIL_MARKERS: Final = (
    "\nIf you need specific details from before compaction",
    "\nContinue the conversation from where it left off",
    "\nPlease continue the conversation",
)


def answer_gist(text: str) -> str:
    """The first sentence(s) of an assistant answer: at least 40 characters when there are more,
    at most :data:`ANSWER_MAX_CHARS`, on one line."""
    lines = [_MARKUP_RE.sub("", line).strip() for line in text.splitlines()]
    prose = " ".join(line for line in lines if line)
    out = ""
    for sentence in _SENTENCE_END_RE.split(prose):
        out = f"{out} {sentence}".strip()
        if len(out) >= 40:
            break
    return titles.shorten(out, ANSWER_MAX_CHARS)


def compaction_gist(text: str) -> str:
    """A short summary from Claude Code's compaction summary (the ``isCompactSummary`` line)."""
    body = _REMINDER_RE.sub("", text)
    head, sep, rest = body.partition("Summary:")
    body = rest if sep else head
    for marker in _COMPACT_TAIL_MARKERS:
        body = body.split(marker, 1)[0]
    parts = _SECTION_RE.split(body)
    sections = {
        name.strip().lower(): " ".join(content.split())
        for name, content in zip(parts[1::2], parts[2::2], strict=True)
    }
    intent = sections.get("primary request and intent", "")
    current = sections.get("current work", "")
    if intent or current:
        gist = " ".join(x for x in (intent, f"Current work: {current}" if current else "") if x)
    else:
        gist = " ".join(body.split())
    return titles.shorten(gist, COMPACTION_MAX_CHARS)


def compose_summary(topic: str, answer: str, files: Sequence[str], compaction: str) -> str:
    """``<topic> → <answer> · <files>``, after the compaction gist when there is one."""
    turn = f"{topic} → {answer}" if topic and answer else (topic or answer)
    names = [f.rsplit("/", 1)[-1] for f in files[-3:]]
    if names:
        turn = f"{turn} · {', '.join(names)}" if turn else ", ".join(names)
    if compaction:
        turn = f"{titles.shorten(compaction, 200)} · Latest: {turn}" if turn else compaction
    return titles.shorten(turn, SUMMARY_MAX_CHARS)


@dataclass
class Digest:
    """What the index keeps of one session between batches (the ``session_digest`` row)."""

    doc_id: int
    cwd: str = ""
    created_at: float = 0.0
    topic: str = ""
    answer: str = ""
    turn_files: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    compaction: str = ""
    summary: str = ""
    summary_kind: str = ""
    summary_at: float | None = None
    pending: bool = False
    active_day: str = ""

    def take_snapshot(self, kind: str, now: float) -> None:
        """Take the summary now (``kind``: turn, compaction or end)."""
        if kind == "compaction":
            self.summary = self.compaction
        else:
            self.summary = compose_summary(
                self.topic, self.answer, self.turn_files, self.compaction
            )
        self.summary_kind, self.summary_at, self.pending = kind, now, False

    def date_text(self) -> str:
        created = day_text(self.created_at)
        if self.active_day and self.active_day != created:
            return f"{created} {self.active_day}"
        return created


def display_path(path: str, cwd: str) -> str:
    """A touched file as indexed and shown: relative to the session's folder when inside it."""
    base = cwd.rstrip("/")
    if base and path.startswith(base + "/"):
        return path[len(base) + 1 :]
    return path


def _add(values: tuple[str, ...], new: Iterable[str], cap: int) -> tuple[str, ...]:
    out = list(values)
    for value in new:
        if value and value not in out and len(out) < cap:
            out.append(value)
    return tuple(out)


def _compact_summary_text(record: LineRecord, conversion: Conversion) -> str | None:
    return conversion.facts.compact_summary  # read as the line was parsed (relay/convert.py)


def _is_turn_end(record: LineRecord, conversion: Conversion) -> bool:
    return conversion.facts.subtype in TURN_END_SUBTYPES


def digest_lines(
    digest: Digest,
    conversation_id: str,
    lines: Iterable[tuple[LineRecord, Conversion]],
    now: float,
) -> Digest:
    """``digest`` after a batch of new lines, with the snapshots its boundaries call for."""
    d = copy.copy(digest)  # worked on in place: this runs for every batch a Mac sends
    answer: str | None = None  # the turn's latest assistant text, its gist made when needed

    def settle_answer() -> None:
        nonlocal answer
        if answer is not None:
            d.answer, answer = answer_gist(answer[:4000]), None

    for record, conversion in lines:
        facts = conversion.facts
        main = titles.is_main_conversation(conversation_id, facts.agent_id)
        if facts.files_touched:
            paths = [display_path(p, d.cwd) for p in facts.files_touched]
            d.files = _add(d.files, paths, FILES_KEPT)
            if main:
                d.turn_files = _add(d.turn_files, paths, FILES_KEPT)
                d.pending = True
        if facts.tools_used:
            d.tools = _add(d.tools, facts.tools_used, TOOLS_KEPT)
        for event in conversion.events:
            if event.kind == EventKind.TOOL_USE and event.tool and event.tool not in d.tools:
                d.tools = _add(d.tools, [event.tool], TOOLS_KEPT)
            if not main or not event.text:
                continue
            if event.kind == EventKind.USER:
                gist, substantive = titles.prompt_gist(event.text, TOPIC_MAX_CHARS)
                if substantive or not d.topic:
                    d.topic = gist
                d.answer, answer, d.turn_files, d.pending = "", None, (), True
            elif event.kind == EventKind.ASSISTANT:
                answer, d.pending = event.text, True
        if not main:
            continue
        compacted = _compact_summary_text(record, conversion)
        if compacted is not None:
            gist = compaction_gist(compacted)
            if gist:
                d.compaction, d.topic, d.answer, answer, d.turn_files = gist, "", "", None, ()
                d.take_snapshot("compaction", now)
        elif d.pending and _is_turn_end(record, conversion):
            settle_answer()
            d.take_snapshot("turn", now)
    settle_answer()
    return d


# -- the observer -----------------------------------------------------------------------------

_DIGEST_COLUMNS: Final = (
    "d.doc_id, s.cwd, s.created_at, d.topic, d.answer, d.turn_files, d.files, d.tools,"
    " d.compaction, d.summary, d.summary_kind, d.summary_at, d.pending, d.active_day"
)


def _without_decisions_column(conn: Connection) -> bool:
    """An index made before decisions were indexed gets the column: on PostgreSQL added (and
    its words), on SQLite the FTS5 table is made again (a virtual table takes no new column)
    and refilled from the digests (:func:`_refill`). True when it was made again."""
    if conn.dialect.postgres:
        if conn.execute("SELECT to_regclass('session_fts')").fetchone()[0] is not None:
            add_column(conn, "session_fts", "decisions", "TEXT NOT NULL DEFAULT ''")
            add_column(conn, "session_fts", "decisions_words", "tsvector NOT NULL DEFAULT ''")
        return False
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_fts'"
    ).fetchone()
    columns = {str(r[1]) for r in conn.execute("PRAGMA table_info(session_fts)")}
    if exists is None or "decisions" in columns:
        return False
    conn.execute("DROP TABLE session_fts")
    return True


def _refill(conn: Connection) -> None:
    """The fields of every session's row that the backfill leaves empty, from its digest."""
    for (session_id,) in list(conn.execute("SELECT session_id FROM session_digest")):
        digest = load_digest(conn, str(session_id))
        if digest is None:
            continue
        conn.execute(
            "UPDATE session_fts SET files = ?, tools = ?, date = ? WHERE rowid = ?",
            (" ".join(digest.files), " ".join(digest.tools), digest.date_text(), digest.doc_id),
        )


def index_decisions(conn: Connection, session_id: str, text: str) -> None:
    """Put the session's decisions and constraints (their texts, one per line) in its index
    row: relay/features/snapshots.py calls it after each snapshot and each change of a pin."""
    key = "doc_id" if conn.dialect.postgres else "rowid"
    conn.execute(
        f"UPDATE session_fts SET decisions = ? WHERE {key} ="
        " (SELECT doc_id FROM session_digest WHERE session_id = ?)",
        (text[:DECISIONS_MAX_CHARS], session_id),
    )


def load_digest(conn: Connection, session_id: str) -> Digest | None:
    row = conn.execute(
        f"SELECT {_DIGEST_COLUMNS} FROM session_digest d JOIN sessions s ON s.id = d.session_id"
        " WHERE d.session_id = ?",
        (session_id,),
    ).fetchone()
    if row is None:
        return None
    return Digest(
        doc_id=row[0],
        cwd=row[1],
        created_at=row[2],
        topic=row[3],
        answer=row[4],
        turn_files=tuple(json.loads(row[5])),
        files=tuple(json.loads(row[6])),
        tools=tuple(json.loads(row[7])),
        compaction=row[8],
        summary=row[9],
        summary_kind=row[10],
        summary_at=row[11],
        pending=bool(row[12]),
        active_day=row[13],
    )


def save_digest(conn: Connection, before: Digest, after: Digest) -> None:
    """Store ``after`` and refresh the index columns that changed."""
    if after == before:
        return
    conn.execute(
        "UPDATE session_digest SET topic = ?, answer = ?, turn_files = ?, files = ?, tools = ?,"
        " compaction = ?, summary = ?, summary_kind = ?, summary_at = ?, pending = ?,"
        " active_day = ? WHERE doc_id = ?",
        (
            after.topic,
            after.answer,
            json.dumps(after.turn_files),
            json.dumps(after.files),
            json.dumps(after.tools),
            after.compaction,
            after.summary,
            after.summary_kind,
            after.summary_at,
            int(after.pending),
            after.active_day,
            after.doc_id,
        ),
    )
    changed: dict[str, str] = {}
    if after.summary != before.summary:
        changed["summary"] = after.summary
    if after.files != before.files:
        changed["files"] = " ".join(after.files)
    if after.tools != before.tools:
        changed["tools"] = " ".join(after.tools)
    if after.active_day != before.active_day:
        changed["date"] = after.date_text()
    if changed:
        sets = ", ".join(f"{column} = ?" for column in changed)
        key = "doc_id" if conn.dialect.postgres else "rowid"
        conn.execute(
            f"UPDATE session_fts SET {sets} WHERE {key} = ?", (*changed.values(), after.doc_id)
        )


class SearchIndex:
    """The search index and summary snapshots: a store ``LineObserver`` and a session watcher
    (the search feature's running part: ``state.part(SearchIndex)``).

    A snapshot taken is also kept in ``summaries`` (session id → summary), so the account
    stream's ``session`` events carry it (an ``EventFields`` hook) and a phone showing a list
    need not fetch the whole list again for one changed summary.
    """

    def __init__(
        self,
        store: Store,
        summaries: dict[str, str] | None = None,
        publish: Callable[[Session], None] | None = None,
    ) -> None:
        self.store = store
        self.summaries: dict[str, str] = {} if summaries is None else summaries
        self._publish = publish
        self.tasks = TaskSet("search", _log)

    def setup(self, conn: Connection) -> None:
        rebuilt = _without_decisions_column(conn)
        for statement in _schema(conn):
            conn.execute(statement)
        if rebuilt:
            _refill(conn)

    def on_lines(self, conn: Connection, new: NewLines) -> None:
        session_id, conversation_id, lines = new.session_id, new.conversation_id, new.lines
        conn.execute("SAVEPOINT search")
        try:
            before = load_digest(conn, session_id)
            if before is not None:
                now = time.time()
                after = digest_lines(before, conversation_id, lines, now)
                after.active_day = day_text(now)
                save_digest(conn, before, after)
                if after.summary != before.summary:
                    # Read by the session event published once these lines are committed.
                    self.summaries[session_id] = after.summary
        except Exception:
            conn.execute("ROLLBACK TO search")
            _log.exception("search index of session %s not updated", session_id)
        finally:
            conn.execute("RELEASE search")

    def watch(
        self, account_id: str, session: Session, before: SessionInfo | None, after: SessionInfo
    ) -> None:
        """A session the Mac reports ended gets its summary snapshot if a turn was left open."""
        if after.state != "ended" or (before is not None and before.state == "ended"):
            return
        if not self.tasks.closed:
            self.tasks.start(self.session_ended(session), name=f"summary of {session.id}")

    def event_fields(self, session: Session) -> Mapping[str, Any]:
        """The summary taken since the relay started, for the session's ``session`` event."""
        summary = self.summaries.get(session.id)
        return {} if summary is None else {"summary": summary}

    async def session_ended(self, session: Session) -> None:
        def job(conn: Connection) -> str | None:
            digest = load_digest(conn, session.id)
            if digest is not None and digest.pending:
                ended = copy.copy(digest)
                ended.take_snapshot("end", time.time())
                save_digest(conn, digest, ended)
                if ended.summary != digest.summary:
                    return ended.summary
            return None

        try:
            summary = await self.store.write(job)
        except Exception:
            _log.exception("end-of-session summary of %s not taken", session.id)
            return
        if summary is not None:
            self.summaries[session.id] = summary
            if self._publish is not None:
                with contextlib.suppress(NotFound):  # deleted meanwhile: nothing to show
                    self._publish(await self.store.get_session(session.account_id, session.id))

    async def close(self) -> None:
        await self.tasks.close()


async def start(state: RelayState) -> SearchIndex:
    """Summaries and the search index for a running relay (titles: relay/features/titles.py)."""
    index = SearchIndex(state.store, publish=state.publish_session)

    async def listed(account_id: str) -> Callable[[str], dict[str, Any]]:
        found = await summaries(state.store, account_id)
        return lambda session_id: {"summary": found.get(session_id, "")}

    async def shown(session: Session) -> dict[str, Any]:
        return {"summary": await summary_of(state.store, session.id)}

    state.hooks.list_fields.append(listed)
    state.hooks.snapshot_fields.append(shown)
    state.hooks.event_fields.append(index.event_fields)
    state.store.add_observer(index)
    state.hooks.watchers.append(index.watch)
    return index


# -- queries (pure) ---------------------------------------------------------------------------

_TERM_RE: Final = re.compile(
    r'(?:(?P<field>[^\W\d_]+):)?(?:"(?P<phrase>[^"]*)(?:"|$)|(?P<word>[^\s"]+))'
)
_WORD_RE: Final = re.compile(r"\w+")


@dataclass(frozen=True)
class Term:
    """One typed term: its words (letters and digits, space-separated), the field it is limited
    to (an FTS column name, or None for any field) and whether it is a quoted phrase (exact) or
    a word prefix."""

    text: str
    column: str | None = None
    phrase: bool = False

    def fts5(self) -> str:
        expression = f'"{self.text}"' if self.phrase else f'"{self.text}"*'
        return f"{self.column} : {expression}" if self.column else expression


def parse_query(query: str) -> list[Term]:
    """The terms of a typed query, at most :data:`MAX_TERMS` (shared by both databases).

    Every term is rebuilt from its letters and digits, so nothing a person types is read as
    search syntax; an empty list means nothing searchable was typed."""
    terms: list[Term] = []
    for match in _TERM_RE.finditer(query):
        field_name = (match.group("field") or "").lower()
        column = FIELDS.get(field_name)
        phrase = match.group("phrase")
        text = phrase if phrase is not None else match.group("word") or ""
        if field_name and column is None:
            text = f"{match.group('field')} {text}"  # "http://…": not a field, plain words
        words = _WORD_RE.findall(text[: MAX_TERM_CHARS * 4])
        if not words:
            continue
        term = " ".join(words)[:MAX_TERM_CHARS].strip()
        terms.append(Term(term, column, phrase is not None))
        if len(terms) >= MAX_TERMS:
            break
    return terms


def match_expression(query: str) -> tuple[str, list[str]]:
    """An FTS5 MATCH expression for a typed query, and the terms it searches for.

    Every term is rebuilt from its letters and digits inside double quotes, so nothing a person
    types is read as FTS5 syntax. An empty expression means nothing searchable was typed.

    >>> match_expression('file:store.py "turn end" NEAR(x) OR')
    ('files : "store py"* AND "turn end" AND "NEAR x"* AND "OR"*', ['store py', 'turn end', 'NEAR x', 'OR'])
    """
    terms = parse_query(query)
    return " AND ".join(t.fts5() for t in terms), [t.text for t in terms]


def parse_time(value: str, *, end_of_day: bool = False) -> float:
    """Epoch seconds from ``2026-11-29`` (local day; its end when ``end_of_day``), an ISO date
    and time, or epoch seconds."""
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        if len(text) == 10:
            day = datetime.strptime(text, "%Y-%m-%d")
            return day.timestamp() + (86400 if end_of_day else 0)
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise BadRequest(
            f"{value[:40]!r} is not a date: use 2026-11-29, 2026-11-29T10:00:00Z or epoch seconds",
            code="bad_date",
        ) from None


@dataclass(frozen=True)
class Filters:
    states: frozenset[str] = frozenset()
    group: str | None = None
    stages: tuple[str, ...] = ()
    since: float | None = None
    until: float | None = None
    device_id: str | None = None  # with cwd: where "here" is
    cwd: str | None = None
    limit: int = LIMIT_DEFAULT


# -- queries (SQL) ----------------------------------------------------------------------------

_BM25: Final = "bm25(session_fts, " + ", ".join(f"{w:g}" for w in WEIGHTS.values()) + ", 0)"
# What search shows of a session beside the session itself: its digest, its Mac's name.
_EXTRA_SELECT: Final = (
    "s.id, d.summary, d.summary_kind, d.summary_at, d.files, d.tools,"
    " COALESCE((SELECT name FROM devices WHERE id = s.device_id), '')"
)


async def _stage_sql(store: Store) -> str | None:
    """SQL for a session's retention stage (features/retention.py keeps it in its own table), or
    None when this relay keeps no stages."""
    if store.dialect.postgres:
        # The catalog itself: information_schema takes longer than the search.
        sql = (
            "SELECT 'session_retention' WHERE to_regclass('session_retention') IS NOT NULL"
            " UNION ALL SELECT 'column' FROM pg_attribute WHERE attrelid ="
            " to_regclass('sessions') AND attname = 'stage' AND NOT attisdropped"
        )
    else:
        sql = (
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'session_retention'"
            " UNION ALL SELECT 'column' FROM pragma_table_info('sessions') WHERE name = 'stage'"
        )
    rows = await store.read(sql)
    found = {str(r[0]) for r in rows}
    if "session_retention" in found:
        return (
            "COALESCE((SELECT r.stage FROM session_retention r WHERE r.session_id = s.id),"
            " 'active')"
        )
    if "column" in found:
        return "COALESCE(s.stage, 'active')"
    return None


def _live(state: RelayState) -> tuple[dict[str, str], list[str]]:
    """Sessions a Mac reports in a live state other than "ended", and the Macs connected: a
    session shows its live state only while its Mac is connected (as session_json decides)."""
    live = {sid: info.state for sid, info in state.live.sessions.items() if info.state}
    return {sid: st for sid, st in live.items() if st != "ended"}, list(state.live.links)


def _where(
    state: RelayState, account_id: str, f: Filters, stage_sql: str | None
) -> tuple[list[str], list[Any]]:
    values = state.store.dialect.json_values  # a JSON array parameter's elements, as rows
    where = ["s.account_id = ?"]
    params: list[Any] = [account_id]
    if f.states:
        live, online = _live(state)
        wanted = [sid for sid, st in live.items() if st in f.states]
        showing = f"(s.id IN ({values}) AND s.device_id IN ({values}))"
        clauses = [showing]
        params += [json.dumps(wanted), json.dumps(online)]
        if "ended" in f.states:
            clauses.append(f"NOT {showing}")
            params += [json.dumps(list(live)), json.dumps(online)]
        where.append("(" + " OR ".join(clauses) + ")")
    if f.group is not None:
        where.append("s.grp = ?")
        params.append(f.group)
    if stage_sql is not None and f.stages:
        where.append(f"{stage_sql} IN ({values})")
        params.append(json.dumps(list(f.stages)))
    if f.since is not None:
        where.append("s.updated_at >= ?")
        params.append(f.since)
    if f.until is not None:
        where.append("s.created_at < ?")
        params.append(f.until)
    return where, params


def _here(f: Filters) -> tuple[str, list[Any]] | None:
    clauses: list[str] = []
    params: list[Any] = []
    if f.device_id:
        clauses.append("s.device_id = ?")
        params.append(f.device_id)
    if f.cwd:
        cwd = f.cwd.rstrip("/") or "/"
        prefix = cwd if cwd.endswith("/") else cwd + "/"
        clauses.append("(s.cwd = ? OR substr(s.cwd, 1, CAST(? AS INTEGER)) = ?)")
        params += [cwd, len(prefix), prefix]
    if not clauses:
        return None
    return "(" + " AND ".join(clauses) + ")", params


@dataclass(frozen=True)
class _Extra:
    """A row of ``SELECT {_EXTRA_SELECT}, <stage>``: what a result shows beside its session."""

    summary: str | None
    summary_kind: str | None
    summary_at: float | None
    files: str | None
    tools: str | None
    mac: str
    stage: str | None

    @classmethod
    def of(cls, row: Sequence[Any]) -> tuple[str, _Extra]:
        session_id, summary, kind, summary_at, files, tools, mac, stage = row
        return str(session_id), cls(summary, kind, summary_at, files, tools, mac, stage)


def _item(state: RelayState, session: Session, extra: _Extra, rank: int) -> dict[str, Any]:
    body = state.session_json(session)
    if extra.stage is not None:
        body.setdefault("stage", extra.stage)
    body.update(
        summary=extra.summary or "",
        summary_kind=extra.summary_kind or None,
        summary_at=iso(extra.summary_at),
        files=json.loads(extra.files or "[]")[:10],
        tools=json.loads(extra.tools or "[]"),
        mac=extra.mac,
        rank=rank,
    )
    return body


@dataclass(frozen=True)
class _Match:
    """Where the searched sessions come from, which match, and in which order."""

    source: str
    where: list[str]
    params: list[Any]
    order: str
    order_params: list[Any]


def _fts5_match(expression: str) -> _Match:
    return _Match(
        "session_fts JOIN session_digest d ON d.doc_id = session_fts.rowid"
        " JOIN sessions s ON s.id = d.session_id",
        ["session_fts MATCH ?"],
        [expression],
        f"{_BM25}, s.updated_at DESC",
        [],
    )


def pg_tsquery(term: Term, *, labelled: bool = True) -> str | None:
    """A term as PostgreSQL tsquery text: its words in a phrase (``<->``), the last a prefix
    (``:*``) unless the term was quoted; limited to its field's weight class when it names one
    and ``labelled``. None when no word of it is indexed (it matches nothing, as in FTS5).

    >>> pg_tsquery(Term("store py", "files"))
    "'store':B <-> 'py':*B"
    """
    words = pg_words(term.text)
    if not words:
        return None
    label = PG_CLASSES[term.column] if term.column and labelled else ""
    marks = [label] * len(words)
    marks[-1] = label if term.phrase else f"*{label}"
    # The words have no ASCII punctuation (pg_words): nothing in them is tsquery syntax.
    return " <-> ".join(f"'{w}':{m}" if m else f"'{w}'" for w, m in zip(words, marks, strict=True))


def _pg_match(terms: Sequence[Term]) -> _Match | None:
    """All terms must match the document (its GIN index); a term limited to a field must match
    that field's words too (a weight class holds more than one field).

    The rank adds up each term's score, as bm25 does: a term of any field scores by ts_rank over
    the document with the weight classes, a term limited to a field by ts_rank over that field's
    words, times the field's weight. There is no length normalisation (bm25 favours short
    sessions a little more than this does)."""
    queries = [pg_tsquery(t) for t in terms]
    if not all(queries):
        return None
    where = ["f.doc @@ to_tsquery('simple', ?)"]
    params: list[Any] = [" & ".join(f"({q})" for q in queries)]
    scores: list[str] = []
    order_params: list[Any] = []
    anywhere = [q for t, q in zip(terms, queries, strict=True) if not t.column]
    if anywhere:  # ts_rank of an OR query is its terms' mean score: times their number, the sum
        scores.append(
            f"{len(anywhere)} * ts_rank('{_PG_RANK_WEIGHTS}'::real[], f.doc,"
            " to_tsquery('simple', ?))"
        )
        order_params.append(" | ".join(f"({q})" for q in anywhere))
    top = max(WEIGHTS.values())
    for term in terms:
        if term.column:
            words = f"f.{term.column}_words"
            where.append(f"{words} @@ to_tsquery('simple', ?)")
            params.append(pg_tsquery(term, labelled=False))
            scores.append(
                f"{WEIGHTS[term.column] / top:.3g}"
                f" * ts_rank('{{1,1,1,1}}'::real[], {words}, to_tsquery('simple', ?))"
            )
            order_params.append(pg_tsquery(term, labelled=False))
    return _Match(
        "session_fts f JOIN sessions s ON s.id = f.session_id",  # it names its session itself
        where,
        params,
        f"({' + '.join(scores)}) DESC, s.updated_at DESC",
        order_params,
    )


async def search(
    state: RelayState, account_id: str, query: str, filters: Filters
) -> dict[str, Any]:
    """Search (or browse, for an empty query) one account's sessions; see the module docstring."""
    query = query.strip()
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(
            f"a search is limited to {MAX_QUERY_CHARS:,} characters (this one has "
            f"{len(query):,}); search for a few words",
            code="query_too_long",
        )
    expression, terms = match_expression(query) if query else ("", [])
    mode = "search" if query else "browse"
    body: dict[str, Any] = {"query": query, "mode": mode, "terms": terms}
    if query and not expression:
        body.update(here=[], elsewhere=[], has_more={"here": False, "elsewhere": False})
        body["note"] = "nothing to search for: type words, file names or dates"
        return body
    match = _Match("sessions s", [], [], "s.updated_at DESC, s.id", [])
    if expression:
        if state.store.dialect.postgres:
            found_match = _pg_match(parse_query(query))
            if found_match is None:  # a term with no word in it: as FTS5, nothing matches
                body.update(here=[], elsewhere=[], has_more={"here": False, "elsewhere": False})
                return body
            match = found_match
        else:
            match = _fts5_match(expression)
    stage_sql = await _stage_sql(state.store)
    where, params = _where(state, account_id, filters, stage_sql)
    where[:0], params[:0] = match.where, match.params
    here = _here(filters)
    sections: dict[str, tuple[list[str], list[Any]] | None] = {
        "here": None if here is None else ([*where, here[0]], [*params, *here[1]]),
        "elsewhere": (where, params)
        if here is None
        else ([*where, f"NOT {here[0]}"], [*params, *here[1]]),
    }
    chosen: dict[str, list[str]] = {}
    has_more: dict[str, bool] = {}
    for name, section in sections.items():
        if section is None:
            chosen[name], has_more[name] = [], False
            continue
        clauses, values = section
        # Two steps: rank ids only (the sort then holds a few bytes per match, not whole
        # rows), then read the winning rows.
        rows = await state.store.read(
            f"SELECT s.id FROM {match.source} WHERE {' AND '.join(clauses)}"
            f" ORDER BY {match.order} LIMIT ?",
            [*values, *match.order_params, filters.limit + 1],
        )
        has_more[name] = len(rows) > filters.limit
        chosen[name] = [str(r[0]) for r in rows[: filters.limit]]
    wanted = chosen["here"] + chosen["elsewhere"]
    found: dict[str, Session] = {}
    extras: dict[str, _Extra] = {}
    if wanted:
        found = await state.store.sessions_by_id(account_id, wanted)
        rows = await state.store.read(
            f"SELECT {_EXTRA_SELECT}, {stage_sql or 'NULL'}"
            " FROM sessions s LEFT JOIN session_digest d ON d.session_id = s.id"
            f" WHERE s.id IN ({state.store.dialect.json_values})",
            (json.dumps(wanted),),
        )
        extras = dict(_Extra.of(row) for row in rows)
    for name, session_ids in chosen.items():
        shown = [sid for sid in session_ids if sid in found and sid in extras]
        body[name] = [
            _item(state, found[sid], extras[sid], rank) for rank, sid in enumerate(shown, 1)
        ]
    body["has_more"] = has_more
    return body


async def summaries(store: Store, account_id: str) -> dict[str, str]:
    """Each session's stored summary, by id (for lists that want to show it)."""
    rows = await store.read(
        "SELECT s.id, d.summary FROM sessions s JOIN session_digest d ON d.session_id = s.id"
        " WHERE s.account_id = ? AND d.summary != ''",
        (account_id,),
    )
    return {str(r[0]): str(r[1]) for r in rows}


async def summary_of(store: Store, session_id: str) -> str:
    rows = await store.read(
        "SELECT summary FROM session_digest WHERE session_id = ?", (session_id,)
    )
    return str(rows[0][0]) if rows else ""


# -- routes -----------------------------------------------------------------------------------

# A read-only view may search and read, never give a title back (relay/deps.py refuse_read_only).
router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in (value or "").split(",") if v.strip()]


@router.get("/search")
async def search_route(
    principal: Phone,
    state: State,
    q: Annotated[str, Query()] = "",
    device_id: Annotated[str | None, Query(max_length=200)] = None,
    cwd: Annotated[str | None, Query(max_length=4096)] = None,
    state_: Annotated[str | None, Query(alias="state", max_length=200)] = None,
    group: Annotated[str | None, Query(max_length=200)] = None,
    stage: Annotated[str | None, Query(max_length=200)] = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    until: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int | None, Query()] = None,
) -> dict[str, Any]:
    """Search sessions by title, summary, files, tools, Mac, folder and date; browse when empty."""
    states = frozenset(_split(state_))
    unknown = states - STATES
    if unknown:
        raise BadRequest(
            f"unknown state {sorted(unknown)[0]!r}: use {', '.join(sorted(STATES))}",
            code="bad_state",
        )
    stages = tuple(_split(stage))
    if set(stages) - STAGES:
        raise BadRequest(
            f"unknown stage {sorted(set(stages) - STAGES)[0]!r}: use active or archived",
            code="bad_stage",
        )
    size = LIMIT_DEFAULT if limit is None else limit
    if not 1 <= size <= LIMIT_MAX:
        raise BadRequest(f"limit must be between 1 and {LIMIT_MAX}", code="bad_limit")
    filters = Filters(
        states=states,
        group=group,
        stages=stages,
        since=parse_time(since) if since else None,
        until=parse_time(until, end_of_day=True) if until else None,
        device_id=device_id or None,
        cwd=cwd or None,
        limit=size,
    )
    found = await search(state, principal.account_id, q, filters)
    # A search with words is counted by the usage report; a result opened from it within two
    # minutes makes it one that worked (POST /api/search/opened with this id).
    found["search_id"] = (
        await report.record_search(state, principal.account_id) if q.strip() else None
    )
    return found


@router.get("/sessions/{session_id}/summary")
async def session_summary(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """The stored summary snapshot of one session (never regenerated by asking)."""
    session = await state.store.get_session(principal.account_id, session_id)
    rows = await state.store.read(
        "SELECT summary, summary_kind, summary_at, files, tools FROM session_digest"
        " WHERE session_id = ?",
        (session.id,),
    )
    if not rows:
        raise NotFound(f"no summary for session {session_id}", code="unknown_session")
    summary, kind, at, files, tools = rows[0]
    return {
        "session_id": session.id,
        "summary": summary,
        "summary_kind": kind or None,
        "summary_at": iso(at),
        "files": json.loads(files),
        "tools": json.loads(tools),
    }


@router.delete("/sessions/{session_id}/title")
async def automatic_title(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """Forget a person's title: the session shows its automatic title again."""
    session = await titles.rename(
        state.store, principal.account_id, session_id, None, titles.shape_of(state)
    )
    state.publish_session(session)
    return state.session_json(session, full=True)


FEATURE = Feature("search", start=start, router=router)
