"""relay.features.title_format: the ``title_format`` convention and "Regenerate"."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relay.features.title_format import (
    PLACEHOLDERS,
    TITLE_FORMAT_DEFAULT,
    parse_title_format,
    project_name,
    regenerate,
    render_title,
    shown_title,
)
from relay.features.titles import TitlePieces, claude_title, update_pieces
from tests.support.transcripts import CLAUDE_332, converted, lines_of
from wire.errors import ConfigError

PROPERTIES = settings(max_examples=200, derandomize=True, database=None, deadline=None)
CONVENTION = parse_title_format("{project} · {title}")


def test_the_convention_and_the_default() -> None:
    assert render_title(CONVENTION, "Fix the flaky login test", "claude-bridge", "/w/cb") == (
        "claude-bridge · Fix the flaky login test"
    )
    default = parse_title_format(TITLE_FORMAT_DEFAULT)
    assert render_title(default, "Fix it", "claude-bridge", "/w/cb") == "Fix it"
    braces = parse_title_format("{{{folder}}} {title}")
    assert render_title(braces, "Fix it", "p", "/w/desk_repo.v2/") == "{desk_repo.v2} Fix it"


def test_no_title_yet_renders_nothing_rather_than_half_a_title() -> None:
    assert render_title(CONVENTION, "", "claude-bridge", "/w/cb") == ""


def test_a_persons_title_is_shown_as_typed() -> None:
    assert shown_title(CONVENTION, "my own name", True, "claude-bridge", "/w") == "my own name"
    assert shown_title(CONVENTION, "auto", False, "p", "/w") == "p · auto"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{project} · {name}", "unknown placeholder {name}"),
        ("{project}", "no {title}"),
        ("{} {title}", "empty placeholder"),
        ("{0} {title}", "unknown placeholder {0}"),
        ("{title!r}", "no conversion or format spec"),
        ("{title:>20}", "no conversion or format spec"),
        ("{title", "not a valid format"),
        ("title}", "not a valid format"),
        ("{title}" + "x" * 300, "over 200"),
    ],
)
def test_a_bad_format_is_refused_at_config_time_saying_what_is_allowed(
    text: str, says: str
) -> None:
    with pytest.raises(ConfigError, match="title_format") as refused:
        parse_title_format(text)
    message = str(refused.value)
    assert says in message
    assert all("{" + name + "}" in message for name in PLACEHOLDERS)


@pytest.mark.parametrize(
    ("folder", "remote", "name"),
    [
        ("/Users/me/work/claude-bridge", None, "claude-bridge"),
        ("/Users/me/work/cb/", None, "cb"),
        ("/w/checkout", "git@github.com:owner/claude-bridge.git", "claude-bridge"),
        ("/w/checkout", "https://github.com/owner/claude-bridge", "claude-bridge"),
        ("/w/checkout", "ssh://git@host:22/owner/claude-bridge.git/", "claude-bridge"),
        ("/w/checkout", "/srv/git/claude-bridge.git", "claude-bridge"),
        ("/w/checkout", "", "checkout"),
        ("/", None, "/"),
    ],
)
def test_the_project_is_the_remotes_repository_else_the_folder(
    folder: str, remote: str | None, name: str
) -> None:
    assert project_name(folder, remote) == name


def test_regenerate_takes_the_newest_ai_title_else_the_heuristic_and_never_a_rename() -> None:
    # The desk capture: Claude Code's ai-title, then the person's /rename (a custom-title).
    lines = converted(
        lines_of(CLAUDE_332 / "desk" / "life1" / "79a9d55d-5099-4f5b-bae6-c4e19f9a8f9e.jsonl")
    )
    pieces = update_pieces(TitlePieces(), "79a9d55d", lines)
    assert pieces.claude_title == "Desk work on feature"  # the custom-title wins the auto title
    ai_titles = [c.facts.title for _, c in lines if c.facts.line_type == "ai-title"]
    newest = ai_titles[-1]
    assert newest is not None
    assert regenerate(pieces, newest, set_by_person=False).title == "Mock session title"
    assert regenerate(pieces, newest, set_by_person=False).source == "ai-title"
    assert not regenerate(pieces, newest, set_by_person=True).applies
    heuristic = regenerate(TitlePieces(gist="Fix the flaky login test"), None, set_by_person=False)
    assert (heuristic.title, heuristic.source, heuristic.applies) == (
        "Fix the flaky login test",
        "heuristic",
        True,
    )
    nothing = regenerate(TitlePieces(), None, set_by_person=False)
    assert (nothing.source, nothing.applies) == ("none", False)
    assert claude_title(TitlePieces(), "ai-title", newest).claude_title == newest


@PROPERTIES
@given(st.text(max_size=40))
def test_any_format_text_is_either_refused_with_config_error_or_renders(text: str) -> None:
    try:
        fmt = parse_title_format(text)
    except ConfigError:
        return
    rendered = render_title(fmt, "T", "P", "/w/F")
    assert "T" in rendered
