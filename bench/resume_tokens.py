"""Resume scopes: what a ``full`` resume re-reads against a ``fresh`` one, and the handoff's
build time — no server, the relay's pure cores on real and synthetic transcripts.

For each transcript the lines are converted as the relay stores them (relay/convert.py), the
usage Claude Code wrote on its answers is tracked (relay/resume_estimates.py ``track_usage``), the
ledger built (relay/ledger_rules.py) and the handoff (relay/handoff.py, budget
``handoff_max_tokens`` = 8000): ``full`` is the last answer's input + cache + output tokens (what
the next request re-reads), ``fresh`` the fixed part (system prompt and tools: the first answer's
context minus its prompt) plus the handoff. The ratio is fresh / full.

* **captured**: every main transcript of tests/fixtures/transcripts and the 2.1.332 captures with
  usage (the fake API's usage figures: small, so a ratio near 1 says little);
* **synthetic**: a long session (``--turns``, 300 by default) of prompts, answers, file edits and
  a question answered every tenth turn, whose usage grows as a real conversation's does (each
  request re-reads all before it, the fixed part 12,000 tokens). Its handoff keeps every decision.
* **build time**: the ledger + handoff of the synthetic session, median of ``--repeat`` builds.

    .venv/bin/python -m bench.resume_tokens [--turns 300] [--repeat 20] [--quick]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import REPO, TRANSCRIPTS, Row, log, markdown_table
from relay.convert import convert_line
from relay.handoff import HANDOFF_MAX_TOKENS_DEFAULT, Handoff, build_handoff
from relay.ledger_rules import build_ledger
from relay.recent_work import files_touched, last_exchange
from relay.resume_estimates import UsageTrack, estimates, track_usage
from relay.tokens import estimate_tokens
from wire.protocol import LineRecord, NumberedEvent

CAPTURES_332 = REPO / "tests" / "fixtures" / "claude" / "2.1.332"
FIXED_TOKENS = 12_000  # the synthetic session's system prompt and tools
ANSWER_WORDS = 120
QUESTION_EVERY = 10
GOAL_BUILD_MS = 50.0  # a handoff built at reopen time must not be felt


@dataclass(frozen=True)
class Figures:
    name: str
    lines: int
    full: int | None
    fresh: int
    handoff: Handoff

    @property
    def ratio(self) -> float | None:
        return self.fresh / self.full if self.full else None


def figures(name: str, lines: list[str], budget: int = HANDOFF_MAX_TOKENS_DEFAULT) -> Figures:
    """One transcript's full and fresh estimates (see the module docstring)."""
    converted = [
        (LineRecord(offset=n, text=line), convert_line(line)) for n, line in enumerate(lines)
    ]
    track = track_usage(UsageTrack(), converted)
    events = list(numbered(c for _, c in converted))
    handoff = build_handoff(
        build_ledger(events), files_touched(events), last_exchange(events), budget
    )
    found = estimates(track, handoff.tokens)
    return Figures(name, len(lines), found.full, found.fresh, handoff)


def numbered(conversions: Iterable[Any]) -> Iterator[NumberedEvent]:
    seq = count(1)
    for conversion in conversions:
        for event in conversion.events:
            yield NumberedEvent(**event.model_dump(), session_id="s", seq=next(seq), epoch="e")


def captured() -> list[tuple[str, list[str]]]:
    """The captured main transcripts (subagents' apart), by name."""
    found = [p for p in sorted(TRANSCRIPTS.glob("*.jsonl")) if "__subagent__" not in p.name]
    found += sorted(p for p in CAPTURES_332.rglob("*.jsonl") if "subagent" not in p.name)
    out = []
    for path in found:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        out.append((str(path.relative_to(REPO)), lines))
    return out


# -- the synthetic session -----------------------------------------------------------------------


