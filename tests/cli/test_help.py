"""``--help`` on every command and every flag says what it does: the argparse tree, walked."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

from cli.main import build_parser
from wire import __version__
from wire.claude_versions import TESTED_VERSIONS


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """Every parser under ``parser`` with its command path and the help its parent lists."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            listed = {choice.dest: choice.help for choice in action._choices_actions}
            for name, child in action.choices.items():
                yield (*path, name), child, listed.get(name)
                yield from commands(child, (*path, name))


def silent(text: str | None) -> bool:
    return not text or text == argparse.SUPPRESS or not text.strip()


def test_every_command_has_a_description_and_a_line_in_its_parents_list() -> None:
    found = list(commands(build_parser()))
    assert len(found) >= 20  # the walk reaches the whole tree, sub-commands included
    assert ("token", "create") in {path for path, _, _ in found}
    lacking = [
        f"claude-bridge {' '.join(path)}: no {what}"
        for path, parser, listed in found
        for what, text in (("description", parser.description), ("help", listed))
        if silent(text)
    ]
    assert not lacking, "\n".join(lacking)


def test_every_argument_says_what_it_does() -> None:
    root = build_parser()
    parsers = [((), root), *((path, parser) for path, parser, _ in commands(root))]
    checked, lacking = 0, []
    for path, parser in parsers:
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            checked += 1
            if silent(action.help):
                name = "/".join(action.option_strings) or action.dest
                lacking.append(f"claude-bridge {' '.join(path)} {name}: no help")
    assert checked >= 80
    assert not lacking, "\n".join(lacking)


def test_the_walk_catches_a_command_or_flag_with_nothing_to_say() -> None:
    parser = argparse.ArgumentParser(description="x")
    sub = parser.add_subparsers()
    quiet = sub.add_parser("quiet")
    quiet.add_argument("--flag")
    ((path, child, listed),) = commands(parser)
    assert path == ("quiet",) and silent(child.description) and silent(listed)
    assert [a for a in child._actions if silent(a.help) and a.option_strings != ["-h", "--help"]]


def test_version_names_the_product_and_the_tested_claude_code_versions() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"claude-bridge {__version__}",
        f"tested with Claude Code {', '.join(TESTED_VERSIONS)}",
    ]


def test_up_help_describes_the_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cli", "up", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())  # however wide the terminal wraps it
    assert "print a one-time link and QR code to pair your phone" in text
    assert "--public-url URL" in text
