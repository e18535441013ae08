"""End-to-end latency with the real Claude Code 2.1.328 (against the tests' fake API):

* transcript line written → the event on the phone's SSE stream (p50 / p99), and
* permission dialog drawn in the terminal → the card on the phone's account stream (p50),

measured twice side by side: the agent as built (file events, hook wake-ups, burst screen reads)
and the agent forced to the seed's plain polling (transcript every 700 ms, screen every 1,500 ms).

The write time of each line is taken from the transcript file growing (watched from this
process with inotify); the dialog time from capturing the pane every 10 ms. Goals printed:
line → phone p50 ≤ 25 ms and p99 ≤ 100 ms; dialog → card p50 ≤ 200 ms.

    python -m bench.e2e_latency [--rounds 8] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from agent.daemon import Agent, AgentOptions
from agent.seams import HookFactory
from tests.support.bridge import API_KEY, REPO, seed_home
from tests.support.relay import RelayServer, SSEReader
from wire import config as configmod

GOALS = {"line_p50": 25.0, "line_p99": 100.0, "card_p50": 200.0}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


class FileGrowth:
    """When each byte offset of a file first existed (inotify through watchfiles)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.marks: list[tuple[float, int]] = []  # (time, size)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> FileGrowth:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        from watchfiles import watch

        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._note()
        for _ in watch(self.path.parent, debounce=1, step=1, stop_event=self._stop):
            self._note()

    def _note(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.marks.append((time.time(), self.path.stat().st_size))

    def written_at(self, offset: int) -> float | None:
        for at, size in self.marks:
            if size > offset:
                return at
        return None


def start_agent(
    options: AgentOptions, hooks: HookFactory | None = None
) -> tuple[Agent, asyncio.AbstractEventLoop, threading.Thread]:
    """An agent on its own loop thread; ``hooks`` builds its hook endpoint (agent/seams.py)."""
    holder: dict[str, Any] = {}
    ready = threading.Event()

    def run() -> None:
        loop = asyncio.new_event_loop()
        agent = Agent(options, configmod.load(environ={}), hooks=hooks)
        holder.update(agent=agent, loop=loop)
        loop.run_until_complete(agent.start())
        ready.set()
        loop.run_forever()
        loop.run_until_complete(agent.stop())
        loop.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(60)
    return holder["agent"], holder["loop"], thread


def measure(
    mode: str, rounds: int, claude: str, api: str, relay: RelayServer, root: Path
) -> dict[str, list[float]]:
    account = relay.account()
    home, work = root / mode / "home", root / mode / "work"
    work.mkdir(parents=True)
    cwd = os.path.realpath(work)
    seed_home(home, [cwd])
    socket = f"cbbench-{os.getpid()}-{mode}"
    env = {
        "PATH": os.environ.get("PATH", ""), "HOME": str(home), "ANTHROPIC_BASE_URL": api,
        "ANTHROPIC_API_KEY": API_KEY, "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "TERM": "xterm-256color", "LANG": "C.UTF-8",
    }  # fmt: skip
    options = AgentOptions(
        data_dir=root / mode / "agent", relay_url=relay.url, token=account.device_token,
        claude=claude, mux_program=shutil.which("tmux") or "tmux", mux_socket=socket,
        claude_home=home / ".claude", env=env, polling_only=(mode == "plain polling"),
    )  # fmt: skip
    _agent, loop, thread = start_agent(options)
    deadline = time.monotonic() + 30
    while relay.state.live.link(account.device_id) is None:  # the link opens in the background
        if time.monotonic() > deadline:
            raise SystemExit("the agent did not link to the relay within 30 s")
        time.sleep(0.02)
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    line_ms: list[float] = []
    card_ms: list[float] = []
    try:
        with httpx.Client(base_url=relay.url, headers=headers, timeout=30) as phone:
            created = phone.post("/api/sessions", json={"device_id": account.device_id, "cwd": cwd,
                                                        "permission_mode": "manual"})  # fmt: skip
            assert created.status_code == 201, created.text
            session_id = created.json()["id"]
            transcript = home / ".claude" / "projects" / _slug(cwd) / f"{session_id}.jsonl"
            growth = FileGrowth(transcript).start()
            arrivals: dict[int, tuple[float, int]] = {}  # seq → (time, offset)
            cards: list[tuple[float, str]] = []
            stop = threading.Event()
            readers = [
                threading.Thread(target=_read_events, args=(relay.url, headers, session_id, arrivals, stop), daemon=True),
                threading.Thread(target=_read_cards, args=(relay.url, headers, session_id, cards, stop), daemon=True),
            ]  # fmt: skip
            for r in readers:
                r.start()
            _wait(lambda: phone.get(f"/api/sessions/{session_id}").json()["state"] == "idle", 40)
            for _ in range(rounds):
                seen_cards = len(cards)
                phone.post(f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH please"})
                drawn = _wait_drawn(socket, session_id, "Do you want to proceed?")
                _wait(lambda n=seen_cards: len(cards) > n, 20)
                card_ms.append((cards[seen_cards][0] - drawn) * 1000)
                card_id = cards[seen_cards][1]
                phone.post(f"/api/sessions/{session_id}/cards/{card_id}", json={"key": "1"})
                _wait(
                    lambda: phone.get(f"/api/sessions/{session_id}").json()["state"] == "idle", 40
                )
            time.sleep(1.5)
            stop.set()
            growth.stop()
            for _seq, (arrived, offset) in sorted(arrivals.items()):
                written = growth.written_at(offset)
                if written is not None:
                    line_ms.append((arrived - written) * 1000)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return {"line": line_ms, "card": card_ms}


def _slug(cwd: str) -> str:
    from agent.transcript import project_slug

    return project_slug(cwd)


def _wait(check: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.02)
    raise TimeoutError("the benchmark waited too long; is the machine overloaded?")


def _wait_drawn(socket: str, session_id: str, text: str, timeout: float = 30) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["tmux", "-L", socket, "capture-pane", "-p", "-t", f"cb-{session_id}"],
                             capture_output=True, text=True, check=False).stdout  # fmt: skip
        if text in out:
            return time.time()
        time.sleep(0.01)
    raise TimeoutError("the dialog was never drawn")


def _read_events(
    url: str,
    headers: dict[str, str],
    session_id: str,
    out: dict[int, tuple[float, int]],
    stop: threading.Event,
) -> None:
    async def run() -> None:
        async with (
            httpx.AsyncClient(base_url=url, headers=headers, timeout=None) as c,
            c.stream("GET", f"/api/sessions/{session_id}/stream") as r,
        ):
            reader = SSEReader(r)
            # No short timeouts here: cancelling a read would end the stream. The thread is a
            # daemon and ends with the relay.
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    msg = await reader.next(timeout=3600)
                    if msg.event == "event":
                        data = json.loads(msg.data)
                        if (
                            data.get("conversation_id") == session_id
                            and data.get("offset") is not None
                        ):
                            out.setdefault(int(data["seq"]), (time.time(), int(data["offset"])))

    with contextlib.suppress(EOFError, httpx.HTTPError, asyncio.CancelledError, RuntimeError):
        asyncio.run(run())


def _read_cards(
    url: str,
    headers: dict[str, str],
    session_id: str,
    out: list[tuple[float, str]],
    stop: threading.Event,
) -> None:
    async def run() -> None:
        seen: set[str] = set()
        async with (
            httpx.AsyncClient(base_url=url, headers=headers, timeout=None) as c,
            c.stream("GET", "/api/stream") as r,
        ):
            reader = SSEReader(r)
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    msg = await reader.next(timeout=3600)
                    if msg.event == "session":
                        data = json.loads(msg.data)
                        card = data.get("card")
                        if data["id"] == session_id and card and card["id"] not in seen:
                            seen.add(card["id"])
                            out.append((time.time(), card["id"]))

    with contextlib.suppress(EOFError, httpx.HTTPError, asyncio.CancelledError, RuntimeError):
        asyncio.run(run())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=8, help="permission dialogs per mode")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    claude = os.environ.get("CB_TEST_CLAUDE") or str(
        REPO / ".cache/claude-code/node_modules/.bin/claude"
    )
    if not Path(claude).exists():
        print("the real Claude Code is missing: run scripts/test-deps first", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="cb-bench-e2e-"))
    api_port = _free_port()
    mock = subprocess.Popen([sys.executable, str(REPO / "tests/e2e/mockapi.py"), "--port", str(api_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    relay = RelayServer(root / "relay").start()
    results: dict[str, dict[str, list[float]]] = {}
    try:
        _wait(
            lambda: (
                httpx.get(f"http://127.0.0.1:{api_port}/v1/models", timeout=1).status_code == 200
            ),
            15,
        )
        for mode in ("as built", "plain polling"):
            print(f"measuring: {mode} ({rounds} permission dialogs) …", file=sys.stderr, flush=True)
            results[mode] = measure(
                mode, rounds, claude, f"http://127.0.0.1:{api_port}", relay, root
            )
    finally:
        relay.stop()
        mock.kill()
        mock.wait()
        shutil.rmtree(root, ignore_errors=True)
    print("| metric (real Claude Code 2.1.328) | as built | plain 700 / 1,500 ms polling | goal |")
    print("| --- | --- | --- | --- |")
    built, plain = results["as built"], results["plain polling"]
    print(f"| transcript line → phone SSE event, p50 / p99 (n={len(built['line'])}) | "
          f"{percentile(built['line'], 50):.0f} / {percentile(built['line'], 99):.0f} ms | "
          f"{percentile(plain['line'], 50):.0f} / {percentile(plain['line'], 99):.0f} ms | "
          f"≤ {GOALS['line_p50']:.0f} / {GOALS['line_p99']:.0f} ms |")  # fmt: skip
    print(f"| dialog drawn → card on the phone, p50 (n={len(built['card'])}) | "
          f"{statistics.median(built['card']):.0f} ms | {statistics.median(plain['card']):.0f} ms | "
          f"≤ {GOALS['card_p50']:.0f} ms |")  # fmt: skip
    return 0


def _free_port() -> int:
    from tests.support.relay import free_port

    return free_port()


if __name__ == "__main__":
    raise SystemExit(main())
