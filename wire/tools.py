"""A tool use's input in one readable line: what a card and a tool-use event both show.

Shared by the relay (the TOOL_USE event's summary, the audit log's card summaries) and the agent
(the summary a decision carries), so a card reads the same wherever it is made. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

__all__ = ["SUMMARY_MAX_CHARS", "one_line", "summarize_tool_input"]

SUMMARY_MAX_CHARS: Final = 200  # a tool summary is one line of the page
_SHORT_SCALAR_CHARS: Final = 60  # longer values are left out of an unknown tool's summary


def one_line(text: str, max_chars: int = SUMMARY_MAX_CHARS) -> str:
    """``text`` on one line, cut to ``max_chars`` with an ellipsis."""
    # Bound the work first: a heredoc command can be megabytes long.
    flat = " ".join(text[: max_chars * 4].split())
    if len(flat) > max_chars:
        return flat[: max_chars - 1] + "…"
    return flat


def _first_str(tool_input: Mapping[str, Any], *keys: str) -> str:
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _sum_bash(i: Mapping[str, Any]) -> str:
    return _first_str(i, "command", "description")


def _sum_path(i: Mapping[str, Any]) -> str:
    return _first_str(i, "file_path", "notebook_path", "path")


def _sum_search(i: Mapping[str, Any]) -> str:
    pattern = _first_str(i, "pattern")
    path = _first_str(i, "path")
    return f"{pattern} in {path}" if path else pattern


def _sum_url(i: Mapping[str, Any]) -> str:
    return _first_str(i, "url")


def _sum_query(i: Mapping[str, Any]) -> str:
    return _first_str(i, "query")


def _sum_agent(i: Mapping[str, Any]) -> str:
    kind = _first_str(i, "subagent_type")
    description = _first_str(i, "description", "prompt")
    return f"{kind}: {description}" if kind else description


def _sum_question(i: Mapping[str, Any]) -> str:
    questions = i.get("questions")
    if not isinstance(questions, list) or not questions:
        return _first_str(i, "question")
    first = questions[0]
    text = _first_str(first, "question", "header") if isinstance(first, dict) else ""
    more = len(questions) - 1
    return f"{text} (+{more} more)" if more else text


def _sum_plan(i: Mapping[str, Any]) -> str:
    return "plan"


def _sum_todos(i: Mapping[str, Any]) -> str:
    todos = i.get("todos")
    count = len(todos) if isinstance(todos, list) else 0
    return f"{count} todo" if count == 1 else f"{count} todos"


def _sum_skill(i: Mapping[str, Any]) -> str:
    skill = _first_str(i, "skill", "command")
    args = _first_str(i, "args")
    return f"{skill} {args}" if args else skill


def _scalar_text(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and len(value) <= _SHORT_SCALAR_CHARS:
        return value
    return None


def _sum_generic(i: Mapping[str, Any]) -> str:
    parts = []
    for key, value in i.items():
        text = _scalar_text(value)
        if text is not None:
            parts.append(f"{key}={text}")
    return " ".join(parts)


_SUMMARIZERS: Final[Mapping[str, Callable[[Mapping[str, Any]], str]]] = {
    "Bash": _sum_bash,
    "Read": _sum_path,
    "Write": _sum_path,
    "Edit": _sum_path,
    "MultiEdit": _sum_path,
    "NotebookEdit": _sum_path,
    "NotebookRead": _sum_path,
    "LS": _sum_path,
    "Grep": _sum_search,
    "Glob": _sum_search,
    "WebFetch": _sum_url,
    "WebSearch": _sum_query,
    "ToolSearch": _sum_query,
    "Agent": _sum_agent,
    "Task": _sum_agent,
    "AskUserQuestion": _sum_question,
    "ExitPlanMode": _sum_plan,
    "TodoWrite": _sum_todos,
    "Skill": _sum_skill,
    "SlashCommand": _sum_skill,
}


def summarize_tool_input(tool: str, tool_input: Mapping[str, Any]) -> str:
    """A readable one-line summary of a tool's input (at most ``SUMMARY_MAX_CHARS`` chars)."""
    if not isinstance(tool_input, Mapping):
        return ""
    summarize = _SUMMARIZERS.get(tool, _sum_generic)
    return one_line(summarize(tool_input))
