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
before). The real Claude Code 2.1.328 (against the tests' fake API) when it is installed, else
(or with ``--fake``) the tests' fake Claude Code.

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
from bench.e2e_latency import _wait, _wait_drawn, percentile, start_agent
from tests.support.bridge import API_KEY, REPO, seed_home
from tests.support.relay import RelayServer, SSEReader, free_port

FAKE_CLAUDE = REPO / "tests" / "fakeclaude" / "claude"
REAL_CLAUDE = REPO / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
QUESTION = "Do you want to proceed?"


def _read_cards(
    url: str, headers: dict[str, str], session_id: str, out: list[tuple[float, dict[str, Any]]]
) -> None:
    """Every new card of the session on the account stream, with its arrival time."""

    async def run() -> None:
        seen: set[str] = set()
        async with (
            httpx.AsyncClient(base_url=url, headers=headers, timeout=None) as c,
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
                    if data["id"] == session_id and card and card["id"] not in seen:
                        seen.add(card["id"])
                        out.append((time.time(), card))

    with contextlib.suppress(EOFError, httpx.HTTPError, asyncio.CancelledError, RuntimeError):
        asyncio.run(run())


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
    driver.EARLY_CARD_FOR = 10.0 if mode == "as built" else 0.0
    hooks: list[float] = []

    def timed_hooks(secret_for: SecretFor, on_hook: OnHook) -> HookServer:
        """The agent's hook endpoint, noting when each PermissionRequest arrives."""

        async def timed(session_id: str, event: str, payload: dict[str, Any]) -> HookAnswer:
            if event == "PermissionRequest":
                hooks.append(time.time())
            return await on_hook(session_id, event, payload)

        return HookServer(secret_for, timed)

    _agent, loop, thread = start_agent(options, hooks=timed_hooks)
    _wait(lambda: relay.state.live.link(account.device_id) is not None, 30)
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    out: dict[str, list[float]] = {"hook_first": [], "drawn_ready": [], "drawn_first": []}
    out["hook_drawn"] = []
    try:
        with httpx.Client(base_url=relay.url, headers=headers, timeout=30) as phone:
            created = phone.post("/api/sessions", json={"device_id": account.device_id, "cwd": cwd,
                                                        "permission_mode": "manual"})  # fmt: skip
            assert created.status_code == 201, created.text
            session_id = created.json()["id"]
            cards: list[tuple[float, dict[str, Any]]] = []
            threading.Thread(
                target=_read_cards, args=(relay.url, headers, session_id, cards), daemon=True
            ).start()

            def state() -> str:
                return str(phone.get(f"/api/sessions/{session_id}").json()["state"])

            _wait(lambda: state() == "idle", 60)
            for _ in range(rounds):
                seen, asked = len(cards), len(hooks)
                phone.post(f"/api/sessions/{session_id}/messages", json={"text": "RUN_BASH please"})
                drawn = _wait_drawn(socket, session_id, QUESTION)
                _wait(lambda n=seen: any(c["answerable"] for _, c in cards[n:]), 20)
                first_at = cards[seen][0]
                ready_at, ready = next((t, c) for t, c in cards[seen:] if c["answerable"])
                hook_at = hooks[asked]
                out["hook_first"].append((first_at - hook_at) * 1000)
                out["drawn_first"].append((first_at - drawn) * 1000)
                out["drawn_ready"].append((ready_at - drawn) * 1000)
                out["hook_drawn"].append((drawn - hook_at) * 1000)
                phone.post(f"/api/sessions/{session_id}/cards/{ready['id']}", json={"key": "1"})
                _wait(lambda: state() == "idle", 60)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=10, help="permission dialogs per mode")
    parser.add_argument("--quick", action="store_true", help="3 rounds")
    parser.add_argument("--fake", action="store_true", help="the tests' fake Claude Code")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    real = os.environ.get("CB_TEST_CLAUDE") or str(REAL_CLAUDE)
    use_fake = args.fake or not Path(real).exists()
    claude = str(FAKE_CLAUDE) if use_fake else real
    which = "fake Claude Code" if use_fake else "real Claude Code 2.1.328"
    root = Path(tempfile.mkdtemp(prefix="cb-bench-card-"))
    mock = None
    api = None
    if not use_fake:
        port = free_port()
        mock = subprocess.Popen([sys.executable, str(REPO / "tests/e2e/mockapi.py"), "--port", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        api = f"http://127.0.0.1:{port}"
        _wait(lambda: httpx.get(f"{api}/v1/models", timeout=1).status_code == 200, 15)
    relay = RelayServer(root / "relay").start()
    results: dict[str, dict[str, list[float]]] = {}
    try:
        for mode in ("as built", "cards from the screen only"):
            print(f"measuring: {mode} ({rounds} dialogs, {which}) …", file=sys.stderr, flush=True)
            results[mode] = measure(mode, rounds, claude, api, relay, root)
    finally:
        relay.stop()
        if mock is not None:
            mock.kill()
            mock.wait()
        shutil.rmtree(root, ignore_errors=True)

    def p50(values: list[float]) -> str:
        return f"{percentile(values, 50):.0f} ms"

    built, before = results["as built"], results["cards from the screen only"]
    n = len(built["hook_first"])
    print(f"| permission card, p50 ({which}, n={n} per column) | as built | screen only |")
    print("| --- | --- | --- |")
    print(f"| hook received → first card on the phone | {p50(built['hook_first'])} | "
          f"{p50(before['hook_first'])} |")  # fmt: skip
    print(f"| dialog drawn → first card on the phone (negative: before it) | "
          f"{p50(built['drawn_first'])} | {p50(before['drawn_first'])} |")  # fmt: skip
    print(f"| dialog drawn → answerable card on the phone | {p50(built['drawn_ready'])} | "
          f"{p50(before['drawn_ready'])} |")  # fmt: skip
    print(f"| hook received → dialog drawn | {p50(built['hook_drawn'])} | "
          f"{p50(before['hook_drawn'])} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
