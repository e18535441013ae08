"""How many tokens each resume scope would re-read: the reopen card's figures — pure.

Read from the ``usage`` Claude Code writes on its assistant lines (``message.usage``: ``input_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``, ``output_tokens``), of the session's
own conversation only (a subagent's answers are not re-read on resume):

* ``full`` — the last answer's input + cache read + cache creation + **output** tokens: the whole
  conversation up to and including that answer, which the next request re-reads. It is the very
  figure Claude Code 2.1.332 shows on its own resume chooser (``This session is 3d old and
  121.5k tokens``: the last answer's 1200 + 120000 + 300 + 31 = 121531 in
  tests/fixtures/claude/2.1.332/resume_chooser/life1), so the two never disagree. (The issue's
  "input + cache read + cache creation" leaves out the last answer's own text, which is re-read
  too.)
* ``summary`` — the fixed part plus the summary: Claude Code's own figure for the conversation
  after its last compaction (``compact_boundary`` ``compactMetadata.postTokens``) when the session
  was compacted before, else :data:`SUMMARY_TOKENS_GUESS`; never more than the conversation part
  it replaces (so never more than ``full``).
* ``fresh`` — the fixed part plus the handoff's estimate (relay/handoff.py).

The *fixed part* (system prompt, tools, CLAUDE.md, reminders: what any first request carries) is
the first answer's input side minus the estimate of the prompt that led to it; unknown (no answer
yet) it is left out, and the card says "at least".

:func:`track_usage` keeps what these need as lines arrive (a line observer's work, O(new lines));
:func:`estimates` makes the figures.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from relay.convert import Conversion
from relay.tokens import estimate_tokens
from wire.protocol import EventKind, LineRecord, MarkerKind

__all__ = [
    "SUMMARY_TOKENS_GUESS",
    "AnswerUsage",
    "ScopeEstimates",
    "UsageTrack",
    "estimates",
    "track_usage",
]

# Not measured: the fake API's summaries are tiny. Claude Code's summaries of long sessions are
# a few pages; replace with a measured figure once one is captured against the real API.
SUMMARY_TOKENS_GUESS: Final = 8000
USAGE_FIELDS: Final = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
)
MAX_TOKENS: Final = 10**9  # a usage field above this is not believed


@dataclass(frozen=True, slots=True)
class AnswerUsage:
    input_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    output_tokens: int = 0

    @property
    def context(self) -> int:
        """What the request that made this answer read."""
        return self.input_tokens + self.cache_read + self.cache_creation

    @property
    def total(self) -> int:
        """What the next request re-reads: the context and this answer."""
        return self.context + self.output_tokens

    @classmethod
    def of(cls, usage: Mapping[str, Any] | None) -> AnswerUsage | None:
        """From a ``message.usage`` object; None when it has no believable figures."""
        if not isinstance(usage, Mapping):
            return None
        values = []
        for name in USAGE_FIELDS:
            value = usage.get(name, 0)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_TOKENS:
                return None
            values.append(value)
        found = cls(*values)
        return found if found.total > 0 else None


@dataclass(frozen=True, slots=True)
class UsageTrack:
    """What the estimates need, kept per session (small and JSON-able)."""

    first: AnswerUsage | None = None  # the first answer of the session
    first_prompt_tokens: int = 0  # the estimate of the prompt before it
    last: AnswerUsage | None = None  # the latest answer
    compacted: int | None = None  # Claude Code's postTokens of the latest compaction
    pending_prompt_tokens: int = 0  # the latest prompt not answered yet

    def to_json(self) -> dict[str, Any]:
        def usage(u: AnswerUsage | None) -> list[int] | None:
            return (
                None
                if u is None
                else [u.input_tokens, u.cache_read, u.cache_creation, u.output_tokens]
            )

        return {
            "first": usage(self.first),
            "first_prompt_tokens": self.first_prompt_tokens,
            "last": usage(self.last),
            "compacted": self.compacted,
            "pending_prompt_tokens": self.pending_prompt_tokens,
        }

    @classmethod
    def from_json(cls, data: object) -> UsageTrack:
        """A track stored by :meth:`to_json`; ValueError when it is not one."""
        if not isinstance(data, Mapping):
            raise ValueError("a usage track is not an object")

        def usage(value: object) -> AnswerUsage | None:
            if value is None:
                return None
            if not isinstance(value, list) or len(value) != len(USAGE_FIELDS):
                raise ValueError("a usage is not four numbers")
            found = AnswerUsage.of(dict(zip(USAGE_FIELDS, value, strict=True)))
            if found is None:
                raise ValueError("a usage is not four token counts")
            return found

        def count(key: str, *, optional: bool = False) -> int | None:
            value = data.get(key)
            if value is None and optional:
                return None
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_TOKENS:
                raise ValueError(f"{key} is not a token count")
            return value

        return cls(
            first=usage(data.get("first")),
            first_prompt_tokens=count("first_prompt_tokens") or 0,
            last=usage(data.get("last")),
            compacted=count("compacted", optional=True),
            pending_prompt_tokens=count("pending_prompt_tokens") or 0,
        )


def _main_line(conversion: Conversion) -> bool:
    return conversion.facts.agent_id is None


def _post_compact_tokens(record: LineRecord, conversion: Conversion) -> int | None:
    line: Any = conversion.line  # parsed once, as the line was converted
    if line is None:
        try:
            line = json.loads(record.text)
        except ValueError:
            return None
    meta = line.get("compactMetadata") if isinstance(line, dict) else None
    tokens = meta.get("postTokens") if isinstance(meta, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens < MAX_TOKENS:
        return None
    return tokens


def track_usage(track: UsageTrack, lines: Iterable[tuple[LineRecord, Conversion]]) -> UsageTrack:
    """``track`` after new lines of the session (a line observer's ``lines``).

    Runs for every batch a Mac sends: the figures are kept in locals and the track is made once
    at the end (a ``replace`` per event would cost more than the rest of it)."""
    first, first_prompt, last = track.first, track.first_prompt_tokens, track.last
    compacted, pending = track.compacted, track.pending_prompt_tokens
    for record, conversion in lines:
        if not _main_line(conversion):
            continue
        for event in conversion.events:
            if event.kind is EventKind.USER and event.text:
                pending = estimate_tokens(event.text)
            elif event.kind is EventKind.MARKER and event.marker is MarkerKind.COMPACTED:
                compacted = _post_compact_tokens(record, conversion)
        if conversion.facts.line_type != "assistant" or conversion.facts.model is None:
            continue  # Claude Code's synthetic answers (API errors) carry no real usage
        usage = AnswerUsage.of(conversion.facts.usage)
        if usage is None:
            continue
        if first is None:
            first, first_prompt = usage, pending
        last = usage
    after = UsageTrack(
        first=first,
        first_prompt_tokens=first_prompt,
        last=last,
        compacted=compacted,
        pending_prompt_tokens=pending,
    )
    return track if after == track else after


@dataclass(frozen=True, slots=True)
class ScopeEstimates:
    full: int | None  # None: no answer yet, nothing to re-read
    summary: int | None
    fresh: int
    fixed: int | None  # the fixed part each includes (None: unknown, left out)

    def to_json(self) -> dict[str, Any]:
        return {
            "full": self.full,
            "summary": self.summary,
            "fresh": self.fresh,
            "fixed": self.fixed,
        }


def estimates(track: UsageTrack, handoff_tokens: int) -> ScopeEstimates:
    """Each scope's tokens (see the module docstring)."""
    fixed = None
    if track.first is not None:
        fixed = max(0, track.first.context - track.first_prompt_tokens)
    base = fixed or 0
    full = track.last.total if track.last is not None else None
    summary = None
    if full is not None:
        conversation = max(0, full - base)
        summary_part = track.compacted if track.compacted is not None else SUMMARY_TOKENS_GUESS
        # A summary replaces the conversation part: the estimate never says it costs more.
        summary = min(full, base + min(conversation, summary_part))
    return ScopeEstimates(full=full, summary=summary, fresh=base + handoff_tokens, fixed=fixed)