class Synthetic:
    """Lines shaped as Claude Code 2.1.332 writes them, with usage that grows turn by turn."""

    def __init__(self) -> None:
        self.clock = count()
        self.context = FIXED_TOKENS

    def stamp(self) -> str:
        n = next(self.clock)
        return f"2026-12-05T{10 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

    def user(self, content: Any) -> str:
        self.context += estimate_tokens(json.dumps(content))
        return json.dumps(
            {"type": "user", "message": {"role": "user", "content": content},
             "timestamp": self.stamp(), "sessionId": "c-1"}
        )  # fmt: skip

    def assistant(self, blocks: list[dict[str, Any]]) -> str:
        out = estimate_tokens(json.dumps(blocks))
        usage = {"input_tokens": 40, "cache_read_input_tokens": self.context - 40,
                 "cache_creation_input_tokens": 0, "output_tokens": out}  # fmt: skip
        self.context += out
        n = next(self.clock)
        return json.dumps(
            {"type": "assistant", "timestamp": self.stamp(), "sessionId": "c-1",
             "message": {"id": f"msg_{n}", "role": "assistant", "model": "claude-opus-5-5",
                         "content": blocks, "usage": usage}}
        )  # fmt: skip

    def turn(self, n: int) -> list[str]:
        path = f"src/module_{n % 37}.py"
        words = " ".join(f"word{(n * 7 + i) % 97}" for i in range(ANSWER_WORDS))
        lines = [self.user(f"Turn {n}: change {path} so that case {n} is handled")]
        tool = f"t{n}"
        lines.append(self.assistant([{"type": "tool_use", "id": tool, "name": "Edit",
                                      "input": {"file_path": path, "old_string": "a",
                                                "new_string": "b"}}]))  # fmt: skip
        lines.append(self.user([{"type": "tool_result", "tool_use_id": tool,
                                 "content": f"The file {path} has been updated."}]))  # fmt: skip
        if n % QUESTION_EVERY == 0:
            ask = f"q{n}"
            question = f"Which storage should case {n} use?"
            lines.append(self.assistant([{"type": "tool_use", "id": ask, "name": "AskUserQuestion",
                                          "input": {"questions": [{"question": question,
                                                    "header": "Storage", "multiSelect": False,
                                                    "options": [{"label": "SQLite"},
                                                                {"label": "Files"}]}]}}]))  # fmt: skip
            answer = f'Your questions have been answered: "{question}"="SQLite". You can now continue with these answers in mind.'
            lines.append(
                self.user([{"type": "tool_result", "tool_use_id": ask, "content": answer}])
            )
        lines.append(self.assistant([{"type": "text", "text": f"Done with turn {n}. {words}"}]))
        return lines


def synthetic(turns: int) -> list[str]:
    session = Synthetic()
    return [line for n in range(1, turns + 1) for line in session.turn(n)]


def build_ms(lines: list[str], repeat: int) -> float:
    events = list(numbered(convert_line(line) for line in lines))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        build_handoff(build_ledger(events), files_touched(events), last_exchange(events))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(turns: int = 300, repeat: int = 20) -> list[Row]:
    rows: list[Row] = []
    real = [figures(name, lines) for name, lines in captured()]
    with_usage = [f for f in real if f.full]
    for f in with_usage:
        log(f"{f.name}: full {f.full} fresh {f.fresh} ({f.handoff.decisions} decisions)")
    if with_usage:
        ratios = [f.ratio for f in with_usage if f.ratio is not None]
        rows.append(
            Row(
                f"resume tokens on the {len(with_usage)} captured transcripts with usage (fake API's "
                "figures), fresh / full",
                f"median {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})",
            )
        )
    lines = synthetic(turns)
    long = figures(f"synthetic {turns} turns", lines)
    assert long.full is not None
    rows.append(
        Row(
            f"resume tokens of a synthetic {turns}-turn session ({len(lines):,} lines, "
            f"{long.handoff.decisions} decisions kept verbatim): full vs fresh",
            f"{long.full:,} vs {long.fresh:,} tokens: fresh is **{long.ratio:.3f}×** full "
            f"(handoff {long.handoff.tokens:,} of {long.handoff.budget:,})",
        )
    )
    ms = build_ms(lines, repeat)
    rows.append(
        Row(
            f"handoff build (ledger + handoff) of that session, median of {repeat}",
            f"{ms:.1f} ms",
            f"≤ {GOAL_BUILD_MS:.0f} ms",
            ms <= GOAL_BUILD_MS,
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="60 turns, 5 builds")
    args = parser.parse_args(argv)
    turns, repeat = (60, 5) if args.quick else (args.turns, args.repeat)
    print(markdown_table(run(turns, repeat)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
