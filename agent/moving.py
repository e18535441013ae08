"""A session moving to or from this Mac: the agent's side of relay/features/moves.py.

The relay drives a move and both Macs answer its commands; every command may come twice (after a
cut link, a restart of either side), so each is idempotent. What a Mac must remember of a move is
its journal, ``<data>/moves/<move id>/journal.json`` (written before each step's effects), beside
the move's files (``out/`` on the source, ``in/`` on the target).

Source: ``move_export`` stops typing the session's held messages (they stay held and travel),
waits for the turn to end (``idle``) or interrupts it (``now``), then packs the working folder
(agent/foldersync.py: a git bundle of what the target lacks, the uncommitted and untracked files),
the conversations' transcripts (agent/placement.py), the held messages' attachments, the
session's record and its event archive into ``out/``; ``move_read`` serves them in chunks. On
``move_finish`` commit it stops its claude and forgets the session (its folder and Claude Code's
own transcripts stay); on abort it carries on and types what was held.

Target: ``move_probe`` says what its folder holds, ``move_accept`` checks it (a folder that differs
refuses the move, with what differs; one this Mac's Claude Code already trusts refuses Claude
Code project files that would change, ``trusted_folder_settings``, agent/projecttrust.py) and the
disk, and holds it (one move at a time lays a folder down: another into it, inside it or around
it is ``folder_busy`` until the first ends; its journal holds it across a restart);
``move_write`` appends chunks (at the offset it has: a chunk it has already is taken again as a
no-op), ``move_place`` checks every file, unpacks the folder (refusing those project files again,
read from the archive itself, before any of it is in the folder), places the transcripts where
its Claude Code finds them and resumes the conversation
with ``claude --resume`` — silently: until the relay commits, the session is not this Mac's, so
nothing of it is reported (``quiet``). On commit it reports the session from where the relay stored
it, with a line in the conversation saying where it came from, and types the held messages; on
abort it removes what it placed and started, and takes back exactly what its unpack laid down
(its ledger, agent/landing.py) — never a folder another session works in.

All that arrives is another Mac's word. Before anything is laid down the record is checked
(wire/moved.py: ids, the conversations that came, held messages and their attachments), and the
session is made this Mac's by this Mac's own rules (``moved_record``): its claude starts in
``manual`` or this Mac's own default mode (``arrival_mode``), with the policy's restricting
rules only, no grant, and nothing of the other Mac's paths; Claude Code's trust of the folder
is the person's (``arrived_from``: its trust dialog is a card naming the other Mac, never passed
by the agent, agent/autopass.py; the move is over once claude shows it, :func:`resumed`), and a
folder Claude Code trusts already takes no project settings (agent/projecttrust.py); the
attachments are kept as new ones are (agent/attachments.py ``adopt``); on commit the follower goes on from the relay's offsets
(``adopt_stored``) and the carried events are kept only as the relay numbered them
(``carried_events``).

At agent start (``recover``) the journals say which sessions are in a move: those are not revived,
typed into or (on the target) reported until the relay says how the move ended.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from agent import attachments, foldersync, landing, placement, projecttrust
from agent.commands import Handler
from agent.driver import SessionDriver
from agent.errors import CommandFailed, MuxError
from agent.files import write_json
from agent.launch import PERMISSION_MODES, Start
from agent.registry import SessionRecord, is_session_id
from agent.transcript import TranscriptFollower, project_slug
from wire.config import Config
from wire.markers import BRIDGE_CONVERSATION
from wire.moved import (
    EVENTS_FILE,
    FOLDER_FILE,
    MEMORY,
    RECORD_FILE,
    STILL_TO_TYPE,
    TRANSCRIPTS,
    MovedRecord,
    RecordProblem,
    attachment_name,
    files_problem,
    read_record,
)
from wire.protocol import (
    CONVERSATION_KEY,
    MAX_TRANSCRIPT_OFFSET,
    MOVE_FILE,
    HeldMessage,
    MarkerKind,
    MoveAcceptArgs,
    MoveExportArgs,
    MoveFile,
    MoveFinishArgs,
    MovePlaceArgs,
    MoveProbeArgs,
    MoveReadArgs,
    MoveWriteArgs,
    NumberedEvent,
)
from wire.tasks import TaskSet, TaskSetClosed

_log = logging.getLogger("agent.moving")

MOVES_DIR = "moves"
JOURNAL = "journal.json"
DISK_MARGIN = 64 * 1024 * 1024  # bytes left free beyond what a move needs
IDLE_POLL = 0.2
MOVED_TEXT = "🚚 Moved from {source} to {target}"
MAX_MAC_NAME = 80  # characters of a Mac's name a card shows

# Journal statuses. Source: waiting → packing → ready (or failed). Target: receiving → placing →
# placed (or failed) → committed.
SOURCE, TARGET = "source", "target"
BUSY = ("waiting", "packing", "placing")


@dataclass
class Journal:
    """What this Mac must remember of one move, across its own restarts."""

    move_id: str
    session_id: str
    role: str  # "source" | "target"
    status: str
    cwd: str = ""  # the folder on this Mac
    when: str = "idle"
    code: str | None = None
    error: str | None = None
    files: list[dict[str, Any]] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)
    tree: str = ""  # target: where the folder's tree goes (its repository's top): held
    unpacked: bool = False  # the target unpacked the folder (a place asked again skips it)
    placed: list[str] = field(default_factory=list)  # transcripts the target added
    started_at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Journal:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


# -- pure steps ---------------------------------------------------------------------------------


def settled(state: str, card_kind: str | None, alive: bool, when: str) -> bool:
    """Whether the source may pack now: its claude is not running a turn. ``now`` also takes
    the interruption notice left after Esc (a ``stuck`` card) as the turn's end."""
    if not alive:
        return True
    if state == "idle":
        return True
    return when == "now" and state == "waiting" and card_kind == "stuck"


