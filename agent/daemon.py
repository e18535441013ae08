"""The agent: runs Claude Code sessions in the multiplexer and keeps the relay told.

One asyncio process. For each session it follows the transcript (every 700 ms, and at once when
a hook says something happened), reads the screen (every 1,500 ms, every 700 ms during a turn for
the in-progress text, and at once after a hook or a key), computes the state from hooks, screen
and Claude Code's status file, turns dialogs into cards and answers them with keys, and types held
messages at safe points. Everything it must not forget is in the registry (sessions.json).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import platform
import secrets
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from agent import autopass
from agent import held as heldrules
from agent.archive import DiskArchive
from agent.cards import (
    NO_REQUEST,
    NOT_MATCHING,
    DetectedCard,
    HookAsk,
    ScreenFacts,
    early_card,
    from_hook,
    hook_matches,
    keys_for,
    read_screen,
)
from agent.decisions import DecisionLog
from agent.errors import BatchRefused, CommandFailed, DialogOpen, MuxError, NotLinked, PaneGone
from agent.hookserver import HookServer, OnHook, SecretFor, permission_decision
from agent.hooksettings import build_settings, hook_command_path, hook_env, write_settings
from agent.launch import (
    claude_argv,
    claude_version,
    session_env,
    version_warning,
)
from agent.link import RelayLink
from agent.mux import Mux, Pane, session_name
from agent.registry import Registry, SessionRecord, is_session_id, revive_candidates
from agent.screen import render
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
    Computed,
    HookFacts,
    SessionInputs,
    apply_hook,
    close_open_turn,
    compute,
    current_mode,
    screen_idle_since,
)
from agent.status import ClaudeStatus, find_for_session, read_status
from agent.transcript import TranscriptFollower, transcript_path
from wire import __version__
from wire import policy as policyrules
from wire.client import Archive
from wire.client import CommandHandler as WireCommandHandler
from wire.config import Config
from wire.markers import BRIDGE_CONVERSATION, bridge_line
from wire.protocol import (
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
    EndArgs,
    HeldMessage,
    InterruptArgs,
    LineRecord,
    MarkerKind,
    ReopenArgs,
    RestArgs,
    SendArgs,
    SessionInfo,
    SetPolicyArgs,
    Welcome,
    args_problem,
)

_log = logging.getLogger("agent")

SCREEN_WIDTH = 120
SCREEN_HEIGHT = 40
FIRST_FRAME_QUIET = 1.0  # keys in the first ~0.5 s after the first frame are dropped
CARD_CONFIRM_TIMEOUT = 4.0  # how long an answered card may stay on screen before keys are retried
CARD_RETRY_AFTER = 0.8
DIALOG_SETTLE = 0.4  # a key sent within ~10 ms of a dialog appearing is dropped: wait a little
TYPE_CONFIRM = 1.5  # how long a paste or an Enter may take to show on screen
ESCAPE_CONFIRM = 1.5  # how long Esc may take to stop a turn or close a dialog on screen
TRANSCRIPT_RETRY_MAX = 10.0  # the longest wait before a refused batch is sent again
KEY_GAP = 0.06  # between key groups, so each is drawn before the next (multi-step answers)
REGISTRY_SAVE_EVERY = 5.0
DEVICE_ID_FILE = "device-id"  # this Mac's id at its relay, written when the link opens
TICK = 0.05
PANES_TTL = 0.5  # how long one list of panes (alive, size, cursor) is reused
BURST_SECONDS = 1.0  # after a hook, read the screen every BURST_INTERVAL for this long
BURST_INTERVAL = 0.1
EARLY_CARD_FOR = 10.0  # a request's card waits this long for its dialog to be drawn
DIALOG_WATCH_INTERVAL = 0.02  # screen reads meanwhile
REVIVED_TEXT = "🔁 The Mac restarted, so the session was reopened in the same conversation"


def _policy(record: SessionRecord) -> policyrules.Policy:
    return policyrules.from_record(record.policy, record.allow_all)


def _set_policy(
    record: SessionRecord, policy: policyrules.Policy, ended: str = "it was turned off"
) -> None:
    """Keep the session's new policy; "allow all" starting or ending is told in the
    conversation (``ended`` says why it ended)."""
    before = _policy(record)
    record.policy = policy.to_json()
    record.allow_all = policy.allow_all
    if policy.allow_all and (
        not before.allow_all or before.allow_all_until != policy.allow_all_until
    ):
        _queue_marker(record, MarkerKind.ALLOW_ALL, _allow_all_started(policy))
    elif before.allow_all and not policy.allow_all:
        _queue_marker(
            record, MarkerKind.ALLOW_ALL, f"🔒 Allow all ended ({ended}): tools ask again"
        )


def _allow_all_started(policy: policyrules.Policy) -> str:
    until = policy.allow_all_until
    if until is None:
        span = "until the session ends"
    else:
        left = max(0, round((until - time.time()) / 60))
        hours, minutes = divmod(left, 60)
        length = " ".join(
            p for p in (f"{hours} h" if hours else "", f"{minutes} min" if minutes else "") if p
        )
        at = datetime.fromtimestamp(until, UTC).strftime("%Y-%m-%d %H:%M UTC")
        span = f"for {length or 'less than a minute'}, until {at}"
    return f"🔓 Allow all is on {span}: tools no rule names run without asking"


def _queue_marker(record: SessionRecord, marker: MarkerKind, text: str) -> None:
    """A line of the bridge's own in the session's conversation, sent with the next lines."""
    record.marker_seq += 1
    line = bridge_line(marker, text, _now_iso(), f"bridge-{record.id}-{record.marker_seq}")
    record.pending_markers.append({"offset": record.marker_seq, "text": line})


def _is_no(card: DetectedCard, answer: str | list[str] | None) -> bool:
    """The answer picks a "No…" option: it grants nothing, "always" or not."""
    if not isinstance(answer, str):
        return False
    label = next((o.label for o in card.options if o.key == answer), "")
    return label.strip().lower().startswith("no")


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


def check_session_id(session_id: str) -> None:
    """Nothing but a UUID is recorded as a session (agent/registry.py's is_session_id)."""
    if not is_session_id(session_id):
        raise CommandFailed(
            "bad_session_id",
            f"{session_id[:80]!r} is not a session id: ids are UUIDs "
            "(like 123e4567-e89b-12d3-a456-426614174000)",
        )


@dataclass
class Runtime:
    """What the agent knows of one session while it runs (the record is what it remembers)."""

    record: SessionRecord
    follower: TranscriptFollower
    hooks: HookFacts = field(default_factory=HookFacts)
    screen: ScreenFacts | None = None
    screen_at: float | None = None
    idle_since: float | None = None
    first_frame_at: float | None = None
    status: str | None = None
    status_at: float | None = None
    pane_alive: bool = False
    computed: Computed | None = None
    card: DetectedCard | None = None
    card_id: str | None = None
    card_count: int = 0
    card_seen_at: float = 0.0
    status_pid: int | None = None  # the claude process whose status file this session reads
    screen_key: tuple[str, int, int] | None = None  # the capture the current facts came from
    sent: dict[str, Any] = field(default_factory=dict)  # last values sent to the relay
    keys: asyncio.Lock = field(default_factory=asyncio.Lock)  # one typist at a time
    wake_screen: asyncio.Event = field(default_factory=asyncio.Event)
    next_screen: float = 0.0
    burst_until: float = 0.0  # read the screen often until then (a hook said something changed)
    trust_passed: bool = False  # start-up dialogs other than those passed by rule go to the phone
    passing: asyncio.Task[None] | None = None  # a dialog being passed by rule (agent/autopass.py)
    pass_failed: set[str] = field(default_factory=set)  # dialogs that would not pass: cards
    model_changed_at: float | None = None  # the phone changed the model (its confirmation passes)
    held_not_before: float = 0.0  # after a revive, held messages wait a little
    launching: bool = False  # its terminal is being (re)made: screen reads wait
    error: str | None = None  # why its last launch failed (shown on the phone), None once up
    # The latest mode line read on its screen, and when: a screen without one (a dialog, a
    # notice in the footer) says nothing of the mode, so an older hook's does not win then.
    screen_mode: str | None = None
    screen_mode_at: float | None = None
    transcript_retry_at: float = 0.0  # the relay refused its last batch: not before then
    transcript_backoff: float = 0.0
    transcript_refusal: str | None = None  # why, as last logged
    tool_uses: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)  # PreToolUse
    ask: HookAsk | None = None  # the permission Claude Code asked for, its dialog due or open
    ask_seen: bool = False  # that dialog was seen on screen

    @property
    def name(self) -> str:
        return session_name(self.record.id)

    @property
    def state(self) -> str:
        return self.computed.state if self.computed else "starting"


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


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


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
        self.runtimes: dict[str, Runtime] = {}
        self.settings_path = self.data / "hooks.json"
        make_hooks = hooks or self._hook_server
        self.hook_server: HookEndpoint = make_hooks(self._secret_for, self._on_hook)
        self.claude_version = ""
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
        self.commands = self._command_table()

    # -- life of the agent ---------------------------------------------------------------

    async def start(self) -> None:
        self.claude_version = await claude_version(self.options.claude)
        warning = version_warning(self.claude_version)
        if warning:
            _log.warning(warning)
        await self.hook_server.start()
        (self.data / "hook-port").write_text(str(self.hook_server.port))
        write_settings(self.settings_path, build_settings(hook_command_path()))
        self.link.device = DeviceInfo(
            name=self.options.device_name,
            hostname=socket.gethostname(),
            os=f"{platform.system()} {platform.release()}",
            agent_version=__version__,
            claude_version=self.claude_version,
        )
        self._forget_bad_ids()
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
        self._stopping.set()
        for task in [*self._tasks, *self._background]:
            task.cancel()
        for task in [*self._tasks, *self._background]:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.decisions.close()
        await self.link.stop()
        await self.hook_server.close()
        await self.mux.close()
        self._save()

    async def run_forever(self) -> None:
        await self.start()
        try:
            await self._stopping.wait()
        finally:
            await self.stop()

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
        return HookServer(secret_for, on_hook, port=self._hook_port())

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

    def _save(self) -> None:
        self.registry.save()
        self._dirty = False

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
            policy = _policy(record)
            if session_over is None and (not policy.allow_all or policy.allowing_all(now)):
                continue
            if session_over is not None and not policy.allow_all:
                continue
            why = "the session ended" if session_over else "its time is up"
            _set_policy(record, policy.without_allow_all(), ended=why)
            self._dirty = True
            self._wake_transcripts.set()
            _log.info("session %s: allow all ended (%s)", record.id, why)

    # -- sessions: attach, launch, revive --------------------------------------------------

    def _runtime(self, record: SessionRecord) -> Runtime:
        rt = self.runtimes.get(record.id)
        if rt is None:
            rt = Runtime(record=record, follower=TranscriptFollower(record.acked))
            if record.conversation_id:
                rt.follower.follow(record.conversation_id, self._transcript_file(record))
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
        candidates = [r for r in self.registry.sessions.values() if r.id not in running]
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
                await self._send_update(self._runtime(record), force=True)
                continue
            rt.held_not_before = time.time() + self.config.float("held_after_revive")
            self._add_marker(record, MarkerKind.REVIVED, REVIVED_TEXT)

    async def _launch(self, record: SessionRecord, *, resume: bool) -> Runtime:
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

    async def _launch_in(self, rt: Runtime, record: SessionRecord, *, resume: bool) -> Runtime:
        if not Path(record.cwd).is_dir():
            # tmux would start claude in another folder without a word.
            raise CommandFailed(
                "folder_gone", f"the folder {record.cwd} no longer exists on this Mac"
            )
        argv = claude_argv(
            self.options.claude,
            str(self.settings_path),
            session_id=None if resume else (record.conversation_id or record.id),
            resume=record.conversation_id if resume else None,
            permission_mode=record.permission_mode,
            model=record.model,
            extra=self.options.claude_args,
        )
        if not resume and record.conversation_id is None:
            record.conversation_id = record.id  # --session-id names the first conversation
            record.conversation_ids.append(record.id)
            rt.follower.follow(record.id, self._transcript_file(record))
        base = self.options.env if self.options.env is not None else dict(os.environ)
        env = session_env(base, hook_env(record.id, record.secret, self.hook_server.port))
        with contextlib.suppress(MuxError):
            await self.mux.kill(rt.name)  # a dead pane left from an earlier life
        try:
            await self.mux.new_session(rt.name, record.cwd, argv, env, SCREEN_WIDTH, SCREEN_HEIGHT)
        except MuxError as exc:
            raise CommandFailed("launch_failed", f"claude could not be started: {exc}") from exc
        now = time.time()
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

    # -- hooks ---------------------------------------------------------------------------

    def _secret_for(self, session_id: str) -> str | None:
        record = self.registry.get(session_id)
        return record.secret if record and record.secret else None

    async def _on_hook(self, session_id: str, event: str, payload: dict[str, Any]) -> str | None:
        rt = self.runtimes.get(session_id)
        if rt is None:
            return None
        now = time.time()
        rt.hooks = apply_hook(rt.hooks, event, payload, now)
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
        self._note_request(rt, event, payload)
        if event == "PermissionRequest":
            # The session's policy (wire/policy.py): allow before the dialog is drawn, deny
            # with a reason, or None = ask (the dialog becomes a card). Questions and plans
            # always ask.
            tool = payload.get("tool_name")
            tool = tool if isinstance(tool, str) else None
            policy = _policy(record)
            verdict = policy.verdict(tool, now)  # an allow-all past its time is off
            self.decisions.note(  # the audit log
                record.id, verdict, payload, rt.hooks.tools, allow_all_until=policy.allow_all_until
            )
            if verdict.rule == "allow":
                return permission_decision("allow")
            if verdict.rule == "deny":
                _log.info("session %s: policy denied %s", record.id, tool)
                return permission_decision("deny", verdict.deny_message(tool or "this tool"))
            if tool is not None:
                # The card goes to the phone now, before the dialog is drawn (not answerable
                # until it is): what will run is known from the request itself.
                rt.ask, rt.ask_seen = self._ask_from(rt, tool, payload, now), False
                rt.wake_screen.set()
                rt.burst_until = now + BURST_SECONDS
                self._track_card(rt)
                # sent once the hook's answer is on its way: Claude Code draws the dialog only
                # after it, so nothing here may delay it
                asyncio.get_running_loop().call_soon(self._spawn, self._send_update(rt))
            return None
        if self.options.polling_only:
            if event in ("PostToolUse", "PostToolUseFailure", "Stop"):
                self._spawn(self._deliver_held(rt, reason=event))
            return None
        self._wake_transcripts.set()
        rt.wake_screen.set()
        # A hook comes just before the screen changes (PermissionRequest before the dialog is
        # drawn): read again shortly after, so a card reaches the phone without waiting a period.
        rt.burst_until = now + BURST_SECONDS
        if event in ("PostToolUse", "PostToolUseFailure", "Stop"):
            self._spawn(self._deliver_held(rt, reason=event))
        return None

    def _note_request(self, rt: Runtime, event: str, payload: dict[str, Any]) -> None:
        """Keep the tool uses that may still ask (PreToolUse carries the tool use id that
        PermissionRequest lacks), and forget a request once its tool ran or the turn ended."""
        tool_use_id = payload.get("tool_use_id")
        tool_use_id = tool_use_id if isinstance(tool_use_id, str) and tool_use_id else None
        tool = payload.get("tool_name")
        tool_input = payload.get("tool_input")
        if event == "PreToolUse" and tool_use_id and isinstance(tool, str):
            rt.tool_uses[tool_use_id] = (tool, tool_input if isinstance(tool_input, dict) else {})
            while len(rt.tool_uses) > 64:  # parallel subagents' uses; never ending ones drop
                del rt.tool_uses[next(iter(rt.tool_uses))]
        elif event in ("PostToolUse", "PostToolUseFailure") and tool_use_id:
            rt.tool_uses.pop(tool_use_id, None)
            if rt.ask is not None and rt.ask.tool_use_id == tool_use_id:
                rt.ask = None
        elif event in ("Stop", "SessionEnd") or (
            event == "SessionStart" and payload.get("source") != "compact"
        ):
            rt.tool_uses.clear()
            rt.ask = None

    def _ask_from(self, rt: Runtime, tool: str, payload: dict[str, Any], now: float) -> HookAsk:
        tool_input = payload.get("tool_input")
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        tool_use_id = payload.get("tool_use_id")
        if not isinstance(tool_use_id, str) or not tool_use_id:
            # the latest tool use of that tool with the very same input
            tool_use_id = next(
                (
                    tid
                    for tid, (name, given) in reversed(rt.tool_uses.items())
                    if name == tool and given == tool_input
                ),
                None,
            )
        return HookAsk(tool=tool, tool_input=tool_input, tool_use_id=tool_use_id, at=now)

    # -- the relay ------------------------------------------------------------------------

    async def _on_linked(self, welcome: Welcome) -> None:
        # Which Mac this is, for the commands run here (`search --here`, `open`); not a secret.
        with contextlib.suppress(OSError):
            (self.data / DEVICE_ID_FILE).write_text(welcome.device_id + "\n")
        self.follower_rewind()
        self._wake_transcripts.set()
        for rt in self.runtimes.values():
            rt.sent.clear()  # send the whole live side again
            rt.wake_screen.set()
        for record in list(self.registry.sessions.values()):  # delete_history may run meanwhile
            if record.id not in self.runtimes:
                await self._send_update(self._runtime(record), force=True)

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
                if rt.transcript_retry_at > now:
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

    async def _send_transcript(self, rt: Runtime) -> None:
        record = rt.record
        await self._send_markers(rt)
        for conversation_id, lines in rt.follower.poll():
            for start in range(0, len(lines), LINES_PER_BATCH):
                chunk = lines[start : start + LINES_PER_BATCH]
                ack = await self.link.send_lines(record.id, conversation_id, chunk, record.cwd)
                if rt.follower.ack(conversation_id, ack.through_offset):
                    self._dirty = True

    def _add_marker(self, record: SessionRecord, marker: MarkerKind, text: str) -> None:
        _queue_marker(record, marker, text)
        self._dirty = True
        self._wake_transcripts.set()

    async def _send_markers(self, rt: Runtime) -> None:
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

    async def _send_update(self, rt: Runtime, force: bool = False) -> None:
        """Tell the relay what changed in the session's live side (only what changed)."""
        record = rt.record
        state = rt.state if rt.pane_alive else "ended"
        card = rt.card.to_card(rt.card_id) if rt.card and rt.card_id else None
        preview = None
        if rt.screen and state == "busy" and not rt.screen.tool_running:
            preview = rt.screen.preview
        current: dict[str, Any] = {
            "state": state,
            "activity": rt.computed.activity if rt.computed and rt.pane_alive else None,
            "card": card.model_dump() if card else None,
            "held": [h.model_dump() for h in record.held],
            "preview": preview,
            "cwd": record.cwd,
            "conversation_id": record.conversation_id,
            "permission_mode": record.permission_mode,
            "error": rt.error,
        }
        changed = {k: v for k, v in current.items() if force or rt.sent.get(k, object()) != v}
        if not changed:
            return
        fields: dict[str, Any] = {"session_id": record.id}
        for key, value in changed.items():
            if key == "card":
                if value is None:
                    fields["clear_card"] = True
                else:
                    fields["card"] = card
            elif key == "held":
                fields["held"] = list(record.held)
            else:
                fields[key] = value
        info = SessionInfo(**fields)
        try:
            await self.link.update(info)
        except NotLinked:
            return
        rt.sent.update(changed)

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

    async def _read_session(
        self, rt: Runtime, alive: bool, now: float, pane: Pane | None = None
    ) -> None:
        record = rt.record
        was_alive = rt.pane_alive
        rt.pane_alive = alive
        if alive:
            try:
                capture = await self.mux.capture(rt.name, pane)
            except PaneGone:
                rt.pane_alive = False
            else:
                key = (capture.text, capture.width, capture.height)
                if rt.screen is not None and key == rt.screen_key:
                    facts = rt.screen  # an unchanged screen reads the same (the reader is pure)
                else:
                    facts = read_screen(render(capture.text, capture.width, capture.height))
                    rt.screen_key = key
                if rt.first_frame_at is None and capture.text.strip():
                    rt.first_frame_at = now
                rt.idle_since = screen_idle_since(rt.idle_since, facts, now)
                rt.screen = facts
                rt.screen_at = now
                if facts.mode is not None:
                    rt.screen_mode, rt.screen_mode_at = facts.mode, now
        if was_alive and not rt.pane_alive:
            _log.info("session %s ended (its terminal is gone)", record.id)
            self._end_allow_all(now, session_over=record)
            await self.mux.kill(rt.name)
            record.alive = False if record.ended_by_person or record.resting else record.alive
            self._dirty = True
        mode = current_mode(rt.hooks, rt.screen_mode, rt.screen_mode_at)
        if mode is not None and mode != record.permission_mode:
            # Remembered for reopen and revive: a plan approved leaves plan mode, Shift+Tab in
            # the terminal changes it, and the session must come back as it was.
            _log.info("session %s: permission mode %s", record.id, mode)
            record.permission_mode = mode
            self._dirty = True
        status = self._claude_status(rt)
        if status is not None:
            rt.status, rt.status_at = status.status, status.status_at
        computed = compute(
            SessionInputs(
                hooks=rt.hooks,
                screen=rt.screen,
                screen_at=rt.screen_at,
                status=rt.status,
                status_at=rt.status_at,
                process_alive=rt.pane_alive,
                launched_at=record.launched_at,
                now=now,
                missed_hook_close=self.config.float("missed_hook_close"),
                screen_idle_since=rt.idle_since,
                first_frame_at=rt.first_frame_at,
            )
        )
        if computed.close_turn:
            rt.hooks = close_open_turn(rt.hooks)
        startup_card = rt.screen.card if rt.screen and computed.state == "starting" else None
        if startup_card is not None and not autopass.is_trust(startup_card) and rt.trust_passed:
            # A start-up dialog we do not pass by ourselves (an API key, a login…): ask the person.
            computed = dataclasses.replace(
                computed, state="waiting", reasons=(*computed.reasons, "startup-dialog")
            )
        previous = rt.state
        rt.computed = computed
        if self._auto_pass(rt, now):
            rt.next_screen = now + BURST_INTERVAL  # the dialog goes; read again soon
            return
        self._track_card(rt)
        busy = computed.state == "busy"
        interval = self.config.float("preview_read_interval" if busy else "screen_read_interval")
        if now < rt.burst_until:
            interval = BURST_INTERVAL
        if rt.card is not None and not rt.card.answerable:
            interval = DIALOG_WATCH_INTERVAL  # its card waits for the dialog: catch it drawn
        rt.next_screen = now + float(interval)
        await self._send_update(rt)
        if previous != computed.state and computed.state == "idle":
            await self._deliver_held(rt, reason="idle")

    def _claude_status(self, rt: Runtime) -> ClaudeStatus | None:
        """Claude Code's status file: found once by conversation id, then read by its pid."""
        home = self.options.claude_home
        conversation = rt.record.conversation_id or rt.record.id
        if rt.status_pid is not None:
            status = read_status(home, rt.status_pid)
            if status is not None and status.session_id == conversation:
                return status
        status = find_for_session(home, conversation)
        rt.status_pid = status.pid if status is not None else None
        return status

    def _track_card(self, rt: Runtime) -> None:
        """The card of what the screen shows. A card id is bound to one dialog: its text's
        digest and, for a permission, the tool use it asks for; either changing makes a new
        card, so an answer given for one dialog can never be taken for another."""
        card = self._card_for(rt, rt.screen.card if rt.screen and rt.state == "waiting" else None)
        if card is None:
            rt.card, rt.card_id = None, None
            return
        if (
            rt.card is None
            or card.fingerprint != rt.card.fingerprint
            or card.tool_use_id != rt.card.tool_use_id
            or card.answerable != rt.card.answerable
        ):
            rt.card_count += 1
            rt.card_id = f"{card.fingerprint[:10]}-{rt.card_count}"
            rt.card_seen_at = time.monotonic()
        rt.card = card

    def _card_for(self, rt: Runtime, shown: DetectedCard | None) -> DetectedCard | None:
        """A permission dialog's card is built from the request that matches it (the whole
        command, the file, the edit); the screen says only that it is drawn and its keys."""
        ask = rt.ask
        if shown is not None and shown.kind == "permission":
            if ask is not None and hook_matches(shown, ask):
                rt.ask_seen = True
                return from_hook(shown, ask)
            return dataclasses.replace(shown, warning=NOT_MATCHING if ask else NO_REQUEST)
        if ask is not None:
            drawn = rt.screen.card if rt.screen else None
            if rt.ask_seen and (drawn is None or drawn.kind != "permission"):
                rt.ask = None  # its dialog was answered
            elif (
                not rt.ask_seen
                and (shown is None or shown.kind == "stuck")
                and time.time() - ask.at < EARLY_CARD_FOR
            ):
                return early_card(ask)
        return shown

    def _auto_pass(self, rt: Runtime, now: float) -> bool:
        """True while the dialog on screen is one the agent passes by itself (SPEC §4, rules in
        agent/autopass.py): its keys are pressed in the background and it never becomes a card."""
        card = rt.screen.card if rt.screen is not None else None
        if card is None:
            return False
        if rt.passing is not None and not rt.passing.done():
            return True
        if card.fingerprint in rt.pass_failed:
            return False
        prompted = rt.hooks.last_prompt_at is not None and (
            rt.hooks.last_prompt_at >= rt.record.launched_at
        )
        since = now - rt.model_changed_at if rt.model_changed_at is not None else None
        decision = autopass.decide(
            card,
            starting=not prompted,
            since_model_change=since,
            model_switch_window=self.config.float("model_switch_window"),
        )
        if decision is None:
            if not prompted:
                rt.trust_passed = True  # a start-up dialog of another kind: the person's
            return False
        if rt.first_frame_at is None or now - rt.first_frame_at < FIRST_FRAME_QUIET:
            return True  # keys now would be dropped: pass it on a later read
        rt.passing = asyncio.create_task(self._pass_dialog(rt, card, decision))
        return True

    async def _pass_dialog(
        self, rt: Runtime, card: DetectedCard, decision: autopass.AutoPass
    ) -> None:
        groups = keys_for(card, decision.key) if decision.key is not None else [["Enter"]]
        try:
            async with rt.keys:
                await asyncio.sleep(DIALOG_SETTLE)  # keys right after a dialog appears are lost
                await self._press(rt, groups)
                closed = await self._confirm_closed(rt, card, groups)
        except (PaneGone, MuxError):
            return
        if not closed:
            _log.warning(
                "session %s: the %s dialog did not take %s; it is shown as a card instead",
                rt.record.id, decision.kind, groups,
            )  # fmt: skip
            rt.pass_failed.add(card.fingerprint)
            rt.wake_screen.set()
            return
        _log.info("session %s: passed the %s dialog", rt.record.id, decision.kind)
        if decision.kind == "trust":
            rt.trust_passed = True
        if decision.kind == "model":
            rt.model_changed_at = None  # one change, one confirmation
        self._add_marker(rt.record, MarkerKind.AUTO_PASSED, decision.line)
        rt.wake_screen.set()

    # -- held messages ------------------------------------------------------------------------

    async def _deliver_held(self, rt: Runtime, reason: str) -> None:
        record = rt.record
        waiting = heldrules.pending(record.held)
        if not waiting or not rt.pane_alive:
            return
        if time.time() < rt.held_not_before:
            await asyncio.sleep(rt.held_not_before - time.time())
        card_kind = rt.card.kind if rt.card else None
        decision = heldrules.decide(heldrules.Situation(rt.state, card_kind), now_requested=False)
        safe_point = reason in ("PostToolUse", "PostToolUseFailure", "Stop", "card", "idle")
        if decision is heldrules.Delivery.HOLD and not (safe_point and rt.state == "busy"):
            return
        if decision in (heldrules.Delivery.REOPEN_THEN_TYPE,):
            return
        await self._type_messages(
            rt, waiting, dismiss=decision is heldrules.Delivery.DISMISS_THEN_TYPE
        )

    async def _type_messages(
        self,
        rt: Runtime,
        messages: list[HeldMessage],
        *,
        dismiss: bool = False,
        interrupt: bool = False,
    ) -> None:
        record = rt.record
        ids = {m.id for m in messages}
        async with rt.keys:
            # Recheck under the lock: another delivery may have typed them meanwhile.
            messages = [m for m in record.held if m.id in ids and m.state == "held"]
            if not messages:
                return
            record.held = heldrules.mark(record.held, ids, "typing")
            self._save()  # before typing: a crash now never leads to typing it twice
            outcome = "failed"
            try:
                await self._quiet_after_first_frame(rt)
                if dismiss or interrupt:
                    await self._escape(rt)
                block = heldrules.block_text(messages)
                if autopass.changes_model(block):
                    rt.model_changed_at = time.time()  # its "Switch model?" passes (SPEC §4)
                outcome = "typed" if await self._paste_and_submit(rt, block) else "failed"
            except PaneGone:
                pass
            except DialogOpen as exc:
                # Not a key went into the dialog; the messages wait for it to close (a card
                # answered delivers them), unless their text already sits in the prompt box.
                _log.info("session %s: a %s dialog is open; the message waits", record.id, exc.kind)
                outcome = "failed" if exc.pasted else "held"
                rt.wake_screen.set()
            record.held = heldrules.mark(record.held, ids, outcome)
            record.held = heldrules.prune(record.held)
            self._save()
        rt.wake_screen.set()
        await self._send_update(rt)

    async def _escape(self, rt: Runtime) -> None:
        """Esc, until the screen shows the turn stopped or the dialog closed; once more if not.

        On a busy Mac the terminal may read Esc together with the paste that follows it as one
        escape sequence and drop both: the text would then wait behind the turn instead of
        interrupting it. So the paste goes only once the Esc is seen to have worked (or after a
        second try: Claude Code then holds the text until the turn ends, as it would anyway)."""
        for _ in range(2):
            await self._no_dialog(rt, escaping=True)
            await self.mux.send_keys(rt.name, [["Escape"]])
            deadline = time.monotonic() + ESCAPE_CONFIRM
            while time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                facts = await self._screen_now(rt)
                if not (facts.busy or (facts.card is not None and facts.card.kind != "stuck")):
                    await asyncio.sleep(0.1)  # let the prompt settle before the paste
                    return
        _log.warning("session %s: Esc did not stop the turn; typing anyway", rt.record.id)

    async def _quiet_after_first_frame(self, rt: Runtime) -> None:
        """Claude Code drops keys sent in the first ~0.5 s after its first frame."""
        if rt.first_frame_at is None:
            return
        wait = rt.first_frame_at + FIRST_FRAME_QUIET - time.time()
        if wait > 0:
            await asyncio.sleep(wait)

    async def _screen_now(self, rt: Runtime) -> ScreenFacts:
        """A fresh read of the session's screen, outside the screen loop's schedule."""
        capture = await self.mux.capture(rt.name)
        return read_screen(render(capture.text, capture.width, capture.height))

    async def _draft(self, rt: Runtime) -> str:
        return (await self._screen_now(rt)).draft

    async def _wait_draft(self, rt: Runtime, present: bool, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if bool(await self._draft(rt)) == present:
                return True
            await asyncio.sleep(0.1)
        return False

    async def _paste_and_submit(self, rt: Runtime, text: str) -> bool:
        """Paste the text, check it landed in the prompt box, press Enter, check it left.

        A paste into a screen that is not ready is dropped by Claude Code without a trace, and
        "typed" must mean typed: so every step is confirmed on the screen, and retried once.
        """
        for _ in range(2):
            await self._no_dialog(rt)
            await self.mux.paste(rt.name, text, enter=False)
            if await self._wait_draft(rt, present=True, timeout=TYPE_CONFIRM):
                break
        else:
            return False
        for _ in range(2):
            await self._no_dialog(rt, pasted=True)  # an Enter in a dialog picks its option
            await self.mux.send_keys(rt.name, [["Enter"]])
            if await self._wait_draft(rt, present=False, timeout=TYPE_CONFIRM):
                return True
        return False

    async def _no_dialog(
        self, rt: Runtime, *, escaping: bool = False, pasted: bool = False
    ) -> None:
        """Raise DialogOpen unless a fresh read of the screen shows no dialog the next key would
        go to (for Esc: none that Esc would answer). The last known state is not enough: a
        dialog may have been drawn since."""
        facts = await self._screen_now(rt)
        kind = facts.card.kind if facts.card is not None else None
        if not (heldrules.may_escape(kind) if escaping else heldrules.may_type(kind)):
            raise DialogOpen(kind, pasted=pasted)

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
        cwd = str(Path(args.cwd).expanduser())
        if not Path(cwd).is_dir():
            raise CommandFailed("bad_folder", f"there is no folder {cwd!r} on this Mac")
        if self.registry.get(session_id) is not None:
            raise CommandFailed("session_exists", f"session {session_id} already exists here")
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
        if args.allow_all:
            policy = dataclasses.replace(policy, allow_all=True)
        _set_policy(record, policy)
        if args.prompt is not None and args.prompt.strip():
            record.held.append(heldrules.new_message(args.prompt))  # typed once the prompt is up
        self.registry.add(record)
        self.archive.track(record.id)
        try:
            rt = await self._launch(record, resume=False)
        except BaseException:
            await self._forget(record.id)  # the relay keeps no trace of it either
            raise
        await self._send_update(rt, force=True)
        return {"cwd": record.cwd, "policy": _policy(record).to_json()}

    async def _forget(self, session_id: str) -> None:
        """Undo a session that never started: no record, no archive, no terminal left."""
        self.registry.sessions.pop(session_id, None)
        rt = self.runtimes.pop(session_id, None)
        if rt is not None:
            rt.pane_alive = False
        self.archive.delete(session_id)
        with contextlib.suppress(MuxError):
            await self.mux.kill(session_name(session_id))
        self._save()

    async def _cmd_send(self, session_id: str, args: SendArgs) -> dict[str, Any]:
        record = self._record(session_id)
        text = args.text
        if not text.strip():
            raise CommandFailed("empty_message", "the message is empty")
        sender_id = args.message_id
        known = next((m for m in record.held if sender_id and m.id == sender_id), None)
        if known is not None:
            # A retry of a message this Mac already has (its answer was lost): never twice.
            return {"message_id": known.id, "state": known.state, "duplicate": True}
        message = heldrules.new_message(text, message_id=sender_id)
        record.held.append(message)
        self._save()
        rt = self._runtime(record)
        if not rt.pane_alive:
            await self._reopen(record)
            rt = self._runtime(record)
            await self._send_update(rt)
            return {"message_id": message.id, "state": "held", "reopened": True}
        card_kind = rt.card.kind if rt.card else None
        decision = heldrules.decide(heldrules.Situation(rt.state, card_kind), args.now)
        if decision in (heldrules.Delivery.TYPE_NOW, heldrules.Delivery.DISMISS_THEN_TYPE):
            await self._type_messages(
                rt, [message], dismiss=decision is heldrules.Delivery.DISMISS_THEN_TYPE
            )
        elif decision is heldrules.Delivery.INTERRUPT_THEN_TYPE:
            await self._type_messages(rt, heldrules.pending(record.held), interrupt=True)
        else:
            await self._send_update(rt)
        state = next((m.state for m in record.held if m.id == message.id), "held")
        return {"message_id": message.id, "state": state}

    async def _cmd_cancel_held(self, session_id: str, args: CancelHeldArgs) -> dict[str, Any]:
        record = self._record(session_id)
        record.held, done = heldrules.cancel(record.held, args.message_id)
        if not done:
            raise CommandFailed("message_gone", "that message was already typed or cancelled")
        self._save()
        await self._send_update(self._runtime(record))
        return {}

    async def _cmd_answer_card(self, session_id: str, args: AnswerCardArgs) -> dict[str, Any]:
        record = self._record(session_id)
        rt = self._runtime(record)
        if rt.card is None or rt.card_id != args.card_id:
            raise CommandFailed("card_closed", "this card is already closed")
        card = rt.card
        if not card.answerable:
            raise CommandFailed(
                "card_not_ready",
                "the dialog is not on the Mac's screen yet; answer once the card says it is",
            )
        answer: str | list[str] | None = args.keys or args.key
        text = args.text
        try:
            groups = keys_for(card, answer, text)
        except ValueError as exc:
            raise CommandFailed("bad_answer", str(exc)) from exc
        if card.kind == "stuck":
            if not text:
                raise CommandFailed("bad_answer", "answer a stuck card with a message")
            await self._cmd_send(session_id, SendArgs(text=text))
            return {"closed": True}
        changed: dict[str, Any] = {}
        if args.always and card.kind == "permission" and not _is_no(card, answer):
            # "Always allow this category for this session": the card's tool's category (a tool
            # with none is allowed by name). Saved before the keys, so it holds for the next
            # request even if this answer is retried.
            tool = card.tool or rt.hooks.permission_tool
            policy = _policy(record).always_allow(tool)
            if policy != _policy(record):
                _set_policy(record, policy)
                self._save()
            changed["policy"] = policy.to_json()
        if card.title.strip() == autopass.MODEL_PICKER_TITLE:
            rt.model_changed_at = time.time()  # its "Switch model?" passes (SPEC §4)
        async with rt.keys:
            settle = rt.card_seen_at + DIALOG_SETTLE - time.monotonic()
            if settle > 0:
                await asyncio.sleep(settle)
            # The answer is for the dialog the card was made from: read the screen once more
            # right before the keys, and refuse if another dialog (or none) is there now.
            fresh = await self._screen_now(rt)
            drawn = fresh.card
            if drawn is None or not self._same_dialog(rt, card, drawn):
                await self._show_changed(rt, fresh)
                raise CommandFailed(
                    "card_changed",
                    "the dialog on the Mac changed before this answer arrived; nothing was "
                    "pressed: look at the new card",
                )
            try:
                groups = keys_for(drawn, answer, text)  # from where its cursor is now
            except ValueError as exc:
                raise CommandFailed("bad_answer", str(exc)) from exc
            await self._press(rt, groups)
            closed = await self._confirm_closed(rt, drawn, groups)  # the screen's own view
        if not closed:
            raise CommandFailed(
                "card_still_open", "the terminal did not take the answer; try again"
            )
        await self._deliver_held(rt, reason="card")
        return {"closed": True, **changed}

    def _same_dialog(self, rt: Runtime, card: DetectedCard, drawn: DetectedCard) -> bool:
        """Is ``drawn`` (just read) the dialog ``card`` was made for: the same text digest and,
        for a permission built from a request, still that request's tool use."""
        if drawn.fingerprint != card.fingerprint:
            return False
        if card.tool_use_id is None:
            return True
        return rt.ask is not None and rt.ask.tool_use_id == card.tool_use_id

    async def _show_changed(self, rt: Runtime, facts: ScreenFacts) -> None:
        """The screen moved on under a card: show the phone what is there now."""
        rt.screen, rt.screen_at = facts, time.time()
        rt.screen_key = None
        self._track_card(rt)
        await self._send_update(rt)
        rt.wake_screen.set()

    async def _press(self, rt: Runtime, groups: list[list[str]]) -> None:
        for index, group in enumerate(groups):
            if index:
                await asyncio.sleep(KEY_GAP)
            await self.mux.send_keys(rt.name, [group])

    async def _confirm_closed(
        self, rt: Runtime, card: DetectedCard, groups: list[list[str]]
    ) -> bool:
        """Read the screen until the dialog is gone; resend once if the keys were dropped."""
        deadline = time.monotonic() + CARD_CONFIRM_TIMEOUT
        retried = False
        started = time.monotonic()
        while time.monotonic() < deadline:
            await asyncio.sleep(0.15)
            facts = await self._screen_now(rt)
            now = time.time()
            rt.screen, rt.screen_at = facts, now
            rt.idle_since = screen_idle_since(rt.idle_since, facts, now)
            if facts.card is None or facts.card.fingerprint != card.fingerprint:
                rt.wake_screen.set()
                return True
            same_view = facts.card == card  # nothing moved: the keys never landed
            if same_view and not retried and time.monotonic() - started > CARD_RETRY_AFTER:
                await self._press(rt, groups)
                retried = True
        return False

    async def _cmd_interrupt(self, session_id: str, args: InterruptArgs) -> dict[str, Any]:
        rt = self._runtime(self._record(session_id))
        if not rt.pane_alive:
            raise CommandFailed("session_ended", "the session is not running")
        async with rt.keys:
            await self.mux.send_keys(rt.name, [["Escape"]])
        rt.wake_screen.set()
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
        await self._send_update(rt)
        return {}

    async def _cmd_reopen(self, session_id: str, args: ReopenArgs) -> dict[str, Any]:
        record = self._record(session_id)
        await self._reopen(record)
        return {}

    async def _cmd_set_policy(self, session_id: str, args: SetPolicyArgs) -> dict[str, Any]:
        """Replace the session's permission policy (wire/policy.py); it applies to the next
        PermissionRequest and is kept in the registry, so it survives reopen and revive."""
        record = self._record(session_id)
        try:
            policy = policyrules.Policy.from_json(args.policy)
        except policyrules.PolicyError as exc:
            raise CommandFailed("bad_args", f"policy: {exc}") from exc
        _set_policy(record, policy)
        self._save()
        return {"policy": policy.to_json()}

    async def _cmd_change_policy(self, session_id: str, args: ChangePolicyArgs) -> dict[str, Any]:
        """Change some rules of the session's policy, keeping the others as this Mac holds them
        (a card's "always allow" that came in meanwhile is not lost, as it would be by a
        read-then-replace from the phone)."""
        record = self._record(session_id)
        try:
            policy = _policy(record).changed(args.changes)
        except policyrules.PolicyError as exc:
            raise CommandFailed("bad_args", f"policy: {exc}") from exc
        _set_policy(record, policy)
        self._save()
        return {"policy": policy.to_json()}

    async def _cmd_delete_history(self, session_id: str, args: DeleteHistoryArgs) -> dict[str, Any]:
        """Retention deleted the session on the relay: drop its event archive and forget it.

        Idempotent (the relay resends it until it gets ok): a session this Mac no longer knows
        answers ok with ``deleted: false``. Claude Code's own transcripts are left alone.
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
        if record is not None:
            self._save()
            _log.info("session %s deleted by the relay's retention", session_id)
        return {"deleted": record is not None}

    async def _reopen(self, record: SessionRecord) -> None:
        rt = self._runtime(record)
        if rt.pane_alive:
            return
        await self._launch(record, resume=record.conversation_id is not None)
