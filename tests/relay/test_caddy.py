"""deploy/Caddyfile with the real Caddy (``tls internal``) in front of the real relay.

The file people use runs as it is (CB_DOMAIN=localhost, CB_RELAY=the relay, CB_TLS=internal),
imported under a few global options that only move Caddy onto free ports with its own folders.
A phone pairs over HTTPS, trusting Caddy's local CA; SSE frames arrive at once; the agent's
WebSocket link upgrades through it; the cookie is Secure; the origin check and the client's
address (the pairing rate limit) are right through the proxy and not fooled around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.bridge import FAKE as FAKE_CLAUDE
from tests.support.cli import output_until_started
from tests.support.paths import REPO
from tests.support.relay import Account, RelayServer, SSEReader, free_port
from wire.client import MacLink
from wire.protocol import DeviceInfo, LineRecord

pytestmark = [
    pytest.mark.slow,  # Caddy makes its CA and a certificate at start
    pytest.mark.skipif(
        shutil.which("caddy") is None, reason="caddy not installed (scripts/test-deps)"
    ),
]

CADDYFILE = REPO / "deploy" / "Caddyfile"
PAIR_LIMIT = 3  # pairing attempts per client address per minute, small to reach it quickly


@dataclass
class Proxied:
    relay: RelayServer
    https_port: int
    root: Path  # Caddy's local CA certificate

    @property
    def url(self) -> str:
        return f"https://localhost:{self.https_port}"

    def tls(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.root))

    def client(self, local_address: str | None = None, **kwargs: Any) -> httpx.Client:
        """A phone reaching Caddy, from ``local_address`` (a 127.x address) when given."""
        transport = httpx.HTTPTransport(verify=self.tls(), local_address=local_address)
        return httpx.Client(transport=transport, timeout=15, **kwargs)

    def pair_via_caddy(self, code: str, source: str, forwarded_for: str = "") -> int:
        """POST /api/pair to Caddy at 127.0.0.1 from ``source``, its TLS name localhost."""
        headers = {"Host": f"localhost:{self.https_port}"}
        if forwarded_for:
            headers["X-Forwarded-For"] = forwarded_for
        with self.client(local_address=source) as c:
            r = c.post(
                f"https://127.0.0.1:{self.https_port}/api/pair",
                json={"code": code},
                headers=headers,
                extensions={"sni_hostname": "localhost"},
            )
        return r.status_code


@contextlib.contextmanager
def caddy(root: Path, https_port: int, relay_port: int) -> Iterator[Path]:
    """deploy/Caddyfile run by the real Caddy on free ports, in front of ``relay_port``; yields
    its local CA's root certificate once it answers over HTTPS."""
    root.mkdir(parents=True, exist_ok=True)
    config = root / "Caddyfile"
    config.write_text(
        "{\n"
        "\tadmin off\n"
        f"\thttp_port {free_port()}\n"
        f"\thttps_port {https_port}\n"
        "\tauto_https disable_redirects\n"
        "\tskip_install_trust\n"
        "\tgrace_period 1s\n"  # a test's streams may still be open when it stops
        "}\n"
        f"import {CADDYFILE}\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(root / "home"),
        "XDG_DATA_HOME": str(root / "data"),
        "XDG_CONFIG_HOME": str(root / "config"),
        "CB_DOMAIN": "localhost",
        "CB_RELAY": f"127.0.0.1:{relay_port}",
        "CB_TLS": "internal",
    }
    log = root / "caddy.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["caddy", "run", "--config", str(config), "--adapter", "caddyfile"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    ca = root / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            if ca.exists():
                try:
                    context = ssl.create_default_context(cafile=str(ca))
                    url = f"https://localhost:{https_port}/api/health"
                    if httpx.get(url, verify=context, timeout=5).status_code == 200:
                        break
                except (httpx.HTTPError, ssl.SSLError):
                    pass
            time.sleep(0.2)
        yield ca
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def proxied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxied]:
    root = tmp_path_factory.mktemp("caddy")
    https_port = free_port()
    relay = RelayServer(
        root / "relay",
        public_url=f"https://localhost:{https_port}",
        trusted_proxies="127.0.0.1",  # Caddy dials the relay from there; 127.0.0.2 is not it
        pair_attempts_per_minute=PAIR_LIMIT,
    ).start()
    try:
        with caddy(root / "caddy", https_port, relay.port) as ca:
            yield Proxied(relay, https_port, ca)
    finally:
        relay.stop()


