"""The fake Claude Code (``tests/fakeclaude``) behaves like the captured 2.1.328.

Each test runs the fake in a real tmux server on its own socket, with a throw-away HOME and a
hooks settings file whose commands append every payload to a log, and checks the screen
(``capture-pane``), the hook log, the transcript and the status file against the captures in
``tests/fixtures``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakeclaude import screens as S
from tests.fakeclaude.ansi import plain
from tests.support.paths import FAKECLAUDE, FIXTURES

FAKE = FAKECLAUDE / "claude"
HOOK_EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "Notification",
    "SessionEnd",
    "PermissionRequest",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
]
ALLOW = (
    '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'
)
DENY = (
    '{"hookSpecificOutput":{"hookEventName":"PermissionRequest",'
    '"decision":{"behavior":"deny","message":"not from the phone"}}}'
)
DONE = re.compile(r"✻ \w+ for \d+s · done")

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def captured(name: str, cwd: str | None = None) -> str:
    """A captured plain screen, with the capture's folder replaced by ``cwd``."""
    text = (FIXTURES / "screens" / f"{name}_80x24.screen_plain.txt").read_text(encoding="utf-8")
    text = text.replace(S.capture_cwd(name), cwd) if cwd else text
    return text.replace("\xa0", " ")


class Fake:
    """One fake ``claude`` in its own tmux server, HOME and project folder."""

    def __init__(
        self,
        base: Path,
        args: list[str],
        *,
        trust: bool = True,
        decide: str | None = None,
        env: dict[str, str] | None = None,
        home: Path | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.base = base
        self.home = home or base / "home"
        self.cwd = cwd or base / "work"
        self.log = base / "hooks.log"
        self.home.mkdir(parents=True, exist_ok=True)
        self.cwd.mkdir(parents=True, exist_ok=True)
        if trust and not (self.home / ".claude.json").exists():
            projects = {
                str(self.cwd): {
                    "hasTrustDialogAccepted": True,
                    "hasCompletedProjectOnboarding": True,
                }
            }
            (self.home / ".claude.json").write_text(
                json.dumps({"hasCompletedOnboarding": True, "projects": projects})
            )
        settings = base / "hooks-settings.json"
        if not settings.exists():
            hooks: dict[str, Any] = {}
            for event in HOOK_EVENTS:
                command = (
                    f"cat >> {shlex.quote(str(self.log))}; echo >> {shlex.quote(str(self.log))}"
                )
                if decide and event == "PermissionRequest":  # the hook's answer on stdout
                    command += f"; printf '%s' {shlex.quote(decide)}"
                hooks[event] = [
                    {
                        "matcher": "*",
                        "hooks": [{"type": "command", "command": command, "timeout": 10}],
                    }
                ]
            settings.write_text(json.dumps({"hooks": hooks}))
        self.socket = f"fakeclaude-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        knobs = {"HOME": str(self.home), "FAKECLAUDE_STARTUP_DEAF": "0.1", **(env or {})}
        command = " ".join(
            [
                "env",
                *(f"{k}={shlex.quote(v)}" for k, v in knobs.items()),
                shlex.quote(str(FAKE)),
                "--settings",
                shlex.quote(str(settings)),
                *map(shlex.quote, args),
            ]
        )
        self.deaf = float(knobs["FAKECLAUDE_STARTUP_DEAF"])
        self.tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-x",
            "80",
            "-y",
            "24",
            "-c",
            str(self.cwd),
            command,
        )
        self.tmux("set-option", "-g", "remain-on-exit", "on")
        self.socket_path = self.tmux("display-message", "-p", "#{socket_path}").strip()

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=False
        )
        return done.stdout

    def kill(self) -> None:
        self.tmux("kill-server")
        if self.socket_path:  # tmux 3.3 leaves the socket file behind
            Path(self.socket_path).unlink(missing_ok=True)

    def screen(self, ansi: bool = False) -> str:
        """The pane as ``capture-pane -p`` prints it (the real program draws some NBSPs)."""
        return self.tmux("capture-pane", "-p", *(["-e"] if ansi else []), "-t", "0")

    def text(self) -> str:
        """The screen with its no-break spaces as plain spaces, for substring checks."""
        return self.screen().replace("\xa0", " ")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "0", *keys)

    def press(self, *keys: str) -> None:
        """Answer a dialog that just appeared: keys within ~10 ms of it are dropped."""
        time.sleep(0.05)
        self.keys(*keys)

    def submit(self, text: str) -> None:
        self.tmux("send-keys", "-t", "0", "-l", text)
        time.sleep(0.05)
        self.keys("Enter")

    def wait(
        self, what: str | re.Pattern[str] | Callable[[str], bool], timeout: float = 10.0
    ) -> str:
        """Poll the screen until ``what`` shows; returns it with NBSPs as spaces (see ``text``)."""
        end = time.monotonic() + timeout
        while True:
            shown = self.screen()
            text = shown.replace("\xa0", " ")
            if (
                what(text)
                if callable(what)
                else what.search(text)
                if isinstance(what, re.Pattern)
                else what in text
            ):
                return text
            if time.monotonic() > end:
                raise AssertionError(f"{what!r} did not appear; the screen:\n{shown}")
            time.sleep(0.03)

    def ready(self, footer: str = "? for shortcuts") -> str:
        """The idle prompt is up and the start-up deafness is over."""
        shown = self.wait(footer)
        time.sleep(self.deaf + 0.05)
        return shown

    def wait_until(self, check: Callable[[], Any], timeout: float = 10.0) -> Any:
        end = time.monotonic() + timeout
        while not (got := check()):
            if time.monotonic() > end:
                raise AssertionError(f"timed out; screen:\n{self.screen()}")
            time.sleep(0.03)
        return got

    def exited(self) -> str:
        """Wait for the program to end; the screen it left (tmux keeps the dead pane)."""
        self.wait_until(lambda: self.tmux("list-panes", "-F", "#{pane_dead}").strip() == "1")
        return self.screen()

    def hooks(self) -> list[dict[str, Any]]:
        try:
            return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        except FileNotFoundError:
            return []

    def events(self) -> list[str]:
        return [h["hook_event_name"] for h in self.hooks()]

    def status(self) -> str | None:
        for path in (self.home / ".claude" / "sessions").glob("*.json"):
            return json.loads(path.read_text()).get("status")
        return None

    def project(self) -> Path:
        return self.home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(self.cwd))

    def transcript(self, session_id: str) -> list[dict[str, Any]]:
        text = (self.project() / f"{session_id}.jsonl").read_text()
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def fake() -> Iterator[Callable[..., Fake]]:
    """Starts fakes; a short folder keeps the banner's cwd within 80 columns like the captures'."""
    top = Path(tempfile.mkdtemp(prefix="fc-"))
    started: list[Fake] = []

    def start(*args: str, **kwargs: Any) -> Fake:
        base = top / f"run{len(started)}"
        base.mkdir()
        started.append(Fake(base, list(args), **kwargs))
        return started[-1]

    yield start
    for one in started:
        one.kill()
    shutil.rmtree(top, ignore_errors=True)


