"""Permission card latency: Claude Code's request (the PermissionRequest hook) → the card on
the phone, next to dialog drawn → card (the only path before cards were built from the request).

Each round sends ``RUN_BASH please`` to a session in manual mode, and times, on one clock:

* the hook received by the agent (its hook endpoint's callback, instrumented here),
* the dialog drawn in the terminal (the pane captured every 10 ms),
* the first card on the phone's account stream (``/api/stream``): with cards from the request
  it comes before the dialog is drawn, marked not answerable,
* the first answerable card (its dialog seen on the screen).

Measured twice: the agent as built, and the agent with cards from the request turned off
(agent/driver.py's ``EARLY_CARD_FOR = 0``: a card only once the screen shows the dialog, as
before). The toggle is checked, not assumed: as built, a round's first card must come before its
answerable one (the early card, from the request); screen only, the first card must be the
answerable one, drawn from the screen. A round that breaks this stops the run with the reason.

The real Claude Code (the version ``--version`` names; the newest tested one is installed in
.cache/claude-code by scripts/test) against the tests' fake API when it is installed, else (or
with ``--fake``) the tests' fake Claude Code. Every wait is bounded (ROUND_TIMEOUT and the
like): a Claude Code that never draws the dialog ends the run with an error, not a hang.

    python -m bench.card_latency [--rounds 10] [--quick] [--fake]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from agent import driver
from agent.daemon import AgentOptions
from agent.hookserver import HookAnswer, HookServer, OnHook, SecretFor
from bench._common import Row, install_signal_cleanup, markdown_table
from bench.e2e_latency import _wait, _wait_drawn, percentile, start_agent
from bench.machine import machine_line
from tests.support.bridge import API_KEY, REPO, seed_home
from tests.support.relay import RelayServer, SSEReader, free_port

FAKE_CLAUDE = REPO / "tests" / "fakeclaude" / "claude"
REAL_CLAUDE = REPO / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
QUESTION = "Do you want to proceed?"
MODES = ("as built", "screen only")
START_TIMEOUT = 90.0  # seconds for the agent to link and Claude Code to start and be idle
DRAW_TIMEOUT = 30.0  # for the dialog to be drawn after the message is sent
CARD_TIMEOUT = 20.0  # for the answerable card once the dialog is drawn
IDLE_TIMEOUT = 60.0  # for Claude Code to finish the turn once the card is answered
STOP_TIMEOUT = 10.0  # for the card reader's stream to close


class CardReader:
    """Every new card of one session on the account stream, with its arrival time, read in a
    thread of its own until :meth:`stop` (which closes the stream, so the relay stops cleanly)."""

    def __init__(self, url: str, headers: dict[str, str], session_id: str) -> None:
        self.url, self.headers, self.session_id = url, headers, session_id
        self.cards: list[tuple[float, dict[str, Any]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name="card-reader", daemon=True)

    def start(self) -> CardReader:
        self._thread.start()
        self._started.wait(STOP_TIMEOUT)
        return self

    def stop(self) -> None:
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # its loop has ended already
                loop.call_soon_threadsafe(task.cancel)
        self._thread.join(STOP_TIMEOUT)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.current_task()
            self._started.set()
            await self._read()

        with contextlib.suppress(EOFError, httpx.HTTPError, asyncio.CancelledError, RuntimeError):
            asyncio.run(main())
        self._started.set()

    async def _read(self) -> None:
        seen: set[str] = set()
        async with (
            httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=None) as c,
            c.stream("GET", "/api/stream") as r,
        ):
            reader = SSEReader(r)
            while True:
                with contextlib.suppress(TimeoutError):
                    msg = await reader.next(timeout=3600)
                    if msg.event != "session":
                        continue
                    data = json.loads(msg.data)
                    card = data.get("card")
                    if data["id"] == self.session_id and card and card["id"] not in seen:
                        seen.add(card["id"])
                        self.cards.append((time.time(), card))


class ToggleNotWorking(RuntimeError):
    """The early card came (or did not) against the mode measured: the columns would lie."""


def check_round(mode: str, cards: list[dict[str, Any]]) -> bool:
    """Whether a round's first card was early (not answerable: from the request, before the
    dialog was on the screen). Screen only, that is the toggle failing: ToggleNotWorking."""
    if not cards:
        raise ToggleNotWorking(f"{mode}: no card came for the dialog")
    early = not cards[0]["answerable"]
    if mode == "screen only" and early:
        raise ToggleNotWorking(
            "screen only: a card came before the dialog was on the screen (not answerable): "
            "EARLY_CARD_FOR = 0 did not turn the early card off"
        )
    return early


def check_mode(mode: str, early: int, rounds: int) -> None:
    """As built, the early card must come in at least one round (a dialog drawn at once may
    beat it in some): none at all means the columns would measure the same thing."""
    if mode == "as built" and rounds and not early:
        raise ToggleNotWorking(
            f"as built: no early card in {rounds} rounds: every first card was drawn from the "
            "screen (is the PermissionRequest hook installed and reaching the agent?)"
        )


def claude_version(claude: str) -> str:
    """What ``claude --version`` says (``2.1.332``), or a word saying it could not be read."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        done = subprocess.run(
            [claude, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
        words = done.stdout.split()
        if done.returncode == 0 and words:
            return words[0]
    return "of an unknown version"


def measure(
    mode: str, rounds: int, claude: str, api: str | None, relay: RelayServer, root: Path
) -> dict[str, list[float]]:
    account = relay.account()
    home, work = root / mode / "home", root / mode / "work"
    work.mkdir(parents=True)
    cwd = os.path.realpath(work)
    seed_home(home, [cwd])
    socket = f"cbbench-card-{os.getpid()}-{len(mode)}"
    env = {
        "PATH": os.environ.get("PATH", ""), "HOME": str(home), "TERM": "xterm-256color",
        "LANG": "C.UTF-8", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }  # fmt: skip
    if api is not None:
        env.update(ANTHROPIC_BASE_URL=api, ANTHROPIC_API_KEY=API_KEY)
    options = AgentOptions(
        data_dir=root / mode / "agent", relay_url=relay.url, token=account.device_token,
        claude=claude, mux_program=shutil.which("tmux") or "tmux", mux_socket=socket,
        claude_home=home / ".claude", env=env,
    )  # fmt: skip
    hooks: list[float] = []

    def timed_hooks(secret_for: SecretFor, on_hook: OnHook) -> HookServer:
        """The agent's hook endpoint, noting when each PermissionRequest arrives."""

        async def timed(session_id: str, event: str, payload: dict[str, Any]) -> HookAnswer:
            if event == "PermissionRequest":
                hooks.append(time.time())
            return await on_hook(session_id, event, payload)

        return HookServer(secret_for, timed)

    early_before = driver.EARLY_CARD_FOR
    # The agent runs in a thread of this process: its driver reads this at every screen read.
    driver.EARLY_CARD_FOR = early_before if mode == "as built" else 0.0
    _agent, loop, thread = start_agent(options, hooks=timed_hooks)
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    out: dict[str, list[float]] = {"hook_first": [], "drawn_ready": [], "drawn_first": []}
    out["hook_drawn"] = []
    reader: CardReader | None = None
    try:
        _wait(lambda: relay.state.live.link(account.device_id) is not None, START_TIMEOUT)
        with httpx.Client(base_url=relay.url, headers=headers, timeout=30) as phone:
            created = phone.post("/api/sessions", json={"device_id": account.device_id, "cwd": cwd,
                                                        "permission_mode": "manual"})  # fmt: skip
            assert created.status_code == 201, created.text
            session_id = created.json()["id"]
            reader = CardReader(relay.url, headers, session_id).start()
            cards = reader.cards

            def state() -> str:
                return str(phone.get(f"/api/sessions/{session_id}").json()["state"])

            _wait(lambda: state() == "idle", START_TIMEOUT)
            early = 0
            for _ in range(rounds):
                seen, asked = len(cards), len(hooks)
                phone.post(f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH please"})
                drawn = _wait_drawn(socket, session_id, QUESTION, DRAW_TIMEOUT)
                _wait(lambda n=seen: any(c["answerable"] for _, c in cards[n:]), CARD_TIMEOUT)
                _wait(lambda n=asked: len(hooks) > n, CARD_TIMEOUT)
                early += check_round(mode, [c for _, c in cards[seen:]])
                first_at = cards[seen][0]
                ready_at, ready = next((t, c) for t, c in cards[seen:] if c["answerable"])
                hook_at = hooks[asked]
                out["hook_first"].append((first_at - hook_at) * 1000)
                out["drawn_first"].append((first_at - drawn) * 1000)
                out["drawn_ready"].append((ready_at - drawn) * 1000)
                out["hook_drawn"].append((drawn - hook_at) * 1000)
                phone.post(f"/api/sessions/{session_id}/cards/{ready['id']}", json={"key": "1"})
                _wait(lambda: state() == "idle", IDLE_TIMEOUT)
            check_mode(mode, early, rounds)
            out["early"] = [float(early)]
    finally:
        driver.EARLY_CARD_FOR = early_before
        if reader is not None:
            reader.stop()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return out


def measure_all(rounds: int, fake: bool = False) -> tuple[str, dict[str, dict[str, list[float]]]]:
    """Both modes, each with a fresh agent on one relay: (which Claude Code, figures by mode)."""
    real = os.environ.get("CB_TEST_CLAUDE") or str(REAL_CLAUDE)
    use_fake = fake or not Path(real).exists()
    claude = str(FAKE_CLAUDE) if use_fake else real
    which = "fake Claude Code" if use_fake else f"real Claude Code {claude_version(claude)}"
    root = Path(tempfile.mkdtemp(prefix="cb-bench-card-"))
    mock = None
    api = None
    relay: RelayServer | None = None
    results: dict[str, dict[str, list[float]]] = {}
    try:
        if not use_fake:
            port = free_port()
            mock = subprocess.Popen([sys.executable, str(REPO / "tests/e2e/mockapi.py"), "--port", str(port)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            api = f"http://127.0.0.1:{port}"
            _wait(lambda: httpx.get(f"{api}/v1/models", timeout=1).status_code == 200, 15)
        relay = RelayServer(root / "relay").start()
        for mode in MODES:
            print(f"measuring: {mode} ({rounds} dialogs, {which}) …", file=sys.stderr, flush=True)
            results[mode] = measure(mode, rounds, claude, api, relay, root)
    finally:
        if relay is not None:
            relay.stop()
        if mock is not None:
            mock.kill()
            mock.wait()
        shutil.rmtree(root, ignore_errors=True)
    return which, results


def table(which: str, results: dict[str, dict[str, list[float]]]) -> str:
    """The two columns side by side (p50 of each figure)."""

    def p50(values: list[float]) -> str:
        return f"{percentile(values, 50):.0f} ms"

    built, before = results["as built"], results["screen only"]
    n = len(built["hook_first"])
    lines = [
        f"| permission card, p50 ({which}, n={n} per column) | as built | screen only |",
        "| --- | --- | --- |",
    ]
    for key, label in (
        ("hook_first", "hook received → first card on the phone"),
        ("drawn_first", "dialog drawn → first card on the phone (negative: before it)"),
        ("drawn_ready", "dialog drawn → answerable card on the phone"),
        ("hook_drawn", "hook received → dialog drawn"),
    ):
        lines.append(f"| {label} | {p50(built[key])} | {p50(before[key])} |")
    return "\n".join(lines)


def rows(which: str, results: dict[str, dict[str, list[float]]]) -> list[Row]:
    """The figures as rows of `python -m bench`'s table."""
    built, before = results["as built"], results["screen only"]
    n = len(built["hook_first"])

    def p50(values: list[float]) -> float:
        return percentile(values, 50)

    return [
        Row(f"{which}: permission request (hook) → card on the phone, p50 (`bench/card_latency.py`)",
            f"{p50(built['hook_first']):.0f} ms, n={n}: the card is there "
            f"{-p50(built['drawn_first']):.0f} ms before the dialog is drawn, answerable "
            f"{p50(built['drawn_ready']):.0f} ms after it; with the early card off (screen only) "
            f"{p50(before['hook_first']):.0f} ms"),
    ]  # fmt: skip


def run(rounds: int = 10, fake: bool = False) -> list[Row]:
    which, results = measure_all(rounds, fake)
    print(table(which, results), flush=True)
    return rows(which, results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=10, help="permission dialogs per mode")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--fake", action="store_true", help="the tests' fake Claude Code")
    args = parser.parse_args(argv)
    install_signal_cleanup()
    print(machine_line(), flush=True)
    found = run(3 if args.quick else args.rounds, args.fake)
    print()
    print(markdown_table(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