def test_the_caddyfile_people_use_is_valid_as_shipped() -> None:
    checked = subprocess.run(
        ["caddy", "validate", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": "/nonexistent"},
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr
    adapted = subprocess.run(
        ["caddy", "adapt", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "CB_DOMAIN": "relay.test", "CB_RELAY": "127.0.0.1:9"},
        timeout=60,
    )
    text = adapted.stdout
    assert '"relay.test"' in text and '"dial":"127.0.0.1:9"' in text
    assert '"flush_interval":-1' in text and "encode" not in text
    assert '"internal"' not in text  # the default is a real (ACME) certificate


def test_a_phone_pairs_over_https_and_its_cookie_is_secure(proxied: Proxied) -> None:
    account = proxied.relay.account()
    code = proxied.relay.state.store.create_pair_code(account.account_id, "phone", "phone")
    with proxied.client(base_url=proxied.url) as phone:
        page = phone.get("/pair.html")
        assert page.status_code == 200 and "<html" in page.text.lower()
        paired = phone.post("/api/pair", json={"code": code, "name": "phone"})
        assert paired.status_code == 200, paired.text
        cookie = paired.headers["set-cookie"].lower()
        assert "; secure" in cookie and "httponly" in cookie, cookie
        me = phone.get("/api/me")  # the cookie alone, as the page sends it
        assert me.status_code == 200 and me.json()["kind"] == "phone", me.text

        foreign = phone.post("/api/logout", headers={"Origin": "https://evil.example"})
        assert foreign.status_code == 403 and foreign.json()["error"]["code"] == "bad_origin"
        own = phone.post("/api/logout", headers={"Origin": proxied.url})
        assert own.status_code == 200, own.text  # the page's own https origin, seen through Caddy


@contextlib.asynccontextmanager
async def mac(url: str, token: str, name: str) -> AsyncIterator[MacLink]:
    """The Mac's link to the relay's public https:// address (wss:// through Caddy)."""
    link = MacLink(url, token, DeviceInfo(name=name))
    await link.connect()
    try:
        yield link
    finally:
        await link.close()


def user_line(offset: int, text: str) -> LineRecord:
    ident = str(uuid.uuid4())
    body = {
        "type": "user",
        "uuid": ident,
        "sessionId": "conv",
        "timestamp": "2026-11-29T21:33:53.764Z",
        "message": {"role": "user", "content": text},
    }
    return LineRecord(offset=offset, text=json.dumps(body), uuid=ident)


def test_the_agent_link_upgrades_through_caddy_and_sse_frames_arrive_at_once(
    proxied: Proxied, monkeypatch: pytest.MonkeyPatch
) -> None:
    account: Account = proxied.relay.account()
    monkeypatch.setenv("SSL_CERT_FILE", str(proxied.root))  # the link's wss:// trusts Caddy's CA
    session_id = str(uuid.uuid4())

    async def run() -> tuple[float, list[float], int]:
        async with (
            mac(proxied.url, account.device_token, name="caddy mac") as link,
            httpx.AsyncClient(
                base_url=proxied.url,
                verify=proxied.tls(),
                headers={"Authorization": f"Bearer {account.phone_token}"},
                timeout=30,
            ) as phone,
        ):
            assert link.welcome is not None
            devices = (await phone.get("/api/devices")).json()["devices"]
            online = [d["online"] for d in devices]
            await link.send_lines(session_id, "conv", [user_line(0, "first")])
            async with phone.stream("GET", f"/api/sessions/{session_id}/stream") as r:
                assert r.status_code == 200
                assert r.headers["content-type"].startswith("text/event-stream")
                assert "content-encoding" not in r.headers
                reader = SSEReader(r)
                assert (await reader.next()).event == "hello"
                first = await reader.next()
                assert first.event == "event"
                delays = []
                for i in range(3):
                    sent = time.perf_counter()
                    await link.send_lines(session_id, "conv", [user_line(1000 * (i + 1), f"m{i}")])
                    message = await reader.next(timeout=5)
                    delays.append(time.perf_counter() - sent)
                    assert message.event == "event" and f"m{i}" in message.data
                return sum(online), delays, reader.comments

    online, delays, keepalives = asyncio.run(run())
    assert online == 1  # the Mac linked over wss:// through Caddy
    # Each frame well within a second, and no keep-alive (every 15 s) was needed to push it out.
    assert max(delays) < 1.0, delays
    assert keepalives == 0
    print(f"SSE through Caddy: event delays {[round(d * 1000) for d in delays]} ms")


def test_forwarded_addresses_are_believed_from_caddy_only(proxied: Proxied) -> None:
    relay = proxied.relay
    account = relay.account()

    def code() -> str:
        return relay.state.store.create_pair_code(account.account_id, "phone", "p")

    # Around the proxy: a client on 127.0.0.2 names another address each time; the relay keeps
    # counting it as 127.0.0.2 and stops it at the limit.
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=15) as c:
        statuses = [
            c.post(
                f"{relay.url}/api/pair",
                json={"code": "wrong-code"},
                headers={"X-Forwarded-For": f"10.0.0.{i}", "X-Forwarded-Proto": "https"},
            ).status_code
            for i in range(PAIR_LIMIT + 1)
        ]
    assert statuses[-1] == 429 and 429 not in statuses[:-1], statuses

    # Through Caddy: the client's own address counts (not Caddy's, 127.0.0.1), and a header the
    # client adds does not move it to another bucket.
    through = [
        proxied.pair_via_caddy("wrong-code", "127.0.0.3", forwarded_for=f"10.1.0.{i}")
        for i in range(PAIR_LIMIT + 1)
    ]
    assert through[-1] == 429 and 429 not in through[:-1], through
    assert proxied.pair_via_caddy(code(), "127.0.0.4") == 200  # another client: its own bucket


def test_up_with_public_url_behind_caddy_pairs_a_phone_over_https(tmp_path: Path) -> None:
    """`claude-bridge up --public-url https://…` as a person runs it behind deploy/Caddyfile:
    the link is the https one, and forwarded headers from Caddy on loopback are believed."""
    port, https_port, socket = free_port(), free_port(), f"cbcaddy-{uuid.uuid4().hex[:8]}"
    public = f"https://localhost:{https_port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["HOME"] = str(tmp_path / "home")
    up = subprocess.Popen(
        [sys.executable, "-m", "cli", "up", "--data", str(tmp_path / "relay"),
         "--agent-data", str(tmp_path / "agent"), "--port", str(port), "--claude", FAKE_CLAUDE,
         "--socket", socket, "--public-url", public],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    try:
        text = output_until_started(up)
        code = re.search(rf"open {re.escape(public)}/pair\.html#(\S+)", text)
        assert code is not None, text
        assert "this computer only" not in text and "plain http" not in text
        with caddy(tmp_path / "caddy", https_port, port) as ca:
            context = ssl.create_default_context(cafile=str(ca))
            with httpx.Client(base_url=public, verify=context, timeout=15) as phone:
                paired = phone.post("/api/pair", json={"code": code.group(1)})
                assert paired.status_code == 200, paired.text
                assert "; secure" in paired.headers["set-cookie"].lower()
                own = phone.post("/api/logout", headers={"Origin": public})
                assert own.status_code == 200, own.text
        up.send_signal(signal.SIGINT)
        assert up.wait(30) == 0
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        if up.stdout is not None:
            up.stdout.close()
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
