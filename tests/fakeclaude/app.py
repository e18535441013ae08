"""The main loop: terminal, keys, the prompt box, dialogs, the status file, and turns.

One thread. ``select`` waits on stdin (and a signal pipe) with a timeout set by the next
timer, so an idle fake uses no CPU. A turn (``scenarios.py``) is a generator that yields
``Sleep(seconds)`` or a ``Dialog``; the loop resumes it when the time has passed or when the
dialog has an answer, and throws ``Interrupted`` into it on Esc / Ctrl-C.

Knobs (environment): FAKECLAUDE_STARTUP_DEAF (0.5 s: keys after the first frame are dropped),
FAKECLAUDE_DIALOG_DEAF (0.01 s: keys right after a dialog appears are dropped),
FAKECLAUDE_SLOW_SECONDS (5), FAKECLAUDE_THINK_SECONDS (0.3: how long a plain answer takes),
FAKECLAUDE_NOTIFY_SECONDS (6: Notification hook when a dialog waits), FAKECLAUDE_HINT_SECONDS
(10: how long ``← for agents`` shows), FAKECLAUDE_SPLIT_WRITES / FAKECLAUDE_SPLIT_DELAY
(transcript.py).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import select
import signal
import sys
import termios
import time
import tty
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import screens as S
from .ansi import truncate
from .hooks import Context, Hooks, Result, payload
from .transcript import Conversation, slug

VERSION = "2.1.328"
MODES = {
    "manual": "default",
    "default": "default",
    "plan": "plan",
    "acceptEdits": "acceptEdits",
    "auto": "auto",
    "bypassPermissions": "bypassPermissions",
    "dontAsk": "dontAsk",
}
SHIFT_TAB_CYCLE = ["default", "acceptEdits", "plan", "auto"]


def env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


class Interrupted(Exception):
    """Thrown into a turn by Esc or Ctrl-C."""


@dataclass
class Sleep:
    seconds: float


# ---------------------------------------------------------------- keys


@dataclass(frozen=True)
class Key:
    name: str  # "char", "paste", "enter", "esc", "up", "down", "left", "right", "tab", "btab", …
    text: str = ""


CONTROL = {
    "\r": "enter",
    "\n": "enter",
    "\t": "tab",
    "\x7f": "backspace",
    "\x08": "backspace",
    "\x03": "ctrl-c",
    "\x04": "ctrl-d",
    "\x15": "ctrl-u",
    "\x0f": "ctrl-o",
    "\x01": "home",
    "\x05": "end",
}
CSI_FINAL = {
    "A": "up",
    "B": "down",
    "C": "right",
    "D": "left",
    "Z": "btab",
    "H": "home",
    "F": "end",
}
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def decode(buf: str, final: bool) -> tuple[list[Key], str]:
    """Split terminal input into keys; returns the keys and an incomplete tail to keep.

    A lone ESC is the Escape key only once nothing follows it (``final``): the caller waits a
    few milliseconds before deciding, so ``\\x1b[B`` (Down) is not read as Escape + ``[B``.
    """
    keys: list[Key] = []
    i = 0
    while i < len(buf):
        ch = buf[i]
        if buf.startswith(PASTE_START, i):
            end = buf.find(PASTE_END, i)
            if end < 0:
                return keys, buf[i:]
            keys.append(
                Key(
                    "paste",
                    buf[i + len(PASTE_START) : end].replace("\r\n", "\n").replace("\r", "\n"),
                )
            )
            i = end + len(PASTE_END)
        elif ch == "\x1b":
            rest = buf[i + 1 :]
            if not rest:
                if not final:
                    return keys, buf[i:]
                keys.append(Key("esc"))
                i += 1
            elif rest[0] in "[O":
                j = i + 2
                while j < len(buf) and not ("@" <= buf[j] <= "~"):
                    j += 1
                if j >= len(buf):
                    if not final:
                        return keys, buf[i:]
                    i = len(buf)
                    continue
                seq = buf[i + 2 : j + 1]
                name = CSI_FINAL.get(seq[-1])
                if seq.endswith("~"):
                    name = {"3~": "delete", "1~": "home", "4~": "end"}.get(seq)
                if name:
                    keys.append(Key(name))
                i = j + 1
            elif rest[0] == "\x1b":
                keys.append(Key("esc"))
                i += 1
            else:  # ESC then a plain key (or Alt+key): read as Escape followed by that key
                keys.append(Key("esc"))
                i += 1
        elif ch in CONTROL:
            keys.append(Key(CONTROL[ch]))
            i += 1
        elif ord(ch) < 32:
            i += 1
        else:
            keys.append(Key("char", ch))
            i += 1
    return keys, ""


# ---------------------------------------------------------------- dialogs


class Dialog:
    """An open card at the bottom of the screen; ``key`` returns a result or None (still open)."""

    kind = "permission"
    notification = "Claude needs your permission"

    def rows(self) -> list[str]:
        raise NotImplementedError

    def key(self, key: Key) -> Any:
        raise NotImplementedError


class NumberedDialog(Dialog):
    """Bash / Write permission and plan approval: digits pick at once, arrows + Enter."""

    results: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.cursor = 0

    def key(self, key: Key) -> Any:
        n = len(self.results)
        if key.name == "char" and key.text.isdigit() and 1 <= int(key.text) <= n:
            return self.results[int(key.text) - 1]
        if key.name == "down":
            self.cursor = min(self.cursor + 1, n - 1)
        elif key.name == "up":
            self.cursor = max(self.cursor - 1, 0)
        elif key.name == "enter":
            return self.results[self.cursor]
        elif key.name in ("esc", "ctrl-c"):
            return self.results[-1]
        return None


class BashDialog(NumberedDialog):
    results = ("yes", "yes-folder", "yes-auto", "no")

    def __init__(self, cwd: str, command: str, description: str) -> None:
        super().__init__()
        self.cwd, self.command, self.description = cwd, command, description
        self.amend: str | None = None

    def rows(self) -> list[str]:
        return S.bash_dialog(self.cwd, self.command, self.description, self.cursor, self.amend)

    def key(self, key: Key) -> Any:
        if self.amend is not None:  # option 1 is a text field after Tab
            if key.name in ("char", "paste"):
                self.amend += key.text
                return None
            if key.name == "backspace":
                self.amend = self.amend[:-1]
                return None
            if key.name == "enter":
                return ("amend", self.amend) if self.amend else "yes"
            if key.name in ("esc", "ctrl-c"):
                return "no"
            if key.name in ("up", "down"):
                self.amend = None
        elif key.name == "tab" and self.cursor == 0:
            self.amend = ""
            return None
        return super().key(key)


class WriteDialog(NumberedDialog):
    results = ("yes", "yes-accept-edits", "no")

    def __init__(self, relpath: str, lines: list[str]) -> None:
        super().__init__()
        self.relpath, self.lines = relpath, lines

    def rows(self) -> list[str]:
        return S.write_dialog(self.relpath, self.lines, self.cursor)


class PlanDialog(NumberedDialog):
    kind = "plan"
    notification = "Claude Code needs your approval for the plan"
    results = ("approve", "reject")

    def rows(self) -> list[str]:
        return S.plan_dialog(self.cursor)


class AskDialog(Dialog):
    """AskUserQuestion: one question, or several with a tab bar and a review step."""

    kind = "question"

    def __init__(self, questions: list[S.Question]) -> None:
        self.questions = questions
        self.active = 0
        self.cursor = 0
        self.ticked: list[set[int]] = [set() for _ in questions]
        self.answers: list[str | None] = [None] * len(questions)
        self.text: str | None = None
        self.typed = False

    def rows(self) -> list[str]:
        return S.ask_dialog(
            self.questions, self.active, self.cursor, self.ticked, self.answers, self.text
        )

    def _done(self) -> dict[str, Any]:
        return {
            "answers": dict(zip([q.question for q in self.questions], self.answers, strict=True)),
            "typed": self.typed,
        }

    def _answered(self, answer: str) -> Any:
        self.answers[self.active] = answer
        self.text = None
        if len(self.questions) == 1:
            return self._done()
        self._go(self.active + 1)
        return None

    def _go(self, tab: int) -> None:
        self.active = max(0, min(tab, len(self.questions)))
        self.cursor = 0
        for n, q in enumerate(self.questions):
            if q.multi:
                picked = [label for i, (label, _) in enumerate(q.options) if i in self.ticked[n]]
                self.answers[n] = ", ".join(picked) if picked else None

    def key(self, key: Key) -> Any:
        if key.name in ("esc", "ctrl-c"):
            return "declined"
        if self.active == len(self.questions):
            return self._review_key(key)
        q = self.questions[self.active]
        n = len(q.options)
        if self.text is not None:
            if key.name in ("char", "paste"):
                self.text += key.text
            elif key.name == "backspace":
                self.text = self.text[:-1]
            elif key.name == "enter" and self.text:
                self.typed = True
                return self._answered(self.text)
            elif key.name in ("up", "down"):
                self.text = None
                self.cursor = max(0, min(self.cursor + (1 if key.name == "down" else -1), n))
            return None
        last = n + 1 if q.multi else n
        if key.name == "char" and key.text.isdigit():
            d = int(key.text)
            if 1 <= d <= n:
                if q.multi:
                    self.ticked[self.active] ^= {d - 1}
                    return None
                return self._answered(q.options[d - 1][0])
            if d == n + 1:
                self.cursor, self.text = n, ""
            return None
        if key.name == "down":
            self.cursor = min(self.cursor + 1, last)
        elif key.name == "up":
            self.cursor = max(self.cursor - 1, 0)
        elif key.name in ("tab", "right") and len(self.questions) > 1:
            self._go(self.active + 1)
        elif key.name in ("btab", "left") and len(self.questions) > 1:
            self._go(self.active - 1)
        elif key.name == "enter":
            if self.cursor < n:
                if q.multi:
                    self.ticked[self.active] ^= {self.cursor}
                    return None
                return self._answered(q.options[self.cursor][0])
            if self.cursor == n:
                self.text = ""
            elif q.multi:
                self._go(self.active + 1)
        return None

    def _review_key(self, key: Key) -> Any:
        if key.name in ("btab", "left"):
            self._go(self.active - 1)
        elif key.name == "up":
            self.cursor = 0
        elif key.name == "down":
            self.cursor = 1
        elif (key.name == "char" and key.text == "1") or (key.name == "enter" and self.cursor == 0):
            return self._done() if all(a is not None for a in self.answers) else None
        elif (key.name == "char" and key.text == "2") or (key.name == "enter" and self.cursor == 1):
            return "declined"
        return None


# ---------------------------------------------------------------- the app


@dataclass
class Spin:
    verb: str
    started: float
    tokens: int = 0
    hook: str | None = None
    tick: int = 0


@dataclass
class Options:
    settings: str | None = None
    session_id: str | None = None
    resume: str | None = None
    continue_: bool = False
    permission_mode: str | None = None
    model: str | None = None
    version: bool = False
    ignored: list[str] = field(default_factory=list)


def parse_args(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(prog="claude", add_help=False, allow_abbrev=False)
    parser.add_argument("--settings")
    parser.add_argument("--session-id")
    parser.add_argument("-r", "--resume", nargs="?", const="")
    parser.add_argument("-c", "--continue", dest="continue_", action="store_true")
    parser.add_argument("--permission-mode")
    parser.add_argument("--model")
    parser.add_argument("-v", "--version", action="store_true")
    args, ignored = parser.parse_known_args(argv)  # unknown flags are ignored
    return Options(
        args.settings,
        args.session_id,
        args.resume,
        args.continue_,
        args.permission_mode,
        args.model,
        args.version,
        ignored=ignored,
    )


def now_ms() -> int:
    return int(time.time() * 1000)


class App:
    def __init__(self, opts: Options) -> None:
        self.opts = opts
        self.home = Path(os.environ.get("HOME") or Path.home())
        self.cwd = os.getcwd()
        self.mode = MODES.get(opts.permission_mode or "auto", "default")
        self.startup_deaf = env_float("FAKECLAUDE_STARTUP_DEAF", 0.5)
        self.dialog_deaf = env_float("FAKECLAUDE_DIALOG_DEAF", 0.01)
        self.slow_seconds = env_float("FAKECLAUDE_SLOW_SECONDS", 5.0)
        self.think_seconds = env_float("FAKECLAUDE_THINK_SECONDS", 0.3)
        self.notify_seconds = env_float("FAKECLAUDE_NOTIFY_SECONDS", 6.0)
        self.hint_seconds = env_float("FAKECLAUDE_HINT_SECONDS", 10.0)
        self.hooks = Hooks(opts.settings, self.home, self.cwd)
        self.screen = S.Screen(S.display_path(self.cwd, str(self.home)))
        self.session_id = opts.resume or opts.session_id or str(uuid.uuid4())
        self.source = "resume" if opts.resume else "startup"
        self.conv = Conversation(self.home, self.cwd, self.session_id, self.mode)
        self.prompt_id: str | None = None
        self.pid = os.getpid()
        self.started = time.monotonic()
        self.started_ms = now_ms()
        self.status: str | None = None
        self.status_changed_ms = self.started_ms
        # what is on screen
        self.input = ""
        self.live: list[str] = []
        self.spin: Spin | None = None
        self.dialog: Dialog | None = None
        self.trust_cursor: int | None = None
        self.footer_note: str | None = None  # "Press Ctrl-D again to exit" …
        self.note_until = 0.0
        self.tool_used = False
        self.tasks_hint = False
        self.background_tasks: list[dict[str, Any]] = []
        self.turn_prompt = ""
        self.turn_output = False
        self.frame: list[str] | None = None
        self.clear_next = True
        # turns
        self.turn: Generator[Any, Any, Any] | None = None
        self.wake_at: float | None = None
        self.queue: list[str] = []
        self.notify_at: float | None = None
        self.deaf_until = 0.0
        self.pending = ""
        self.esc_deadline: float | None = None
        self.exit_code: int | None = None
        self.exit_text = ""
        self.signal_r = -1

    # ------------------------------------------------------------ context for hooks

    @property
    def transcript_path(self) -> str:
        return str(self.conv.path)

    def ctx(self) -> Context:
        return Context(self.session_id, self.transcript_path, self.cwd, self.prompt_id, self.mode)

    def hook(self, event: str, tool_name: str | None = None, **fields: Any) -> list[Result]:
        """Run the hooks of ``event``; a running spinner says ``running <event> hook`` meanwhile."""
        if not self.hooks.commands(event, tool_name):
            return []
        if "tool_name" not in fields and tool_name is not None:
            fields["tool_name"] = tool_name
        data = payload(event, self.ctx(), **fields)
        if self.spin is not None:
            self.spin.hook = event
            self.draw()
        try:
            return self.hooks.run(event, data, tool_name)
        finally:
            if self.spin is not None:
                self.spin.hook = None

    # ------------------------------------------------------------ status file

    @property
    def status_path(self) -> Path:
        return self.home / ".claude" / "sessions" / f"{self.pid}.json"

    def set_status(self, status: str | None, force: bool = False) -> None:
        if status == self.status and not force:
            return
        stamp = now_ms()
        if status != self.status:
            self.status_changed_ms = stamp
        self.status = status
        data = {
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "pid": self.pid,
            "startedAt": self.started_ms,
            "updatedAt": stamp,
            "statusUpdatedAt": self.status_changed_ms,
            "status": status,
            "name": None,
            "messagingSocketPath": f"/tmp/cc-socks/{self.pid}.sock",
        }
        path = self.status_path
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)

    def remove_status(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.status_path.unlink()

    # ------------------------------------------------------------ trust

    def trusted(self) -> bool:
        """As 2.1.332 decides it: the folder or one above it recorded as trusted, going up no
        further than the nearest folder holding a ``.git`` (its repository's top)."""
        data = self._claude_json()
        projects = data.get("projects") or {}
        path = Path(self.cwd)
        for folder in (path, *path.parents):
            if (projects.get(str(folder)) or {}).get("hasTrustDialogAccepted"):
                return True
            if os.path.lexists(folder / ".git"):
                return False
        return False

    def _claude_json(self) -> dict[str, Any]:
        try:
            data = json.loads((self.home / ".claude.json").read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def accept_trust(self) -> None:
        data = self._claude_json()
        project = data.setdefault("projects", {}).setdefault(self.cwd, {})
        project["hasTrustDialogAccepted"] = True
        path = self.home / ".claude.json"
        tmp = path.with_name(".claude.json.tmp")
        tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
        os.replace(tmp, path)

    # ------------------------------------------------------------ drawing

    def bottom(self) -> list[str]:
        """The live area under the conversation: dialog, or spinner + prompt box + footer."""
        if self.dialog is not None:
            return self.dialog.rows()
        now = time.monotonic()
        busy = self.turn is not None
        rows: list[str] = []
        if busy and self.spin is not None:
            rows.append("")
            for text in self.queue:
                rows += [*S.queued_prompt(text), ""]
            spin = self.spin
            rows.append(
                S.spinner(
                    S.SPINNER_GLYPHS[spin.tick % len(S.SPINNER_GLYPHS)],
                    spin.verb,
                    now - spin.started,
                    spin.tokens,
                    spin.hook,
                )
            )
        menu = S.slash_menu(self.input) if not busy else []
        hint = now - self.started < self.hint_seconds
        if menu:
            rows += ["", *menu]
        else:
            rows.append(S.EFFORT if hint and not self.tool_used else "")
        rows.append(S.rule())
        if busy and self.queue and not self.input:
            rows.append(S.QUEUED_HINT)
        else:
            rows.append(S.input_row(self.input, busy=busy))
        rows.append(S.rule())
        if self.footer_note and now < self.note_until:
            rows.append(S.plain_footer(self.footer_note))
        else:
            rows.append(
                S.footer(
                    self.mode,
                    busy=busy,
                    draft=bool(self.input),
                    agents_hint=hint,
                    tasks=self.tasks_hint,
                )
            )
        return rows

    def compose(self) -> list[str]:
        if self.trust_cursor is not None:
            return S.trust_dialog(S.display_path(self.cwd, str(self.home)), self.trust_cursor)
        return self.screen.compose(self.live, self.bottom(), dialog=self.dialog is not None)

    def draw(self, force: bool = False) -> None:
        if self.exit_code is not None:
            return
        rows = self.compose()
        if rows == self.frame and not force and not self.clear_next:
            return
        self.frame = rows
        try:
            cols, lines = os.get_terminal_size(sys.stdout.fileno())
        except OSError:
            cols, lines = S.WIDTH, S.HEIGHT
        rows = rows[-lines:] if lines < len(rows) else rows
        out = ["\x1b[?25l"]
        if self.clear_next:
            out.append("\x1b[H\x1b[2J")
            self.clear_next = False
        for n, row in enumerate(rows):
            out.append(f"\x1b[{n + 1};1H\x1b[0m{truncate(row, cols)}\x1b[0m\x1b[K")
        with contextlib.suppress(OSError):  # a vanished terminal is noticed on the next read
            self.write("".join(out))

    def write(self, text: str) -> None:
        data = text.encode("utf-8")
        while data:
            try:
                n = os.write(sys.stdout.fileno(), data)
            except BlockingIOError:
                select.select([], [sys.stdout.fileno()], [], 1)
                continue
            data = data[n:]

    # ------------------------------------------------------------ session start / end

    def begin(self) -> None:
        """After trust: status file, SessionStart, the first idle screen."""
        self.set_status("idle")
        if self.source == "resume":
            self.replay()
            last = self._last_response_age()
            self.hook(
                "SessionStart",
                source="resume",
                seconds_since_last_response=last,
                context_tokens=10523,
                prompt_cache_likely_expired=False,
                estimated_cache_write_usd=0.0526,
            )
        else:
            self.hook("SessionStart", source="startup", model=self.opts.model or "claude-opus-5-5")
        self.draw()

    def _last_response_age(self) -> int:
        for line in reversed(self.conv.lines()):
            if line.get("type") == "assistant" and line.get("timestamp"):
                stamp = datetime.strptime(line["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                    tzinfo=UTC
                )
                return max(0, int(time.time() - stamp.timestamp()))
        return 0

    def replay(self) -> None:
        """``--resume``: draw the old prompts and answers again (``k_resume/04``)."""
        for line in self.conv.lines():
            message = line.get("message") or {}
            content = message.get("content")
            if line.get("isMeta") or line.get("isSidechain") or line.get("isCompactSummary"):
                continue
            if line.get("type") == "user" and isinstance(content, str):
                if content.startswith("<command-name>"):
                    name = content.split("<command-name>")[1].split("</command-name>")[0]
                    self.screen.add(S.user_prompt(name))
                elif not content.startswith("<"):
                    self.screen.add(S.user_prompt(content))
            elif line.get("type") == "user" and isinstance(content, list):
                texts = [b.get("text", "") for b in content if b.get("type") == "text"]
                if any(t.startswith("[Request interrupted by user") for t in texts):
                    self.screen.extend(len(self.screen.blocks) - 1, [S.INTERRUPTED])
            elif line.get("type") == "assistant" and isinstance(content, list):
                for block in content:
                    if block.get("type") == "text" and block.get("text"):
                        self.screen.add(S.assistant(block["text"]))

    def end(self, reason: str, message: str = "") -> None:
        """SessionEnd, then leave with ``message`` printed on a cleared screen."""
        self.hook("SessionEnd", reason=reason)
        self.exit_text = message
        self.exit_code = 0

    # ------------------------------------------------------------ turns

    def start_turn(self, gen: Generator[Any, Any, Any]) -> None:
        self.turn = gen
        self.step()

    def step(self, value: Any = None, exc: BaseException | None = None) -> None:
        assert self.turn is not None
        self.wake_at = None
        try:
            cmd = self.turn.throw(exc) if exc is not None else self.turn.send(value)
        except (StopIteration, Interrupted):
            self.turn = None
            self.after_turn()
            return
        if isinstance(cmd, Sleep):
            self.wake_at = time.monotonic() + cmd.seconds
        elif isinstance(cmd, Dialog):
            self.dialog = cmd
            self.set_status("waiting")
            self.deaf_until = max(self.deaf_until, time.monotonic() + self.dialog_deaf)
            self.notify_at = time.monotonic() + self.notify_seconds
        self.draw()

    def after_turn(self) -> None:
        from .scenarios import prompt_turn  # circular at import time

        self.live, self.spin = [], None
        if self.exit_code is not None:
            return
        if self.queue:
            text = self.queue.pop(0)
            self.conv.write("queue_dequeue")
            self.start_turn(prompt_turn(self, text, source="queued"))
            return
        self.set_status("idle")
        self.draw()

    def submit(self, text: str) -> None:
        from .scenarios import command_turn, prompt_turn

        self.input = ""
        command = text.strip()
        if command in ("/exit", "/quit"):
            self.prompt_id = str(uuid.uuid4())
            self.end(
                "prompt_input_exit",
                f"\x1b[2mResume this session with:\nclaude --resume {self.session_id}\x1b[0m",
            )
            return
        if command in ("/clear", "/compact"):
            self.start_turn(command_turn(self, command))
            return
        self.start_turn(prompt_turn(self, text))

    # ------------------------------------------------------------ keys

    def on_key(self, key: Key) -> None:
        self.notify_at = None
        if self.trust_cursor is not None:
            self.trust_key(key)
        elif self.dialog is not None:
            result = self.dialog.key(key)
            if result is not None:
                self.dialog = None
                self.set_status("busy")
                self.step(result)
        elif self.turn is not None:
            self.busy_key(key)
        else:
            self.idle_key(key)
        self.draw()

    def trust_key(self, key: Key) -> None:
        if key.name in ("down", "up"):
            self.trust_cursor = 1 if key.name == "down" else 0
        elif key.name == "enter" and self.trust_cursor == 1:
            self.trust_cursor = None
            self.accept_trust()
            self.clear_next = True
            self.begin()
        elif key.name in ("enter", "esc", "ctrl-c"):
            self.exit_text = "Claude Code didn't start because this folder isn't trusted."
            self.exit_code = 1

    def edit_input(self, key: Key) -> bool:
        if key.name in ("char", "paste"):
            self.input += key.text
        elif key.name == "backspace":
            self.input = self.input[:-1]
        elif key.name == "ctrl-u":
            self.input = ""
        else:
            return False
        return True

    def busy_key(self, key: Key) -> None:
        if self.edit_input(key):
            return
        if key.name == "enter" and self.input.strip():
            self.queue.append(self.input)
            self.conv.write("queue_enqueue", prompt=self.input)
            self.input = ""
        elif key.name in ("esc", "ctrl-c"):
            self.step(exc=Interrupted())

    def idle_key(self, key: Key) -> None:
        now = time.monotonic()
        if self.edit_input(key):
            self.footer_note = None
            return
        if key.name == "enter":
            if self.input.strip():
                self.submit(self.input)
        elif key.name == "ctrl-d" and not self.input:
            if self.footer_note == "Press Ctrl-D again to exit" and now < self.note_until:
                self.end("prompt_input_exit")
            else:
                self.footer_note, self.note_until = "Press Ctrl-D again to exit", now + 2.0
        elif key.name == "ctrl-c":
            if self.input:
                self.input = ""
            elif self.footer_note == "Press Ctrl-C again to exit" and now < self.note_until:
                self.end("prompt_input_exit")
            else:
                self.footer_note, self.note_until = "Press Ctrl-C again to exit", now + 2.0
        elif key.name == "btab":
            current = SHIFT_TAB_CYCLE.index(self.mode) if self.mode in SHIFT_TAB_CYCLE else -1
            self.mode = SHIFT_TAB_CYCLE[(current + 1) % len(SHIFT_TAB_CYCLE)]
            self.conv.mode = self.mode

    # ------------------------------------------------------------ the loop

    def timers(self) -> list[float]:
        now = time.monotonic()
        out = [t for t in (self.wake_at, self.notify_at, self.esc_deadline) if t is not None]
        if self.spin is not None and self.turn is not None:
            out.append(now + 0.25)
        if self.footer_note and self.note_until > now:
            out.append(self.note_until)
        hint_end = self.started + self.hint_seconds
        if hint_end > now:
            out.append(hint_end + 0.01)
        return out

    def run(self) -> int:
        fd = sys.stdin.fileno()
        old = termios.tcgetattr(fd) if os.isatty(fd) else None
        self.signal_r, signal_w = os.pipe()
        for pipe_fd in (self.signal_r, signal_w):
            fcntl.fcntl(pipe_fd, fcntl.F_SETFL, fcntl.fcntl(pipe_fd, fcntl.F_GETFL) | os.O_NONBLOCK)
        signal.set_wakeup_fd(signal_w)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGWINCH, signal.SIGINT):
            signal.signal(sig, lambda *_: None)
        try:
            if old is not None:
                tty.setraw(fd)
            self.write("\x1b[?2004h\x1b[?25l")
            if self.trusted():
                self.begin()
            else:
                self.trust_cursor = 0
            self.draw()
            self.deaf_until = time.monotonic() + self.startup_deaf
            self.loop(fd)
        finally:
            self.remove_status()
            # The leading blank row is what tmux scrolls away when it marks the pane dead, so the
            # message stays on the top rows as in n_permissionrequest_allow_hook/05.
            farewell = "\r\n" + self.exit_text.replace("\n", "\r\n") if self.exit_text else ""
            with contextlib.suppress(OSError, termios.error):  # the terminal may be gone already
                self.write("\x1b[?2004l\x1b[0m\x1b[H\x1b[2J" + farewell + "\x1b[?25h")
                if old is not None:
                    termios.tcsetattr(fd, termios.TCSADRAIN, old)
        return self.exit_code or 0

    def loop(self, fd: int) -> None:
        while self.exit_code is None:
            now = time.monotonic()
            timeout = max(0.0, min(self.timers(), default=now + 3600) - now)
            ready, _, _ = select.select([fd, self.signal_r], [], [], timeout)
            now = time.monotonic()
            if self.signal_r in ready and self.on_signals():
                return
            if fd in ready:
                try:
                    data = os.read(fd, 65536)
                except OSError:
                    data = b""
                if not data:  # the terminal went away
                    self.end("other")
                    return
                if now >= self.deaf_until:
                    self.pending += data.decode("utf-8", errors="replace")
            final = self.esc_deadline is not None and now >= self.esc_deadline
            keys, self.pending = decode(self.pending, final)
            self.esc_deadline = (
                (now + 0.05)
                if self.pending and self.esc_deadline is None
                else (self.esc_deadline if self.pending else None)
            )
            for key in keys:
                if self.exit_code is not None:
                    return
                self.on_key(key)
            self.on_timers(time.monotonic())

    def on_signals(self) -> bool:
        try:
            got = os.read(self.signal_r, 64)
        except BlockingIOError:
            return False
        signals = set(got)
        if signals & {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}:
            self.end("other")
            return True
        self.clear_next = True
        self.draw()
        return False

    def on_timers(self, now: float) -> None:
        if (
            self.wake_at is not None
            and now >= self.wake_at
            and self.turn is not None
            and self.dialog is None
        ):
            self.step()
        if self.notify_at is not None and now >= self.notify_at and self.dialog is not None:
            self.notify_at = None
            self.hook(
                "Notification",
                message=self.dialog.notification,
                notification_type="permission_prompt",
            )
        if self.spin is not None:
            self.spin.tick += 1
        self.draw()


def auth_status() -> int:
    """``claude auth status`` as 2.1.332 answers it (tests/fixtures/claude/2.1.332/auth_status/):
    JSON, from the environment only; exit 1 when not logged in."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        found = {"loggedIn": True, "authMethod": "api_key", "apiKeySource": "ANTHROPIC_API_KEY"}
    elif os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        found = {"loggedIn": True, "authMethod": "oauth_token"}
    else:
        found = {"loggedIn": False, "authMethod": "none"}
    print(json.dumps({**found, "apiProvider": "firstParty", "loginExpiresAt": None}, indent=2))
    return 0 if found["loggedIn"] else 1


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:2] == ["auth", "status"]:
        return auth_status()
    opts = parse_args(given)
    if opts.version:
        print(f"{VERSION} (Claude Code)")
        return 0
    with contextlib.suppress(Exception):  # the process name tmux shows as pane_current_command
        import ctypes

        ctypes.CDLL(None).prctl(15, b"claude", 0, 0, 0)
    # A cold start of the real binary (a first run after an install) shows a blank screen
    # for seconds before its first frame.
    time.sleep(env_float("FAKECLAUDE_LOAD_SECONDS", 0.0))
    # Claude Code refusing to start (a fresh HOME offline, a bad flag, …): the words the real
    # one prints, from a file while it exists (deleting it "fixes the login"), then an exit.
    refusal = os.environ.get("FAKECLAUDE_START_EXIT")
    if refusal and Path(refusal).is_file():
        sys.stdout.write(Path(refusal).read_text(encoding="utf-8"))
        sys.stdout.flush()
        return int(os.environ.get("FAKECLAUDE_START_EXIT_STATUS", "1"))
    if opts.continue_ and not opts.resume:
        folder = (
            Path(os.environ.get("HOME") or Path.home()) / ".claude" / "projects" / slug(os.getcwd())
        )
        files = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        if not files:
            print("No conversation found to continue")
            return 1
        opts.resume = files[-1].stem
    if opts.resume == "":
        print("fakeclaude: the --resume picker is not implemented; pass a session id")
        return 1
    if opts.resume:
        found = (
            Path(os.environ.get("HOME") or Path.home()) / ".claude" / "projects" / slug(os.getcwd())
        )
        if not (found / f"{opts.resume}.jsonl").exists():
            print(f"No conversation found with session ID: {opts.resume}")
            return 1
    return App(opts).run()