def check_transcript(
    lines: list[dict[str, Any]], session_id: str, cwd: Path, before_clear: str | None = None
) -> None:
    """Consistent like a real transcript: one session, linked parents and tools, nothing left of the capture.

    After /clear the real program keeps the old id in a few attachments' ``session_id``.
    """
    seen: set[str] = set()
    tool_uses: set[str] = set()
    for n, line in enumerate(lines):
        text = json.dumps(line)
        assert "realclaude" not in text, (n, text[:300])
        if "sessionId" in line:
            assert line["sessionId"] == session_id, (n, line["sessionId"])
        if "session_id" in line:
            assert line["session_id"] in (session_id, before_clear), (n, line["session_id"])
        if "cwd" in line:
            assert line["cwd"] == str(cwd)
        parent = line.get("parentUuid")
        if parent is not None:
            assert parent in seen, (n, line.get("type"), parent)
        if line.get("uuid"):
            assert line["uuid"] not in seen, (n, "duplicate uuid")
            seen.add(line["uuid"])
        content = (line.get("message") or {}).get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                tool_uses.add(block["id"])
            if block.get("type") == "tool_result":
                assert block["tool_use_id"] in tool_uses, (n, block)


def hook_keys(scenario: str) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for line in (FIXTURES / "hooks" / f"{scenario}.hooks.log").read_text().splitlines():
        record = json.loads(line)
        out.setdefault(record["event"], []).append(list(record["payload"]))
    return out


def user_texts(lines: list[dict[str, Any]]) -> list[str]:
    out = []
    for line in lines:
        content = (line.get("message") or {}).get("content") if line.get("type") == "user" else None
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out += [b.get("text") or str(b.get("content")) for b in content]
    return out


# ------------------------------------------------------------------ without tmux


def test_version() -> None:
    done = subprocess.run(
        [str(FAKE), "--version"], capture_output=True, text=True, check=True, timeout=10
    )
    assert done.stdout == "2.1.328 (Claude Code)\n"
    done = subprocess.run(
        [str(FAKE), "--no-such-flag", "-v"], capture_output=True, text=True, check=True, timeout=10
    )
    assert done.stdout == "2.1.328 (Claude Code)\n"


