"""The agent: runs Claude Code sessions in the multiplexer and keeps the relay told.

One asyncio process. For each session it follows the transcript (every 700 ms, and at once when
a hook says something happened), reads the screen (every 1,500 ms, every 700 ms during a turn for
the in-progress text, and at once after a hook or a key), computes the state from hooks, screen
and Claude Code's status file, turns dialogs into cards and answers them with keys, and types held
messages at safe points. Everything it must not forget is in the registry (sessions.json).

``Agent`` composes the parts and runs the pumps; each part is given what it needs as a narrow
interface, never the agent:

- the sessions (agent/sessions.py): the registry and each session's life — launch, reopen,
  revive, end, forget; each session's own loop is its ``SessionDriver`` (agent/driver.py);
- the commands (agent/commands.py): one table, filled by the parts that answer them — a
  session's life (agent/life.py), its messages and cards (agent/messages.py), its controls
  (agent/controls.py), its permissions (agent/permissions.py), its files (agent/sessionfiles.py)
  and moves (agent/moving.py);
- the hooks (agent/hookevents.py), heard by the hook server (agent/hookserver.py);
- the link to the relay (agent/link.py) and the audit log of the policy's answers
  (agent/decisions.py).

Here are the agent's start and stop, the link's arrival and loss, and the pumps: the transcripts
to the relay, the screens read, the registry saved, the file watcher. Every task the agent starts
is its ``TaskSet``'s (wire/tasks.py): named, its failure logged, closed when it stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import socket
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.archive import DiskArchive
from agent.commands import CommandTable
from agent.controls import Controls
from agent.decisions import DecisionLog
from agent.deskfiles import DeskCommands
from agent.driver import SessionDriver
from agent.errors import BatchRefused, NotLinked
from agent.files import write_json, write_text
from agent.hookevents import HookEvents
from agent.hookserver import HookServer, OnHook, SecretFor
from agent.hooksettings import build_settings, hook_command_path, write_settings
from agent.launch import INSTALL_LINE, ClaudeBinary
from agent.life import SessionLife
from agent.link import RelayLink
from agent.memoryfiles import MemoryFiles
from agent.messages import Messages
from agent.moving import Moving
from agent.mux import Mux, Pane
from agent.permissions import Permissions
from agent.registry import Registry
from agent.seams import (
    AgentLink,
    HookEndpoint,
    HookFactory,
    LinkFactory,
    Multiplexer,
    OnLinked,
    OnUnlinked,
)
from agent.sessionfiles import SessionFiles
from agent.sessions import ClaudeSetup, Sessions, SessionsHost
from agent.watch import changes
from wire import __version__
from wire.client import Archive
from wire.client import CommandHandler as WireCommandHandler
from wire.config import Config
from wire.markers import BRIDGE_CONVERSATION
from wire.protocol import (
    Command,
    CommandResult,
    DeviceInfo,
    DeviceUpdate,
    LineRecord,
    SessionInfo,
    Welcome,
)
from wire.tasks import TaskSet, TaskSetClosed

_log = logging.getLogger("agent")

TRANSCRIPT_RETRY_MAX = 10.0  # the longest wait before a refused batch is sent again
REGISTRY_SAVE_EVERY = 5.0
# How often `claude auth status` is asked again while it said there was no login (a node
# process: not every save, but soon enough that a login at the desk shows on the phone).
LOGIN_RECHECK_EVERY = 30.0
DEVICE_ID_FILE = "device-id"  # this Mac's id at its relay, written when the link opens
MUX_FILE = "mux.json"  # the multiplexer and its socket, for `claude-bridge attach`
TICK = 0.05
STOP_STEP_GRACE = 5.0  # how long a stopping agent waits for each part to close
PANES_TTL = 0.5  # how long one list of panes (alive, size, cursor) is reused
LINES_PER_BATCH = 500  # transcript lines sent in one batch (one ack each)


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
    claude_missing_said: bool = False  # the starting command told the person claude is missing


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
        self.data = options.data_dir
        self.data.mkdir(parents=True, exist_ok=True)
        os.chmod(self.data, 0o700)  # secrets and the relay token live here
        self.registry = Registry(self.data / "sessions.json").load()
        self.archive = DiskArchive(self.data / "events")
        self.mux: Multiplexer = mux or Mux(options.mux_program, options.mux_socket)
        self.settings_path = self.data / "hooks.json"
        self.tasks = TaskSet("agent", _log)  # the pumps and what the parts run beside them
        self._wake_transcripts = asyncio.Event()
        self._stopping = asyncio.Event()
        self._next_login_check = 0.0  # time.monotonic() of the next `auth status` while logged out
        self.binary = ClaudeBinary(options.claude, self._tell_version, options.env)
        setup = ClaudeSetup(
            options.claude, self.settings_path, options.claude_home, options.claude_args,
            options.env, options.device_name,
        )  # fmt: skip
        self.sessions = Sessions(
            self.registry, self.archive, self.mux, config, self.data, setup,
            SessionsHost(
                update=self._update,
                spawn=self._spawn,
                wake_transcripts=self._wake_transcripts.set,
                check_claude=self.binary.check,
                hook_port=lambda: self.hook_server.port,
                offer_folders=self._offer_folders,
            ),
        )  # fmt: skip
        self.runtimes = self.sessions.drivers  # each session's driver, by id
        make_link = link or self._relay_link
        self.link: AgentLink = make_link(
            self.archive, self.on_command, self._on_linked, self._on_unlinked
        )
        # What the policy answered, for the audit log: kept until the relay acknowledges it.
        self.decisions = DecisionLog(self.link, self.data / "decisions.json")
        # Sessions moving to or from this Mac (agent/moving.py).
        self.moving = Moving(
            self.sessions, self.archive, self.data, options.claude_home, options.env
        )
        permissions = Permissions(self.sessions, self.decisions)
        self.hook_events = HookEvents(
            self.sessions, permissions, polling_only=options.polling_only,
            wake_transcripts=self._wake_transcripts.set, spawn=self._spawn,
        )  # fmt: skip
        make_hooks = hooks or self._hook_server
        self.hook_server: HookEndpoint = make_hooks(
            self.hook_events.secret_for, self.hook_events.on_hook
        )
        self.commands = CommandTable(
            [
                *SessionLife(self.sessions).handlers(),
                *Messages(self.sessions).handlers(),
                *Controls(self.sessions).handlers(),
                *permissions.handlers(),
                *SessionFiles(self.sessions, options.claude_home).handlers(),
                *MemoryFiles(self.sessions).handlers(),
                *DeskCommands(self.sessions, options.claude_home).handlers(),
                *self.moving.handlers(),
            ]
        )

    @property
    def config(self) -> Config:
        """The agent's settings (one copy, the sessions' and every part's)."""
        return self.sessions.config

    @config.setter
    def config(self, config: Config) -> None:
        self.sessions.config = config

    @property
    def claude_version(self) -> str:
        return self.binary.version

    # -- life of the agent ---------------------------------------------------------------

    async def start(self) -> None:
        await self.binary.start(say_missing=not self.options.claude_missing_said)
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
            claude_version=self.binary.version,
            recent_folders=self.sessions.recent_folders(),
            **self._claude_standing(),
        )
        self.sessions.forget_bad_ids()
        self.moving.recover()  # sessions a move left undecided: held until the relay says
        for record in self.sessions.records():
            self.archive.track(record.id)
        await self.sessions.attach_running()
        self.link.start()
        self.decisions.start()  # those kept from before a restart, too
        self.tasks.start(self._transcript_loop(), name="transcripts")
        self.tasks.start(self._screen_loop(), name="screens")
        self.tasks.start(self._save_loop(), name="registry")
        if self.options.watch and not self.options.polling_only:
            self.tasks.start(self._watch_loop(), name="watch")
        if self.options.revive:
            await self.sessions.revive(self.moving.holds)

    async def stop(self) -> None:
        """Stop every loop and close the link, the hook endpoint and the multiplexer client.

        Each step is given STOP_STEP_GRACE: a step that hangs (a peer that never answers a close,
        say) is named in the log and left behind, so stopping never hangs and the relay always
        sees the Mac go offline."""
        self._stopping.set()
        await self.tasks.close(STOP_STEP_GRACE)
        await self._stop_step("the moves", self.moving.close(STOP_STEP_GRACE))
        await self._stop_step("the relay link", self.link.stop())
        await self._stop_step("the decision log", self.decisions.close())
        await self._stop_step("the hook endpoint", self.hook_server.close())
        await self._stop_step("the tmux client", self.mux.close())
        self.sessions.save()

    async def _stop_step(self, what: str, step: Coroutine[Any, Any, object]) -> None:
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

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` beside the loops (a session's held messages, its update to the relay);
        once the agent stops, nothing more is started."""
        name = getattr(coro, "__qualname__", "background work")
        with contextlib.suppress(TaskSetClosed):
            self.tasks.start(coro, name=name)

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

    # -- the relay ------------------------------------------------------------------------

    async def on_command(self, command: Command) -> CommandResult:
        """A command from the relay, answered from the command table."""
        return await self.commands.run(command)

    async def _update(self, info: SessionInfo) -> None:
        """Tell the relay of a session's live side (the link's as it is then); nothing of a
        session arriving by a move, until it is this Mac's."""
        if not self.moving.quiet(info.session_id):
            await self.link.update(info)

    def _claude_standing(self) -> dict[str, Any]:
        """What the device record says of Claude Code here (found, standing, how to install)."""
        found = self.binary.found
        return {
            "claude_found": found,
            "claude_standing": self.binary.standing,
            "claude_install_hint": "" if found else INSTALL_LINE,
        }

    async def _tell_version(self, version: str) -> None:
        """Claude Code was updated (or installed): the relay hears it now (a later hello carries
        it anyway)."""
        self.link.device = self.link.device.model_copy(
            update={"claude_version": version, **self._claude_standing()}
        )
        with contextlib.suppress(NotLinked):
            await self.link.send(DeviceUpdate(device=self.link.device))

    def _offer_folders(self, folders: list[str]) -> None:
        """The folders the next hello offers a new session first."""
        self.link.device.recent_folders = folders

    async def _on_linked(self, welcome: Welcome) -> None:
        # Which Mac this is, for the commands run here (`search --here`, `open`); not a secret.
        with contextlib.suppress(OSError):
            write_text(self.data / DEVICE_ID_FILE, welcome.device_id + "\n")
        self.sessions.rewind()
        self._wake_transcripts.set()
        for rt in self.runtimes.values():
            rt.sent.clear()  # send the whole live side again
            rt.wake_screen.set()
        for record in self.sessions.records():  # delete_history may run meanwhile
            if record.id not in self.runtimes:
                await self.sessions.driver(record).send_update(force=True)

    def _on_unlinked(self) -> None:
        self.sessions.rewind()

    # -- the pumps ------------------------------------------------------------------------

    async def _watch_loop(self) -> None:
        """Wake the transcript reader as soon as Claude Code writes (the 700 ms poll stays as a
        safety net: file events can be missed, e.g. on network file systems). inotify on Linux
        (no cost while idle), watchfiles elsewhere: see agent/watch.py."""
        root = self.options.claude_home / "projects"
        root.mkdir(parents=True, exist_ok=True)
        try:
            async for _ in changes(root, self._stopping):
                self._wake_transcripts.set()
        except (OSError, RuntimeError) as exc:
            _log.warning("file watching is off (%s); transcripts are read every %s s", exc,
                         self.config.float("transcript_read_interval"))  # fmt: skip

    async def _save_loop(self) -> None:
        while True:
            await asyncio.sleep(REGISTRY_SAVE_EVERY)
            self.sessions.note_alive(time.time())
            if not self.binary.found:
                await self.binary.look_again()  # installed since? the relay hears it at once
            elif time.monotonic() >= self._next_login_check:
                # Logged in at the desk since? (a process only while it said "no login")
                self._next_login_check = time.monotonic() + LOGIN_RECHECK_EVERY
                await self.binary.recheck_login()
            if self.sessions.dirty:
                await asyncio.to_thread(self.sessions.save)

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
                    await self.send_transcript(rt)
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

    async def send_transcript(self, rt: SessionDriver) -> None:
        """Send the session's new marker lines and transcript lines, batch by batch."""
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
                    self.sessions.changed()

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
        self.sessions.changed()

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
                # A list from before the session's latest launch may show the pane of its
                # previous claude (dead, under the same name): never read as this one's.
                stale = panes is None or woken or now - panes_at > PANES_TTL
                stale = stale or panes_at <= rt.record.launched_at
                if stale or rt.name not in (panes or {}):
                    panes_at = time.time()
                    panes = await self.mux.panes()
                rt.wake_screen.clear()
                assert panes is not None
                pane = panes.get(rt.name)
                if rt.launching or (pane is None and panes_at <= rt.record.launched_at):
                    continue  # a list asked for before this launch says nothing of its pane
                await self.read_session(rt, pane is not None and not pane.dead, now, pane)

    async def read_session(
        self, rt: SessionDriver, alive: bool, now: float, pane: Pane | None = None
    ) -> None:
        """One read of one session's screen, when the loop's schedule says it is due."""
        await rt.read(alive, now, pane)
