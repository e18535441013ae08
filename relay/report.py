"""The usage report's figures, from plain rows — pure (``GET /api/report``, ``claude-bridge report``).

The report feature reads its rows from its tables over the window ``since <= at < until`` and
hands them here; this module only counts. Every figure is given for the whole account
(``totals``), per Mac (``by_mac``, by device id) and per project (``by_project``); a row that
belongs to no Mac or project (a search, run across the account) counts in the totals only.

* **Sessions** (:class:`StartRow`): started new, and resumed by scope (``full`` / ``summary`` /
  ``fresh``). *Resume rate* = resumed starts ÷ all starts (None with no start).
* **Tokens on resume** (:class:`ResumeRow`): re-read = the first turn's context after a reopen
  (input + cache read + cache creation of its first answer), summed and averaged per scope;
  *avoided* = the ``full`` estimate at reopen − what was re-read, summed per scope (signed: a
  fresh start that re-read more than the full estimate counts against; rows without an estimate
  are left out of it).
* **Search success** (:class:`SearchRow`): searches run, and the share followed by opening one of
  its results within :data:`SEARCH_FOLLOW_SECONDS` (the design's "search success rate").
* **Memory** (:class:`MemoryRow`): candidates proposed / accepted / edited / dismissed in the
  window (each fate counted when it happened; ``edited`` is an acceptance with the text changed,
  so *accepted* includes it and ``edited`` says how many of those).
* **Retention** (:class:`RetentionRow`): expiries due and done; *done rate* = done ÷ due.

Rates are None when their denominator is 0 ("no figure", not 0 %). Everything is deterministic:
keys are sorted, sums are of integers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

__all__ = [
    "SCOPES",
    "SEARCH_FOLLOW_SECONDS",
    "Figures",
    "MemoryRow",
    "Report",
    "ResumeRow",
    "RetentionRow",
    "SearchRow",
    "StartRow",
    "Window",
    "build_report",
]

SCOPES: Final = ("full", "summary", "fresh")
SEARCH_FOLLOW_SECONDS: Final = 120.0  # a result opened within this of its search: the search worked
Scope = Literal["full", "summary", "fresh"]


@dataclass(frozen=True, slots=True)
class Window:
    since: float
    until: float

    def __post_init__(self) -> None:
        if not self.since <= self.until:
            raise ValueError(f"a report window must not end before it starts ({self})")

    def holds(self, at: float) -> bool:
        return self.since <= at < self.until


@dataclass(frozen=True, slots=True)
class StartRow:
    """A session started: new, or resumed with a scope (a message, Reopen, a revive, a move)."""

    at: float
    session_id: str
    device_id: str
    project: str
    resumed: bool
    scope: Scope | None = None  # set when resumed


@dataclass(frozen=True, slots=True)
class ResumeRow:
    """What a resume re-read (its first answer's context) and the full estimate at reopen."""

    at: float
    session_id: str
    device_id: str
    project: str
    scope: Scope
    reread_tokens: int
    full_estimate: int | None


@dataclass(frozen=True, slots=True)
class SearchRow:
    at: float
    search_id: str
    opened_at: float | None  # when a result of it was first opened (None: never)


@dataclass(frozen=True, slots=True)
class MemoryRow:
    at: float
    candidate_id: str
    project: str
    fate: Literal["proposed", "accepted", "edited", "dismissed"]


@dataclass(frozen=True, slots=True)
class RetentionRow:
    at: float
    due: int
    done: int
    device_id: str | None = None
    project: str | None = None


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class Figures:
    started: int = 0
    resumed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCOPES, 0))
    reread_count: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCOPES, 0))
    reread_tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCOPES, 0))
    avoided_tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SCOPES, 0))
    searches: int = 0
    searches_followed: int = 0
    memory: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("proposed", "accepted", "edited", "dismissed"), 0)
    )
    expiries_due: int = 0
    expiries_done: int = 0

    @property
    def resumed_total(self) -> int:
        return sum(self.resumed.values())

    def to_json(self) -> dict[str, Any]:
        starts = self.started + self.resumed_total
        return {
            "sessions": {
                "started": self.started,
                "resumed": dict(self.resumed),
                "resume_rate": _rate(self.resumed_total, starts),
            },
            "tokens": {
                scope: {
                    "resumes": self.reread_count[scope],
                    "reread": self.reread_tokens[scope],
                    "reread_mean": (
                        self.reread_tokens[scope] / self.reread_count[scope]
                        if self.reread_count[scope]
                        else None
                    ),
                    "avoided": self.avoided_tokens[scope],
                }
                for scope in SCOPES
            },
            "search": {
                "searches": self.searches,
                "followed": self.searches_followed,
                "success_rate": _rate(self.searches_followed, self.searches),
            },
            "memory": {
                **self.memory,
                "accepted": self.memory["accepted"] + self.memory["edited"],
            },
            "retention": {
                "due": self.expiries_due,
                "done": self.expiries_done,
                "done_rate": _rate(self.expiries_done, self.expiries_due),
            },
        }


@dataclass
class Report:
    window: Window
    totals: Figures = field(default_factory=Figures)
    by_mac: dict[str, Figures] = field(default_factory=dict)
    by_project: dict[str, Figures] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "since": self.window.since,
            "until": self.window.until,
            "totals": self.totals.to_json(),
            "by_mac": {key: self.by_mac[key].to_json() for key in sorted(self.by_mac)},
            "by_project": {key: self.by_project[key].to_json() for key in sorted(self.by_project)},
        }


def _figures(report: Report, device_id: str | None, project: str | None) -> list[Figures]:
    """The figures a row counts in: the totals, its Mac's and its project's."""
    found = [report.totals]
    if device_id is not None:
        found.append(report.by_mac.setdefault(device_id, Figures()))
    if project is not None:
        found.append(report.by_project.setdefault(project, Figures()))
    return found


def build_report(
    window: Window,
    starts: Iterable[StartRow] = (),
    resumes: Iterable[ResumeRow] = (),
    searches: Iterable[SearchRow] = (),
    memory: Iterable[MemoryRow] = (),
    retention: Iterable[RetentionRow] = (),
) -> Report:
    """The report over ``window`` (rows outside it are left out)."""
    report = Report(window)
    for start in starts:
        if not window.holds(start.at):
            continue
        for figures in _figures(report, start.device_id, start.project):
            if start.resumed and start.scope in SCOPES:
                figures.resumed[start.scope] += 1
            elif not start.resumed:
                figures.started += 1
    for resume in resumes:
        if not window.holds(resume.at) or resume.scope not in SCOPES:
            continue
        for figures in _figures(report, resume.device_id, resume.project):
            figures.reread_count[resume.scope] += 1
            figures.reread_tokens[resume.scope] += resume.reread_tokens
            if resume.full_estimate is not None:
                figures.avoided_tokens[resume.scope] += resume.full_estimate - resume.reread_tokens
    for search in searches:
        if not window.holds(search.at):
            continue
        report.totals.searches += 1
        opened = search.opened_at
        if opened is not None and 0 <= opened - search.at <= SEARCH_FOLLOW_SECONDS:
            report.totals.searches_followed += 1
    for row in memory:
        if window.holds(row.at) and row.fate in report.totals.memory:
            for figures in _figures(report, None, row.project):
                figures.memory[row.fate] += 1
    for expiry in retention:
        if window.holds(expiry.at):
            for figures in _figures(report, expiry.device_id, expiry.project):
                figures.expiries_due += expiry.due
                figures.expiries_done += expiry.done
    return report
