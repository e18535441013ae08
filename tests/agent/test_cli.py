"""agent/cli.py: the extra claude arguments a person gives ``claude-bridge agent``, remembered for the
next start and forgotten on request; a refused change changes nothing."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from agent.cli import resolve_claude_args


def test_extra_claude_args_are_remembered_and_forgotten(tmp_path: Path) -> None:
    def options(**given: object) -> argparse.Namespace:
        return argparse.Namespace(**{"claude_arg": None, "no_claude_args": False, **given})

    assert resolve_claude_args(options(), tmp_path) == []
    given = ["--add-dir", "/Users/ada/shared"]
    assert resolve_claude_args(options(claude_arg=given), tmp_path) == given
    assert resolve_claude_args(options(), tmp_path) == given  # the next start, as a service
    with pytest.raises(SystemExit) as refused:
        resolve_claude_args(options(claude_arg=["--model", "opus"]), tmp_path)
    assert refused.value.code == 2
    assert resolve_claude_args(options(), tmp_path) == given  # a refused change changes nothing
    (tmp_path / "claude-args.json").write_text('{"not": "a list"}')
    with pytest.raises(SystemExit):
        resolve_claude_args(options(), tmp_path)
    assert resolve_claude_args(options(no_claude_args=True), tmp_path) == []
    assert resolve_claude_args(options(), tmp_path) == []