BASH_CWD = S.capture_cwd("d_bash_permission/x")
COLOUR = S.Question(
    "Which colour should the widget be?",
    "Colour",
    [("Red", "A warm colour"), ("Blue", "A cool colour"), ("Green", "A natural colour")],
    False,
)
TWO = [
    S.Question(
        "Which colour should the widget be?",
        "Colour",
        [("Red", "A warm colour"), ("Blue", "A cool colour")],
        False,
    ),
    S.Question(
        "Which toppings do you want?",
        "Toppings",
        [("Cheese", "Cheesy"), ("Olives", "Salty"), ("Basil", "Fresh")],
        True,
    ),
]
BUILT_LIKE_CAPTURED = [
    (
        "d_bash_permission/01_bash_dialog",
        7,
        23,
        lambda: S.bash_dialog(
            BASH_CWD, "touch bash_made.txt && echo hi", "Create a file and print hi", 0, None
        ),
    ),
    (
        "d_bash_permission/02_bash_dialog_after_Down",
        7,
        23,
        lambda: S.bash_dialog(
            BASH_CWD, "touch bash_made.txt && echo hi", "Create a file and print hi", 1, None
        ),
    ),
    (
        "d_bash_permission/07_after_Tab_amend",
        7,
        23,
        lambda: S.bash_dialog(
            BASH_CWD, "touch bash_made.txt && echo hi", "Create a file and print hi", 0, ""
        ),
    ),
    (
        "d_bash_permission/04_after_Esc_on_dialog",
        16,
        18,
        lambda: S.bash_rejected("touch bash_made.txt && echo hi"),
    ),
    (
        "n_permissionrequest_allow_hook/01_after_run_bash_allowed_by_hook",
        10,
        11,
        lambda: S.bash_ran(by_hook=True),
    ),
    (
        "e_write_edit_permission/01_write_dialog",
        10,
        23,
        lambda: S.write_dialog("hello.txt", ["hello from mock"], 0),
    ),
    (
        "e_write_edit_permission/02_after_write_yes",
        10,
        12,
        lambda: S.write_done("hello.txt", ["hello from mock"]),
    ),
    (
        "e_write_edit_permission/02_after_write_yes",
        14,
        16,
        lambda: S.assistant(
            "Done. Tool result was: File created successfully at: "
            "/tmp/realclaude/work-e_write_edit_permission_80x24/hello.txt (file state is current in you"
        ),
    ),
    (
        "f_ask_question/01_ask_dialog",
        7,
        22,
        lambda: S.ask_dialog([COLOUR], 0, 0, [set()], [None], None),
    ),
    (
        "f_ask_question/02_ask_after_Down",
        7,
        22,
        lambda: S.ask_dialog([COLOUR], 0, 1, [set()], [None], None),
    ),
    ("f_ask_question/03_ask_after_2", 8, 9, lambda: S.ask_answered([(COLOUR.question, "Blue")])),
    (
        "f_ask_question/05_ask2_dialog_q1",
        10,
        23,
        lambda: S.ask_dialog(TWO, 0, 0, [set(), set()], [None, None], None),
    ),
    (
        "f_ask_question/07_ask2_q2_toggled_1_3",
        7,
        23,
        lambda: S.ask_dialog(TWO, 1, 0, [set(), {2}], ["Red", None], None),
    ),
    ("f_ask_question/11_ask_after_Esc", 16, 18, lambda: S.ask_declined(TWO)),
    ("g_plan_approval/02_plan_dialog", 9, 23, lambda: S.plan_dialog(0)),
    ("g_plan_approval/03_plan_after_Down", 9, 23, lambda: S.plan_dialog(1)),
    (
        "g_plan_approval/04_plan_after_Esc",
        9,
        16,
        lambda: S.plan_rejected("Plan\n\n1. Create hello.txt\n2. Run echo hi\n3. Report back"),
    ),
    (
        "g_plan_approval/04_plan_after_Esc",
        20,
        23,
        lambda: [S.rule(), S.input_row(""), S.rule(), S.footer("plan")],
    ),
    (
        "e_write_edit_permission/04_after_edit_2",
        23,
        23,
        lambda: [S.footer("acceptEdits", agents_hint=True)],
    ),
    (
        "c_busy/01_busy_streaming_0.8s",
        18,
        23,
        lambda: [
            S.spinner("✢", "Flibbertigibbeting", 0, 1),
            S.EFFORT,
            S.rule(),
            S.input_row("", busy=True),
            S.rule(),
            S.footer("default", busy=True, agents_hint=True),
        ],
    ),
    (
        "c_busy/05_busy_thinking",
        14,
        17,
        lambda: [
            *S.queued_prompt("THINK_SLOW please"),
            "",
            S.spinner("✽", "Flibbertigibbeting", 37, 276),
        ],
    ),
    (
        "ij_clear_compact/06_after_clear_prompt",
        18,
        18,
        lambda: [S.spinner("·", "Caramelizing", 0, 8, "Stop")],
    ),
    (
        "m_subagent/01_subagent_running",
        23,
        23,
        lambda: [S.footer("default", busy=True, agents_hint=True, tasks=True)],
    ),
    (
        "b_idle/03_idle_with_draft",
        6,
        23,
        lambda: [
            *S.user_prompt("hello there"),
            "",
            *S.assistant("Hello! This is the mock API. How can I help?"),
            "",
            *S.done_line("Worked", 0, "9:32 PM"),
            *[""] * 8,
            S.EFFORT,
            S.rule(),
            S.input_row("some draft text not submitted"),
            S.rule(),
            S.footer("default", draft=True),
        ],
    ),
    (
        "ij_clear_compact/05_after_clear",
        0,
        6,
        lambda: [*S.banner(S.capture_cwd("ij_clear_compact/x")), "", *S.user_prompt("/clear")],
    ),
    (
        "ij_clear_compact/01_typed_slash_compact_menu",
        16,
        21,
        lambda: [*S.slash_menu("/compact"), S.rule(), S.input_row("/compact")],
    ),
]