def resumed(state: str, card_kind: str | None, asks_folder_trust: bool) -> bool:
    """Whether a moved session's claude, resumed on the target, is up for the move to commit:
    idle, or waiting on what is the person's to answer once the session is theirs — the trust
    dialog of the folder that arrived (agent/autopass.py), or the interruption notice of the
    turn the move interrupted (``now``). The move never waits for the person. Pure."""
    if state == "idle":
        return True
    return state == "waiting" and (asks_folder_trust or card_kind == "stuck")


def write_plan(have: int, offset: int, length: int, size: int) -> tuple[int, int] | None:
    """Where a chunk of ``length`` bytes at ``offset`` goes in a file of which ``have`` bytes are
    written (of ``size`` in all): (skip, start) — skip that many of its bytes and write the rest
    at ``start``; None when the chunk is wholly had already. CommandFailed ``move_gap`` when it
    starts past what is written (the relay asks again what this Mac has), ``bad_offset`` when it
    ends past the file's size."""
    if offset + length > size:
        raise CommandFailed(
            "bad_offset", f"a chunk at {offset} of {length} bytes ends past the file's {size}"
        )
    if offset > have:
        raise CommandFailed("move_gap", f"this Mac has {have} bytes of the file, not {offset}")
    if offset + length <= have:
        return None
    return have - offset, have


def staged_name(path: Path, project: Path, conversation_id: str) -> str:
    """A transcript's name among the move's files: its place under the project folder
    (``<conversation>.jsonl``, ``<conversation>/subagents/agent-….jsonl``)."""
    try:
        rel = path.relative_to(project).as_posix()
    except ValueError:
        rel = f"{conversation_id}/{path.name}"
    return f"{TRANSCRIPTS}/{rel}"


def conversation_of(name: str) -> str:
    """The conversation a staged transcript belongs to (see ``staged_name``)."""
    rest = name[len(TRANSCRIPTS) + 1 :]
    head = rest.split("/", 1)[0]
    return head[: -len(".jsonl")] if head.endswith(".jsonl") else head


def arrival_mode(moved: str | None, own_default: str | None) -> str:
    """The permission mode a moved session's claude starts in here: never one a move chose
    (``plan`` only restricts, and is kept), else this Mac's own default (its Claude Code's
    ``permissions.defaultMode``), else ``manual``. Always given on the command line, so no
    settings file arriving in the moved folder decides it either. Pure."""
    if moved == "plan":
        return "plan"
    return own_default if own_default is not None and own_default in PERMISSION_MODES else "manual"


