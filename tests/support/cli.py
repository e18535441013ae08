"""``claude-bridge`` run as a process, the way a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from tests.support.relay import RelayServer


def cli(
    server: RelayServer,
    token: str,
    *args: str,
    code: int = 0,
    cwd: str | None = None,
    agent_dir: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``claude-bridge ARGS`` as a person runs it, pointed at the relay with CB_RELAY / CB_TOKEN;
    ``agent_dir`` is this machine's agent folder (none by default: never the real one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env.update(CB_RELAY=server.url, CB_TOKEN=token)
    env["CB_AGENT_DIR"] = agent_dir or "/nonexistent/claude-bridge-agent"
    result = subprocess.run(
        [sys.executable, "-m", "cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=cwd,
    )
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    if code == 2:
        assert result.stderr.startswith("claude-bridge: "), result.stderr
    return result


def output_until_started(up: subprocess.Popen[str], timeout: float = 60) -> str:
    """What ``claude-bridge up`` printed up to its "Press Ctrl-C" line (it serves from then on);
    fails with all of it if the process ends first or ``timeout`` seconds pass."""
    out: list[str] = []
    deadline = time.monotonic() + timeout
    assert up.stdout is not None
    while not any("Press Ctrl-C" in line for line in out):
        assert time.monotonic() < deadline and up.poll() is None, "".join(out)
        out.append(up.stdout.readline())
    return "".join(out)
