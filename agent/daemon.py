"""The agent: runs Claude Code sessions in the multiplexer and keeps the relay told.

One asyncio process. For each session it follows the transcript (every 700 ms, and at once when
a hook says something happened), reads the screen (every 1,500 ms, every 700 ms during a turn for
the in-progress text, and at once after a hook or a key), computes the state from hooks, screen
and Claude Code's status file, turns dialogs into cards and answers them with keys, and types held
messages at safe points. Everything it must not forget is in the registry (sessions.json).

Each session's own loop (screen → state → card → keys, auto-pass, held messages, what the relay
is told) is its ``SessionDriver`` (agent/driver.py). The ``Agent`` keeps what spans sessions: its
life, the registry, launching and reviving, the hooks (each handed to its session's driver), the
link, the transcripts and the commands (each handing its session's part to the driver).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
import os
import platform
import secrets
import shutil
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from agent import attachments as attachmentfiles
from agent import denials, modes, workspace
from agent import grants as grantrules
from agent import held as heldrules
from agent import worktree as worktrees
from agent.archive import DiskArchive
from agent.decisions import DecisionLog
from agent.driver import (
    BURST_SECONDS,
    FIRST_FRAME_QUIET,
    SessionDriver,
    SessionHost,
    policy_of,
    queue_marker,
    set_policy,
)
from agent.errors import BatchRefused, ClaudeMissing, CommandFailed, MuxError, NotLinked, PaneGone
from agent.files import write_json, write_text
from agent.hookserver import HookAnswer, HookServer, OnHook, SecretFor, permission_decision
from agent.hooksettings import build_settings, hook_command_path, hook_env, write_settings
from agent.launch import (
    binary_stamp,
    claude_argv,
    claude_version,
    session_env,
    version_warning,
)
from agent.link import RelayLink
from agent.moving import Moving
from agent.mux import Mux, Pane, session_name
from agent.registry import Registry, SessionRecord, is_session_id, revive_candidates
from agent.seams import (
    AgentLink,
    HookEndpoint,
    HookFactory,
    LinkFactory,
    Multiplexer,
    OnLinked,
    OnUnlinked,
)
from agent.state import (
    HookFacts,
)
from agent.transcript import (
    LineTooLarge,
    TranscriptFollower,
    find_line,
    session_files,
    transcript_path,
)
from wire import __version__, pastetext
from wire import policy as policyrules
from wire.client import Archive
from wire.client import CommandHandler as WireCommandHandler
from wire.config import Config
from wire.markers import BRIDGE_CONVERSATION
from wire.protocol import (
    MAX_RECENT_FOLDERS,
    AnswerCardArgs,
    ArgsModel,
    CancelHeldArgs,
    ChangePolicyArgs,
    Command,
    CommandName,
    CommandResult,
    CreateSessionArgs,
    DeleteHistoryArgs,
    DeviceInfo,
    DeviceUpdate,
    EndArgs,
    GitDiffArgs,
    GitStatusArgs,
    HeldMessage,
    InterruptArgs,
    LineRecord,
    ListFilesArgs,
    MarkerKind,
    ReadFileArgs,
    ReopenArgs,
    RestArgs,
    RevokeGrantArgs,
    SaveAttachmentArgs,
    SendArgs,
    SessionInfo,
    SetModeArgs,
    SetModelArgs,
    SetPolicyArgs,
    TranscriptLineArgs,
    Welcome,
    args_problem,
)

_log = logging.getLogger("agent")

SCREEN_WIDTH = 120
SCREEN_HEIGHT = 40
TRANSCRIPT_RETRY_MAX = 10.0  # the longest wait before a refused batch is sent again
REGISTRY_SAVE_EVERY = 5.0
DEVICE_ID_FILE = "device-id"  # this Mac's id at its relay, written when the link opens
MUX_FILE = "mux.json"  # the multiplexer and its socket, for `claude-bridge attach`
COPIES = "transcripts"  # <data>/transcripts/<session id>/: the conversation a fork started from
TICK = 0.05
STOP_STEP_GRACE = 5.0  # how long a stopping agent waits for each part to close
PANES_TTL = 0.5  # how long one list of panes (alive, size, cursor) is reused
REVIVED_TEXT = "🔁 The Mac restarted, so the session was reopened in the same conversation"


A = TypeVar("A", bound=ArgsModel)


@dataclass(frozen=True)
class CommandHandler(Generic[A]):
    """A command's handler: (session id, the command's args as its model) → the result's data.

    The args are read into ``model`` first: args that do not fit are answered ``bad_args`` with
    what is wrong, before anything is done."""

    model: type[A]
    run: Callable[[str, A], Awaitable[dict[str, Any]]]

    async def __call__(self, command: Command) -> dict[str, Any]:
        try:
            args = self.model.model_validate(command.args)
        except ValidationError as exc:
            raise CommandFailed("bad_args", args_problem(exc)) from None
        return await self.run(command.session_id, args)


ERROR_CHARS = 500  # a reason shown on the phone is cut to this
LINES_PER_BATCH = 500  # transcript lines sent in one batch (one ack each)


def _reason(exc: BaseException) -> str:
    """What went wrong, for a person: a command's own message, else the error as raised."""
    text = exc.message if isinstance(exc, CommandFailed) else str(exc) or type(exc).__name__
    return text[:ERROR_CHARS]


def _copy_lines(source: Path, target: Path) -> None:
    """``source``'s complete lines (up to its last newline) into ``target``, private."""
    data = source.read_bytes()
    data = data[: data.rfind(b"\n") + 1]
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(target.parent.parent, 0o700)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


MODEL_TAIL_BYTES = 256 * 1024  # how much of a transcript's end is read for its model


