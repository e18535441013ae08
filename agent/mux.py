"""The terminal multiplexer: tmux (or zeropty, which takes tmux's command line) on its own socket.

Sessions live on a dedicated server (``-L claude-bridge``, no config file), never the person's own
tmux, and outlive the agent. Creating and killing sessions goes through libtmux; the hot path —
reading screens and sending keys many times a second across many sessions — goes through one
long-lived tmux *control mode* client, so a screen read costs a line written to a pipe rather
than a new process.

Text reaches a pane one way only: ``paste`` (a bracketed paste of wire/pastetext.py's ``clean``
text, so no control character in it can act as a key). ``send_keys`` presses named keys; its
literal-text group (``["-l", text]``, cards.keys_for's) is pasted, never typed as keys.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import re
import shlex
import shutil
import signal
import tempfile
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import libtmux

from agent.errors import MuxError as MuxError
from agent.errors import PaneGone as PaneGone
from wire import pastetext
from wire.tasks import TaskSet

_log = logging.getLogger("agent.mux")

SESSION_PREFIX = "cb-"
CONTROL_SESSION = "_cb_control"
DEFAULT_SOCKET = "claude-bridge"
# After tmux's hangup, claude finishes writing its transcript before it exits (a few hundred ms):
# ``kill`` waits that long at most, then kills it, so a relaunch never runs beside it.
EXIT_WAIT = 3.0
EXIT_POLL = 0.05
_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")
_BLOCK = re.compile(r"^%(begin|end|error) (\d+) (\d+) (\d+)$")
SIZE_FORMAT = "#{pane_width}\t#{pane_height}\t#{cursor_x}\t#{cursor_y}"
DEAD_FORMAT = "#{pane_dead_status}\t#{pane_width}"
DEAD_STATUS_WAIT = 0.5  # for tmux to give a dead pane's exit status (it may never: then none)
HISTORY_LINES = 2000  # of a dead pane's scrollback read (startfail reads as many at most)
# The key names the agent presses (tmux's names: BTab is Shift+Tab) and an option's digits. tmux
# types any other word given to send-keys as its characters: text never goes that way.
KEY_NAMES = frozenset({"Enter", "Escape", "Tab", "BTab", "Up", "Down", "Left", "Right", "Space"})
_OPTION_KEY = re.compile(r"^[0-9]{1,2}$")
LITERAL = "-l"  # a key group ``["-l", text]`` is text: pasted (cards.keys_for)
_buffers = itertools.count(1)
PANE_FORMAT = (
    "#{session_name}\t#{pane_pid}\t#{pane_dead}\t#{pane_width}\t#{pane_height}\t"
    "#{cursor_x}\t#{cursor_y}\t#{pane_current_command}"
)


@dataclass(frozen=True)
class Pane:
    name: str
    pid: int
    dead: bool
    width: int
    height: int
    cursor: tuple[int, int]
    command: str


@dataclass(frozen=True)
class LastScreen:
    """A dead pane as its program left it (agent/startfail.py reads it): the screen, the same
    with its scrollback (tmux scrolls the screen up one line as the pane dies, so a one-line
    message may be only there), the exit status as tmux gave it ("" when it missed it) and
    the pane's width."""

    screen: str
    history: str
    status: str
    width: int


