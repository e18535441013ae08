"""``claude-bridge pair --kind device`` (cli/pair.py) as the README says to use it: it prints the
exact ``claude-bridge agent --relay URL --pair CODE`` line, and the Mac that runs it is called by
the name given at pairing (``--name``), on the phone at once (the page's stream carries the name
as the Mac links, not its raw id). Real processes: the relay, the agent with the fake claude."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.support.bridge import FAKE
from tests.support.paths import REPO
from tests.support.relay import RelayServer
from tests.support.waits import wait_for


def _pair(*args: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    done = subprocess.run(
        [sys.executable, "-m", "cli", "pair", *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=True,
    )  # fmt: skip
    return done.stdout.splitlines()


def _device_frames(url: str, token: str, seen: list[dict[str, Any]], done: threading.Event) -> None:
    """The page's stream: every ``device`` update, as the page reads them."""
    headers = {"Authorization": f"Bearer {token}"}
    with (
        contextlib.suppress(httpx.HTTPError),
        httpx.stream("GET", f"{url}/api/stream", headers=headers, timeout=60) as response,
    ):
        event = ""
        for line in response.iter_lines():
            if done.is_set():
                return
            if line.startswith("event:"):
                event = line.partition(":")[2].strip()
            elif line.startswith("data:") and event == "device":
                seen.append(json.loads(line.partition(":")[2]))


def test_pair_a_mac_prints_the_agent_line_and_the_mac_keeps_its_pairing_name(
    tmp_path: Path, relay: RelayServer
) -> None:
    account = f"acct-{secrets.token_hex(4)}"
    store = relay.state.store
    account_id = store.ensure_account(account)
    phone, _, _ = store.create_token(account_id, "phone", "phone")
    seen: list[dict[str, Any]] = []
    done = threading.Event()
    reader = threading.Thread(target=_device_frames, args=(relay.url, phone, seen, done))
    reader.start()

    lines = _pair("--kind", "device", "--name", "Studio", "--account", account,
                  "--data", str(relay.config.data_path), "--public-url", relay.url)  # fmt: skip
    code = lines[-1]
    assert f"  claude-bridge agent --relay {relay.url} --pair {code}" in lines, lines

    socket_name = f"cbpair-{os.getpid()}"
    agent_dir = tmp_path / "agent"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["HOME"] = str(tmp_path / "home")
    argv = [*shlex.split(f"{sys.executable} -m cli agent --relay {relay.url} --pair {code}"),
            "--data", str(agent_dir), "--claude", FAKE, "--socket", socket_name]  # fmt: skip
    agent = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=REPO, text=True
    )
    try:
        linked = wait_for(
            lambda: next((d for d in seen if d.get("online") and d.get("name")), None), 60,
            "the new Mac on the page's stream",
        )  # fmt: skip
        assert linked["name"] == "Studio", seen
        with httpx.Client(base_url=relay.url, headers={"Authorization": f"Bearer {phone}"}) as c:
            devices = c.get("/api/devices").json()["devices"]
        assert [d["name"] for d in devices] == ["Studio"]
        assert (agent_dir / "device-name").read_text().strip() == "Studio"
        assert (agent_dir / "device-name").stat().st_mode & 0o777 == 0o600
    finally:
        done.set()
        agent.send_signal(signal.SIGTERM)
        try:
            agent.wait(15)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.wait()
            if agent.stdout is not None:
                agent.stdout.close()
            subprocess.run(["tmux", "-L", socket_name, "kill-server"], capture_output=True)
        reader.join(70)


def test_a_mac_paired_without_a_name_is_called_by_its_host_name(relay: RelayServer) -> None:
    account = f"acct-{secrets.token_hex(4)}"
    code = _pair("--kind", "device", "--account", account,
                 "--data", str(relay.config.data_path), "--public-url", relay.url)[-1]  # fmt: skip
    paired = httpx.post(f"{relay.url}/api/pair", json={"code": code, "name": "mini.local"})
    assert paired.status_code == 200, paired.text
    assert paired.json()["kind"] == "device" and paired.json()["name"] == "mini.local"
