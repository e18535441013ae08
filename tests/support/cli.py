"""``claude-bridge`` run as a process, the way a person runs it."""

from __future__ import annotations

import os
import subprocess
import sys

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