@dataclass(frozen=True)
class Capture:
    text: str  # rows with SGR escapes, as `capture-pane -e -p` prints them
    width: int
    height: int
    cursor: tuple[int, int]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone (or the number is someone else's now)
        return False
    return True


async def wait_exited(pid: int, seconds: float) -> None:
    """Wait for ``pid`` to exit; past ``seconds``, kill it and wait as long again."""
    loop = asyncio.get_running_loop()
    for last_resort in (False, True):
        if last_resort:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        deadline = loop.time() + seconds
        while _alive(pid) and loop.time() < deadline:
            await asyncio.sleep(EXIT_POLL)
        if not _alive(pid):
            return


def quote(arg: str) -> str:
    """One argument in tmux's command syntax (control mode reads commands like a config file)."""
    if _SAFE.match(arg):
        return arg
    if any(ch in arg for ch in "\n\r\x00"):
        raise ValueError("a tmux argument cannot hold a line break; paste the text instead")
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return f'"{escaped}"'


def parse_panes(lines: Sequence[str]) -> dict[str, Pane]:
    """``list-panes -a -F PANE_FORMAT`` output → the first pane of each bridge session."""
    panes: dict[str, Pane] = {}
    for line in lines:
        parts = line.split("\t")
        if len(parts) < 8 or not parts[0].startswith(SESSION_PREFIX) or parts[0] in panes:
            continue
        name, pid, dead, width, height, cx, cy, command = parts[:8]
        panes[name] = Pane(
            name=name,
            pid=int(pid or 0),
            dead=dead == "1",
            width=int(width),
            height=int(height),
            cursor=(int(cy), int(cx)),
            command=command,
        )
    return panes


def _no_status(info: Sequence[str]) -> bool:
    return not (info and info[0].partition("\t")[0].strip())


def parse_size(lines: Sequence[str], name: str) -> tuple[int, int, tuple[int, int]]:
    """``display-message -p SIZE_FORMAT`` output → (width, height, (row, column)).

    tmux answers a target that no longer exists with empty fields (and no error): that is
    ``PaneGone``, as every other read of a gone pane is."""
    fields = lines[0].split("\t") if lines else []
    if len(fields) != 4 or not all(f.isdigit() for f in fields):
        raise PaneGone(f"the terminal {name} is gone (claude exited or tmux was stopped)")
    width, height, cx, cy = (int(f) for f in fields)
    return width, height, (cy, cx)


def check_key(key: str) -> str:
    """A key name ``send_keys`` may press (KEY_NAMES, or an option's number); else ValueError."""
    if key in KEY_NAMES or _OPTION_KEY.match(key):
        return key
    raise ValueError(f"{key[:40]!r} is not a key the agent presses; text is pasted, not typed")


def session_name(session_id: str) -> str:
    return SESSION_PREFIX + session_id


def find_program(preference: str = "auto") -> str:
    """zeropty when installed (unless tmux is forced), else tmux."""
    if preference not in {"auto", "tmux", "zeropty"}:
        raise MuxError(f"unknown multiplexer {preference!r}: use tmux or zeropty")
    if preference in {"auto", "zeropty"}:
        found = shutil.which("zeropty")
        if found:
            return found
        if preference == "zeropty":
            raise MuxError("zeropty is not on PATH; install it or use --mux tmux")
    found = shutil.which("tmux")
    if not found:
        raise MuxError("tmux is not installed: install it (brew install tmux / apt install tmux)")
    return found


class ControlClient:
    """A tmux control-mode client: commands in, ``%begin``/``%end`` blocks out, in order."""

    def __init__(self, program: str, socket_name: str) -> None:
        self.program = program
        self.socket_name = socket_name
        self._proc: asyncio.subprocess.Process | None = None
        self._tasks = TaskSet("tmux control client", _log)  # its reader
        self._pending: deque[asyncio.Future[list[str]]] = deque()
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def start(self) -> None:
        self._proc = await asyncio.create_subprocess_exec(
            self.program, "-L", self.socket_name, "-f", os.devnull, "-C",
            "new-session", "-A", "-s", CONTROL_SESSION, "-x", "80", "-y", "24",
            "while :; do sleep 3600; done",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        self._tasks.start(self._read(), name="reader")

    async def close(self) -> None:
        # Under the lock, so a command being sent as the agent stops cannot start a fresh tmux
        # client after this one is gone; once closed, commands are refused rather than reopening.
        async with self._lock:
            self._closed = True
            proc = self._proc
            self._proc = None
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, BrokenPipeError, ConnectionResetError):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 2)
            except TimeoutError:
                proc.kill()
                await proc.wait()
        await self._tasks.close()
        self._fail_all(MuxError("the tmux control client closed"))

    async def run(self, *args: str, timeout: float = 5.0) -> list[str]:
        async with self._lock:
            if self._closed:
                raise MuxError("the tmux control client is closed")
            if not self.alive:
                await self.start()
            proc = self._proc
            assert proc is not None and proc.stdin is not None
            future: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
            self._pending.append(future)
            try:
                proc.stdin.write((" ".join(quote(a) for a in args) + "\n").encode())
                await proc.stdin.drain()
            except (BrokenPipeError, ConnectionResetError) as exc:
                # The reader may have failed every pending command already when tmux ended.
                with contextlib.suppress(ValueError):
                    self._pending.remove(future)
                raise MuxError(f"tmux went away: {exc}") from exc
        return await asyncio.wait_for(future, timeout)

    async def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        block: list[str] | None = None
        ours = False
        try:
            while True:
                raw = await stdout.readline()
                if not raw:
                    break
                line = raw.decode("utf-8", "replace").rstrip("\n")
                match = _BLOCK.match(line)
                if match and match.group(1) == "begin":
                    block = []
                    ours = int(match.group(4)) & 1 == 1  # flag 1: a command from this client
                    continue
                if match and block is not None:
                    if ours and self._pending:
                        future = self._pending.popleft()
                        if not future.done():
                            if match.group(1) == "end":
                                future.set_result(block)
                            else:
                                future.set_exception(MuxError(" ".join(block) or "tmux error"))
                    block = None
                    continue
                if block is not None:
                    block.append(line)
                # Anything else is a notification (%output, %window-add …): not ours to act on.
        finally:
            self._fail_all(MuxError("tmux control client ended"))

    def _fail_all(self, exc: Exception) -> None:
        while self._pending:
            future = self._pending.popleft()
            if not future.done():
                future.set_exception(exc)


