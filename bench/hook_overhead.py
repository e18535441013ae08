"""What a hook costs Claude Code: wall time per call of the hook command, run the way Claude Code
runs it (``sh -c "<command>"`` with the JSON payload on stdin, waiting for it to exit).

    .venv/bin/python -m bench.hook_overhead [--runs 200]

(a) a no-op hook: ``/bin/true`` (the floor: one shell plus one process)
(b) ``cb-hook PreToolUse`` with CB_HOOK unset (a Claude Code not launched by the bridge)
(c) ``cb-hook PreToolUse`` reporting to a running HookServer (a real captured payload)
(d) ``cb-hook PermissionRequest`` answered "allow" by the HookServer

The commands are the ones ``build_settings`` writes into hooks.json. The HookServer runs in a
thread of this process on 127.0.0.1; its callback does nothing but answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent.hookserver import HookServer, permission_decision
from agent.hooksettings import build_settings, hook_command_path, hook_env, new_secret
from bench._common import REPO, Row, fmt_ms, markdown_table, percentile

HOOK_LOG = REPO / "tests" / "fixtures" / "hooks" / "n_permissionrequest_allow_hook.hooks.log"
GOAL_S = 0.015
SESSION = "bench-session"


def captured(event: str) -> bytes:
    for line in HOOK_LOG.read_text().splitlines():
        record = json.loads(line)
        if record["event"] == event:
            return json.dumps(record["payload"]).encode()
    raise LookupError(f"no {event} in {HOOK_LOG}")


class ServerThread:
    """A HookServer on its own event loop in a background thread."""

    def __init__(self, secret: str) -> None:
        self.secret = secret
        self.port = 0
        self.reports = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    async def _on_hook(self, session: str, event: str, payload: dict[str, Any]) -> str | None:
        self.reports += 1
        return permission_decision("allow") if event == "PermissionRequest" else None

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        secrets = {SESSION: self.secret}
        async with HookServer(secrets.get, self._on_hook) as server:
            self.port = server.port
            self._ready.set()
            await self._stop.wait()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the hook server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def measure(
    command: str, payload: bytes, env: dict[str, str], runs: int, check: Callable[[bytes], None]
) -> list[float]:
    times: list[float] = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(
            ["/bin/sh", "-c", command], input=payload, env=env, capture_output=True, check=False
        )
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise RuntimeError(f"{command!r} exited {done.returncode}: {done.stderr!r}")
        check(done.stdout)
    return times


def expect(wanted: bytes) -> Callable[[bytes], None]:
    def check(out: bytes) -> None:
        if out != wanted:
            raise RuntimeError(f"unexpected hook output {out!r}, wanted {wanted!r}")

    return check


def run(runs: int = 200) -> list[Row]:
    hook = hook_command_path()
    commands = {
        event: entry[0]["hooks"][0]["command"]
        for event, entry in build_settings(hook, 10)["hooks"].items()
    }
    pre, permission = captured("PreToolUse"), captured("PermissionRequest")
    base = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    allow = permission_decision("allow").encode()
    secret = new_secret()
    results: dict[str, list[float]] = {}
    with ServerThread(secret) as server:
        env = {**base, **hook_env(SESSION, secret, server.port)}
        cases: list[tuple[str, str, bytes, dict[str, str], bytes]] = [
            ("(a) no-op hook (/bin/true)", shlex.quote("/bin/true"), pre, base, b""),
            ("(b) cb-hook, CB_HOOK unset", commands["PreToolUse"], pre, base, b""),
            ("(c) cb-hook PreToolUse → HookServer", commands["PreToolUse"], pre, env, b""),
            (
                "(d) cb-hook PermissionRequest → allow",
                commands["PermissionRequest"],
                permission,
                env,
                allow,
            ),
        ]
        for name, command, payload, case_env, wanted in cases:
            measure(command, payload, case_env, 5, expect(wanted))  # warm the caches
            results[name] = measure(command, payload, case_env, runs, expect(wanted))
        if server.reports < 2 * runs:
            raise RuntimeError(f"the server got {server.reports} reports, wanted {2 * runs}+")

    rows = [
        Row(
            f"{name}, per call",
            f"median {fmt_ms(percentile(t, 50))}, p90 {fmt_ms(percentile(t, 90))}",
        )
        for name, t in results.items()
    ]
    floor = percentile(results["(a) no-op hook (/bin/true)"], 50)
    over = percentile(results["(c) cb-hook PreToolUse → HookServer"], 50) - floor
    over_p90 = percentile(results["(c) cb-hook PreToolUse → HookServer"], 90) - percentile(
        results["(a) no-op hook (/bin/true)"], 90
    )
    rows.append(
        Row(
            "hook overhead (c) − (a), median",
            f"{fmt_ms(over)} (p90 − p90: {fmt_ms(over_p90)})",
            f"≤ {fmt_ms(GOAL_S)} median",
            over <= GOAL_S,
        )
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=200, help="calls per case (default 200)")
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"{os.cpu_count()} CPU(s), {platform.system()} {platform.release()}, "
        f"/bin/sh → {os.path.realpath('/bin/sh')}; load average before the run: {load}\n"
        f"{args.runs} runs per case, each `sh -c <command>` with the payload on stdin\n"
    )
    rows = run(args.runs)
    print(markdown_table(rows))
    return 0 if all(row.met is not False for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
