"""A session's working folder, read from its Mac for the page: files and git changes.

Nothing is kept on the relay: each request becomes one command to the session's Mac
(``list_files``, ``read_file``, ``git_status``, ``git_diff`` — wire/protocol.py), which reads
only inside the session's folder and applies its own limits (agent/workspace.py). The Mac's
refusals come back as 409 with its code (``bad_path``, ``outside_folder``, ``not_found``,
``not_a_repo`` …); a Mac offline is 409 ``device_offline``, one that does not answer in time 504
``device_timeout`` (relay/deps.py's ``send_command``).

    GET /api/sessions/{id}/files?path=        a folder's entries ("" = the working folder)
    GET /api/sessions/{id}/files/read?path=   a file's text (or ``binary: true``)
    GET /api/sessions/{id}/git/status         staged, unstaged and untracked files
    GET /api/sessions/{id}/git/diff?path=     one file's staged and unstaged diffs
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from relay.deps import Phone, State, send_command, session_or_404
from relay.feature import Feature
from wire.protocol import (
    MAX_CWD_CHARS,
    CommandArgs,
    GitDiffArgs,
    GitStatusArgs,
    ListFilesArgs,
    ReadFileArgs,
)

router = APIRouter(prefix="/api")

PathQuery = Annotated[str, Query(max_length=MAX_CWD_CHARS)]
FilePathQuery = Annotated[str, Query(min_length=1, max_length=MAX_CWD_CHARS)]


async def _ask(state: State, principal: Phone, session_id: str, args: CommandArgs) -> Any:
    session = await session_or_404(state, principal, session_id)
    return {"session_id": session.id, **await send_command(state, session, args)}


@router.get("/sessions/{session_id}/files")
async def list_files(
    session_id: str, principal: Phone, state: State, path: PathQuery = ""
) -> dict[str, Any]:
    """The entries of one folder of the session's working folder."""
    result: dict[str, Any] = await _ask(state, principal, session_id, ListFilesArgs(path=path))
    return result


@router.get("/sessions/{session_id}/files/read")
async def read_file(
    session_id: str, principal: Phone, state: State, path: FilePathQuery
) -> dict[str, Any]:
    """The text of one file of the session's working folder (cut at the Mac's limit)."""
    result: dict[str, Any] = await _ask(state, principal, session_id, ReadFileArgs(path=path))
    return result


@router.get("/sessions/{session_id}/git/status")
async def git_status(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """The changed files of the session's working folder."""
    result: dict[str, Any] = await _ask(state, principal, session_id, GitStatusArgs())
    return result


@router.get("/sessions/{session_id}/git/diff")
async def git_diff(
    session_id: str, principal: Phone, state: State, path: FilePathQuery
) -> dict[str, Any]:
    """The staged and unstaged diffs of one changed file."""
    result: dict[str, Any] = await _ask(state, principal, session_id, GitDiffArgs(path=path))
    return result


FEATURE = Feature("files", router=router)
