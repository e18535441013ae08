"""Titles by convention: the ``title_format`` setting applied to every automatic title, and
``POST /api/sessions/{id}/title/regenerate``.

The rules are relay/features/title_format.py's; this feature applies them:

* **The format** is read and checked as the relay starts (a bad one stops it with what is
  wrong). Every automatic title is stored in it — the titles feature's observer shapes each new
  one (relay/features/titles.py ``TitleObserver.shape``), and at start every session no person
  named is shaped again, so a changed setting applies to all — so lists, search, the CLI and
  notifications all show the same title. ``{project}`` is the folder's name (the relay does not
  know a folder's git remote).
* **A person's title wins and stays**: a rename from the phone or the CLI, or Claude Code's
  ``custom-title`` (``/rename`` at the desk), is shown as typed and never replaced.
* **Regenerate** (``POST …/title/regenerate``) takes the newest ``ai-title`` Claude Code wrote
  (else the heuristic of titles.py): it becomes the session's automatic title, in the format.
  Over a person's title it changes nothing: 409 ``title_set_by_person`` (reset the title first).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Final

from fastapi import APIRouter, Depends

from relay.db import Connection
from relay.deps import Phone, State, refuse_read_only, session_or_404
from relay.errors import Conflict
from relay.feature import Feature
from relay.features import titles
from relay.features.title_format import (
    TitleFormat,
    parse_title_format,
    project_name,
    regenerate,
    render_title,
)
from relay.state import RelayState
from relay.store import sessions as session_rows

__all__ = ["FEATURE", "SETTING", "shape_all", "shape_for"]

_log = logging.getLogger("relay.features.title_convention")

router = APIRouter(prefix="/api", dependencies=[Depends(refuse_read_only)])

SETTING: Final = "title_format"


def shape_for(fmt: TitleFormat) -> titles.Shape:
    """An automatic title and its folder → the title in the format."""

    def shape(title: str, folder: str) -> str:
        return render_title(fmt, title, project_name(folder), folder)

    return shape


def shape_all(conn: Connection, shape: titles.Shape) -> int:
    """Every session no person named gets its automatic title in the format; how many changed."""
    changed = 0
    for session_id, title in session_rows.automatic_titles(conn):
        shown = titles.shown_auto_title(conn, session_id, shape)
        if shown != title:
            session_rows.set_derived_title(conn, session_id, shown)
            changed += 1
    return changed


async def start(state: RelayState) -> None:
    fmt = parse_title_format(state.config.str(SETTING))
    shape = shape_for(fmt)
    observer = state.part(titles.TitleObserver)
    if observer is not None:
        observer.shape = shape
    changed = await state.store.write(lambda conn: shape_all(conn, shape))
    if changed:
        _log.info("%d session titles follow title_format %r", changed, state.config.str(SETTING))


@router.post("/sessions/{session_id}/title/regenerate")
async def regenerate_title(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """The session's automatic title made again: the newest ai-title, else the heuristic."""
    session = await session_or_404(state, principal, session_id)
    shape = titles.shape_of(state)

    def job(conn: Connection) -> tuple[str, str, bool]:
        pieces = titles.load_pieces(conn, session.id)
        by_person = session_rows.title_set_by_person(conn, session.id)
        named_at_desk = pieces.claude_rank >= titles.CLAUDE_TITLE_RANK[titles.CUSTOM_TITLE]
        made = regenerate(pieces, pieces.ai_title or None, by_person or named_at_desk)
        if made.applies:
            if made.source == "ai-title":
                rank = titles.CLAUDE_TITLE_RANK[titles.AI_TITLE]
                pieces = replace(pieces, claude_title=made.title, claude_rank=rank)
            else:  # the heuristic: no title of Claude Code's stands in its way
                pieces = replace(pieces, claude_title="", claude_rank=0)
            titles.save_pieces(conn, session.id, pieces)
            shown = titles.shown_auto_title(conn, session.id, shape)
            session_rows.set_derived_title(conn, session.id, shown)
        return made.title, made.source, made.applies or not (by_person or named_at_desk)

    title, source, applied = await state.store.write(job)
    if not applied:
        raise Conflict(
            "this session's title was given by a person (a rename, or /rename at the desk) and "
            "stays: reset the title first, then regenerate",
            code="title_set_by_person",
        )
    fresh = await state.store.get_session(principal.account_id, session.id)
    state.publish_session(fresh)
    return {"title": fresh.title, "source": source, "generated": title, "session": fresh.id}


FEATURE = Feature("title_convention", start=start, router=router)
