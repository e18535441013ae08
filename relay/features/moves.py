"""Moving a session to another Mac of the account (``POST /api/sessions/{id}/move``).

The relay drives a move; both Macs only answer its commands (agent/moving.py). Its steps:

1. **probe** the target: what its folder holds and which commits it has;
2. **export** on the source: held messages stop being typed, the turn ends (``idle``) or is
   interrupted (``now``), then the folder (git: a bundle of what the target lacks, the
   uncommitted and untracked files; else the files), the transcripts, the session's record and
   its event archive are packed into files (asked again until it says ``ready``);
3. **accept** on the target: the folder must not differ, the disk must hold it; it answers how
   much of each file it already has;
4. **transfer**: the source's list of files and its session record checked first
   (wire/moved.py: a move carries no file it does not name, and the target is sent nothing of a
   record that cannot be believed, ``bad_record``); then each file read from the source and
   written to the target in chunks of ``move_chunk_bytes``, through this relay, over the two
   links (never a third service). A cut link is waited for (``move_reconnect_wait``), then the
   target says again what it has and the transfer goes on from there;
5. **place** on the target: every file checked (size, SHA-256), the folder unpacked, the
   transcripts put where its Claude Code finds them, the conversation resumed with
   ``claude --resume`` — still silent: the session is not its own yet;
6. **commit**: one transaction of the relay's store hands the session to the target
   (``Store.hand_over``) and marks the move committed. This is the one place ownership changes:
   before it the session is the source's, after it the target's, whatever dies when;
7. **finish**: the target is told, with how the relay numbered the session (it keeps only the
   carried events numbered so, reports the session from then on with a line in the conversation
   saying where it came from, and answers the policy it holds, the relay's copy from then on),
   and the source is told (it stops its claude and forgets the session). Each is told until it
   answers, also after a restart of either.

Every phase a Mac drives is bounded, so no Mac can keep a session ``moving``: the turn's end
(``move_idle_wait``: ``turn_not_over``), the packing (``move_pack_timeout``: ``pack_timeout``),
the files' travel (``move_transfer_timeout``: ``transfer_timeout``), the laying down
(``move_place_timeout``: ``place_timeout``), and each single command (``command_timeout``, asked
again for ``move_reconnect_wait``: ``device_timeout`` for a Mac linked and silent,
``device_offline`` for one gone).

A failure before the commit (a Mac offline too long, the folder differs, too big, the disk full,
the resume refused, a phase past its bound) **aborts**: both Macs are told (the target removes what it unpacked, the source
types its held messages again) and the session stays where it was, running, the reason in its
``move`` field. The moves table (this feature's schema) is what a restarted relay recovers from:
a move some relay node was driving when it died is taken over by another node (or by this one
after its restart): one not yet committed is aborted, one committed is finished.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import logging
import secrets
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, WebSocketDisconnect
from pydantic import Field, ValidationError

from relay.bodies import Body
from relay.db import Connection
from relay.deps import Phone, State, session_or_404
from relay.errors import Conflict, NotFound, RelayError
from relay.feature import Feature
from relay.state import RelayState, iso
from relay.store import Session, sessions
from wire.config import Config
from wire.moved import MAX_RECORD_BYTES, RECORD_FILE, RecordProblem, files_problem, read_record
from wire.protocol import (
    MAX_CWD_CHARS,
    MAX_MOVE_CHUNK,
    CommandArgs,
    MoveAcceptArgs,
    MoveExportArgs,
    MoveFile,
    MoveFinishArgs,
    MovePlaceArgs,
    MoveProbeArgs,
    MoveReadArgs,
    MoveWriteArgs,
)
from wire.tasks import TaskSet

_log = logging.getLogger("relay.features.moves")

TABLE = """
CREATE TABLE IF NOT EXISTS moves (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    account_id TEXT NOT NULL,
    source_device TEXT NOT NULL,
    target_device TEXT NOT NULL,
    source_cwd TEXT NOT NULL,
    target_cwd TEXT NOT NULL,
    how TEXT NOT NULL,
    phase TEXT NOT NULL,
    step TEXT NOT NULL DEFAULT '',
    driver TEXT NOT NULL,
    prior_mark TEXT,
    bytes_done INTEGER NOT NULL DEFAULT 0,
    bytes_total INTEGER NOT NULL DEFAULT 0,
    source_done INTEGER NOT NULL DEFAULT 0,
    target_done INTEGER NOT NULL DEFAULT 0,
    code TEXT,
    error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
)
"""
INDEX = "CREATE INDEX IF NOT EXISTS moves_session ON moves (session_id, created_at)"

# A move's phases. ``running`` until the commit; then ``committed`` until both Macs were told,
# then ``done``. A failure before the commit: ``aborting`` until both were told, then ``failed``.
OPEN_PHASES = ("running", "committed", "aborting")
SWEEP_EVERY = 1.0  # seconds between looks for moves to take over or to finish
POLL_PAUSE = 0.3  # seconds between asks of a step a Mac answers "not yet" to
PROGRESS_EVERY = 0.3  # seconds between progress reports on the account stream
EXPORT_WAIT = 2.0  # seconds a Mac may take per ask of a step that waits (export, place)
GAPS_ALLOWED = 5  # times a transfer may find the target behind what it was told, then fails

_COLUMNS = (
    "id, session_id, account_id, source_device, target_device, source_cwd, target_cwd, how,"
    " phase, step, driver, prior_mark, bytes_done, bytes_total, source_done, target_done, code,"
    " error, created_at, updated_at"
)


def setup(conn: Connection) -> None:
    conn.execute(TABLE)
    conn.execute(INDEX)


@dataclass
class Move:
    """One row of the moves table."""

    id: str
    session_id: str
    account_id: str
    source_device: str
    target_device: str
    source_cwd: str
    target_cwd: str
    how: str
    phase: str
    step: str
    driver: str
    prior_mark: str | None
    bytes_done: int
    bytes_total: int
    source_done: bool
    target_done: bool
    code: str | None
    error: str | None
    created_at: float
    updated_at: float

    @classmethod
    def of(cls, row: Any) -> Move:
        values = list(row)
        values[14], values[15] = bool(values[14]), bool(values[15])
        return cls(*values)

    @property
    def open(self) -> bool:
        return self.phase in OPEN_PHASES

    def to_json(self) -> dict[str, Any]:
        # What the phone shows: decided is decided, whether or not both Macs were told yet.
        state = {"committed": "done", "done": "done", "aborting": "failed", "failed": "failed"}.get(
            self.phase, "moving"
        )
        return {
            "id": self.id,
            "state": state,
            "phase": self.phase,
            "step": self.step,
            "from": self.source_device,
            "to": self.target_device,
            "from_cwd": self.source_cwd,
            "cwd": self.target_cwd,
            "when": self.how,
            "bytes": self.bytes_done,
            "total": self.bytes_total,
            "error": {"code": self.code, "message": self.error} if self.error else None,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
        }


@dataclass(frozen=True)
class Deadline:
    """When a step a Mac drives must be over by (a setting's seconds from now)."""

    seconds: float
    at: float

    @classmethod
    def of(cls, config: Config, setting: str) -> Deadline:
        seconds = config.float(setting)
        return cls(seconds, time.monotonic() + seconds)

    def passed(self) -> bool:
        return time.monotonic() > self.at


class MoveFailed(Exception):
    """A step of a move failed: the move is aborted with this code and reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# -- pure decisions -----------------------------------------------------------------------------


def chunk_plan(size: int, have: int, chunk: int) -> list[tuple[int, int]]:
    """The (offset, length) reads that carry a file of ``size`` bytes to a Mac that has its
    first ``have`` bytes, ``chunk`` bytes at a time."""
    if chunk < 1:
        raise ValueError("a chunk holds at least one byte")
    start = min(max(have, 0), size)
    return [(offset, min(chunk, size - offset)) for offset in range(start, size, chunk)]


def next_step(phase: str, source_done: bool, target_done: bool) -> str | None:
    """What is left of a move in ``phase``, whoever drives it now: ``abort`` (it never reached
    the commit: a driver that died mid-way left it so), ``tell`` (committed or aborting: the
    Macs not yet told), ``close`` (both told) or None (over)."""
    if phase == "running":
        return "abort"
    if phase in ("committed", "aborting"):
        return "close" if source_done and target_done else "tell"
    return None


def move_files(raw: Any) -> list[MoveFile]:
    """The files a source Mac said it packed, checked (names, sizes, digests); MoveFailed if
    any does not read."""
    if not isinstance(raw, list):
        raise MoveFailed("bad_answer", "the source Mac's list of files is not a list")
    try:
        files = [MoveFile.model_validate(item) for item in raw]
    except ValidationError as exc:
        problem = exc.errors()[0]["msg"]
        raise MoveFailed("bad_answer", f"the source Mac's list of files: {problem}") from None
    if len({f.name for f in files}) != len(files):
        raise MoveFailed("bad_answer", "the source Mac named a file twice")
    unknown = files_problem([f.name for f in files])
    if unknown is not None:
        raise MoveFailed("bad_answer", f"the source Mac's list of files: {unknown}")
    return files


def have_sizes(raw: Any, files: list[MoveFile]) -> dict[str, int]:
    """What the target says it has of each file, within each file's size."""
    sizes = {f.name: f.size for f in files}
    have: dict[str, int] = {}
    if isinstance(raw, Mapping):
        for name, value in raw.items():
            if name in sizes and isinstance(value, int) and not isinstance(value, bool):
                have[name] = max(0, min(value, sizes[name]))
    return have


def _forget_old_moves(conn: Connection, session_id: str, kept: int) -> None:
    """Inside the transaction that starts a move: the session's finished moves beyond the
    newest ``kept`` are deleted (its snapshot shows only its latest; the rest is history no one
    reads, and a phone starting moves over and over must not grow the table)."""
    rows = conn.execute(
        "SELECT id FROM moves WHERE session_id = ? AND phase IN ('done', 'failed')"
        " ORDER BY created_at DESC, id DESC",
        (session_id,),
    ).fetchall()
    for (old,) in rows[max(kept, 1) :]:
        conn.execute("DELETE FROM moves WHERE id = ?", (old,))


def shown(move: Move | None) -> dict[str, Any] | None:
    """A session's ``move`` field: its move under way, or the last one that failed (with why);
    None once it moved (it is where it went)."""
    if move is None or move.phase in ("committed", "done"):
        return None
    return move.to_json()


# -- the running part ----------------------------------------------------------------------------


class Moves:
    """The moves this relay node drives, their progress, and the sweep that takes over the
    moves of a node that died (or of this one before its restart)."""

    def __init__(self, state: RelayState) -> None:
        self.state = state
        cluster = state.cluster
        self.driver = cluster.node_id if cluster is not None else "relay-" + secrets.token_hex(6)
        # Every task of the part (the sweep, each move driven), stopped with the relay.
        self.work = TaskSet("moves", _log)
        self.tasks: dict[str, asyncio.Task[None]] = {}  # the moves driven here, by move id
        self.latest: dict[str, Move] = {}  # by session id: what its ``move`` field shows
        self._published: dict[str, float] = {}

    # -- the table ---------------------------------------------------------------------------

    async def _rows(self, where: str, params: tuple[Any, ...]) -> list[Move]:
        rows = await self.state.store.read(f"SELECT {_COLUMNS} FROM moves WHERE {where}", params)
        return [Move.of(r) for r in rows]

    async def get(self, move_id: str) -> Move:
        rows = await self._rows("id = ?", (move_id,))
        if not rows:
            raise NotFound(f"no move {move_id}", code="unknown_move")
        return rows[0]

    def driven(self, session_id: str) -> Move | None:
        """The session's move as this node drives it now (its progress is ahead of the row's)."""
        move = self.latest.get(session_id)
        return move if move is not None and move.id in self.tasks else None

    async def last_of(self, session_id: str) -> Move | None:
        rows = await self._rows("session_id = ? ORDER BY created_at DESC LIMIT 1", (session_id,))
        return rows[0] if rows else None

    async def _update(self, move: Move, **fields: Any) -> None:
        """Change the row (and this copy); only while this node drives the move."""
        fields["updated_at"] = time.time()
        sets = ", ".join(f"{k} = ?" for k in fields)
        values = tuple(int(v) if isinstance(v, bool) else v for v in fields.values())

        def job(conn: Connection) -> int:
            # Only from the phase this copy knows: a copy read before the move went on (a
            # sweep's) never undoes what its driver did meanwhile.
            cur = conn.execute(
                f"UPDATE moves SET {sets} WHERE id = ? AND driver = ? AND phase = ?",
                (*values, move.id, self.driver, move.phase),
            )
            return int(cur.rowcount)

        if await self.state.store.write(job) != 1:
            raise MoveFailed("move_taken", "the move went on elsewhere (another relay node)")
        for key, value in fields.items():
            setattr(move, key, value)
        self.latest[move.session_id] = move

    # -- starting ----------------------------------------------------------------------------

    async def begin(
        self, session: Session, target: str, cwd: str, how: Literal["idle", "now"]
    ) -> Move:
        """Record a new move of ``session`` (one at a time) and mark the session moving, in one
        transaction; then drive it in the background."""
        now = time.time()
        move = Move(
            id="mv_" + secrets.token_hex(8),
            session_id=session.id,
            account_id=session.account_id,
            source_device=session.device_id,
            target_device=target,
            source_cwd=session.cwd,
            target_cwd=cwd,
            how=how,
            phase="running",
            step="starting",
            driver=self.driver,
            prior_mark=session.mark,
            bytes_done=0,
            bytes_total=0,
            source_done=False,
            target_done=False,
            code=None,
            error=None,
            created_at=now,
            updated_at=now,
        )

        kept = self.state.config.int("moves_kept_per_session")

        def job(conn: Connection) -> bool:
            busy = conn.execute(
                "SELECT 1 FROM moves WHERE session_id = ? AND phase IN (?, ?, ?)",
                (session.id, *OPEN_PHASES),
            ).fetchone()
            if busy:
                return False
            conn.execute(
                f"INSERT INTO moves ({_COLUMNS}) VALUES ({', '.join('?' * 20)})",
                (
                    move.id, move.session_id, move.account_id, move.source_device,
                    move.target_device, move.source_cwd, move.target_cwd, move.how, move.phase,
                    move.step, move.driver, move.prior_mark, 0, 0, 0, 0, None, None, now, now,
                ),
            )  # fmt: skip
            sessions.mark(conn, session.id, "moving")
            _forget_old_moves(conn, session.id, kept)
            return True

        if not await self.state.store.write(job):
            raise Conflict(
                "this session is moving already; wait until that move is over",
                code="move_in_progress",
            )
        self.latest[session.id] = move
        self._spawn(move, self.drive(move))  # at once: a sweep takes an undriven move for dead
        await self._publish(move, force=True)
        return move

    def _spawn(self, move: Move, coro: Coroutine[Any, Any, None]) -> None:
        task = self.work.start(coro, name=f"move {move.id}")
        self.tasks[move.id] = task
        task.add_done_callback(lambda _: self.tasks.pop(move.id, None))

    # -- driving -----------------------------------------------------------------------------

    async def drive(self, move: Move) -> None:
        """The whole move, then the Macs told; a failure before the commit aborts it."""
        try:
            await self._steps(move)
        except MoveFailed as exc:
            _log.info("move %s of %s failed: %s (%s)", move.id, move.session_id, exc, exc.code)
            with contextlib.suppress(MoveFailed, RelayError):
                await self._decide_abort(move, exc.code, exc.message)
        except asyncio.CancelledError:
            raise  # the relay stops: the row stays, and the next driver recovers it
        except Exception as exc:
            _log.exception("move %s of %s failed", move.id, move.session_id)
            with contextlib.suppress(MoveFailed, RelayError):
                await self._decide_abort(move, "internal", f"the relay failed: {exc}"[:500])
        await self.settle(move)

    async def settle(self, move: Move) -> None:
        """Tell the Macs how the move ended (see ``_settle``); a failure is logged, and the next
        sweep tries again."""
        try:
            await self._settle(move.id)
        except (MoveFailed, RelayError) as exc:
            _log.info("move %s not settled yet: %s", move.id, exc)
        except Exception:
            _log.exception("move %s not settled yet", move.id)

    async def _steps(self, move: Move) -> None:
        config = self.state.config
        await self._update(move, step="probing")
        probe = await self._ask(move, "target", MoveProbeArgs(move_id=move.id, cwd=move.target_cwd))
        have = [c for c in probe.get("have", []) if isinstance(c, str)]
        await self._update(move, step="waiting" if move.how == "idle" else "stopping")
        deadline = time.monotonic() + config.float("move_idle_wait")
        packing: Deadline | None = None  # from the source's first answer past the turn
        while True:
            export = await self._ask(
                move,
                "source",
                MoveExportArgs(
                    move_id=move.id,
                    when="now" if move.how == "now" else "idle",
                    have=have,
                    wait=EXPORT_WAIT,
                ),
            )
            status = export.get("status")
            if status == "ready":
                break
            if status == "failed":
                raise MoveFailed(str(export.get("code")), str(export.get("error")))
            if status == "waiting" and time.monotonic() > deadline:
                raise MoveFailed(
                    "turn_not_over",
                    f"the turn did not end within {config.float('move_idle_wait'):g} s; "
                    'move it with "when": "now" to interrupt it',
                )
            if status != "waiting":  # packing (or what a Mac says instead): bounded too
                packing = packing or Deadline.of(config, "move_pack_timeout")
                if packing.passed():
                    name = await self._device_name(move.account_id, move.source_device)
                    raise MoveFailed(
                        "pack_timeout",
                        f"the Mac '{name}' did not finish packing the session within "
                        f"{packing.seconds:g} s (setting move_pack_timeout); the session stays "
                        "where it was",
                    )
            step = "waiting" if status == "waiting" else "packing"
            if step != move.step:
                await self._update(move, step=step)
                await self._publish(move, force=True)
            await asyncio.sleep(POLL_PAUSE)
        files = move_files(export.get("files"))
        manifest = export.get("manifest")
        if not isinstance(manifest, dict):
            raise MoveFailed("bad_answer", "the source Mac sent no folder manifest")
        total = sum(f.size for f in files)
        await self._update(move, step="sending", bytes_total=total)
        await self._publish(move, force=True)
        await self._check_record(move, files)
        await self._transfer(move, files, manifest)
        await self._update(move, step="resuming", bytes_done=total)
        await self._publish(move, force=True)
        placing = Deadline.of(config, "move_place_timeout")
        source = await self._device_name(move.account_id, move.source_device)
        while True:
            placed = await self._ask(
                move,
                "target",
                MovePlaceArgs(move_id=move.id, wait=EXPORT_WAIT, source_name=source[:200]),
            )
            status = placed.get("status")
            if status == "ready":
                break
            if status == "failed":
                raise MoveFailed(str(placed.get("code")), str(placed.get("error")))
            if placing.passed():
                name = await self._device_name(move.account_id, move.target_device)
                raise MoveFailed(
                    "place_timeout",
                    f"the Mac '{name}' did not finish laying the session down within "
                    f"{placing.seconds:g} s (setting move_place_timeout); the session stays "
                    "where it was",
                )
            await asyncio.sleep(POLL_PAUSE)
        await self._commit(move)

    async def _transfer(self, move: Move, files: list[MoveFile], manifest: dict[str, Any]) -> None:
        chunk = max(1, min(self.state.config.int("move_chunk_bytes"), MAX_MOVE_CHUNK))
        accept = MoveAcceptArgs(
            move_id=move.id, cwd=move.target_cwd, manifest=manifest, files=files
        )
        travel = Deadline.of(self.state.config, "move_transfer_timeout")
        for _ in range(GAPS_ALLOWED):
            have = have_sizes((await self._ask(move, "target", accept)).get("have"), files)
            done = sum(have.values())
            try:
                for file in files:
                    for offset, length in chunk_plan(file.size, have.get(file.name, 0), chunk):
                        if travel.passed():  # a source that sends, but slower than a trickle
                            raise MoveFailed(
                                "transfer_timeout",
                                f"the session's files did not travel within {travel.seconds:g} "
                                f"s ({done:,} of {sum(f.size for f in files):,} bytes; setting "
                                "move_transfer_timeout); the session stays where it was",
                            )
                        read = await self._ask(
                            move,
                            "source",
                            MoveReadArgs(
                                move_id=move.id, file=file.name, offset=offset, length=length
                            ),
                        )
                        data = read.get("data")
                        if not isinstance(data, str):
                            raise MoveFailed("bad_answer", "the source Mac sent no data")
                        wrote = await self._ask(
                            move,
                            "target",
                            MoveWriteArgs(
                                move_id=move.id, file=file.name, offset=offset, data=data
                            ),
                        )
                        if wrote.get("size") != offset + length:
                            raise MoveFailed("move_gap", "the target's copy is not where it was")
                        done += length
                        move.bytes_done = done
                        await self._publish(move)
            except MoveFailed as exc:
                if exc.code != "move_gap":
                    raise
                continue  # the target lost some (it restarted): ask again what it has
            await self._update(move, bytes_done=done)
            return
        raise MoveFailed("move_gap", "the target Mac kept losing what it was sent")

    async def _check_record(self, move: Move, files: list[MoveFile]) -> None:
        """The session's record the source packed, read and checked (wire/moved.py) before a
        byte of the move reaches the target: another Mac's word is not passed on unread. The
        target checks it again before it places anything."""
        listed = next(f for f in files if f.name == RECORD_FILE)  # move_files: it is there
        if listed.size > MAX_RECORD_BYTES:
            raise MoveFailed(
                "bad_record",
                f"the session's record from the source Mac is {listed.size:,} bytes, more "
                f"than {MAX_RECORD_BYTES:,}",
            )
        chunk = max(1, min(self.state.config.int("move_chunk_bytes"), MAX_MOVE_CHUNK))
        raw = bytearray()
        for offset, length in chunk_plan(listed.size, 0, chunk):
            read = await self._ask(
                move,
                "source",
                MoveReadArgs(move_id=move.id, file=listed.name, offset=offset, length=length),
            )
            try:
                raw += base64.b64decode(str(read.get("data")), validate=True)
            except (binascii.Error, ValueError):
                raise MoveFailed("bad_answer", "the source Mac sent no data") from None
        if hashlib.sha256(raw).hexdigest() != listed.sha256:
            raise MoveFailed("bad_answer", "the source Mac's record is not the one it listed")
        try:
            read_record(bytes(raw), move.session_id, {f.name: f.size for f in files})
        except RecordProblem as exc:
            raise MoveFailed(exc.code, str(exc)) from None

    async def _ask(self, move: Move, side: str, args: CommandArgs) -> dict[str, Any]:
        """Ask one Mac of the move; a Mac offline (or not answering) is waited for, up to
        ``move_reconnect_wait``, and asked again (every step may be asked twice). A refusal is
        MoveFailed with the Mac's code and reason."""
        device = move.source_device if side == "source" else move.target_device
        wait = self.state.config.float("move_reconnect_wait")
        timeout = self.state.config.float("command_timeout")
        deadline: float | None = None
        while True:
            link = self.state.live.link(device)
            silent = False  # linked, but it did not answer in time
            if link is not None and not link.closed:
                try:
                    result = await link.command(move.session_id, args, timeout)
                except RelayError as exc:
                    if exc.code not in ("device_offline", "device_timeout"):
                        raise MoveFailed(exc.code, exc.message) from None
                    silent = exc.code == "device_timeout"
                except (OSError, RuntimeError, WebSocketDisconnect):
                    pass  # the link died as the command went: it is offline
                else:
                    if result.ok:
                        return result.data
                    raise MoveFailed(
                        result.code or "command_failed",
                        result.error or f"the {side} Mac refused {args.name}",
                    )
            now = time.monotonic()
            deadline = deadline if deadline is not None else now + wait
            if now > deadline:
                name = await self._device_name(move.account_id, device)
                if silent:
                    raise MoveFailed(
                        "device_timeout",
                        f"the Mac '{name}' ({side}) is linked but did not answer {args.name} "
                        f"(each ask waits command_timeout, {timeout:g} s, then it is asked "
                        f"again for move_reconnect_wait, {wait:g} s); the session stays where "
                        "it was",
                    )
                raise MoveFailed(
                    "device_offline",
                    f"the Mac '{name}' ({side}) went offline during the move and did not come "
                    f"back within {wait:g} s",
                )
            await asyncio.sleep(POLL_PAUSE)

    async def _device_name(self, account_id: str, device_id: str) -> str:
        devices = {d.id: d.name for d in await self.state.store.list_devices(account_id)}
        return devices.get(device_id, device_id)

    async def _commit(self, move: Move) -> None:
        """The one transaction in which the session becomes the target's."""
        now = time.time()
        driver = self.driver

        def also(conn: Connection) -> None:
            cur = conn.execute(
                "UPDATE moves SET phase = 'committed', step = 'finishing', updated_at = ?"
                " WHERE id = ? AND phase = 'running' AND driver = ?",
                (now, move.id, driver),
            )
            if cur.rowcount != 1:
                raise MoveFailed("move_taken", "another relay node took this move over")

        try:
            session = await self.state.store.hand_over(
                move.account_id,
                move.session_id,
                move.source_device,
                move.target_device,
                move.target_cwd,
                also,
            )
        except RelayError as exc:
            raise MoveFailed(exc.code, exc.message) from None
        move.phase, move.step, move.updated_at = "committed", "finishing", now
        self.latest[move.session_id] = move
        _log.info(
            "session %s moved to Mac %s (move %s)", move.session_id, move.target_device, move.id
        )
        self.state.publish_session(session)

    async def _decide_abort(self, move: Move, code: str, message: str) -> None:
        """Before the commit: the move will not happen; the session stays where it was."""
        await self._update(move, phase="aborting", step="aborting", code=code, error=message)
        await self._restore_mark(move)

    async def _restore_mark(self, move: Move) -> None:
        prior = move.prior_mark

        def job(conn: Connection) -> None:
            sessions.mark(conn, move.session_id, prior, only_if="moving")

        await self.state.store.write(job)
        await self._publish(move, force=True)

    # -- telling the Macs --------------------------------------------------------------------

    async def _settle(self, move_id: str) -> None:
        """Tell each Mac not yet told how the move ended; a Mac offline is told by a later
        sweep. Closes the move once both were told. Read from the table first: only what the
        store says counts."""
        move = await self.get(move_id)
        if move.driver != self.driver:
            return
        self.latest[move.session_id] = move
        step = next_step(move.phase, move.source_done, move.target_done)
        if step == "abort":
            await self._decide_abort(
                move, "relay_restarted", "the relay restarted during the move; move it again"
            )
            step = "tell"
        if step == "tell":
            commit = move.phase == "committed"
            stored = await self.state.store.stored_offsets(move.session_id) if commit else {}
            numbered: dict[str, Any] = {}
            if commit:  # the target keeps only carried events numbered as the relay numbered
                with contextlib.suppress(NotFound):
                    now = await self.state.store.get_session(move.account_id, move.session_id)
                    numbered = {
                        "last_seq": now.last_seq,
                        "epoch": now.epoch,
                        "epoch_start": now.epoch_start,
                    }
            names = {d.id: d.name for d in await self.state.store.list_devices(move.account_id)}
            for side in ("target", "source"):
                if getattr(move, f"{side}_done"):
                    continue
                device = move.target_device if side == "target" else move.source_device
                link = self.state.live.link(device)
                if link is None or link.closed:
                    continue
                args = MoveFinishArgs(
                    move_id=move.id,
                    outcome="commit" if commit else "abort",
                    stored=stored if side == "target" else {},
                    source_name=names.get(move.source_device, ""),
                    target_name=names.get(move.target_device, ""),
                    reason=move.error or "",
                    **(numbered if side == "target" else {}),
                )
                try:
                    result = await link.command(
                        move.session_id, args, self.state.config.float("command_timeout")
                    )
                except (RelayError, OSError, RuntimeError, WebSocketDisconnect) as exc:
                    _log.info("move %s: the %s Mac was not told yet: %r", move.id, side, exc)
                    continue
                if not result.ok:
                    _log.warning(
                        "move %s: the %s Mac could not finish it: %s", move.id, side, result.error
                    )
                    continue
                if side == "target" and commit:  # the policy it holds now, for the phone
                    await self.state.hooks.read_result(move.session_id, result.data)
                await self._update(move, **{f"{side}_done": True})
            step = next_step(move.phase, move.source_done, move.target_done)
        if step == "close":
            await self._update(
                move, phase="done" if move.phase == "committed" else "failed", step=""
            )
            await self._publish(move, force=True)

    # -- taking over and finishing -----------------------------------------------------------

    async def sweep(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_EVERY)
            try:
                await self.sweep_once()
            except RelayError as exc:  # the database is away: the next round tries again
                _log.info("moves not looked at: %s", exc.message)
            except Exception:
                _log.exception("moves not looked at")

    async def sweep_once(self) -> None:
        """Take over the open moves nobody drives (their node died, or this relay restarted)
        and tell the Macs of the open moves this node drives."""
        open_moves = await self._rows("phase IN (?, ?, ?) ORDER BY created_at", tuple(OPEN_PHASES))
        alive = await self._live_drivers()
        for move in open_moves:
            if move.id in self.tasks:
                continue
            if move.driver != self.driver and (
                move.driver in alive or not await self._take_over(move)
            ):
                continue
            self._spawn(move, self.settle(move))

    async def _live_drivers(self) -> set[str]:
        """The drivers still alive: this node, and on PostgreSQL every node with a lease."""
        alive = {self.driver}
        if self.state.cluster is not None:
            alive |= await self.state.cluster.live_nodes()
        return alive

    async def _take_over(self, move: Move) -> bool:
        old, new = move.driver, self.driver

        def job(conn: Connection) -> int:
            cur = conn.execute(
                "UPDATE moves SET driver = ?, updated_at = ? WHERE id = ? AND driver = ?",
                (new, time.time(), move.id, old),
            )
            return int(cur.rowcount)

        if await self.state.store.write(job) != 1:
            return False
        move.driver = new
        _log.info("move %s of %s taken over from %s", move.id, move.session_id, old)
        return True

    # -- what the phone sees -----------------------------------------------------------------

    async def _publish(self, move: Move, *, force: bool = False) -> None:
        self.latest[move.session_id] = move
        now = time.monotonic()
        if not force and now - self._published.get(move.session_id, 0.0) < PROGRESS_EVERY:
            return
        self._published[move.session_id] = now
        if not force:  # the progress in the row too, for the other relay nodes' phones
            await self._update(move, bytes_done=move.bytes_done)
        with contextlib.suppress(NotFound):
            session = await self.state.store.get_session(move.account_id, move.session_id)
            self.state.publish_session(session)

    def fields(self, session: Session) -> Mapping[str, Any]:
        return {"move": shown(self.latest.get(session.id))}

    async def snapshot(self, session: Session) -> Mapping[str, Any]:
        return {"move": shown(self.driven(session.id) or await self.last_of(session.id))}

    async def listed(self, account_id: str) -> Callable[[str], Mapping[str, Any]]:
        # Each session's latest move, as its snapshot shows it (an older failed move of a
        # session that moved since is not its news).
        rows = await self._rows(
            "account_id = ? AND created_at ="
            " (SELECT MAX(created_at) FROM moves latest WHERE latest.session_id = moves.session_id)",
            (account_id,),
        )
        found = {m.session_id: m for m in rows}
        found.update({k: v for k, v in self.latest.items() if k in found and v.id in self.tasks})
        return lambda session_id: {"move": shown(found.get(session_id))}

    async def guard(self, session: Session) -> None:
        """No command reaches a session while it moves (its Macs are busy handing it over)."""
        if session.mark == "moving":
            raise Conflict(
                "this session is moving to another Mac; wait until the move is over",
                code="session_moving",
            )

    async def close(self) -> None:
        await self.work.close()


async def start(state: RelayState) -> Moves:
    moves = Moves(state)
    state.hooks.command_guards.append(moves.guard)
    state.hooks.session_fields.append(moves.fields)
    state.hooks.snapshot_fields.append(moves.snapshot)
    state.hooks.list_fields.append(moves.listed)
    moves.work.start(moves.sweep(), name="sweep")
    return moves


def _moves(state: RelayState) -> Moves:
    part = state.part(Moves)
    assert part is not None, "the moves feature is started with the relay"
    return part


# -- routes ------------------------------------------------------------------------------------

router = APIRouter(prefix="/api")


class MoveBody(Body):
    device_id: str = Field(min_length=1, max_length=200)
    cwd: str | None = Field(default=None, min_length=1, max_length=MAX_CWD_CHARS)
    when: Literal["idle", "now"] = "idle"


@router.post("/sessions/{session_id}/move", status_code=202)
async def move_session(
    session_id: str, body: MoveBody, principal: Phone, state: State
) -> dict[str, Any]:
    """Move the session to another Mac of the account. Answers at once (202) with the move;
    its progress and outcome are the session's ``move`` field (and ``GET …/move``)."""
    session = await session_or_404(state, principal, session_id)
    await state.hooks.guard(session)  # archived, moving already
    if session.locked:
        raise Conflict("this session is locked; unlock it first", code="session_locked")
    devices = {d.id: d for d in await state.store.list_devices(principal.account_id)}
    target = devices.get(body.device_id)
    if target is None:
        raise NotFound(f"no Mac {body.device_id[:80]} in this account", code="unknown_device")
    if target.id == session.device_id:
        raise Conflict("the session is on that Mac already", code="same_device")
    source = devices.get(session.device_id)
    state.live.require_link(session.device_id, source.name if source else "")
    state.live.require_link(target.id, target.name)
    cwd = (body.cwd.rstrip("/") or "/") if body.cwd else session.cwd
    if not cwd.startswith("/"):
        raise Conflict(
            f"the folder on the other Mac must be an absolute path, not {cwd[:80]!r}",
            code="bad_folder",
        )
    move = await _moves(state).begin(session, target.id, cwd, body.when)
    return {"move": move.to_json()}


@router.get("/sessions/{session_id}/move")
async def session_move(session_id: str, principal: Phone, state: State) -> dict[str, Any]:
    """The session's latest move (running, done or failed with its reason)."""
    session = await session_or_404(state, principal, session_id)
    moves = _moves(state)
    move = moves.driven(session.id) or await moves.last_of(session.id)
    if move is None:
        raise NotFound("this session was never moved", code="no_move")
    return {"move": move.to_json()}


FEATURE = Feature("moves", schema=setup, start=start, router=router)