def own_default_mode(claude_home: Path) -> str | None:
    """The default permission mode this Mac's person chose in Claude Code's own settings
    (``~/.claude/settings.json``), or None."""
    try:
        settings = json.loads((claude_home / "settings.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    permissions = settings.get("permissions") if isinstance(settings, dict) else None
    mode = permissions.get("defaultMode") if isinstance(permissions, dict) else None
    return mode if isinstance(mode, str) and mode in PERMISSION_MODES else None


def mac_name(said: str) -> str:
    """The name of the Mac a folder came from, as a card says it: one line of printable text,
    MAX_MAC_NAME characters at most ("another Mac" when it says nothing). Pure."""
    text = " ".join("".join(c if c.isprintable() else " " for c in said).split())[:MAX_MAC_NAME]
    return text or "another Mac"


def moved_record(
    checked: MovedRecord, cwd: str, mode: str, now: float, source: str
) -> SessionRecord:
    """The session's record as this Mac keeps it: only what was checked of what the source sent
    (wire/moved.py), and this Mac's own say on the rest. Its folder is the one here; its claude
    starts in ``mode`` (:func:`arrival_mode`); its policy keeps only the rules that restrict;
    no grants, hook secret, offsets, queued markers or paths of the other Mac (its transcript's,
    its fork's copy, its worktree). The folder arrived from ``source`` (the Mac's name): nobody
    chose it on this Mac, so Claude Code's trust dialog for it is the person's to answer
    (``arrived_from``), never passed by the agent, until they trusted it."""
    return SessionRecord(
        id=checked.id,
        cwd=cwd,
        created_at=checked.created_at or now,
        conversation_id=checked.conversation_id,
        conversation_ids=list(checked.conversation_ids),
        permission_mode=mode,
        model=checked.model,
        alive=checked.alive,
        last_alive_at=checked.last_alive_at or now,
        ended_by_person=checked.ended_by_person,
        resting=checked.resting,
        held=list(checked.held),
        allow_all=False,
        policy=checked.policy,
        parent_id=checked.parent_id,
        fork_conversation=checked.fork_conversation,
        branch=checked.branch,
        arrived_from=mac_name(source),
        resume_scope=checked.resume_scope,
        handoff=checked.handoff,
        handoff_decisions=checked.handoff_decisions,
    )


def adopt_stored(record: SessionRecord, stored: dict[str, int]) -> None:
    """After the commit: the relay's offsets are where this Mac's follower goes on (only the
    relay's: what the source's record said is not read), and its own marker lines are numbered
    after the last the relay stored (a marker queued here meanwhile moves up behind it). A key
    that could name a path is dropped: conversation ids name transcript files."""
    record.acked = {
        key: offset
        for key, offset in stored.items()
        if CONVERSATION_KEY.match(key) and -1 <= offset < MAX_TRANSCRIPT_OFFSET
    }
    bridge = max(record.acked.get(BRIDGE_CONVERSATION, 0), 0)
    for n, marker in enumerate(record.pending_markers, start=1):
        marker["offset"] = bridge + n
    record.marker_seq = bridge + len(record.pending_markers)


def carried_events(
    events: list[NumberedEvent],
    session_id: str,
    last_seq: int | None,
    epoch: str | None,
    epoch_start: int,
) -> tuple[list[NumberedEvent], str | None]:
    """The events carried with the session that this Mac keeps in its archive: all of them when
    each is the session's and numbered as the relay numbered it (a seq from 1 to the relay's
    last, increasing, of the relay's epoch from the epoch's start on), else none, and why. A
    gap is what the source's archive had (docs/protocol.md §8); a seq the relay never gave
    would be said in this Mac's next hello and move the session's numbering there."""
    if last_seq is None or epoch is None:
        return [], "the relay did not say how it numbered the session"
    previous = 0
    for event in events:
        if event.session_id != session_id:
            return [], f"an event of another session ({event.session_id[:40]!r})"
        if not previous < event.seq <= last_seq:
            return [], f"seq {event.seq} is out of order or past the relay's last, {last_seq}"
        if event.seq >= epoch_start and event.epoch != epoch:
            return [], f"seq {event.seq} is of epoch {event.epoch[:20]!r}, not the relay's {epoch}"
        previous = event.seq
    return list(events), None


def conversation_groups(names: list[str]) -> dict[str, list[str]]:
    """The moved transcripts by conversation (names after ``transcripts/``): each conversation's
    own files, the project's memory files with the first conversation. Names checked by
    wire/moved.py's ``files_problem``. Pure."""
    groups: dict[str, list[str]] = {}
    memory = []
    for name in names:
        rest = name.removeprefix(TRANSCRIPTS + "/")
        if rest == name:
            continue
        if rest.startswith(MEMORY + "/"):
            memory.append(rest)
        else:
            groups.setdefault(conversation_of(name), []).append(rest)
    if groups:
        groups[next(iter(groups))].extend(memory)
    return groups


def archived_events(path: Path) -> tuple[str, list[NumberedEvent]]:
    """The events of a session's archive file as the source kept it, and their epoch (the
    last one's); a torn or unreadable line is skipped."""
    events: list[NumberedEvent] = []
    with path.open("rb") as handle:
        for raw in handle:
            with contextlib.suppress(ValueError, ValidationError):
                events.append(NumberedEvent.model_validate_json(raw))
    return (events[-1].epoch if events else ""), events


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1024 * 1024):
            digest.update(block)
    return digest.hexdigest()


def inside(root: Path, name: str) -> Path:
    """The file ``name`` of a move's folder; never outside it."""
    if not re.fullmatch(MOVE_FILE, name):
        raise CommandFailed("bad_args", f"{name[:80]!r} is not a file of a move")
    path = root / name
    if not path.resolve().is_relative_to(root.resolve()):
        raise CommandFailed("bad_args", f"{name[:80]!r} is not a file of a move")
    return path


def free_bytes(path: Path) -> int:
    """Free space of the disk ``path`` is on (or would be, for a folder not made yet)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


# -- the agent's side ----------------------------------------------------------------------------


class MovingHost(Protocol):
    """What a move needs of the sessions (agent/sessions.py's ``Sessions``)."""

    @property
    def config(self) -> Config: ...
    def get(self, session_id: str) -> SessionRecord | None: ...
    def record(self, session_id: str) -> SessionRecord: ...
    def records(self) -> list[SessionRecord]: ...
    def add(self, record: SessionRecord, *, reported: bool = True) -> None: ...
    def driver(self, record: SessionRecord) -> SessionDriver: ...
    def transcript_file(self, record: SessionRecord) -> Path: ...
    def add_marker(self, record: SessionRecord, marker: MarkerKind, text: str) -> None: ...
    def save(self) -> None: ...
    def offer_folders(self) -> None: ...
    async def launch(self, record: SessionRecord, start: Start) -> SessionDriver: ...
    async def reopen(self, record: SessionRecord) -> None: ...
    async def forget(self, session_id: str) -> SessionRecord | None: ...


class MoveArchive(Protocol):
    """The session's event archive, as a move carries it (agent/archive.py's ``DiskArchive``)."""

    def path(self, session_id: str) -> Path: ...
    def track(self, session_id: str) -> None: ...
    def add(self, session_id: str, epoch: str, events: list[NumberedEvent]) -> None: ...


class Moving:
    """The move commands (``handlers``), each move's journal, and the steps that run beside
    them (``tasks``: stopped with the agent; a journal tells the next agent where it was)."""

    def __init__(
        self,
        sessions: MovingHost,
        archive: MoveArchive,
        data: Path,
        claude_home: Path,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.sessions = sessions
        self.archive = archive
        self.data = data
        self.claude_home = claude_home
        self.env = env  # the sessions' environment (None: the agent's)
        self.root = data / MOVES_DIR
        self.journals: dict[str, Journal] = {}
        self.steps: dict[str, asyncio.Task[None]] = {}  # a move's step running now
        self.tasks = TaskSet("moves", _log)

    async def close(self, grace: float) -> list[str]:
        """Stop every step under way (its journal says where it was) and what a move started."""
        return await self.tasks.close(grace)

    def handlers(self) -> list[Handler]:
        return [
            (MoveProbeArgs, self.probe),
            (MoveExportArgs, self.export),
            (MoveAcceptArgs, self.accept),
            (MoveReadArgs, self.read),
            (MoveWriteArgs, self.write),
            (MovePlaceArgs, self.place),
            (MoveFinishArgs, self.finish),
        ]

    # -- what the rest of the agent asks ----------------------------------------------------

    def quiet(self, session_id: str) -> bool:
        """Nothing of this session is reported: it is arriving and not this Mac's yet."""
        return any(
            j.session_id == session_id and j.role == TARGET and j.status != "committed"
            for j in self.journals.values()
        )

    def holds(self, session_id: str) -> bool:
        """The session is in a move: not revived, nothing typed into it, until it is decided."""
        return any(j.session_id == session_id for j in self.journals.values())

    def recover(self) -> None:
        """At agent start: the moves this Mac was in when it stopped, from their journals."""
        if not self.root.is_dir():
            return
        for folder in sorted(self.root.iterdir()):
            try:
                journal = Journal.from_json(json.loads((folder / JOURNAL).read_text("utf-8")))
            except (OSError, ValueError, TypeError) as exc:
                _log.warning("move %s: its journal cannot be read (%s); left", folder.name, exc)
                continue
            self.journals[journal.move_id] = journal
            record = self.sessions.get(journal.session_id)
            if record is not None:
                self.sessions.driver(record).moving = True
            _log.info(
                "session %s was in move %s (%s, %s): waiting for the relay to settle it",
                journal.session_id,
                journal.move_id,
                journal.role,
                journal.status,
            )

    # -- the journal -----------------------------------------------------------------------

    def _skip(self) -> tuple[str, ...]:
        return foldersync.skip_folders(self.sessions.config.str("move_skip_folders"))

    def _folder(self, move_id: str) -> Path:
        return self.root / move_id

    def _save(self, journal: Journal) -> None:
        folder = self._folder(journal.move_id)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        write_json(folder / JOURNAL, journal.to_json())
        self.journals[journal.move_id] = journal

    def _journal(self, move_id: str, session_id: str, role: str) -> Journal:
        journal = self.journals.get(move_id)
        if journal is None or journal.session_id != session_id or journal.role != role:
            raise CommandFailed("unknown_move", f"this Mac is not the {role} of move {move_id}")
        return journal

    def _settings_guard(
        self, cwd: str, root: Path, manifest: foldersync.FolderManifest
    ) -> Callable[[list[str]], None] | None:
        """When this Mac's Claude Code already trusts the folder ``cwd`` as it will be once the
        move laid it down (in the repository ``root`` for git), so it would ask nobody: a check
        that refuses (``trusted_folder_settings``) paths the move would lay down or change among
        which is a Claude Code project file that can run programs (agent/projecttrust.py).
        None when Claude Code will ask (the person's card then decides)."""
        folder = os.path.realpath(Path(cwd).expanduser())
        repository = (
            os.path.realpath(root) if manifest.kind == "git" else projecttrust.git_root_of(folder)
        )
        env = self.env if self.env is not None else os.environ
        config = projecttrust.read_config(self.claude_home)
        trusted = projecttrust.trusted_by(config, folder, repository, env)
        if trusted is None:
            return None

        def guard(paths: list[str]) -> None:
            files = [p for p in paths if projecttrust.runs_programs(p)]
            if files:
                raise projecttrust.refusal(folder, trusted, files)

        return guard

    def _check_free(self, move_id: str, root: Path) -> None:
        """``folder_busy`` while another move lays a folder down at, in or around ``root``
        (held from its accept until it ends; its journal holds it across a restart)."""
        held = [(j.move_id, j.tree) for j in self.journals.values() if j.role == TARGET]
        holder = landing.held_by(str(root), [h for h in held if h[0] != move_id])
        if holder is not None:
            raise CommandFailed(
                "folder_busy",
                f"the folder {root} on this Mac is being filled by another move ({holder}): "
                "wait for it to end, or pick another folder",
            )

    def _drop(self, journal: Journal) -> None:
        self.journals.pop(journal.move_id, None)
        task = self.steps.pop(journal.move_id, None)
        if task is not None:
            task.cancel()
        shutil.rmtree(self._folder(journal.move_id), ignore_errors=True)

    def _run(self, journal: Journal, work: Callable[[Journal], Awaitable[None]]) -> None:
        """Run a step in the background (it takes longer than one command): its outcome goes in
        the journal, which the relay's next ask reads."""
        if journal.move_id in self.steps:
            return

        async def step() -> None:
            try:
                await work(journal)
            except asyncio.CancelledError:
                raise
            except CommandFailed as exc:
                journal.status, journal.code, journal.error = "failed", exc.code, exc.message
            except foldersync.FolderSyncError as exc:
                journal.status, journal.code, journal.error = "failed", exc.code, str(exc)
            except OSError as exc:
                code = "disk_full" if exc.errno == 28 else "mac_error"
                journal.status, journal.code, journal.error = "failed", code, str(exc)[:500]
            except Exception as exc:
                _log.exception("move %s: %s failed", journal.move_id, journal.role)
                journal.status, journal.code, journal.error = "failed", "mac_error", str(exc)[:500]
            finally:
                self.steps.pop(journal.move_id, None)
            if journal.move_id in self.journals:
                self._save(journal)

        name = f"move {journal.move_id} ({journal.role})"
        self.steps[journal.move_id] = self.tasks.start(step(), name=name)

    async def _wait(self, journal: Journal, seconds: float) -> None:
        task = self.steps.get(journal.move_id)
        if task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), seconds)

    def _answer(self, journal: Journal) -> dict[str, Any]:
        answer: dict[str, Any] = {"status": journal.status}
        if journal.status == "failed":
            answer.update(code=journal.code, error=journal.error)
        if journal.status == "ready" and journal.role == SOURCE:
            answer.update(manifest=journal.manifest, files=journal.files)
        return answer

    # -- source ---------------------------------------------------------------------------

    async def export(self, session_id: str, args: MoveExportArgs) -> dict[str, Any]:
        journal = self.journals.get(args.move_id)
        if journal is None:
            record = self.sessions.record(session_id)
            journal = Journal(args.move_id, record.id, SOURCE, "waiting", record.cwd, args.when)
            self._save(journal)
            self.sessions.driver(record).moving = True  # held messages stay held: they travel
        journal = self._journal(args.move_id, session_id, SOURCE)
        if journal.status in BUSY:
            self._run(journal, lambda j: self._export(j, list(args.have)))
            await self._wait(journal, args.wait)
        return self._answer(journal)

    async def _export(self, journal: Journal, have: list[str]) -> None:
        record = self.sessions.record(journal.session_id)
        rt = self.sessions.driver(record)
        if journal.when == "now" and rt.pane_alive and rt.state in ("busy", "waiting"):
            with contextlib.suppress(CommandFailed, MuxError):
                await rt.interrupt()
        while not settled(rt.state, rt.card.kind if rt.card else None, rt.pane_alive, journal.when):
            await asyncio.sleep(IDLE_POLL)
        journal.status = "packing"
        self._save(journal)
        out = self._folder(journal.move_id) / "out"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(mode=0o700, parents=True)
        limit = self.sessions.config.int("move_max_bytes")
        cwd = Path(record.cwd)
        manifest = await foldersync.pack(
            cwd, out / FOLDER_FILE, limit=limit, have=tuple(have), skip=self._skip()
        )
        home = self.claude_home
        project = home / "projects" / project_slug(record.cwd)
        # A fork not yet prompted forks its conversation again where it goes: that travels too.
        said = [*record.conversation_ids, record.conversation_id, record.fork_conversation]
        for conversation_id in [c for c in dict.fromkeys(said) if c]:
            for path in placement.conversation_files(home, record.cwd, conversation_id):
                target = inside(out, staged_name(path, project, conversation_id))
                target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                await asyncio.to_thread(shutil.copyfile, path, target)
        await asyncio.to_thread(self._pack_attachments, record, out)
        events = self.archive.path(record.id)
        if events.is_file():
            await asyncio.to_thread(shutil.copyfile, events, out / EVENTS_FILE)
        write_json(out / RECORD_FILE, record.to_json())
        files = [p for p in sorted(out.rglob("*")) if p.is_file()]
        total = sum(p.stat().st_size for p in files)
        if total > limit:
            raise CommandFailed(
                "too_big",
                f"the session's folder and transcripts come to {total:,} bytes, more than "
                f"move_max_bytes ({limit:,}); nothing was sent",
            )
        listed = []
        for path in files:
            digest = await asyncio.to_thread(sha256_of, path)
            name = path.relative_to(out).as_posix()
            listed.append(MoveFile(name=name, size=path.stat().st_size, sha256=digest))
        journal.manifest = manifest.to_json()
        journal.files = [f.model_dump() for f in listed]
        journal.status = "ready"

    def _pack_attachments(self, record: SessionRecord, out: Path) -> None:
        """The files of the held messages' attachments, beside the record that names them; a
        message whose file is gone refuses the move (it would arrive without it)."""
        for message in record.held:
            if message.state not in STILL_TO_TYPE:
                continue
            for info in message.attachments:
                path = attachments.path_of(self.data, record.id, info)
                if not path.is_file():
                    raise CommandFailed(
                        "attachment_missing",
                        f"the held message {message.text[:40]!r} has an attachment ({info.name}) "
                        "this Mac no longer holds: cancel that message (or send it again), then "
                        "move the session",
                    )
                target = out / attachment_name(info.id, info.media_type)
                target.parent.mkdir(mode=0o700, exist_ok=True)
                shutil.copyfile(path, target)

    async def read(self, session_id: str, args: MoveReadArgs) -> dict[str, Any]:
        journal = self._journal(args.move_id, session_id, SOURCE)
        if journal.status != "ready":
            raise CommandFailed("not_ready", f"move {args.move_id} is not packed yet")
        path = inside(self._folder(journal.move_id) / "out", args.file)

        def chunk() -> bytes:
            with path.open("rb") as handle:
                handle.seek(args.offset)
                return handle.read(args.length)

        try:
            data = await asyncio.to_thread(chunk)
        except FileNotFoundError:
            raise CommandFailed(
                "not_found", f"move {args.move_id} has no file {args.file}"
            ) from None
        return {"data": base64.b64encode(data).decode("ascii"), "size": len(data)}

    # -- target ---------------------------------------------------------------------------

    async def probe(self, session_id: str, args: MoveProbeArgs) -> dict[str, Any]:
        if not is_session_id(session_id):
            raise CommandFailed("bad_session_id", f"{session_id[:80]!r} is not a session id")
        known = self.sessions.get(session_id)
        if known is not None and not self.holds(session_id):
            raise CommandFailed("session_exists", f"session {session_id} is on this Mac already")
        root = Path(args.cwd).expanduser()
        state = await foldersync.describe(root)
        have = list(await foldersync.have_commits(root)) if state.exists else []
        return {"state": state.to_json(), "have": have, "free_bytes": free_bytes(root)}

    async def accept(self, session_id: str, args: MoveAcceptArgs) -> dict[str, Any]:
        journal = self.journals.get(args.move_id)
        if journal is None:
            if not is_session_id(session_id):
                raise CommandFailed("bad_session_id", f"{session_id[:80]!r} is not a session id")
            if self.sessions.get(session_id) is not None:
                raise CommandFailed(
                    "session_exists", f"session {session_id} is on this Mac already"
                )
            problem = files_problem([f.name for f in args.files])
            if problem is not None:
                raise CommandFailed("bad_args", problem)
            try:
                manifest = foldersync.FolderManifest.from_json(args.manifest)
            except ValueError as exc:
                raise CommandFailed("bad_args", str(exc)) from None
            # A session in a subfolder of its repository: the whole repository travels.
            root = Path(foldersync.tree_root(str(Path(args.cwd).expanduser()), manifest.subdir))
            self._check_free(args.move_id, root)
            state = await foldersync.describe(root, skip=self._skip(), against=manifest)
            differs = foldersync.differences(manifest, state)
            if differs:
                shown = "; ".join(differs[:8]) + (" …" if len(differs) > 8 else "")
                raise CommandFailed(
                    "folder_differs",
                    f"the folder {root} on this Mac differs from the session's: {shown}. "
                    "Pick another folder to move it to",
                )
            if not foldersync.same_state(manifest, state):  # as the source says: fail fast
                guard = self._settings_guard(args.cwd, root, manifest)
                if guard is not None:
                    here = await foldersync.claude_files_here(root, state)
                    guard(projecttrust.changed(dict(manifest.claude_files), here))
            need = 2 * sum(f.size for f in args.files) + DISK_MARGIN
            for where in {root, self.data}:
                if free_bytes(where) < need:
                    raise CommandFailed(
                        "disk_full",
                        f"the disk of {where} on this Mac has {free_bytes(where):,} bytes free; "
                        f"the move needs {need:,}",
                    )
            journal = Journal(
                args.move_id,
                session_id,
                TARGET,
                "receiving",
                str(Path(args.cwd).expanduser()),
                files=[f.model_dump() for f in args.files],
                manifest=args.manifest,
                tree=str(root),
            )
            self._check_free(args.move_id, root)  # again: another move may have come meanwhile
            self._save(journal)
            (self._folder(args.move_id) / "in").mkdir(mode=0o700, exist_ok=True)
        journal = self._journal(args.move_id, session_id, TARGET)
        incoming = self._folder(args.move_id) / "in"
        have = {}
        for item in journal.files:
            path = inside(incoming, item["name"])
            have[item["name"]] = path.stat().st_size if path.exists() else 0
        return {"have": have}

    async def write(self, session_id: str, args: MoveWriteArgs) -> dict[str, Any]:
        journal = self._journal(args.move_id, session_id, TARGET)
        if journal.status != "receiving":
            raise CommandFailed("not_receiving", f"move {args.move_id} is past its transfer")
        size = next((f["size"] for f in journal.files if f["name"] == args.file), None)
        if size is None:
            raise CommandFailed("not_found", f"move {args.move_id} has no file {args.file}")
        try:
            data = base64.b64decode(args.data, validate=True)
        except ValueError:
            raise CommandFailed("bad_args", "data: not base64") from None
        path = inside(self._folder(args.move_id) / "in", args.file)
        have = path.stat().st_size if path.exists() else 0
        plan = write_plan(have, args.offset, len(data), int(size))
        if plan is not None:
            skip, start = plan

            def put() -> None:
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
                with open(fd, "r+b") as handle:
                    handle.seek(start)
                    handle.write(data[skip:])

            await asyncio.to_thread(put)
        return {"size": path.stat().st_size if path.exists() else 0}

    async def place(self, session_id: str, args: MovePlaceArgs) -> dict[str, Any]:
        journal = self._journal(args.move_id, session_id, TARGET)
        if journal.status == "receiving":
            journal.status = "placing"
            self._save(journal)
        if journal.status == "placing":
            self._run(journal, lambda j: self._place(j, args.source_name))
            await self._wait(journal, args.wait)
        return {"status": "ready" if journal.status == "placed" else journal.status, **(
            {"code": journal.code, "error": journal.error} if journal.status == "failed" else {}
        )}  # fmt: skip

    async def _place(self, journal: Journal, source: str) -> None:
        incoming = self._folder(journal.move_id) / "in"
        files = [MoveFile.model_validate(f) for f in journal.files]
        for file in files:
            path = inside(incoming, file.name)
            if not path.is_file() or path.stat().st_size != file.size:
                raise CommandFailed("incomplete", f"{file.name} did not arrive whole")
            if await asyncio.to_thread(sha256_of, path) != file.sha256:
                path.unlink()
                raise CommandFailed("corrupt", f"{file.name} arrived damaged; move it again")
        try:  # before anything is laid down: all of it comes from another Mac
            checked = read_record(
                (incoming / RECORD_FILE).read_bytes(),
                journal.session_id,
                {f.name: f.size for f in files},
            )
        except RecordProblem as exc:
            raise CommandFailed(exc.code, str(exc)) from None
        if self.sessions.get(journal.session_id) is not None:
            # placed before this Mac restarted: start over from the files
            await self.sessions.forget(journal.session_id)
        held = await asyncio.to_thread(self._adopt_attachments, checked, incoming)
        tree = Path(journal.tree or journal.cwd)
        if not journal.unpacked:
            manifest = foldersync.FolderManifest.from_json(journal.manifest)
            ledger = self._folder(journal.move_id) / landing.LEDGER  # what an abort takes back
            await foldersync.unpack(
                incoming / FOLDER_FILE,
                tree,
                manifest,
                ledger=ledger,
                skip=self._skip(),
                before_laying=self._settings_guard(journal.cwd, tree, manifest),
            )
            journal.unpacked = True
        if not Path(journal.cwd).is_dir():
            raise CommandFailed("folder_gone", f"the folder {journal.cwd} was not made")
        cwd = os.path.realpath(journal.cwd)
        journal.cwd = cwd
        self._save(journal)
        home = self.claude_home
        project = home / "projects" / project_slug(cwd)
        groups = conversation_groups([f.name for f in files])
        for conversation_id, names in groups.items():
            main = project / f"{conversation_id}.jsonl"
            for placed in (main, main.with_suffix("")):
                if not placed.exists() and str(placed) not in journal.placed:
                    journal.placed.append(str(placed))
            self._save(journal)
            paths = {name: incoming / TRANSCRIPTS / name for name in names}
            await asyncio.to_thread(placement.place_conversation, home, cwd, conversation_id, paths)
        mode = arrival_mode(checked.permission_mode, own_default_mode(home))
        record = moved_record(checked, cwd, mode, time.time(), source)
        record.held = held
        self.sessions.add(record, reported=False)  # not this Mac's until the move is committed
        rt = self.sessions.driver(record)
        rt.moving = True
        if record.alive:
            await self._resume(record)
        journal.status = "placed"  # the relay's next ask is answered "ready", not placed again

    def _adopt_attachments(self, checked: MovedRecord, incoming: Path) -> list[HeldMessage]:
        """The held messages' attachments kept where this Mac keeps a session's (checked as a
        new one is: agent/attachments.py), and the messages naming them as kept."""
        limit = self.sessions.config.int("attachment_max_bytes")
        kept = {
            name: attachments.adopt(
                self.data, checked.id, info, inside(incoming, name).read_bytes(), limit
            )
            for name, info in checked.attachment_files().items()
        }
        return [
            m.model_copy(
                update={
                    "attachments": [
                        kept.get(attachment_name(a.id, a.media_type), a) for a in m.attachments
                    ]
                }
            )
            for m in checked.held
        ]

    async def _resume(self, record: SessionRecord) -> None:
        """Start the session's claude on this Mac in its conversation; wait until it is up
        (:func:`resumed`)."""
        # Only a conversation that arrived is resumed (wire/moved.py checked the record names no
        # other); a session never prompted starts afresh under its own id.
        rt = await self.sessions.launch(record, Start.ARRIVE)
        timeout = self.sessions.config.float("move_resume_timeout")
        deadline = time.monotonic() + timeout
        while not (
            rt.pane_alive
            and resumed(rt.state, rt.card.kind if rt.card else None, rt.asks_folder_trust)
        ):
            said = rt.screen_key[0].strip() if rt.screen_key else ""
            # A blank screen reads as "exited" too, but a resuming claude draws nothing at first:
            # only a pane that died, or a screen that says claude ended, is a refusal.
            if rt.computed is not None and (
                not rt.pane_alive or (rt.screen is not None and rt.screen.exited and said)
            ):
                with contextlib.suppress(MuxError):
                    said = (await rt.mux.capture(rt.name)).text.strip() or said
                raise CommandFailed(
                    "resume_refused",
                    "Claude Code on this Mac would not resume the conversation"
                    + (f": {' '.join(said.split())[-300:]}" if said else ""),
                )
            if time.monotonic() > deadline:
                raise CommandFailed(
                    "resume_refused",
                    f"Claude Code on this Mac was not ready within "
                    f"{timeout:g} s (state {rt.state})",
                )
            await asyncio.sleep(IDLE_POLL)

    # -- the end of a move ------------------------------------------------------------------

    async def finish(self, session_id: str, args: MoveFinishArgs) -> dict[str, Any]:
        journal = self.journals.get(args.move_id)
        if journal is None or journal.session_id != session_id:
            return {"done": True, "known": False}  # told again: settled already
        task = self.steps.pop(journal.move_id, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if journal.role == SOURCE:
            await (
                self._release(journal) if args.outcome == "commit" else self._resume_here(journal)
            )
        elif args.outcome == "commit":
            await self._arrive(journal, args)
        else:
            await self._undo(journal)
        self._drop(journal)
        answer: dict[str, Any] = {"done": True, "known": True}
        record = self.sessions.get(session_id)
        if journal.role == TARGET and args.outcome == "commit" and record is not None:
            answer["policy"] = record.policy  # what this Mac holds, for the relay's copy
        return answer

    async def _release(self, journal: Journal) -> None:
        """Source, committed: the session is the other Mac's now; stop its claude here and
        forget it (its folder and Claude Code's own transcripts stay)."""
        await self.sessions.forget(journal.session_id)
        _log.info("session %s moved away (move %s)", journal.session_id, journal.move_id)

    async def _resume_here(self, journal: Journal) -> None:
        """Source, aborted: the session goes on here; what was held is typed."""
        record = self.sessions.get(journal.session_id)
        if record is None:
            return
        rt = self.sessions.driver(record)
        rt.moving = False
        if record.alive and not rt.pane_alive:
            with contextlib.suppress(Exception):
                await self.sessions.reopen(record)
        rt.wake_screen.set()
        self._deliver_held(rt)
        await rt.send_update(force=True)

    async def _arrive(self, journal: Journal, args: MoveFinishArgs) -> None:
        """Target, committed: the session is this Mac's from now on."""
        sessions = self.sessions
        journal.status = "committed"
        self._save(journal)
        record = sessions.get(journal.session_id)
        if record is None:
            _log.warning("move %s committed but its session is not here", journal.move_id)
            return
        adopt_stored(record, args.stored)
        rt = sessions.driver(record)
        rt.follower = TranscriptFollower(record.acked)
        if record.conversation_id:
            rt.follower.follow(record.conversation_id, sessions.transcript_file(record))
        events = self._folder(journal.move_id) / "in" / EVENTS_FILE
        if events.is_file():
            _, archived = await asyncio.to_thread(archived_events, events)
            kept, why = carried_events(
                archived, record.id, args.last_seq, args.epoch, args.epoch_start
            )
            if why is not None:
                _log.warning("move %s: the events carried are not kept: %s", journal.move_id, why)
            if kept and args.epoch is not None:
                self.archive.add(record.id, args.epoch, kept)
        self.archive.track(record.id)
        source = args.source_name or "another Mac"
        target = args.target_name or "this Mac"
        sessions.add_marker(
            record, MarkerKind.MOVED, MOVED_TEXT.format(source=source, target=target)
        )
        rt.moving = False
        sessions.save()
        if record.alive and not rt.pane_alive:
            with contextlib.suppress(Exception):
                await sessions.reopen(record)
        rt.sent.clear()
        rt.wake_screen.set()
        await rt.send_update(force=True)
        self._deliver_held(rt)
        sessions.offer_folders()
        _log.info("session %s moved here from %s (move %s)", record.id, source, journal.move_id)

    async def _undo(self, journal: Journal) -> None:
        """Target, aborted: nothing of the session stays here."""
        await self.sessions.forget(journal.session_id)
        for placed in journal.placed:
            path = Path(placed)
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        laid = landing.Ledger.load(self._folder(journal.move_id) / landing.LEDGER)
        if laid is not None:  # exactly what its unpack laid down, never another session's folder
            busy = [r.cwd for r in self.sessions.records()]
            await landing.take_back(laid, busy)
        _log.info("move %s of session %s undone here", journal.move_id, journal.session_id)

    def _deliver_held(self, rt: SessionDriver) -> None:
        """The session is this Mac's to type into again: what it holds is typed when it can."""
        with contextlib.suppress(TaskSetClosed):  # the agent is stopping: they stay held
            self.tasks.start(rt.deliver_held(reason="idle"), name=f"held of {rt.record.id}")
