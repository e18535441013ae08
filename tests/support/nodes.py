"""Several real relay processes on one PostgreSQL database, and the real Caddy in front of them.

Each node is ``claude-bridge relay`` (``python -m cli.main relay``) in its own process, so a test
can kill one with SIGKILL as a crash would. The load balancer is Caddy running the shipped
deploy/Caddyfile.cluster with only its node list replaced (and a plain-HTTP site on a free port),
as the deployment runs it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.relay import free_port

REPO = Path(__file__).resolve().parents[2]
CADDYFILE = REPO / "deploy" / "Caddyfile.cluster"
UPSTREAMS = "relay1:8765 relay2:8765 relay3:8765"
START_SECONDS = 30.0

# Short leases so a killed node's Macs are released within a test's patience.
TEST_SETTINGS = {
    "CB_NODE_HEARTBEAT_INTERVAL": "0.5",
    "CB_NODE_LEASE_SECONDS": "3",
    "CB_AUTH_RECHECK_INTERVAL": "2",
}


@dataclass
class RelayNode:
    """One relay process on the shared database."""

    name: str
    database_url: str
    root: Path
    settings: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.root / f"{self.name}.log"

    def start(self) -> RelayNode:
        self.root.mkdir(parents=True, exist_ok=True)
        env = (
            {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
            | TEST_SETTINGS
            | self.settings
            | {"CB_DATABASE_URL": self.database_url}
        )
        data = self.root / f"{self.name}-data"
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "cli.main", "relay", "--data", str(data),
                 "--port", str(self.port), "--log-level", "warning"],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"relay node {self.name} exited:\n{self.log.read_text()[-3000:]}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"relay node {self.name} did not start:\n{self.tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/api/health", timeout=1).status_code == 200:
                    return self
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would: no cleanup of any kind."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self) -> RelayNode:
        self.stop()
        return self.start()

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


def templated_caddyfile(addresses: list[str]) -> str:
    """deploy/Caddyfile.cluster with its node list replaced, and nothing else changed."""
    text = CADDYFILE.read_text()
    line = f"reverse_proxy {UPSTREAMS} {{"
    assert text.count(line) == 1, "the node list is not where the test expects it"
    return text.replace(line, f"reverse_proxy {' '.join(addresses)} {{")


@dataclass
class Balancer:
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextlib.contextmanager
def caddy_in_front(root: Path, nodes: list[RelayNode]) -> Iterator[Balancer]:
    """The real Caddy balancing over ``nodes`` with the shipped cluster Caddyfile (plain HTTP on
    127.0.0.1, so no certificate is needed)."""
    root.mkdir(parents=True, exist_ok=True)
    site = root / "Caddyfile.cluster"
    site.write_text(templated_caddyfile([n.address for n in nodes]))
    port = free_port()
    config_file = root / "Caddyfile"
    config_file.write_text(
        f"{{\n\tadmin off\n\tauto_https off\n\tgrace_period 1s\n}}\nimport {site}\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "CB_SITE": f"http://127.0.0.1:{port}",
    }
    log = root / "caddy.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["caddy", "run", "--config", str(config_file), "--adapter", "caddyfile"],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    balancer = Balancer(port, log)
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(balancer.url + "/api/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        yield balancer
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def seed_account(database_url: str, name: str = "default") -> tuple[str, str, str]:
    """A fresh account's (account id, phone token, device token), written straight to the
    shared database as `claude-bridge token create` would."""
    from relay.store import Store
    from wire import config as configmod

    config = configmod.load({"database_url": database_url, "data_dir": "/nonexistent"}, environ={})
    store = Store(config)
    try:
        account_id = store.ensure_account(name)
        phone, _, _ = store.create_token(account_id, "phone", "phone")
        device, _, _ = store.create_token(account_id, "device", "mac")
        return account_id, phone, device
    finally:
        store.close()