@pytest.mark.parametrize(
    ("name", "first", "last", "build"),
    BUILT_LIKE_CAPTURED,
    ids=[f"{c[0]}:{c[1]}" for c in BUILT_LIKE_CAPTURED],
)
def test_composed_rows_match_the_capture(
    name: str, first: int, last: int, build: Callable[[], list[str]]
) -> None:
    want = (
        (FIXTURES / "screens" / f"{name}_80x24.screen_plain.txt")
        .read_text()
        .split("\n")[first : last + 1]
    )
    assert [plain(row).rstrip(" ") for row in build()] == want


# ------------------------------------------------------------------ in tmux


@needs_tmux
def test_trust_dialog_then_idle_screen(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual", trust=False)
    cwd = str(f.cwd)
    assert f.wait("Yes, I trust this folder") == captured("a_startup_trust/01_trust_dialog", cwd)
    assert f.screen(ansi=True) == (
        FIXTURES / "screens/a_startup_trust/01_trust_dialog_80x24.screen_ansi.txt"
    ).read_text().replace(S.capture_cwd("a_startup_trust/x"), cwd)
    assert f.status() is None and f.events() == []  # no session yet: SessionStart waits for trust
    time.sleep(f.deaf + 0.05)
    f.keys("Down")
    assert f.wait("❯ Yes, I trust") == captured("a_startup_trust/02_trust_dialog_after_Down", cwd)
    f.keys("Enter")
    idle = f.wait("? for shortcuts")
    assert idle == captured("a_startup_trust/03_idle_after_trust", cwd)
    ansi = (
        FIXTURES / "screens/a_startup_trust/03_idle_after_trust_80x24.screen_ansi.txt"
    ).read_text()
    assert f.screen(ansi=True) == ansi.replace(S.capture_cwd("a_startup_trust/x"), cwd)
    trusted = json.loads((f.home / ".claude.json").read_text())["projects"][cwd]
    assert trusted["hasTrustDialogAccepted"] is True
    f.wait_until(lambda: f.events() == ["SessionStart"])
    start = f.hooks()[0]
    assert list(start) == hook_keys("a_startup_trust")["SessionStart"][0]
    assert start["source"] == "startup" and start["cwd"] == cwd
    assert start["transcript_path"] == str(f.project() / f"{start['session_id']}.jsonl")
    assert f.status() == "idle"


@needs_tmux
def test_keys_right_after_start_are_dropped_and_untrusted_enter_exits(
    fake: Callable[..., Fake],
) -> None:
    f = fake("--permission-mode", "manual", trust=False, env={"FAKECLAUDE_STARTUP_DEAF": "0.8"})
    f.wait("Yes, I trust this folder")
    f.keys("Down")  # inside the deaf period: dropped
    time.sleep(0.3)
    assert "❯ No, exit" in f.screen()
    time.sleep(0.6)
    f.keys("Down")
    f.wait("❯ Yes, I trust")
    f.keys("Up")
    f.wait("❯ No, exit")
    f.keys("Enter")
    shown = f.exited()
    assert shown.lstrip("\n").startswith(
        "Claude Code didn't start because this folder isn't trusted.\n"
    )
    assert f.events() == []


@needs_tmux
def test_run_bash_yes(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual", env={"FAKECLAUDE_DIALOG_DEAF": "0.4"})
    f.ready()
    f.submit("RUN_BASH one")
    dialog = f.wait("Do you want to proceed?")
    f.keys("1")  # right as the dialog appears: dropped, as the real one drops it
    time.sleep(0.5)
    assert "Do you want to proceed?" in f.screen()
    assert f.status() == "waiting"
    rows = dialog.split("\n")
    assert rows[rows.index(" Do you want to proceed?") + 1] == " ❯ 1. Yes"
    assert rows[-2] == " Esc to cancel · Tab to amend"
    f.keys("Down")
    f.wait("❯ 2. Yes, and always allow")
    f.keys("Up")
    f.wait("❯ 1. Yes")
    f.keys("1")
    done = f.wait(DONE)
    assert "  Ran 1 shell command\n\n● Done. Tool result was: hi" in done
    assert done.rstrip("\n").split("\n")[-3:] == [
        "❯ ",
        "─" * 80,
        "  ⏸ manual mode on · ? for shortcuts · ← for agents",
    ]
    assert (f.cwd / "bash_made.txt").exists()
    f.wait_until(lambda: f.status() == "idle")
    assert f.events() == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "Stop",
    ]
    captured_keys = hook_keys("d_bash_permission")
    for hook in f.hooks():
        assert list(hook) in captured_keys[hook["hook_event_name"]], hook["hook_event_name"]
    pre, request, post, stop = f.hooks()[2:]
    assert pre["tool_input"] == {
        "command": "touch bash_made.txt && echo hi",
        "description": "Create a file and print hi",
    }
    assert request["permission_suggestions"][0] == {
        "type": "addDirectories",
        "directories": [str(f.cwd)],
        "destination": "session",
    }
    assert post["tool_response"]["stdout"] == "hi" and post["tool_use_id"] == pre["tool_use_id"]
    assert stop["last_assistant_message"] == "Done. Tool result was: hi"
    session = pre["session_id"]
    lines = f.transcript(session)
    check_transcript(lines, session, f.cwd)
    uses = [
        b
        for line in lines
        if line.get("type") == "assistant"
        for b in line["message"]["content"]
        if b["type"] == "tool_use"
    ]
    results = [
        b
        for line in lines
        if line.get("type") == "user" and isinstance(line["message"]["content"], list)
        for b in line["message"]["content"]
        if b["type"] == "tool_result"
    ]
    assert [u["id"] for u in uses] == [pre["tool_use_id"]] and uses[0]["input"] == pre["tool_input"]
    assert results[0]["content"] == "hi" and results[0]["tool_use_id"] == pre["tool_use_id"]
    assert (
        lines[4]["message"]["content"] == "RUN_BASH one"
        and lines[4]["promptId"] == pre["prompt_id"]
    )
    summary = next(line for line in lines if line.get("subtype") == "stop_hook_summary")
    assert summary["hookInfos"][0]["command"].startswith("cat >> ")


@needs_tmux
def test_run_bash_rejected_leaves_the_interrupted_state(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual")
    f.ready()
    for prompt, key in (("RUN_BASH two", "4"), ("RUN_BASH three", "Escape")):
        f.submit(prompt)
        f.wait(f"{prompt}\n\n● I'll run a command.\n\n● Creating a file")
        f.wait("Do you want to proceed?")
        time.sleep(0.05)
        f.keys(key)
        f.wait("Did not run 1 call")
        rows = f.text().rstrip("\n").split("\n")
        conversation = [row for row in rows[:-5] if row.strip()]  # above the prompt box
        assert conversation[-3:] == [
            "  Did not run 1 call",
            "  ⎿  $ touch bash_made.txt && echo hi",
            "  ⎿  Interrupted · What should Claude do instead?",
        ]
        assert rows[-3] == "❯ " and "esc to interrupt" not in rows[-1]
        assert f.wait_until(lambda: f.status() == "idle")
    assert "Stop" not in f.events() and "PostToolUse" not in f.events()
    assert f.events().count("PermissionRequest") == 2
    session = f.hooks()[0]["session_id"]
    lines = f.transcript(session)
    check_transcript(lines, session, f.cwd)
    texts = user_texts(lines)
    assert texts.count("[Request interrupted by user for tool use]") == 2
    rejected = [line for line in lines if line.get("toolUseResult") == "User rejected tool use"]
    assert len(rejected) == 2
    assert rejected[0]["message"]["content"][0]["is_error"] is True
    assert rejected[0]["message"]["content"][0]["content"].startswith(
        "The user doesn't want to proceed"
    )
    assert not (f.cwd / "bash_made.txt").exists()


@needs_tmux
def test_permission_request_hook_allow(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual", decide=ALLOW)
    f.ready()
    f.submit("RUN_BASH via hook")
    shown = f.wait(DONE)
    assert (
        "  Ran 1 shell command\n  ⎿  Allowed by PermissionRequest hook\n\n● Done. Tool result was: hi"
        in shown
    )
    assert "Do you want to proceed?" not in shown
    assert f.events()[-4:] == ["PreToolUse", "PermissionRequest", "PostToolUse", "Stop"]
    session = f.hooks()[0]["session_id"]
    lines = f.transcript(session)
    check_transcript(lines, session, f.cwd)
    decision = next(
        line["attachment"]
        for line in lines
        if line.get("type") == "attachment"
        and line["attachment"]["type"] == "hook_permission_decision"
    )
    assert decision["decision"] == "allow" and decision["hookEvent"] == "PermissionRequest"
    assert decision["toolUseID"] == f.hooks()[2]["tool_use_id"]
    # "allow" does not answer AskUserQuestion: the question card is still drawn
    f.submit("ASK_ME via hook")
    card = f.wait("Enter to select · ↑/↓ to navigate · Esc to cancel")
    assert (
        card.split("\n")[6:24]
        == captured("n_permissionrequest_allow_hook/04_ask_with_allow_hook").split("\n")[6:24]
    )
    assert f.status() == "waiting"
    f.press("3")
    f.wait("⎿  · Which colour should the widget be? → Green")
    f.wait_until(lambda: f.events().count("Stop") == 2)
    assert f.events()[-4:] == ["PreToolUse", "PermissionRequest", "PostToolUse", "Stop"]


@needs_tmux
def test_questions_and_plan_approval(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "plan", env={"FAKECLAUDE_NOTIFY_SECONDS": "0.3"})
    f.ready("plan mode on")
    f.submit("ASK_TWO things")
    f.wait("←  ☐ Colour  ☐ Toppings  ✔ Submit  →")
    f.wait_until(lambda: "Notification" in f.events())  # nobody answered for a while
    assert f.hooks()[-1]["message"] == "Claude needs your permission"
    for key in ("1", "1", "3"):
        time.sleep(0.1)
        f.keys(key)
    f.wait("3. [✔] Basil")
    f.press("Tab")
    review = f.wait("Review your answers")
    assert "   → Red" in review and "   → Cheese, Basil" in review
    f.press("1")
    f.wait("     · Which toppings do you want? → Cheese, Basil")
    f.wait(DONE)
    post = next(h for h in f.hooks() if h["hook_event_name"] == "PostToolUse")
    answers = {
        "Which colour should the widget be?": "Red",
        "Which toppings do you want?": "Cheese, Basil",
    }
    assert post["tool_response"]["answers"] == answers
    session = post["session_id"]
    result = next(
        line for line in f.transcript(session) if isinstance(line.get("toolUseResult"), dict)
    )
    assert result["message"]["content"][0]["content"] == (
        'Your questions have been answered: "Which colour should the widget be?"="Red", '
        '"Which toppings do you want?"="Cheese, Basil". You can now continue with these answers in mind.'
    )
    f.submit("MAKE_PLAN for me")
    plan = f.wait("❯ 1. Yes, and switch to default (ask each time) for this session")
    assert (
        plan.rstrip("\n").split("\n")[-15:]
        == captured("g_plan_approval/02_plan_dialog").rstrip("\n").split("\n")[9:24]
    )
    assert (
        f.events()[-2:] == ["PreToolUse", "PermissionRequest"]
        and f.hooks()[-1]["tool_name"] == "ExitPlanMode"
    )
    f.press("1")
    shown = f.wait("● Done. Tool result was: User has approved exiting plan mode. You can now")
    shown = f.wait(lambda s: len(DONE.findall(s)) == 2)
    assert "⏸ manual mode on" in shown  # approving leaves plan mode
    post, stop = f.hooks()[-2:]
    assert post["tool_name"] == "ExitPlanMode" and post["permission_mode"] == "default"
    assert stop["hook_event_name"] == "Stop"
    check_transcript(f.transcript(session), session, f.cwd)


@needs_tmux
def test_write_file_option_2_switches_to_accept_edits(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual")
    f.ready()
    f.submit("WRITE_FILE please")
    f.wait("Do you want to create hello.txt?")
    time.sleep(0.05)
    f.press("2")
    shown = f.wait(DONE)
    assert "● Write(hello.txt)\n  ⎿  Wrote 1 line to hello.txt\n      1 hello from mock" in shown
    assert "⏵⏵ accept edits on (shift+tab to cycle)" in shown
    assert (f.cwd / "hello.txt").read_text() == "hello from mock\n"
    post = f.hooks()[-2]
    assert post["hook_event_name"] == "PostToolUse" and post["permission_mode"] == "acceptEdits"
    f.submit("WRITE_FILE again")  # no question any more
    f.wait(lambda s: s.count("· done") == 2)
    assert f.events()[-4:] == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
    f.kill()  # the terminal goes away: SessionEnd(reason "other"), status file removed
    f.wait_until(lambda: f.events()[-1] == "SessionEnd")
    assert f.hooks()[-1]["reason"] == "other"
    f.wait_until(lambda: not list((f.home / ".claude" / "sessions").glob("*.json")))


@needs_tmux
def test_busy_queue_interrupt_paste_status_and_exit(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual", env={"FAKECLAUDE_SLOW_SECONDS": "3"})
    f.ready()
    assert f.status() == "idle"
    f.submit("SLOW please")
    busy = f.wait("esc to interrupt")
    assert "❯ SLOW please\n\n●" in busy
    f.wait_until(lambda: f.status() == "busy")
    f.wait("● This is a deliberately slow streamed answer")
    f.submit("hello queued")  # typed while busy: queued (c_busy/05)
    queued = f.wait("⎿  Queued · ctrl+x ctrl+s to send now")
    assert "❯ hello queued\n" in queued and "❯ Press up to edit queued messages" in queued
    f.keys("Escape")  # interrupts, then the queued message goes at once
    f.wait("⎿  Interrupted · What should Claude do instead?\n\n❯ hello queued")
    f.wait(DONE)
    f.wait_until(lambda: f.status() == "idle")
    # no Stop for the interrupted turn, one for the queued one
    assert f.events() == ["SessionStart", "UserPromptSubmit", "UserPromptSubmit", "Stop"]
    assert [h.get("prompt") for h in f.hooks()[1:3]] == ["SLOW please", "hello queued"]
    session = f.hooks()[0]["session_id"]
    lines = f.transcript(session)
    check_transcript(lines, session, f.cwd)
    assert "[Request interrupted by user]" in user_texts(lines)
    assert [line["operation"] for line in lines if line["type"] == "queue-operation"] == [
        "enqueue",
        "dequeue",
    ]
    assert next(line for line in lines if line.get("promptSource") == "queued")["message"][
        "content"
    ] == ("hello queued")
    # a bracketed paste is one prompt, newlines and all
    f.tmux("set-buffer", "-b", "fc", "pasted text\nsecond line")
    f.tmux("paste-buffer", "-p", "-b", "fc", "-t", "0")
    f.wait("❯ pasted text second line")
    f.keys("Enter")
    f.wait_until(lambda: f.events().count("Stop") == 2)
    assert f.hooks()[-2]["prompt"] == "pasted text\nsecond line"
    f.keys("C-d")
    f.wait("Press Ctrl-D again to exit")
    f.keys("C-d")
    assert "Press Ctrl-D" not in f.exited()
    assert (
        f.hooks()[-1]["hook_event_name"] == "SessionEnd"
        and f.hooks()[-1]["reason"] == "prompt_input_exit"
    )
    assert list((f.home / ".claude" / "sessions").glob("*.json")) == []


@needs_tmux
def test_permission_request_hook_deny(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual", decide=DENY)
    f.ready()
    f.submit("RUN_BASH please")
    shown = f.wait(DONE)
    assert "Do you want to proceed?" not in shown
    assert "⎿  Denied by PermissionRequest hook: not from the phone" in shown
    assert "● Done. Tool result was: not from the phone" in shown
    assert f.events()[-3:] == ["PreToolUse", "PermissionRequest", "Stop"]
    assert not (f.cwd / "bash_made.txt").exists()
    session = f.hooks()[0]["session_id"]
    lines = f.transcript(session)
    check_transcript(lines, session, f.cwd)
    result = next(
        line for line in lines if line.get("toolUseResult") == "Error: not from the phone"
    )
    assert result["message"]["content"][0]["is_error"] is True


@needs_tmux
def test_clear_and_compact(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual")
    f.ready()
    f.submit("hello one")
    f.wait(DONE)
    old = f.hooks()[0]["session_id"]
    f.tmux("send-keys", "-t", "0", "-l", "/compact")
    f.wait("❯ /compact                    Free up context by summarizing the")
    f.keys("Enter")
    f.wait("⎿  Compacted (ctrl+o to see full summary)")
    assert f.events()[-3:] == ["PreCompact", "SubagentStop", "SessionStart"]
    assert f.hooks()[-1]["source"] == "compact" and f.hooks()[-1]["session_id"] == old
    lines = f.transcript(old)
    assert [line.get("subtype") for line in lines].count("compact_boundary") == 1
    f.submit("/clear")
    f.wait(lambda s: "/compact" not in s and "❯ /clear" in s)
    end, start = f.hooks()[-2:]
    assert (end["hook_event_name"], end["reason"], end["session_id"]) == (
        "SessionEnd",
        "clear",
        old,
    )
    assert (start["hook_event_name"], start["source"]) == ("SessionStart", "clear")
    assert list(start) == hook_keys("ij_clear_compact")["SessionStart"][2]  # no model, no prompt_id
    new = start["session_id"]
    assert new != old
    f.submit("hello after clear")
    f.wait(DONE)
    lines = f.transcript(new)
    check_transcript(lines, new, f.cwd, before_clear=old)
    assert [line.get("session_id") for line in lines if line.get("type") == "attachment"].count(
        old
    ) == 4
    assert "<command-name>/clear</command-name>" in lines[3]["message"]["content"]
    assert lines[4]["subtype"] == "local_command"
    assert "hello after clear" in user_texts(lines)
    assert all(h["session_id"] == new for h in f.hooks()[-2:])


@needs_tmux
def test_subagent_and_follow_up_turn(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual")
    f.ready()
    f.submit("SUBAGENT please")
    f.wait("● Agent(Inspect folder)\n  ⎿  Backgrounded agent (↓ to manage · ctrl+o to expand)")
    f.wait('● Agent "Inspect folder" finished · 0s')
    f.wait(DONE)
    f.wait_until(lambda: f.status() == "idle")
    assert f.events()[1:] == [
        "UserPromptSubmit",
        "PreToolUse",
        "SubagentStart",
        "PostToolUse",
        "PreToolUse",
        "PostToolUse",
        "SubagentStop",
        "Stop",
        "UserPromptSubmit",
        "Stop",
    ]
    hooks = f.hooks()
    agent = hooks[3]["agent_id"]
    assert hooks[5]["agent_id"] == agent and hooks[5]["tool_name"] == "Bash"
    assert hooks[9]["prompt"].startswith(f"<task-notification>\n<task-id>{agent}</task-id>")
    session = hooks[0]["session_id"]
    side = f.project() / session / "subagents" / f"agent-{agent}.jsonl"
    assert Path(hooks[7]["agent_transcript_path"]) == side
    sidechain = [json.loads(line) for line in side.read_text().splitlines()]
    assert all(line.get("isSidechain", True) for line in sidechain)
    assert sidechain[0]["message"]["content"].startswith("SUBTASK_PROMPT")
    lines = f.transcript(session)
    check_transcript(lines, session, f.cwd)
    assert any(line.get("promptSource") == "system" for line in lines)


@needs_tmux
def test_resume_appends_to_the_same_conversation(fake: Callable[..., Fake]) -> None:
    session = str(uuid.uuid4())
    f = fake("--permission-mode", "manual", "--session-id", session)
    f.ready()
    f.submit("hello first life")
    f.wait(DONE)
    f.submit("/exit")
    gone = f.exited()
    assert gone.lstrip("\n").startswith(f"Resume this session with:\nclaude --resume {session}\n")
    assert f.hooks()[-1]["reason"] == "prompt_input_exit"
    before = len(f.transcript(session))
    g = fake("--permission-mode", "manual", "--resume", session, home=f.home, cwd=f.cwd)
    shown = g.ready()
    assert "❯ hello first life\n\n● Hello! This is the mock API. How can I help?" in shown
    start = g.hooks()[-1]
    assert (start["hook_event_name"], start["source"], start["session_id"]) == (
        "SessionStart",
        "resume",
        session,
    )
    assert list(start) == hook_keys("k_resume")["SessionStart"][1]
    g.submit("hello second life")
    g.wait(DONE)
    lines = g.transcript(session)
    assert len(lines) > before and "hello second life" in user_texts(lines)
    check_transcript(lines, session, g.cwd)


@needs_tmux
def test_transcript_lines_can_arrive_in_two_pieces(fake: Callable[..., Fake]) -> None:
    f = fake("--permission-mode", "manual", env={"FAKECLAUDE_SPLIT_DELAY": "0.5"})
    f.ready()
    f.submit("hello there")
    session = f.wait_until(lambda: f.hooks() and f.hooks()[-1]["session_id"])
    path = f.project() / f"{session}.jsonl"

    def partial() -> bool:
        return path.exists() and not path.read_text().endswith("\n")

    f.wait_until(partial, timeout=5)  # half an assistant line, the rest 0.5 s later
    f.wait(DONE)
    lines = path.read_text().splitlines()
    assert all(json.loads(line) for line in lines)