def _tail_lines(path: Path) -> list[str]:
    """The complete lines of the last MODEL_TAIL_BYTES of a file ([] when it cannot be read)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - MODEL_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").split("\n")
    return lines[1:] if size > MODEL_TAIL_BYTES else lines


# Messages not typed yet: what the held bounds count, and whose attachments stay.
OPEN_HELD = frozenset({"held", "typing"})


def held_over_limit(
    messages: list[HeldMessage], text: str, max_count: int, max_bytes: int
) -> str | None:
    """Why the session cannot hold one more message of ``text`` (None: it can), naming the
    setting; only messages not typed yet count (0: no bound)."""
    waiting = [m for m in messages if m.state in OPEN_HELD]
    count = len(waiting) + 1
    size = sum(len(m.text.encode("utf-8", "surrogatepass")) for m in waiting)
    size += len(text.encode("utf-8", "surrogatepass"))
    if max_count > 0 and count > max_count:
        return (
            f"this session already holds {len(waiting):,} messages not typed yet, the most "
            f"held_max_per_session allows on this Mac; wait until they are typed, or cancel "
            "some, then send it again"
        )
    if max_bytes > 0 and size > max_bytes:
        return (
            f"the messages this session holds, not typed yet, and this one come to {size:,} "
            f"bytes, past held_max_bytes_per_session ({max_bytes:,}) on this Mac; wait until "
            "they are typed, or cancel some, then send it again"
        )
    return None


def check_session_id(session_id: str) -> None:
    """Nothing but a UUID is recorded as a session (agent/registry.py's is_session_id)."""
    if not is_session_id(session_id):
        raise CommandFailed(
            "bad_session_id",
            f"{session_id[:80]!r} is not a session id: ids are UUIDs "
            "(like 123e4567-e89b-12d3-a456-426614174000)",
        )


@dataclass
class AgentOptions:
    data_dir: Path
    relay_url: str
    token: str
    claude: str
    mux_program: str
    mux_socket: str = "claude-bridge"
    claude_home: Path = field(default_factory=lambda: Path.home() / ".claude")
    device_name: str = field(default_factory=lambda: platform.node() or "mac")
    revive: bool = True
    env: dict[str, str] | None = None  # the sessions' base environment (default: the agent's)
    watch: bool = True  # wake on file changes
    polling_only: bool = False  # the seed's plain polling: no file events, hook wakes or bursts
    claude_args: tuple[str, ...] = ()  # the person's extra claude arguments (agent --claude-arg)


class Agent:
    def __init__(
        self,
        options: AgentOptions,
        config: Config,
        *,
        mux: Multiplexer | None = None,
        link: LinkFactory | None = None,
        hooks: HookFactory | None = None,
    ) -> None:
        """``mux``, ``link`` and ``hooks`` replace tmux, the relay link and the hook server
        (agent/seams.py); by default the real ones are built from ``options``."""
        self.options = options
        self.config = config
        self.data = options.data_dir
        self.data.mkdir(parents=True, exist_ok=True)
        os.chmod(self.data, 0o700)  # secrets and the relay token live here
        self.registry = Registry(self.data / "sessions.json").load()
        self.archive = DiskArchive(self.data / "events")
        self.mux: Multiplexer = mux or Mux(options.mux_program, options.mux_socket)
        self.runtimes: dict[str, SessionDriver] = {}  # each session's, made when needed
        self.settings_path = self.data / "hooks.json"
        make_hooks = hooks or self._hook_server
        self.hook_server: HookEndpoint = make_hooks(self._secret_for, self._on_hook)
        self.claude_version = ""
        self._claude_stamp: tuple[int, ...] | None = None  # the binary whose version that is
        make_link = link or self._relay_link
        self.link: AgentLink = make_link(
            self.archive, self._on_command, self._on_linked, self._on_unlinked
        )
        # What the policy answered, for the audit log: kept until the relay acknowledges it.
        self.decisions = DecisionLog(self.link, self.data / "decisions.json")
        self._tasks: list[asyncio.Task[None]] = []
        self._wake_transcripts = asyncio.Event()
        self._stopping = asyncio.Event()
        self._dirty = False
        self._background: set[asyncio.Task[None]] = set()
        self.moving = Moving(self)  # sessions moving to or from this Mac (agent/moving.py)
        self.commands = self._command_table()
        self._host = SessionHost(
            update=self._update,
            save=self._save,
            changed=self._changed,
            add_marker=self._add_marker,
            end_allow_all=lambda now, record: self._end_allow_all(now, session_over=record),
            spawn=self._spawn,
        )

    # -- life of the agent ---------------------------------------------------------------

    async def start(self) -> None:
        self._claude_stamp = binary_stamp(self.options.claude)
        self.claude_version = await claude_version(self.options.claude)
        warning = version_warning(self.claude_version)
        if warning:
            _log.warning(warning)
        await self.hook_server.start()
        write_text(self.data / "hook-port", str(self.hook_server.port))
        if isinstance(self.mux, Mux):  # where `claude-bridge attach` finds the sessions' panes
            write_json(
                self.data / MUX_FILE,
                {"program": self.mux.program, "socket": self.mux.socket_name},
            )
        denial_wait = self.config.float("denial_wait")
        write_settings(
            self.settings_path,
            build_settings(hook_command_path(), denial_timeout_s=int(denial_wait) + 5),
        )
        self.link.device = DeviceInfo(
            name=self.options.device_name,
            hostname=socket.gethostname(),
            os=f"{platform.system()} {platform.release()}",
            agent_version=__version__,
            claude_version=self.claude_version,
            recent_folders=self._recent_folders(),
        )
        self._forget_bad_ids()
        self.moving.recover()  # sessions a move left undecided: held until the relay says
        for record in self.registry.sessions.values():
            self.archive.track(record.id)
        await self._attach_running()
        self.link.start()
        self.decisions.start()  # those kept from before a restart, too
        self._tasks = [
            asyncio.create_task(self._transcript_loop(), name="transcripts"),
            asyncio.create_task(self._screen_loop(), name="screens"),
            asyncio.create_task(self._save_loop(), name="registry"),
        ]
        if self.options.watch and not self.options.polling_only:
            self._tasks.append(asyncio.create_task(self._watch_loop(), name="watch"))
        if self.options.revive:
            await self._revive()

    async def stop(self) -> None:
        """Stop every loop and close the link, the hook endpoint and the multiplexer client.

        Each step is given STOP_STEP_GRACE: a step that hangs (a peer that never answers a close,
        say) is named in the log and left behind, so stopping never hangs and the relay always
        sees the Mac go offline."""
        self._stopping.set()
        tasks = [*self._tasks, *self._background]
        for task in tasks:
            task.cancel()
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=STOP_STEP_GRACE)
            for task in stuck:
                _log.warning("stopping: %s did not end; left behind", task.get_name())
        await self._stop_step("the relay link", self.link.stop())
        await self._stop_step("the decision log", self.decisions.close())
        await self._stop_step("the hook endpoint", self.hook_server.close())
        await self._stop_step("the tmux client", self.mux.close())
        self._save()

    async def _stop_step(self, what: str, step: Coroutine[Any, Any, None]) -> None:
        try:
            await asyncio.wait_for(step, STOP_STEP_GRACE)
        except TimeoutError:
            _log.warning("stopping: %s did not close in %.0f s; left behind", what, STOP_STEP_GRACE)
        except Exception:  # one part failing to close must not keep the others open
            _log.exception("stopping: %s failed to close", what)

    async def run_forever(self) -> None:
        await self.start()
        try:
            await self._stopping.wait()
        finally:
            await self.stop()

    async def _check_claude(self) -> None:
        """Claude Code may be updated while the agent runs (npm, Homebrew): before each launch
        the binary is looked at (a stat, no process), and only a changed one is asked its
        version again; a new version goes to the relay, so the phone's band follows it."""
        stamp = binary_stamp(self.options.claude)
        if stamp == self._claude_stamp:
            return
        self._claude_stamp = stamp
        try:
            version = await claude_version(self.options.claude)
        except ClaudeMissing as exc:  # mid-update, say: the launch itself will tell
            _log.warning("%s", exc)
            return
        if version == self.claude_version:
            return
        _log.info("Claude Code is now %s (was %s)", version, self.claude_version or "unknown")
        self.claude_version = version
        warning = version_warning(version)
        if warning:
            _log.warning(warning)
        self.link.device = self.link.device.model_copy(update={"claude_version": version})
        with contextlib.suppress(NotLinked):  # a later hello carries it anyway
            await self.link.send(DeviceUpdate(device=self.link.device))

    def _forget_bad_ids(self) -> None:
        """An older agent recorded any id it was sent; such a session never started (claude takes
        only UUIDs) and would fail each revive: drop it from the registry, with a word."""
        bad = [sid for sid in self.registry.sessions if not is_session_id(sid)]
        for session_id in bad:
            _log.warning("forgetting session %r: its id is not a UUID, it never ran", session_id)
            del self.registry.sessions[session_id]
        if bad:
            self._save()

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _hook_server(self, secret_for: SecretFor, on_hook: OnHook) -> HookEndpoint:
        # a refused call waits for the phone's "allow once" (agent/denials.py)
        denial = self.config.float("denial_wait") + 1.0
        return HookServer(secret_for, on_hook, port=self._hook_port(), denial_timeout=denial)

    def _relay_link(
        self,
        archive: Archive,
        on_command: WireCommandHandler,
        on_linked: OnLinked,
        on_unlinked: OnUnlinked,
    ) -> AgentLink:
        return RelayLink(
            self.options.relay_url,
            self.options.token,
            DeviceInfo(),
            archive,
            on_command,
            on_linked,
            on_unlinked,
        )

    def _hook_port(self) -> int:
        """Sessions keep the port in their environment: reuse it so they survive our restart."""
        try:
            port = int((self.data / "hook-port").read_text().strip())
        except (OSError, ValueError):
            return 0
        with socket.socket() as probe:
            # As the server binds (asyncio's reuse_address): the hook connections it closed
            # leave the port in TIME_WAIT, which must not make it look taken.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return 0
        return port

    async def _update(self, info: SessionInfo) -> None:
        """Tell the relay of a session's live side (the link's as it is then); nothing of a
        session arriving by a move, until it is this Mac's."""
        if not self.moving.quiet(info.session_id):
            await self.link.update(info)

    def _save(self) -> None:
        self.registry.save()
        self._dirty = False

    def _changed(self) -> None:
        self._dirty = True

    async def _save_loop(self) -> None:
        while True:
            await asyncio.sleep(REGISTRY_SAVE_EVERY)
            now = time.time()
            self._end_allow_all(now)
            for rt in self.runtimes.values():
                if rt.pane_alive:
                    rt.record.last_alive_at = now
                    self._dirty = True
            if self._dirty:
                await asyncio.to_thread(self._save)

    def _end_allow_all(self, now: float, session_over: SessionRecord | None = None) -> None:
        """Turn "allow all" off where its time is past, or (``session_over``) for a session
        that ended, and say so in its conversation. (A request past the time is asked anyway:
        the verdict checks the clock; this makes the policy and the phone say it too.)"""
        for record in [session_over] if session_over else list(self.registry.sessions.values()):
            policy = policy_of(record)
            if session_over is None and (not policy.allow_all or policy.allowing_all(now)):
                continue
            if session_over is not None and not policy.allow_all:
                continue
            why = "the session ended" if session_over else "its time is up"
            set_policy(record, policy.without_allow_all(), ended=why)
            self._dirty = True
            self._wake_transcripts.set()
            _log.info("session %s: allow all ended (%s)", record.id, why)

    # -- sessions: attach, launch, revive --------------------------------------------------

    def _runtime(self, record: SessionRecord) -> SessionDriver:
        rt = self.runtimes.get(record.id)
        if rt is None:
            rt = SessionDriver(
                record=record,
                follower=TranscriptFollower(record.acked),
                mux=self.mux,
                config=self.config,
                claude_home=self.options.claude_home,
                host=self._host,
                data_dir=self.data,
            )
            if record.fork_conversation and record.fork_copy:
                # A fork's history first: the conversation it forked, as it was then.
                rt.follower.follow(record.fork_conversation, Path(record.fork_copy))
            if record.conversation_id:
                path = self._transcript_file(record)
                rt.follower.follow(record.conversation_id, path)
                # The lines already sent are not read again: the model is read from its tail.
                rt.model_now = modes.latest_model(_tail_lines(path))
            self.runtimes[record.id] = rt
        return rt

    def _transcript_file(self, record: SessionRecord) -> Path:
        if record.transcript_path:
            return Path(record.transcript_path)
        assert record.conversation_id is not None
        return transcript_path(self.options.claude_home, record.cwd, record.conversation_id)

    async def _attach_running(self) -> None:
        """Carry on with the sessions whose terminals outlived the previous agent."""
        panes = await self.mux.panes()
        for record in self.registry.sessions.values():
            pane = panes.get(session_name(record.id))
            if pane is not None and not pane.dead:
                rt = self._runtime(record)
                rt.pane_alive = True
                rt.first_frame_at = time.time() - FIRST_FRAME_QUIET
                rt.trust_passed = True
                _log.info("re-attached to session %s in %s", record.id, record.cwd)

    async def _revive(self) -> None:
        running = {rid for rid, rt in self.runtimes.items() if rt.pane_alive}
        candidates = [
            r
            for r in self.registry.sessions.values()
            if r.id not in running and not self.moving.holds(r.id)
        ]
        chosen = revive_candidates(
            candidates,
            time.time(),
            self.config.float("revive_window_hours"),
            self.config.int("revive_max"),
        )
        for record in candidates:
            if record not in chosen and record.alive:
                record.alive = False  # too old or beyond the limit: a message reopens it
                self._dirty = True
        for record in chosen:
            _log.info("reviving session %s (%s)", record.id, record.cwd)
            try:
                rt = await self._launch(record, resume=True)
            except Exception as exc:
                # One session that cannot come back (its folder is gone, the terminal server
                # is going down) is that session's error on the phone; the others come back.
                _log.warning("session %s could not be revived: %s", record.id, _reason(exc))
                await self._runtime(record).send_update(force=True)
                continue
            rt.held_not_before = time.time() + self.config.float("held_after_revive")
            self._add_marker(record, MarkerKind.REVIVED, REVIVED_TEXT)

    async def _launch(self, record: SessionRecord, *, resume: bool) -> SessionDriver:
        if not record.secret:
            record.secret = secrets.token_urlsafe(32)
        rt = self._runtime(record)
        rt.launching = True
        try:
            launched = await self._launch_in(rt, record, resume=resume)
        except Exception as exc:
            rt.error = _reason(exc)
            raise
        finally:
            rt.launching = False
        rt.error = None
        return launched

    async def _launch_in(
        self, rt: SessionDriver, record: SessionRecord, *, resume: bool
    ) -> SessionDriver:
        if not Path(record.cwd).is_dir():
            # tmux would start claude in another folder without a word.
            raise CommandFailed(
                "folder_gone", f"the folder {record.cwd} no longer exists on this Mac"
            )
        await self._check_claude()
        fork_from = self._fork_from(record)
        argv = claude_argv(
            self.options.claude,
            str(self.settings_path),
            session_id=record.id
            if fork_from
            else (None if resume else (record.conversation_id or record.id)),
            resume=fork_from or (record.conversation_id if resume else None),
            permission_mode=record.permission_mode,
            model=record.model,
            extra=self.options.claude_args,
            fork=fork_from is not None,
        )
        if not resume and record.conversation_id is None:
            record.conversation_id = record.id  # --session-id names the first conversation
            record.conversation_ids.append(record.id)
            rt.follower.follow(record.id, self._transcript_file(record))
        base = self.options.env if self.options.env is not None else dict(os.environ)
        denial_wait = self.config.float("denial_wait")
        env = session_env(
            base,
            hook_env(
                record.id, record.secret, self.hook_server.port,
                denial_wait_s=denial_wait + 2.0 if denial_wait > 0 else None,
            ),
        )  # fmt: skip
        with contextlib.suppress(MuxError):
            await self.mux.kill(rt.name)  # a dead pane left from an earlier life
        try:
            await self.mux.new_session(rt.name, record.cwd, argv, env, SCREEN_WIDTH, SCREEN_HEIGHT)
        except MuxError as exc:
            raise CommandFailed("launch_failed", f"claude could not be started: {exc}") from exc
        now = time.time()
        ended = grantrules.reset_grants(record)  # a new claude process: the old one's grants end
        if ended:
            self._add_marker(record, MarkerKind.GRANT, grantrules.ended_line(ended))
        record.alive = True
        record.ended_by_person = False
        record.resting = False
        record.launched_at = now
        record.last_alive_at = now
        rt.hooks = HookFacts()
        rt.screen = None
        rt.screen_at = None
        rt.screen_mode, rt.screen_mode_at = None, None
        rt.first_frame_at = None
        rt.trust_passed = False
        rt.model_changed_at = None
        rt.pass_failed.clear()
        rt.pane_alive = True
        rt.computed = None
        rt.sent.clear()
        rt.next_screen = 0
        self._save()
        return rt

    def _fork_from(self, record: SessionRecord) -> str | None:
        """The conversation a fork resumes as its own (``--fork-session``) until it has a
        transcript: 2.1.332 writes one only at the first prompt, so a fork ended before that is
        forked again when it reopens, under the same id."""
        if not record.fork_conversation or record.conversation_id not in (None, record.id):
            return None
        own = transcript_path(self.options.claude_home, record.cwd, record.id)
        return None if own.exists() else record.fork_conversation

    # -- hooks ---------------------------------------------------------------------------

    def _secret_for(self, session_id: str) -> str | None:
        record = self.registry.get(session_id)
        return record.secret if record and record.secret else None

    async def _on_hook(self, session_id: str, event: str, payload: dict[str, Any]) -> HookAnswer:
        rt = self.runtimes.get(session_id)
        if rt is None:
            return None
        now = time.time()
        rt.note_hook(event, payload, now)
        record = rt.record
        if event == "SessionStart":
            conversation = payload.get("session_id")
            path = payload.get("transcript_path")
            if isinstance(conversation, str) and conversation:
                if conversation != record.conversation_id:
                    record.conversation_id = conversation
                    if conversation not in record.conversation_ids:
                        record.conversation_ids.append(conversation)
                record.transcript_path = path if isinstance(path, str) else None
                rt.follower.follow(conversation, self._transcript_file(record))
                self._dirty = True
        if event == "PermissionDenied":
            return rt.note_denial(payload, now)  # auto mode refused a call (agent/denials.py)
        if event == "PreToolUse" and rt.allow_once_for(payload, now):
            return denials.allow_output()  # the retry of a call the phone allowed once
        if event == "PermissionRequest":
            # The session's policy (wire/policy.py): allow before the dialog is drawn, deny
            # with a reason, or None = ask (the dialog becomes a card). Questions and plans
            # always ask.
            tool = payload.get("tool_name")
            tool = tool if isinstance(tool, str) else None
            policy = policy_of(record)
            # an allow-all past its time is off; a grant of this claude process may allow
            verdict, grant = grantrules.decide(policy, grantrules.of_record(record), tool, now)
            self.decisions.note(  # the audit log
                record.id, verdict, payload, rt.hooks.tools,
                allow_all_until=policy.allow_all_until, grant=grant,
            )  # fmt: skip
            if verdict.rule == "allow":
                return permission_decision("allow")
            if verdict.rule == "deny":
                _log.info("session %s: policy denied %s", record.id, tool)
                return permission_decision("deny", verdict.deny_message(tool or "this tool"))
            if tool is not None:
                rt.ask_card(tool, payload, now)  # its card, before the dialog is drawn
            return None
        if self.options.polling_only:
            if event in ("PostToolUse", "PostToolUseFailure", "Stop"):
                self._spawn(rt.deliver_held(reason=event))
            return None
        self._wake_transcripts.set()
        rt.wake_screen.set()
        # A hook comes just before the screen changes (PermissionRequest before the dialog is
        # drawn): read again shortly after, so a card reaches the phone without waiting a period.
        rt.burst_until = now + BURST_SECONDS
        if event in ("PostToolUse", "PostToolUseFailure", "Stop"):
            self._spawn(rt.deliver_held(reason=event))
        return None

    # -- the relay ------------------------------------------------------------------------

    async def _on_linked(self, welcome: Welcome) -> None:
        # Which Mac this is, for the commands run here (`search --here`, `open`); not a secret.
        with contextlib.suppress(OSError):
            write_text(self.data / DEVICE_ID_FILE, welcome.device_id + "\n")
        self.follower_rewind()
        self._wake_transcripts.set()
        for rt in self.runtimes.values():
            rt.sent.clear()  # send the whole live side again
            rt.wake_screen.set()
        for record in list(self.registry.sessions.values()):  # delete_history may run meanwhile
            if record.id not in self.runtimes:
                await self._runtime(record).send_update(force=True)

    def _on_unlinked(self) -> None:
        self.follower_rewind()

    def follower_rewind(self) -> None:
        for rt in self.runtimes.values():
            rt.follower.rewind()

    async def _watch_loop(self) -> None:
        """Wake the transcript reader as soon as Claude Code writes (the 700 ms poll stays as a
        safety net: file events can be missed, e.g. on network file systems). inotify on Linux
        (no cost while idle), watchfiles elsewhere: see agent/watch.py."""
        from agent.watch import changes

        root = self.options.claude_home / "projects"
        root.mkdir(parents=True, exist_ok=True)
        try:
            async for _ in changes(root, self._stopping):
                self._wake_transcripts.set()
        except (OSError, RuntimeError) as exc:
            _log.warning("file watching is off (%s); transcripts are read every %s s", exc,
                         self.config.float("transcript_read_interval"))  # fmt: skip

    async def _transcript_loop(self) -> None:
        interval = self.config.float("transcript_read_interval")
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake_transcripts.wait(), interval)
            self._wake_transcripts.clear()
            if not self.link.linked.is_set():
                continue
            now = time.monotonic()
            for rt in list(self.runtimes.values()):
                if rt.transcript_retry_at > now or self.moving.quiet(rt.record.id):
                    continue
                try:
                    await self._send_transcript(rt)
                except NotLinked:
                    break
                except BatchRefused as exc:
                    # One session's refused batch must not hold up the others: it waits,
                    # longer each time, and is sent again from the last acknowledged line.
                    rt.follower.rewind()
                    rt.transcript_backoff = min(
                        TRANSCRIPT_RETRY_MAX, max(interval, rt.transcript_backoff * 2)
                    )
                    rt.transcript_retry_at = now + rt.transcript_backoff
                    if str(exc) != rt.transcript_refusal:  # once per reason, not every retry
                        rt.transcript_refusal = str(exc)
                        _log.warning(
                            "the relay refused lines of session %s (%s); they are sent again "
                            "every %.0f s at most",
                            rt.record.id,
                            exc,
                            TRANSCRIPT_RETRY_MAX,
                        )
                else:
                    if rt.transcript_refusal is not None:
                        _log.info("the relay took the lines of session %s again", rt.record.id)
                    rt.transcript_backoff, rt.transcript_refusal = 0.0, None

    async def _send_transcript(self, rt: SessionDriver) -> None:
        record = rt.record
        await self._send_markers(rt)
        for conversation_id, lines in rt.follower.poll():
            rt.note_lines([line.text for line in lines])
            for start in range(0, len(lines), LINES_PER_BATCH):
                if self.runtimes.get(record.id) is not rt:
                    return  # deleted meanwhile: its lines would bring it back on the relay
                chunk = lines[start : start + LINES_PER_BATCH]
                ack = await self.link.send_lines(record.id, conversation_id, chunk, record.cwd)
                if rt.follower.ack(conversation_id, ack.through_offset):
                    self._dirty = True

    def _add_marker(self, record: SessionRecord, marker: MarkerKind, text: str) -> None:
        queue_marker(record, marker, text)
        self._dirty = True
        self._wake_transcripts.set()

    async def _send_markers(self, rt: SessionDriver) -> None:
        record = rt.record
        if not record.pending_markers:
            return
        lines = [
            LineRecord(offset=m["offset"], text=m["text"], uuid=f"bridge-{record.id}-{m['offset']}")
            for m in record.pending_markers
        ]
        ack = await self.link.send_lines(record.id, BRIDGE_CONVERSATION, lines, record.cwd)
        record.pending_markers = [
            m for m in record.pending_markers if m["offset"] > ack.through_offset
        ]
        self._dirty = True

    # -- screens and state --------------------------------------------------------------------

    async def _screen_loop(self) -> None:
        panes: dict[str, Pane] | None = None
        panes_at = 0.0
        while True:
            await asyncio.sleep(TICK)
            now = time.time()
            for rt in list(self.runtimes.values()):
                if not rt.record.alive and not rt.pane_alive:
                    continue
                woken = rt.wake_screen.is_set()
                if not woken and now < rt.next_screen:
                    continue
                # One pane list serves every read for a moment (sessions' reads are staggered);
                # a pane missing from an older list is looked for again before it counts as gone.
                if rt.launching:
                    continue
                stale = panes is None or woken or now - panes_at > PANES_TTL
                if stale or rt.name not in (panes or {}):
                    panes_at = time.time()
                    panes = await self.mux.panes()
                rt.wake_screen.clear()
                assert panes is not None
                pane = panes.get(rt.name)
                if rt.launching or (pane is None and panes_at <= rt.record.launched_at):
                    continue  # a list asked for before this launch says nothing of its pane
                await self._read_session(rt, pane is not None and not pane.dead, now, pane)

    # -- held messages ------------------------------------------------------------------------

    async def _read_session(
        self, rt: SessionDriver, alive: bool, now: float, pane: Pane | None = None
    ) -> None:
        """One read of one session's screen, when the loop's schedule says it is due."""
        await rt.read(alive, now, pane)

    # -- commands from the phone -------------------------------------------------------------

    def _command_table(self) -> Mapping[CommandName, CommandHandler[Any]]:
        """Every command the relay may send (wire/protocol.py's COMMAND_ARGS) and its handler,
        keyed by the name of the args model it takes."""
        handlers: list[CommandHandler[Any]] = [
            CommandHandler(CreateSessionArgs, self._cmd_create_session),
            CommandHandler(SendArgs, self._cmd_send),
            CommandHandler(AnswerCardArgs, self._cmd_answer_card),
            CommandHandler(InterruptArgs, self._cmd_interrupt),
            CommandHandler(EndArgs, self._cmd_end),
            CommandHandler(RestArgs, self._cmd_rest),
            CommandHandler(ReopenArgs, self._cmd_reopen),
            CommandHandler(CancelHeldArgs, self._cmd_cancel_held),
            CommandHandler(SetPolicyArgs, self._cmd_set_policy),
            CommandHandler(ChangePolicyArgs, self._cmd_change_policy),
            CommandHandler(DeleteHistoryArgs, self._cmd_delete_history),
            # The session's folder, read for the page (agent/workspace.py).
            CommandHandler(ListFilesArgs, self._cmd_list_files),
            CommandHandler(ReadFileArgs, self._cmd_read_file),
            CommandHandler(GitStatusArgs, self._cmd_git_status),
            CommandHandler(GitDiffArgs, self._cmd_git_diff),
            # A whole transcript line, for a text the relay cut.
            CommandHandler(TranscriptLineArgs, self._cmd_transcript_line),
            # The running session's mode and model, and files for its messages.
            CommandHandler(SetModeArgs, self._cmd_set_mode),
            CommandHandler(SetModelArgs, self._cmd_set_model),
            CommandHandler(SaveAttachmentArgs, self._cmd_save_attachment),
            # A grant of the running claude ended from the phone (agent/grants.py).
            CommandHandler(RevokeGrantArgs, self._cmd_revoke_grant),
            # A session moving to or from this Mac (agent/moving.py).
            *(CommandHandler(model, run) for model, run in self.moving.handlers()),
        ]
        return {h.model.name: h for h in handlers}

    async def _on_command(self, command: Command) -> CommandResult:
        handler = self.commands.get(command.name)
        try:
            if handler is None:
                raise CommandFailed("not_supported", f"this agent does not know {command.name}")
            data = await handler(command)
        except CommandFailed as exc:
            return CommandResult(
                command_id=command.command_id, ok=False, code=exc.code, error=exc.message
            )
        except PaneGone as exc:
            return CommandResult(
                command_id=command.command_id, ok=False, code="pane_gone",
                error=f"the session's terminal is gone ({_reason(exc)}): reopen the session",
            )  # fmt: skip
        except Exception as exc:
            # Any failure answers at once with its reason: a phone never waits for a timeout.
            if not isinstance(exc, (MuxError, OSError)):
                _log.exception("command %s for session %s failed", command.name, command.session_id)
            return CommandResult(
                command_id=command.command_id, ok=False, code="mac_error", error=_reason(exc)
            )
        return CommandResult(command_id=command.command_id, ok=True, data=data or {})

    def _record(self, session_id: str) -> SessionRecord:
        record = self.registry.get(session_id)
        if record is None:
            raise CommandFailed("unknown_session", f"this Mac has no session {session_id}")
        return record

    async def _cmd_create_session(self, session_id: str, args: CreateSessionArgs) -> dict[str, Any]:
        check_session_id(session_id)  # before anything is recorded
        parent = self._record(args.fork_of) if args.fork_of else None
        cwd = parent.cwd if parent is not None else str(Path(args.cwd).expanduser())
        if not Path(cwd).is_dir():
            raise CommandFailed("bad_folder", f"there is no folder {cwd!r} on this Mac")
        if self.registry.get(session_id) is not None:
            raise CommandFailed("session_exists", f"session {session_id} already exists here")
        if parent is not None and args.worktree:
            raise CommandFailed(
                "bad_args",
                "a fork runs in its parent's folder: it cannot have a worktree of its own",
            )
        record = SessionRecord(
            id=session_id,
            cwd=os.path.realpath(cwd),
            created_at=time.time(),
            permission_mode=args.permission_mode,
            model=args.model,
        )
        try:
            policy = policyrules.Policy.from_json(args.policy)
        except policyrules.PolicyError as exc:
            raise CommandFailed("bad_args", f"policy: {exc}") from exc
        if parent is not None:
            await self._fork_record(record, parent, keep_policy=args.policy is None)
            if args.policy is None:
                policy = policy_of(record)
        made: worktrees.Made | None = None
        if args.worktree:
            made = await worktrees.make(
                Path(record.cwd), args.worktree, session_id, self.config.float("git_timeout")
            )
            record.cwd, record.worktree, record.branch = str(made.cwd), str(made.root), made.branch
        if args.allow_all:
            policy = dataclasses.replace(policy, allow_all=True)
        set_policy(record, policy)
        if args.prompt is not None and pastetext.has_text(args.prompt):
            record.held.append(heldrules.new_message(args.prompt))  # typed once the prompt is up
        self.registry.add(record)
        self.archive.track(record.id)
        try:
            rt = await self._launch(record, resume=False)
        except BaseException:
            await self._forget(record.id)  # the relay keeps no trace of it either
            if made is not None:
                await worktrees.undo(made, self.config.float("git_timeout"))
            raise
        await rt.send_update(force=True)
        # The next hello offers this folder first (the page also has it from the session).
        self.link.device.recent_folders = self._recent_folders()
        return {
            "cwd": record.cwd,
            "policy": policy_of(record).to_json(),
            "branch": record.branch,
            "worktree": record.worktree,
            "parent_id": record.parent_id,
        }

    async def _fork_record(
        self, record: SessionRecord, parent: SessionRecord, *, keep_policy: bool
    ) -> None:
        """A fork takes its parent's folder (and worktree), mode, model and policy rules (not
        "allow all", a grant of that process), and a copy of the conversation it forks as it
        is now: its lines are the fork's first history, until claude writes the fork's own
        transcript (the same lines, which the relay keeps once, by uuid)."""
        source = self._transcript_file(parent) if parent.conversation_id else None
        if source is None or not source.is_file():
            raise CommandFailed(
                "nothing_to_fork",
                f"session {parent.id} has no conversation yet: send it a message first",
            )
        assert parent.conversation_id is not None
        record.parent_id = parent.id
        record.fork_conversation = parent.conversation_id
        record.worktree, record.branch = parent.worktree, parent.branch
        record.permission_mode = record.permission_mode or parent.permission_mode
        record.model = record.model or parent.model
        if keep_policy:
            set_policy(record, policy_of(parent).without_allow_all())
        copy = self.data / COPIES / record.id / f"{parent.conversation_id}.jsonl"
        await asyncio.to_thread(_copy_lines, source, copy)
        record.fork_copy = str(copy)

    async def _forget(self, session_id: str) -> None:
        """Undo a session that never started: no record, no archive, no terminal left."""
        self.registry.sessions.pop(session_id, None)
        rt = self.runtimes.pop(session_id, None)
        if rt is not None:
            rt.pane_alive = False
        self.archive.delete(session_id)
        self._drop_copies(session_id)
        with contextlib.suppress(MuxError):
            await self.mux.kill(session_name(session_id))
        self._save()

    def _drop_copies(self, session_id: str) -> None:
        """The transcript copies this agent keeps for a session (a fork's first history)."""
        folder = self.data / COPIES / session_id
        if folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)

    async def _cmd_send(self, session_id: str, args: SendArgs) -> dict[str, Any]:
        record = self._record(session_id)
        text = args.text
        if not pastetext.has_text(text):
            raise CommandFailed(
                "empty_message", "the message is empty (control characters are never typed)"
            )
        sender_id = args.message_id
        known = next((m for m in record.held if sender_id and m.id == sender_id), None)
        if known is not None:
            # A retry of a message this Mac already has (its answer was lost): never twice.
            return {"message_id": known.id, "state": known.state, "duplicate": True}
        full = held_over_limit(
            record.held,
            text,
            self.config.int("held_max_per_session"),
            self.config.int("held_max_bytes_per_session"),
        )
        if full is not None:
            raise CommandFailed("held_full", full)
        when = heldrules.when_of(args.now, args.when)
        found = attachmentfiles.find(self.data, session_id, args.attachments or [])
        message = heldrules.new_message(
            text, message_id=sender_id, when=when, attachments=[info for info, _ in found]
        )
        record.held.append(message)
        self._save()
        rt = self._runtime(record)
        if not rt.pane_alive:
            await self._reopen(record)
            rt = self._runtime(record)
            await rt.send_update()
            # Which mode and model it came back in: those it had when it stopped.
            return {
                "message_id": message.id,
                "state": "held",
                "reopened": True,
                "permission_mode": record.permission_mode,
                "model": record.model,
            }
        await rt.send_now(message, when == "now")
        state = next((m.state for m in record.held if m.id == message.id), "held")
        return {"message_id": message.id, "state": state}

    async def _cmd_cancel_held(self, session_id: str, args: CancelHeldArgs) -> dict[str, Any]:
        record = self._record(session_id)
        record.held, done = heldrules.cancel(record.held, args.message_id)
        if not done:
            raise CommandFailed("message_gone", "that message was already typed or cancelled")
        self._save()
        await self._runtime(record).send_update()
        return {}

    async def _cmd_answer_card(self, session_id: str, args: AnswerCardArgs) -> dict[str, Any]:
        rt = self._runtime(self._record(session_id))
        return await rt.answer_card(
            args, lambda text: self._cmd_send(session_id, SendArgs(text=text))
        )

    async def _cmd_interrupt(self, session_id: str, args: InterruptArgs) -> dict[str, Any]:
        await self._runtime(self._record(session_id)).interrupt()
        return {}

    async def _cmd_end(self, session_id: str, args: EndArgs) -> dict[str, Any]:
        return await self._stop_session(session_id, resting=False)

    async def _cmd_rest(self, session_id: str, args: RestArgs) -> dict[str, Any]:
        return await self._stop_session(session_id, resting=True)

    async def _stop_session(self, session_id: str, *, resting: bool) -> dict[str, Any]:
        record = self._record(session_id)
        rt = self._runtime(record)
        record.alive = False
        record.ended_by_person = not resting
        record.resting = resting
        self._end_allow_all(time.time(), session_over=record)
        await self.mux.kill(rt.name)
        rt.pane_alive = False
        self._save()
        rt.wake_screen.set()
        await rt.send_update()
        return {}

    async def _cmd_reopen(self, session_id: str, args: ReopenArgs) -> dict[str, Any]:
        record = self._record(session_id)
        await self._reopen(record)
        return {}

    async def _cmd_set_policy(self, session_id: str, args: SetPolicyArgs) -> dict[str, Any]:
        """Replace the session's permission policy (wire/policy.py); it applies to the next
        PermissionRequest and is kept in the registry, so it survives reopen and revive."""
        return self._apply_policy(session_id, lambda _: policyrules.Policy.from_json(args.policy))

    async def _cmd_change_policy(self, session_id: str, args: ChangePolicyArgs) -> dict[str, Any]:
        """Change some rules of the session's policy, keeping the others as this Mac holds them
        (a card's "always allow" that came in meanwhile is not lost, as it would be by a
        read-then-replace from the phone)."""
        return self._apply_policy(session_id, lambda held: held.changed(args.changes))

    def _apply_policy(
        self, session_id: str, make: Callable[[policyrules.Policy], policyrules.Policy]
    ) -> dict[str, Any]:
        """The session's policy becomes ``make(the one held now)``; kept with the session and
        answered as now held. A policy that does not read is ``bad_args``, and nothing changes."""
        record = self._record(session_id)
        try:
            policy = make(policy_of(record))
        except policyrules.PolicyError as exc:
            raise CommandFailed("bad_args", f"policy: {exc}") from exc
        set_policy(record, policy)
        self._save()
        return {"policy": policy.to_json()}

    async def _cmd_revoke_grant(self, session_id: str, args: RevokeGrantArgs) -> dict[str, Any]:
        return await self._runtime(self._record(session_id)).revoke_grant(args.grant_id)

    async def _cmd_delete_history(self, session_id: str, args: DeleteHistoryArgs) -> dict[str, Any]:
        """The relay deleted the session (retention, or a person's DELETE): stop its claude,
        drop its event archive and the transcript copies kept for it, and forget it.

        Idempotent (the relay resends it until it gets ok): a session this Mac no longer knows
        answers ok with ``deleted: false``. Claude Code's own transcripts (~/.claude) and a
        worktree the session ran in are left alone: they are the person's.
        """
        try:
            self.archive.path(session_id)
        except ValueError as exc:
            raise CommandFailed("bad_args", str(exc)) from exc
        record = self.registry.sessions.pop(session_id, None)
        rt = self.runtimes.pop(session_id, None)
        if rt is not None:
            rt.pane_alive = False
        with contextlib.suppress(MuxError):
            await self.mux.kill(session_name(session_id))  # a terminal still open for it
        self.archive.delete(session_id)
        self._drop_copies(session_id)
        if is_session_id(session_id):
            attachmentfiles.delete_for(self.data, session_id)
        if record is not None:
            self._save()
            _log.info("session %s deleted by the relay (retention or a person)", session_id)
        return {"deleted": record is not None}

    # -- mode, model and attachments of a running session ----------------------------------------

    async def _cmd_set_mode(self, session_id: str, args: SetModeArgs) -> dict[str, Any]:
        return await self._runtime(self._record(session_id)).set_mode(args.mode)

    async def _cmd_set_model(self, session_id: str, args: SetModelArgs) -> dict[str, Any]:
        return await self._runtime(self._record(session_id)).set_model(args.model)

    async def _cmd_save_attachment(
        self, session_id: str, args: SaveAttachmentArgs
    ) -> dict[str, Any]:
        """Keep a file for the session's next message (agent/attachments.py)."""
        try:
            data = base64.b64decode(args.data, validate=True)
        except ValueError:
            raise CommandFailed("bad_attachment", "the file's data is not base64") from None
        record = self._record(session_id)
        room = attachmentfiles.Room(
            files=self.config.int("attachments_max_per_session"),
            total_bytes=self.config.int("attachments_max_bytes_per_session"),
            # A message still waiting on this Mac types its files later: they stay.
            needed=frozenset(
                a.id for m in record.held if m.state in OPEN_HELD for a in m.attachments
            ),
        )
        info = await asyncio.to_thread(
            attachmentfiles.save,
            self.data,
            session_id,
            args.filename,
            args.media_type,
            data,
            self.config.int("attachment_max_bytes"),
            room,
        )
        return info.model_dump()

    # -- the session's folder, for the page -----------------------------------------------------

    def _folder(self, session_id: str) -> tuple[Path, workspace.Limits]:
        """The session's working folder (it must still exist) and the reading limits."""
        folder = Path(self._record(session_id).cwd)
        if not folder.is_dir():
            raise CommandFailed("not_found", f"the session's folder {str(folder)!r} is gone")
        limits = workspace.Limits(
            file_bytes=self.config.int("files_max_file_bytes"),
            entries=self.config.int("files_max_entries"),
            diff_bytes=self.config.int("files_max_diff_bytes"),
            git_timeout=self.config.float("git_timeout"),
        )
        return folder, limits

    async def _cmd_list_files(self, session_id: str, args: ListFilesArgs) -> dict[str, Any]:
        folder, limits = self._folder(session_id)
        return await asyncio.to_thread(workspace.list_folder, folder, args.path, limits)

    async def _cmd_read_file(self, session_id: str, args: ReadFileArgs) -> dict[str, Any]:
        folder, limits = self._folder(session_id)
        return await asyncio.to_thread(workspace.read_text, folder, args.path, limits)

    async def _cmd_git_status(self, session_id: str, args: GitStatusArgs) -> dict[str, Any]:
        return await workspace.git_status(*self._folder(session_id))

    async def _cmd_git_diff(self, session_id: str, args: GitDiffArgs) -> dict[str, Any]:
        folder, limits = self._folder(session_id)
        return await workspace.git_diff(folder, args.path, limits)

    async def _cmd_transcript_line(
        self, session_id: str, args: TranscriptLineArgs
    ) -> dict[str, Any]:
        """The line of the session's transcripts with this uuid, as Claude Code wrote it. Only
        the session's own files are read: the phone names a line, never a path."""
        record = self._record(session_id)
        rt = self.runtimes.get(session_id)
        followed = [c.path for c in rt.follower.cursors.values()] if rt is not None else []
        conversations = [*record.conversation_ids, *record.acked]
        if record.conversation_id:
            conversations.insert(0, record.conversation_id)
        paths = session_files(self.options.claude_home, record.cwd, conversations, followed)
        limit = self.config.int("full_line_max_bytes")
        try:
            line = await asyncio.to_thread(find_line, paths, args.uuid, limit)
        except LineTooLarge as exc:
            raise CommandFailed(
                "line_too_large", f"{exc} (full_line_max_bytes on the Mac is {limit})"
            ) from None
        if line is None:
            raise CommandFailed(
                "line_not_found", f"no transcript line {args.uuid} of this session is on the Mac"
            )
        return {"line": line.decode("utf-8", errors="replace")}

    def _recent_folders(self) -> list[str]:
        """The working folders of this Mac's sessions, the most recently used first."""
        return workspace.recent_folders(
            [(r.cwd, max(r.created_at, r.last_alive_at)) for r in self.registry.sessions.values()],
            MAX_RECENT_FOLDERS,
        )

    async def _reopen(self, record: SessionRecord) -> None:
        rt = self._runtime(record)
        if rt.pane_alive:
            return
        await self._launch(record, resume=record.conversation_id is not None)