class Mux:
    def __init__(self, program: str = "tmux", socket_name: str = DEFAULT_SOCKET) -> None:
        self.program = program
        self.socket_name = socket_name
        self.server = libtmux.Server(
            socket_name=socket_name, config_file=os.devnull, tmux_bin=program
        )
        self.control = ControlClient(program, socket_name)

    async def close(self) -> None:
        await self.control.close()

    async def new_session(
        self,
        name: str,
        cwd: str | Path,
        argv: Sequence[str],
        env: Mapping[str, str],
        width: int,
        height: int,
    ) -> Pane:
        """Start ``argv`` in a new detached session of the given size, with ``env`` added."""

        def create() -> None:
            if self.server.has_session(name):
                raise MuxError(f"a terminal named {name} already exists")
            self.server.new_session(
                session_name=name,
                start_directory=str(cwd),
                window_command=shlex.join(argv),
                x=width,
                y=height,
                environment=dict(env),
            )
            # Keep the pane after claude exits, so its last screen and exit can be read.
            self.server.cmd("set-option", "-t", name, "remain-on-exit", "on")

        # For every pane of this server (its own, never the person's tmux): a claude that exits
        # within a moment of its start, before the session's own option is set, stays readable.
        with contextlib.suppress(MuxError):
            await self.control.run("set-option", "-g", "remain-on-exit", "on")
        try:
            await asyncio.to_thread(create)
        except libtmux.exc.LibTmuxException as exc:
            raise MuxError(f"tmux could not start the session: {exc}") from exc
        panes = await self.panes()
        if name not in panes:
            raise PaneGone(f"the terminal {name} closed right after it started")
        return panes[name]

    async def panes(self) -> dict[str, Pane]:
        try:
            lines = await self.control.run("list-panes", "-a", "-F", PANE_FORMAT)
        except MuxError:
            return {}
        return parse_panes(lines)

    async def capture(self, name: str, pane: Pane | None = None) -> Capture:
        """The pane's screen; ``pane`` (from a `panes()` call just made) saves a round trip."""
        try:
            if pane is None:
                info = await self.control.run("display-message", "-p", "-t", name, SIZE_FORMAT)
                width, height, cursor = parse_size(info, name)
            else:
                width, height, cursor = pane.width, pane.height, pane.cursor
            rows = await self.control.run("capture-pane", "-p", "-e", "-t", name)
        except PaneGone:
            raise
        except MuxError as exc:
            raise PaneGone(f"cannot read {name}: {exc}") from exc
        return Capture("\n".join(rows), width, height, cursor)

    async def last_screen(self, name: str) -> LastScreen:
        """What a dead pane shows, plain (no colours), with its scrollback; PaneGone when the
        pane itself is gone."""
        try:
            info = await self.control.run("display-message", "-p", "-t", name, DEAD_FORMAT)
            deadline = asyncio.get_running_loop().time() + DEAD_STATUS_WAIT
            while _no_status(info) and asyncio.get_running_loop().time() < deadline:
                # tmux may not have reaped the program yet: its status comes a moment later
                await asyncio.sleep(EXIT_POLL)
                info = await self.control.run("display-message", "-p", "-t", name, DEAD_FORMAT)
            screen = await self.control.run("capture-pane", "-p", "-t", name)
            history = await self.control.run(
                "capture-pane", "-p", "-S", f"-{HISTORY_LINES}", "-E", "-", "-t", name
            )
        except MuxError as exc:
            raise PaneGone(f"cannot read {name}: {exc}") from exc
        status, _, width = (info[0] if info else "").partition("\t")
        return LastScreen(
            "\n".join(screen),
            "\n".join(history),
            status.strip(),
            int(width) if width.strip().isdigit() else 0,
        )

    async def send_keys(self, name: str, groups: Sequence[Sequence[str]]) -> None:
        """Press key groups as `keys_for` gives them, in order; a group ``["-l", text]`` is text
        and is pasted (``paste``, no Enter). Any other word is refused (``check_key``: tmux
        would type it as characters) before a key of any group is pressed."""
        for group in groups:
            if group and group[0] != LITERAL:
                for key in group:
                    check_key(key)
        for group in groups:
            if not group:
                continue
            if group[0] == LITERAL:
                await self.paste(name, "".join(group[1:]), enter=False)
                continue
            try:
                await self.control.run("send-keys", "-t", name, *group)
            except MuxError as exc:
                raise PaneGone(f"cannot type into {name}: {exc}") from exc

    async def paste(self, name: str, text: str, *, enter: bool = True) -> None:
        """Paste ``text`` as one block (bracketed paste), then Enter.

        The text is ``pastetext.clean``: no control in it (ESC, Ctrl-C, the paste's own end
        ``ESC [ 2 0 1 ~``) can end the paste or act as a key. Nothing left: nothing pasted."""
        text = pastetext.clean(text)
        try:
            if text:
                await self._paste_buffer(name, text)
            if enter:
                await self.control.run("send-keys", "-t", name, "Enter")
        except MuxError as exc:
            raise PaneGone(f"cannot paste into {name}: {exc}") from exc

    async def _paste_buffer(self, name: str, text: str) -> None:
        # A file, not set-buffer: a tmux command line cannot hold a line break.
        buffer = f"cb-paste-{os.getpid()}-{next(_buffers)}"
        fd, path = tempfile.mkstemp(prefix="cb-paste-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            await self.control.run("load-buffer", "-b", buffer, path)
            # -p: bracketed (claude takes it as one block); -r: line breaks stay LF, so a typed
            # answer keeps them as written (as CR, the "Type something." field would keep a CR).
            await self.control.run("paste-buffer", "-p", "-r", "-d", "-b", buffer, "-t", name)
        except MuxError:
            with contextlib.suppress(MuxError):  # a paste that failed leaves no buffer behind
                await self.control.run("delete-buffer", "-b", buffer)
            raise
        finally:
            with contextlib.suppress(OSError):
                os.unlink(path)

    async def kill(self, name: str) -> None:
        """End the terminal and the program in it; return once that program has exited."""
        pane = (await self.panes()).get(name)
        with contextlib.suppress(MuxError):
            await self.control.run("kill-session", "-t", name)
        if pane is not None and not pane.dead and pane.pid > 1:
            await wait_exited(pane.pid, EXIT_WAIT)

    async def kill_server(self) -> None:
        await self.control.close()
        with contextlib.suppress(libtmux.exc.LibTmuxException):
            await asyncio.to_thread(self.server.kill)
