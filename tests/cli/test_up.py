"""Stopping ``claude-bridge up`` and ``claude-bridge relay`` (cli/up.py, cli/serve.py) as a person
does, with a page open: real processes, real signals, open event streams. Each stops within 2 s,
the streams closed cleanly, and prints no traceback."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from relay.store import Store
from tests.support.bridge import FAKE
from tests.support.paths import REPO
from tests.support.relay import free_port
from tests.support.waits import wait_for
from wire import config as configmod

STOP_WITHIN_S = 2.0
STREAMS = 3


def _phone_token(data: Path) -> str:
    store = Store(configmod.load({"data_dir": str(data)}, environ={}))
    try:
        account = store.ensure_account()
        token, _, _ = store.create_token(account, "phone", "phone")
    finally:
        store.close()
    return token


def _hold_stream(url: str, token: str, opened: threading.Semaphore) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    with (
        contextlib.suppress(httpx.HTTPError),
        httpx.stream("GET", f"{url}/api/stream", headers=headers, timeout=30) as response,
    ):
        opened.release()
        for _ in response.iter_bytes():
            pass


@pytest.mark.parametrize("command", ["up", "relay"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_stopping_with_open_streams_is_quick_and_quiet(
    tmp_path: Path, command: str, sig: signal.Signals
) -> None:
    data = tmp_path / "relay"
    token = _phone_token(data)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    socket_name = f"cbstop-{os.getpid()}-{port}"
    argv = [sys.executable, "-m", "cli", command, "--data", str(data), "--port", str(port)]
    if command == "up":
        argv += ["--agent-data", str(tmp_path / "agent"), "--claude", FAKE,
                 "--socket", socket_name, "--no-pair"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["HOME"] = str(tmp_path / "home")
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=REPO
    )
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
    reader.start()
    try:
        wait_for(lambda: httpx.get(f"{url}/api/health", timeout=1).status_code == 200, 60, "up")
        opened = threading.Semaphore(0)
        for _ in range(STREAMS):
            threading.Thread(target=_hold_stream, args=(url, token, opened), daemon=True).start()
        for _ in range(STREAMS):
            assert opened.acquire(timeout=10), "a stream did not open"
        time.sleep(0.3)  # the snapshots are sent: each stream waits for the next update
        started = time.monotonic()
        proc.send_signal(sig)
        code = proc.wait(10)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True, check=False)
    reader.join(5)
    if proc.stdout is not None:
        proc.stdout.close()
    text = b"".join(out).decode("utf-8", "replace")
    assert took < STOP_WITHIN_S, (took, text[-2000:])
    assert "Traceback" not in text and "CancelledError" not in text, text[-4000:]
    assert "reconnecting" not in text, text[-2000:]  # the agent stops before its relay
    # uvicorn may end by its own signal again once it shut down cleanly (`relay`)
    assert code in (0, 130, -sig), (code, text[-2000:])


def _run_up(tmp_path: Path, *extra: str) -> tuple[str, int]:
    """A first ``up`` in a fresh HOME (its default folders), one request, then Ctrl-C: what it
    printed, and its port."""
    port = free_port()
    socket_name = f"cbfirst-{os.getpid()}-{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["HOME"] = str(tmp_path / "home")
    (tmp_path / "home").mkdir(exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "up", "--port", str(port), "--claude", FAKE,
         "--socket", socket_name, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=REPO,
    )  # fmt: skip
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
    reader.start()
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: httpx.get(f"{url}/api/health", timeout=1).status_code == 200, 60, "up")
        httpx.get(f"{url}/api/health?from=the-test", timeout=5)
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True, check=False)
    reader.join(5)
    if proc.stdout is not None:
        proc.stdout.close()
    return b"".join(out).decode("utf-8", "replace"), port


def test_the_first_up_keeps_its_folder_private_and_its_access_log_off_the_screen(
    tmp_path: Path,
) -> None:
    text, _ = _run_up(tmp_path)
    home = tmp_path / "home" / ".claude-bridge"
    assert home.stat().st_mode & 0o777 == 0o700, oct(home.stat().st_mode)
    assert (home / "relay").stat().st_mode & 0o777 == 0o700
    log = home / "relay" / "access.log"
    assert log.stat().st_mode & 0o777 == 0o600
    assert "GET /api/health?from=the-test" in log.read_text()
    assert "from=the-test" not in text  # the pairing link and QR code stay on screen
    # uvicorn's per-connection lines (the agent's link, each page stream) go there too.
    assert "[accepted]" not in text and "connection open" not in text, text
    assert f"access log:   {log} (--access-log shows it here)" in text
    # A second run says nothing about loose permissions.
    again, _ = _run_up(tmp_path)
    assert "tightened" not in again and "permissions" not in again.lower(), again


def test_up_with_access_log_shows_each_request(tmp_path: Path) -> None:
    text, _ = _run_up(tmp_path, "--access-log")
    assert "GET /api/health?from=the-test" in text


def test_no_message_points_at_a_file_only_a_clone_has() -> None:
    """An installed copy has no deploy/ folder: no text the program prints may name one (its
    docstrings may, for those who read the code)."""
    import ast

    found = []
    for package in ("cli", "agent", "relay", "wire"):
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {
                id(node.body[0].value)
                for node in ast.walk(tree)
                if isinstance(
                    node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
                )
                and node.body
                and isinstance(node.body[0], ast.Expr)
                and isinstance(node.body[0].value, ast.Constant)
            }
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docstrings
                    and "deploy/" in node.value
                ):
                    found.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value[:80]!r}")
    assert not found, "\n".join(found)


def test_up_without_claude_code_says_so_once_with_what_to_do(tmp_path: Path) -> None:
    """The quick checks say what is missing and how to install it; the agent's line says it runs
    without it; nothing else repeats it (nor an errno)."""
    text, _ = _run_up(tmp_path, "--claude", "claude-not-here")
    assert text.count("cannot find 'claude-not-here'") == 1, text
    assert "npm i -g @anthropic-ai/claude-code" in text.split("claude-bridge is starting")[0]
    assert "local agent:  linked, without Claude Code: sessions start once it is installed" in text
    assert "Errno" not in text and "--version failed" not in text, text
