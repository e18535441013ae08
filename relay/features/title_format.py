"""Titles by convention: the ``title_format`` setting and "Regenerate" — pure rules.

The titles feature (relay/features/titles.py) keeps each session's automatic title (Claude
Code's ``custom-title`` > ``ai-title`` > ``summary``, else one derived from the work) and a
person's rename. This module adds the naming convention on top, without I/O:

* **The format** (:func:`parse_title_format`, checked when the setting is read): a text with
  placeholders ``{title}`` (the session's title; required), ``{project}`` (the git remote's
  repository name, else the folder's name: :func:`project_name`) and ``{folder}`` (the folder's
  name). ``{{`` and ``}}`` are literal braces. Anything else — an unknown name, ``{}``,
  ``{0}``, ``{title!r}``, ``{title:>9}``, a lone brace — is refused with a message that names it
  and lists what is allowed. ``"{title}"`` (today's titles) should be the setting's default;
  ``"{project} · {title}"`` is the convention the design asks for.
* **Rendering** (:func:`render_title`): the format filled in, applied wherever a title shows.
  A session with no title yet renders as ``""`` (the page then shows its folder, as today),
  never as a half-filled ``"claude-bridge · "``. A person's title is shown as they typed it: the
  format never touches it (:func:`shown_title`).
* **Regenerate** (:func:`regenerate`): the newest ``ai-title`` Claude Code wrote, else the
  heuristic of titles.py (:func:`~relay.features.titles.derive_title`); it never replaces a
  person's rename — ``applies`` is False and the page says to clear the rename first.
"""

from __future__ import annotations

import posixpath
import re
import string
from dataclasses import dataclass
from typing import Final, Literal

from relay.features.titles import (
    CLAUDE_TITLE_MAX_CHARS,
    TitlePieces,
    derive_title,
    shorten,
)
from wire.errors import ConfigError

__all__ = [
    "PLACEHOLDERS",
    "TITLE_FORMAT_DEFAULT",
    "TitleFormat",
    "parse_title_format",
    "project_name",
    "regenerate",
    "render_title",
    "shown_title",
]

TITLE_FORMAT_DEFAULT: Final = "{title}"  # the setting ``title_format``'s default: today's titles
TITLE_FORMAT_CONVENTION: Final = "{project} · {title}"
PLACEHOLDERS: Final = ("title", "project", "folder")
REQUIRED: Final = "title"
TITLE_FORMAT_MAX_CHARS: Final = 200
RENDERED_MAX_CHARS: Final = CLAUDE_TITLE_MAX_CHARS + TITLE_FORMAT_MAX_CHARS
SETTING: Final = "title_format"

# A git remote's repository: the last path part of a URL or scp-like address, ".git" dropped.
_REMOTE_TAIL_RE: Final = re.compile(r"([^/:\\]+?)(?:\.git)?/*$")


@dataclass(frozen=True, slots=True)
class TitleFormat:
    """A checked format: literal texts and placeholder names, in order."""

    parts: tuple[tuple[str, str | None], ...]  # (literal, placeholder or None)


def _refuse(what: str) -> ConfigError:
    allowed = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
    return ConfigError(
        f"{SETTING}: {what}. Use the placeholders {allowed} ({{title}} is required) and "
        f"{{{{ }}}} for literal braces, e.g. {TITLE_FORMAT_CONVENTION!r}"
    )


def parse_title_format(text: str) -> TitleFormat:
    """The format ``text`` checked, or ConfigError saying what is wrong (see the docstring)."""
    if len(text) > TITLE_FORMAT_MAX_CHARS:
        raise _refuse(f"the format is {len(text)} characters, over {TITLE_FORMAT_MAX_CHARS}")
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as err:
        raise _refuse(f"{text!r} is not a valid format ({err})") from None
    parts: list[tuple[str, str | None]] = []
    for literal, name, spec, conversion in parsed:
        if name is None:
            parts.append((literal, None))
            continue
        if name == "":
            raise _refuse("an empty placeholder {} names nothing")
        if name not in PLACEHOLDERS:
            raise _refuse(f"unknown placeholder {{{name}}}")
        if spec or conversion:
            raise _refuse(f"{{{name}}} takes no conversion or format spec")
        parts.append((literal, name))
    if not any(name == REQUIRED for _, name in parts):
        raise _refuse("the format has no {title}: every session of a project would read the same")
    return TitleFormat(tuple(parts))


def project_name(folder: str, git_remote: str | None = None) -> str:
    """The project's name: the repository name of its git remote (``git@host:owner/repo.git``,
    ``https://host/owner/repo``, ``ssh://…``, a path), else the folder's last part."""
    if git_remote:
        found = _REMOTE_TAIL_RE.search(git_remote.strip())
        if found and found.group(1) not in (".", ".."):
            return found.group(1)
    trimmed = folder.rstrip("/")
    return posixpath.basename(trimmed) or trimmed or folder


def render_title(fmt: TitleFormat, title: str, project: str, folder: str) -> str:
    """The format filled in; ``""`` while the session has no title."""
    if not title.strip():
        return ""
    values = {"title": title, "project": project, "folder": posixpath.basename(folder.rstrip("/"))}
    text = "".join(literal + (values[name] if name else "") for literal, name in fmt.parts)
    return shorten(text, RENDERED_MAX_CHARS)


def shown_title(
    fmt: TitleFormat, title: str, set_by_person: bool, project: str, folder: str
) -> str:
    """The title a list shows: a person's as they typed it, an automatic one in the format."""
    return title if set_by_person else render_title(fmt, title, project, folder)


@dataclass(frozen=True, slots=True)
class Regenerated:
    title: str
    source: Literal["ai-title", "heuristic", "none"]
    applies: bool  # False: a person's rename stays; the page says to clear it first


def regenerate(
    pieces: TitlePieces, newest_ai_title: str | None, set_by_person: bool
) -> Regenerated:
    """What "Regenerate" gives: the newest ai-title, else the heuristic; never over a rename."""
    ai_title = shorten(newest_ai_title or "", CLAUDE_TITLE_MAX_CHARS)
    if ai_title:
        return Regenerated(ai_title, "ai-title", not set_by_person)
    derived = derive_title(pieces)
    return Regenerated(
        derived, "heuristic" if derived else "none", not set_by_person and bool(derived)
    )
