"""The sessions of this Mac: the registry and the life of each session.

``Sessions`` holds what the agent remembers of every session (the registry, ``sessions.json``)
and what it knows of the running ones (each one's ``SessionDriver``, agent/driver.py), and does
what a session's life is made of: launching its claude (:meth:`Sessions.launch`: the plan of
which conversation it opens is agent/launch.py's ``plan_launch``, pure; here is the disk, the
environment and the terminal), reopening, reviving after a restart, ending or resting it,
forgetting it, its transcript files, its marker lines and saving the registry.

The agent's other parts (the commands' parts, the hooks, moving) are given it as a narrow
Protocol of what each one needs; what the sessions reach outside themselves (the relay's update,
the agent's background tasks, the transcript reader's wake-up, the claude binary's check, the
hook port) is a ``SessionsHost``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import secrets
import shutil
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent import attachments
from agent import grants as grantrules
from agent.archive import DiskArchive
from agent.driver import (
    SessionDriver,
    SessionHost,
    failure_error,
    kept_failure,
    policy_of,
    queue_marker,
    set_policy,
)
from agent.errors import CommandFailed, MuxError, reason
from agent.hooksettings import hook_env
from agent.launch import (
    OnDisk,
    ResumeChoice,
    Start,
    claude_argv,
    plan_launch,
    scope_or_none,
    session_env,
)
from agent.modes import latest_model
from agent.mux import session_name
from agent.registry import Registry, SessionRecord, is_session_id, revive_candidates
from agent.seams import Multiplexer
from agent.transcript import TranscriptFollower, tail_lines, transcript_path
from agent.workspace import recent_folders
from wire.config import Config
from wire.protocol import MAX_RECENT_FOLDERS, MarkerKind, SessionInfo

_log = logging.getLogger("agent")

SCREEN_WIDTH = 120
SCREEN_HEIGHT = 40
COPIES = "transcripts"  # <data>/transcripts/<session id>/: the conversation a fork started from
REVIVED_TEXT = "🔁 The Mac restarted, so the session was reopened in the same conversation"


@dataclass(frozen=True)
class ClaudeSetup:
    """How this Mac starts claude for every session."""

    claude: str  # the binary
    settings: Path  # the hooks settings file (agent/hooksettings.py)
    claude_home: Path  # where Claude Code keeps its transcripts and status files
    extra_args: tuple[str, ...] = ()  # the person's own claude arguments (agent --claude-arg)
    env: Mapping[str, str] | None = None  # the sessions' base environment (None: the agent's)
    mac_name: str = "this Mac"  # this Mac's name, as a start failure's action names it


@dataclass(frozen=True)
class SessionsHost:
    """What the sessions reach outside themselves (the daemon gives its own; tests give fakes)."""

    update: Callable[[SessionInfo], Awaitable[None]]  # tell the relay of a session's live side
    spawn: Callable[[Coroutine[Any, Any, None]], None]  # run in the background, kept till done
    wake_transcripts: Callable[[], None]  # lines to send: read the transcripts now
    check_claude: Callable[[], Awaitable[None]]  # before a launch: the binary's version
    hook_port: Callable[[], int]  # where the sessions' hooks report
    offer_folders: Callable[[list[str]], None]  # the folders a new session is offered first


class Sessions:
    """The registry and the life of this Mac's sessions (see the module's docstring)."""

    def __init__(
        self,
        registry: Registry,
        archive: DiskArchive,
        mux: Multiplexer,
        config: Config,
        data: Path,
        setup: ClaudeSetup,
        host: SessionsHost,
    ) -> None:
        self.registry = registry
        self.archive = archive
        self.mux = mux
        self.config = config
        self.data = data
        self.setup = setup
        self.drivers: dict[str, SessionDriver] = {}  # each session's, made when needed
        self.dirty = False  # the registry changed since it was last written
        self._host = host
        self._driver_host = SessionHost(
            update=host.update,
            save=self.save,
            changed=self.changed,
            add_marker=self.add_marker,
            end_allow_all=lambda now, record: self.end_allow_all(now, session_over=record),
            spawn=host.spawn,
        )

    @property
    def claude_home(self) -> Path:
        """Where Claude Code keeps its transcripts and status files on this Mac."""
        return self.setup.claude_home

    # -- the registry ----------------------------------------------------------------------

    def get(self, session_id: str) -> SessionRecord | None:
        return self.registry.get(session_id)

    def record(self, session_id: str) -> SessionRecord:
        """The session's record; ``unknown_session`` when this Mac has none."""
        record = self.registry.get(session_id)
        if record is None:
            raise CommandFailed("unknown_session", f"this Mac has no session {session_id}")
        return record

    def records(self) -> list[SessionRecord]:
        return list(self.registry.sessions.values())

    def add(self, record: SessionRecord, *, reported: bool = True) -> None:
        """Record a session (written at once). ``reported``: its events are this Mac's to tell
        the relay of (a session arriving by a move is not, until the move is committed)."""
        self.registry.add(record)
        if reported:
            self.archive.track(record.id)

    def save(self) -> None:
        self.registry.save()
        self.dirty = False

    def changed(self) -> None:
        """The registry changed: it is written soon (agent/daemon.py's save loop)."""
        self.dirty = True

    def forget_bad_ids(self) -> None:
        """An older agent recorded any id it was sent; such a session never started (claude
        takes only UUIDs) and would fail each revive: drop it from the registry, with a word."""
        bad = [sid for sid in self.registry.sessions if not is_session_id(sid)]
        for session_id in bad:
            _log.warning("forgetting session %r: its id is not a UUID, it never ran", session_id)
            del self.registry.sessions[session_id]
        if bad:
            self.save()

    async def forget(self, session_id: str) -> SessionRecord | None:
        """Nothing of the session stays here: its record, its driver, its terminal, its event
        archive, the transcript copies and attachments kept for it. Its record, or None when
        this Mac had none. Claude Code's own transcripts and its folder stay: they are the
        person's. ``bad_args`` for an id no archive file may be named after."""
        try:
            self.archive.path(session_id)
        except ValueError as exc:
            raise CommandFailed("bad_args", str(exc)) from exc
        record = self.registry.sessions.pop(session_id, None)
        rt = self.drivers.pop(session_id, None)
        if rt is not None:
            rt.pane_alive = False
        with contextlib.suppress(MuxError):
            await self.mux.kill(session_name(session_id))  # a terminal still open for it
        self.archive.delete(session_id)
        folder = self.data / COPIES / session_id
        if folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
        if is_session_id(session_id):
            attachments.delete_for(self.data, session_id)
        self.save()
        return record

    # -- what a session is made of ---------------------------------------------------------

    def running(self, session_id: str) -> SessionDriver | None:
        """The session's driver, if it has one already."""
        return self.drivers.get(session_id)

    def driver(self, record: SessionRecord) -> SessionDriver:
        """The session's driver, made (following its transcripts) when it has none yet."""
        rt = self.drivers.get(record.id)
        if rt is None:
            rt = SessionDriver(
                record=record,
                follower=TranscriptFollower(record.acked),
                mux=self.mux,
                config=self.config,
                claude_home=self.setup.claude_home,
                host=self._driver_host,
                data_dir=self.data,
                mac_name=self.setup.mac_name,
            )
            if record.fork_conversation and record.fork_copy:
                # A fork's history first: the conversation it forked, as it was then.
                rt.follower.follow(record.fork_conversation, Path(record.fork_copy))
            rt.failure = kept_failure(record)  # an agent restarted: why it did not start
            if rt.failure is not None:
                rt.error = failure_error(rt.failure)
            if record.conversation_id:
                path = self.transcript_file(record)
                rt.follower.follow(record.conversation_id, path)
                # The lines already sent are not read again: the model is read from its tail.
                rt.model_now = latest_model(tail_lines(path))
            self.drivers[record.id] = rt
        return rt

    def transcript_file(self, record: SessionRecord) -> Path:
        """Where Claude Code writes the session's current conversation."""
        if record.transcript_path:
            return Path(record.transcript_path)
        assert record.conversation_id is not None
        return transcript_path(self.setup.claude_home, record.cwd, record.conversation_id)

    def copy_of(self, session_id: str, conversation_id: str) -> Path:
        """Where a copy of a conversation kept for the session goes (a fork's first history)."""
        return self.data / COPIES / session_id / f"{conversation_id}.jsonl"

    def add_marker(self, record: SessionRecord, marker: MarkerKind, text: str) -> None:
        """A line of the bridge's own in the session's conversation, sent soon."""
        queue_marker(record, marker, text)
        self.dirty = True
        self._host.wake_transcripts()

    def end_allow_all(self, now: float, session_over: SessionRecord | None = None) -> None:
        """Turn "allow all" off where its time is past, or (``session_over``) for a session
        that ended, and say so in its conversation. (A request past the time is asked anyway:
        the verdict checks the clock; this makes the policy and the phone say it too.)"""
        for record in [session_over] if session_over else self.records():
            policy = policy_of(record)
            if session_over is None and (not policy.allow_all or policy.allowing_all(now)):
                continue
            if session_over is not None and not policy.allow_all:
                continue
            why = "the session ended" if session_over else "its time is up"
            set_policy(record, policy.without_allow_all(), ended=why)
            self.dirty = True
            self._host.wake_transcripts()
            _log.info("session %s: allow all ended (%s)", record.id, why)

    def note_alive(self, now: float) -> None:
        """Every few seconds: "allow all" past its time ends, and the running sessions were
        alive now (a revive after the Mac restarts picks the latest)."""
        self.end_allow_all(now)
        for rt in self.drivers.values():
            if rt.pane_alive:
                rt.record.last_alive_at = now
                self.dirty = True

    def recent_folders(self) -> list[str]:
        """The working folders of this Mac's sessions, the most recently used first."""
        return recent_folders(
            [(r.cwd, max(r.created_at, r.last_alive_at)) for r in self.records()],
            MAX_RECENT_FOLDERS,
        )

    def offer_folders(self) -> None:
        """The next hello offers the folders as they are now (a new session's first)."""
        self._host.offer_folders(self.recent_folders())

    def rewind(self) -> None:
        """Every transcript goes back to its last acknowledged line (the link came or went)."""
        for rt in self.drivers.values():
            rt.follower.rewind()

    # -- life: launch, reopen, revive, end ---------------------------------------------------

    async def launch(
        self, record: SessionRecord, start: Start, choice: ResumeChoice | None = None
    ) -> SessionDriver:
        """Start the session's claude in a new terminal (a dead one left from an earlier life
        goes first). Why it failed is the session's error on the phone until a launch works.
        ``choice``: a one-off resume scope (else the session's own, set_resume)."""
        if not record.secret:
            record.secret = secrets.token_urlsafe(32)
        rt = self.driver(record)
        rt.launching = True
        try:
            await self._start_claude(rt, start, choice or ResumeChoice())
        except Exception as exc:
            rt.error = reason(exc)
            raise
        finally:
            rt.launching = False
        rt.error = None
        rt.failure = None
        record.start_failure = None
        return rt

    def on_disk(self, record: SessionRecord) -> OnDisk:
        """What the launch plan needs to know of this Mac's disk for the session."""
        home = self.setup.claude_home
        conversation = record.conversation_id is not None and self.transcript_file(record).is_file()
        own = transcript_path(home, record.cwd, record.id).exists()
        return OnDisk(conversation=conversation, own_transcript=own)

    async def _start_claude(self, rt: SessionDriver, start: Start, choice: ResumeChoice) -> None:
        record = rt.record
        if not Path(record.cwd).is_dir():
            # tmux would start claude in another folder without a word.
            raise CommandFailed(
                "folder_gone", f"the folder {record.cwd} no longer exists on this Mac"
            )
        await self._host.check_claude()
        new_id = choice.new_id or str(uuid.uuid4())  # used only by a fresh resume
        plan = plan_launch(
            record, start, self.on_disk(record), dataclasses.replace(choice, new_id=new_id)
        )
        argv = claude_argv(
            self.setup.claude,
            str(self.setup.settings),
            session_id=plan.session_id,
            resume=plan.resume,
            permission_mode=record.permission_mode,
            model=record.model,
            extra=self.setup.extra_args,
            fork=plan.fork,
        )
        if plan.first_conversation is not None:
            record.conversation_id = plan.first_conversation
            record.transcript_path = None  # the new one's is where Claude Code puts it
            record.conversation_ids.append(plan.first_conversation)
            rt.follower.follow(plan.first_conversation, self.transcript_file(record))
        # Typed before held messages once claude is idle; a lead left from a start that never
        # got that far gives way to this start's.
        record.lead = list(plan.lead)
        record.resumed_scope = plan.scope
        # Claude Code's own resume chooser (a --resume) is answered only by a scope somebody set.
        rt.chooser_scope = (
            (choice.scope or scope_or_none(record.resume_scope)) if plan.resume else None
        )
        with contextlib.suppress(MuxError):
            await self.mux.kill(rt.name)  # a dead pane left from an earlier life
        try:
            await self.mux.new_session(
                rt.name, record.cwd, argv, self._env(record), SCREEN_WIDTH, SCREEN_HEIGHT
            )
        except MuxError as exc:
            raise CommandFailed("launch_failed", f"claude could not be started: {exc}") from exc
        now = time.time()
        ended = grantrules.reset_grants(record)  # a new claude process: the old one's grants end
        if ended:
            self.add_marker(record, MarkerKind.GRANT, grantrules.ended_line(ended))
        record.alive = True
        record.ended_by_person = False
        record.resting = False
        record.launched_at = now
        record.last_alive_at = now
        rt.relaunched()
        if plan.marker is not None:
            self.add_marker(record, MarkerKind.RESUMED, plan.marker)
        if plan.scope is not None:
            _log.info("session %s resumes %s (%s)", record.id, plan.scope, plan.how)
        self.save()

    def _env(self, record: SessionRecord) -> dict[str, str]:
        """The session's environment: the agent's (or the one given) and its hook variables."""
        base = self.setup.env if self.setup.env is not None else dict(os.environ)
        denial_wait = self.config.float("denial_wait")
        return session_env(
            base,
            hook_env(
                record.id, record.secret, self._host.hook_port(),
                denial_wait_s=denial_wait + 2.0 if denial_wait > 0 else None,
            ),
        )  # fmt: skip

    async def reopen(self, record: SessionRecord, choice: ResumeChoice | None = None) -> None:
        """Start the session's claude again, by its resume scope (or ``choice``'s, this once),
        unless it runs."""
        if self.driver(record).pane_alive:
            return
        await self.launch(record, Start.REOPEN, choice)

    async def attach_running(self) -> None:
        """Carry on with the sessions whose terminals outlived the previous agent."""
        panes = await self.mux.panes()
        for record in self.records():
            pane = panes.get(session_name(record.id))
            if pane is not None and not pane.dead:
                self.driver(record).reattached(time.time())
                _log.info("re-attached to session %s in %s", record.id, record.cwd)

    async def revive(self, held: Callable[[str], bool]) -> None:
        """After the Mac restarted: the sessions alive until then come back in their
        conversations, the most recent first and at most ``revive_max`` (``held``: a session
        in a move waits for the relay to settle it)."""
        running = {rid for rid, rt in self.drivers.items() if rt.pane_alive}
        candidates = [r for r in self.records() if r.id not in running and not held(r.id)]
        chosen = revive_candidates(
            candidates,
            time.time(),
            self.config.float("revive_window_hours"),
            self.config.int("revive_max"),
        )
        for record in candidates:
            if record not in chosen and record.alive:
                record.alive = False  # too old or beyond the limit: a message reopens it
                self.dirty = True
        for record in chosen:
            _log.info("reviving session %s (%s)", record.id, record.cwd)
            try:
                rt = await self.launch(record, Start.REVIVE)
            except Exception as exc:
                # One session that cannot come back (its folder is gone, the terminal server
                # is going down) is that session's error on the phone; the others come back.
                _log.warning("session %s could not be revived: %s", record.id, reason(exc))
                await self.driver(record).send_update(force=True)
                continue
            rt.held_not_before = time.time() + self.config.float("held_after_revive")
            self.add_marker(record, MarkerKind.REVIVED, REVIVED_TEXT)

    async def end(self, record: SessionRecord, *, resting: bool) -> None:
        """Stop the session's claude: ended by the person, or put to rest (``resting``); a
        message reopens it either way."""
        rt = self.driver(record)
        record.alive = False
        record.ended_by_person = not resting
        record.resting = resting
        self.end_allow_all(time.time(), session_over=record)
        await self.mux.kill(rt.name)
        rt.pane_alive = False
        self.save()
        rt.wake_screen.set()
        await rt.send_update()
