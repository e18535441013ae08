"""wire/tools.py: the one-line summary of a tool call's input that cards, events and the page show,
for each tool Claude Code has and any other (an MCP tool's scalar arguments)."""

from __future__ import annotations

from typing import Any

import pytest

from wire.tools import summarize_tool_input


@pytest.mark.parametrize(
    ("tool", "tool_input", "expected"),
    [
        ("Bash", {"command": "ls -la", "description": "List"}, "ls -la"),
        ("Bash", {"description": "List files"}, "List files"),
        (
            "Bash",
            {"command": "cat <<EOF\nline one\n  line two\nEOF"},
            "cat <<EOF line one line two EOF",
        ),
        ("Write", {"file_path": "/a/b.py", "content": "x"}, "/a/b.py"),
        ("Edit", {"file_path": "/a/c.py", "old_string": "a", "new_string": "b"}, "/a/c.py"),
        ("Read", {"file_path": "/a/d.py", "offset": 10}, "/a/d.py"),
        ("NotebookEdit", {"notebook_path": "/n.ipynb"}, "/n.ipynb"),
        ("Grep", {"pattern": "TODO", "path": "src"}, "TODO in src"),
        ("Glob", {"pattern": "**/*.py"}, "**/*.py"),
        ("WebFetch", {"url": "https://example.com", "prompt": "read"}, "https://example.com"),
        ("WebSearch", {"query": "python 3.14"}, "python 3.14"),
        ("Agent", {"subagent_type": "Explore", "description": "Find it"}, "Explore: Find it"),
        ("Task", {"description": "Only a description"}, "Only a description"),
        ("AskUserQuestion", {"questions": [{"question": "Red or blue?"}]}, "Red or blue?"),
        ("ExitPlanMode", {"plan": "# Plan\n1. x"}, "plan"),
        ("TodoWrite", {"todos": [{"content": "a"}, {"content": "b"}]}, "2 todos"),
        ("TodoWrite", {"todos": [{"content": "a"}]}, "1 todo"),
        ("ToolSearch", {"query": "select:ExitPlanMode", "max_results": 1}, "select:ExitPlanMode"),
        (
            "mcp__db__query",
            {"sql": "select 1", "limit": 5, "dry": True, "opts": {"a": 1}, "blob": "z" * 500},
            "sql=select 1 limit=5 dry=true",
        ),
        ("Bash", {}, ""),
    ],
)
def test_summarize_tool_input(tool: str, tool_input: dict[str, Any], expected: str) -> None:
    assert summarize_tool_input(tool, tool_input) == expected


def test_summary_is_one_short_line() -> None:
    summary = summarize_tool_input("Bash", {"command": "echo hi\n" * 10_000})
    assert "\n" not in summary
    assert len(summary) <= 200
    assert summary.startswith("echo hi echo hi")
    assert summary.endswith("…")


def test_summary_of_odd_input_does_not_raise() -> None:
    assert summarize_tool_input("AskUserQuestion", {"questions": "not a list"}) == ""
    assert summarize_tool_input("AskUserQuestion", {"questions": [5]}) == ""
    assert summarize_tool_input("TodoWrite", {"todos": None}) == "0 todos"
