"""The phone API under hostile or buggy clients, against a real relay under uvicorn.

Non-finite numbers, private data folders, push endpoints that point inside the network, pairing
guessed from rotating addresses, session ids that are not ids, marks left on reopened sessions,
unknown routes, nested bodies and forged forwarded headers (issue 9: 4, 5, 6, 7, 9, 11, 14).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from relay.features import push
from tests.support.push import BrowserKeys, PushService
from tests.support.relay import (
    Account,
    RelayServer,
    SSEReader,
    free_port,
    mac,
    phone_client,
    transcript,
)
from wire.protocol import Command, CommandResult
from wire.transcript import read_lines

JSON = {"content-type": "application/json"}


def error_of(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert the documented error body ``{"error": {"code", "message"}}`` and return it."""
    assert response.status_code == status, (response.status_code, response.text)
    body = strict_json(response.text)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert error["code"] == code, error
    assert isinstance(error["message"], str) and error["message"].strip(), error
    return error


def _no_constants(name: str) -> Any:
    raise AssertionError(f"the relay sent {name}, which JSON.parse refuses")


def strict_json(text: str) -> Any:
    """Parse as a browser's JSON.parse does: NaN / Infinity are not JSON."""
    return json.loads(text, parse_constant=_no_constants)


def push_lines(server: RelayServer, acct: Account, session_id: str) -> None:
    path = transcript("b_idle")

    async def go() -> None:
        async with mac(server, acct.device_token) as link:
            await link.send_lines(
                session_id, path.stem, list(read_lines(path.read_bytes())), cwd="/Users/t/p"
            )
            await link.wait_for_seq(session_id, 1)

    asyncio.run(go())


# -- 4. every number from a client is finite; the relay never writes NaN / Infinity --------------


def test_non_finite_numbers_are_refused_and_nothing_changes(
    relay: RelayServer, account: Account
) -> None:
    sid = str(uuid.uuid4())
    push_lines(relay, account, sid)
    with phone_client(relay, account.phone_token) as client:
        assert client.patch(f"/api/sessions/{sid}", json={"position": 2.5}).status_code == 200
        for raw in ('{"position": 1e999}', '{"position": -1e999}', '{"position": "Infinity"}',
                    '{"position": NaN}', '{"position": "nan"}', '{"position": Infinity}'):  # fmt: skip
            answer = client.patch(f"/api/sessions/{sid}", content=raw, headers=JSON)
            error = error_of(answer, 422, "not_finite")
            assert "position" in error["message"], error
        listed = strict_json(client.get("/api/sessions").text)["sessions"]
        assert [s["position"] for s in listed if s["id"] == sid] == [2.5]


def test_a_stored_non_finite_number_still_reads_as_json(
    relay: RelayServer, account: Account
) -> None:
    """A relay whose database already holds an infinite position (written before the check):
    the account's stream, which every page of the account reads, stays JSON."""
    sid = str(uuid.uuid4())
    push_lines(relay, account, sid)
    asyncio.run(relay.state.store.update_session(account.account_id, sid, position=float("inf")))
    with phone_client(relay, account.phone_token) as client:
        for path in ("/api/sessions", f"/api/sessions/{sid}"):
            answer = client.get(path)
            assert answer.status_code == 200, answer.text
            strict_json(answer.text)

    async def stream() -> list[Any]:
        headers = {"Authorization": f"Bearer {account.phone_token}"}
        async with (
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
            client.stream("GET", "/api/stream") as response,
        ):
            reader = SSEReader(response)
            snapshot = await reader.next()
            renamed = await client.patch(f"/api/sessions/{sid}", json={"title": "renamed"})
            assert renamed.status_code == 200, renamed.text
            update = await reader.next()
            return [strict_json(snapshot.data), strict_json(update.data)]

    snapshot, update = asyncio.run(stream())
    assert [s["position"] for s in snapshot["sessions"] if s["id"] == sid] == [0.0]
    assert update["id"] == sid and update["position"] == 0.0


# -- 5. the data folder and its files are the relay user's only ------------------------------------


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in [folder, *folder.iterdir()]}


def _start_relay(data: Path, port: int, env: dict[str, str]) -> subprocess.Popen[str]:
    def umask_022() -> None:
        os.umask(0o022)

    return subprocess.Popen(
        [sys.executable, "-m", "cli", "relay", "--data", str(data), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        preexec_fn=umask_022,
    )


def _wait_healthy(proc: subprocess.Popen[str], port: int) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, "the relay exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the relay did not start"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.stdout.close()
    return out


@pytest.fixture
def cli_env() -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["CB_PAIR_ATTEMPTS_PER_MINUTE"] = "3"
    yield env


def test_relay_data_is_private_whatever_the_umask(tmp_path: Path, cli_env: dict[str, str]) -> None:
    data = tmp_path / "relay"
    port = free_port()
    proc = _start_relay(data, port, cli_env)
    try:
        _wait_healthy(proc, port)
        modes = _modes(data)
    finally:
        first = _stop(proc)
    assert {"relay.db", "vapid.pem"} <= set(modes), modes
    assert modes.pop("relay") == 0o700, oct(_modes(data)["relay"])
    assert all(mode == 0o600 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}
    assert "tightened" not in first  # a folder it made itself needs no word

    # A folder made earlier by hand (or by an older relay) is tightened, and the relay says so once.
    data.chmod(0o755)
    for name in ("relay.db", "vapid.pem"):
        (data / name).chmod(0o644)
    port = free_port()
    # uvicorn's own variable would trust every address's X-Forwarded-For: it has no effect.
    proc = _start_relay(data, port, {**cli_env, "FORWARDED_ALLOW_IPS": "*"})
    try:
        _wait_healthy(proc, port)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as anonymous:
            # The relay as `claude-bridge relay` starts it trusts no forwarded header.
            for n in range(3):
                xff = {"X-Forwarded-For": f"198.51.100.{n + 1}"}
                error_of(anonymous.post("/api/pair", json={"code": "NOPE-NOPE"}, headers=xff),
                         401, "bad_pair_code")  # fmt: skip
            last = anonymous.post(
                "/api/pair", json={"code": "NOPE"}, headers={"X-Forwarded-For": "203.0.113.9"}
            )
            error_of(last, 429, "pair_rate_limited")
        modes = _modes(data)
    finally:
        second = _stop(proc)
    assert modes.pop("relay") == 0o700
    assert all(mode == 0o600 for mode in modes.values()), {k: oct(v) for k, v in modes.items()}
    told = [line for line in second.splitlines() if "tightened" in line]
    assert len(told) == 1, second
    assert str(data) in told[0] and "relay.db" in told[0]
    assert "CB_TRUSTED_PROXIES" in second


# -- 6. push endpoints: https, public addresses only, checked again when sending -----------------


def test_push_endpoints_inside_the_network_are_refused(
    relay: RelayServer, account: Account
) -> None:
    keys = BrowserKeys.new().json()
    refused = [
        "http://push.example.net/x",  # plain http
        "http://127.0.0.1:9/x",
        "https://127.0.0.1:9/x",
        "https://localhost/x",
        "https://10.1.2.3/x",
        "https://192.168.0.10/x",
        "https://172.16.5.5/x",
        "https://169.254.169.254/latest/meta-data",  # cloud metadata
        "https://100.64.0.1/x",  # carrier-grade NAT
        "https://[::1]/x",
        "https://[fd00::1]/x",
        "https://[fe80::1]/x",
        "https://0.0.0.0/x",
        "https://224.0.0.1/x",
        "https://[::ffff:127.0.0.1]/x",
    ]
    with phone_client(relay, account.phone_token) as client:
        for endpoint in refused:
            answer = client.post("/api/push/subscribe", json={"endpoint": endpoint, "keys": keys})
            error_of(answer, 400, "bad_push_endpoint")
    assert relay.app.state.push.book.for_account(account.account_id) == []


class Resolver:
    """Stands in for DNS: the addresses a push host resolves to, changed by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answers: dict[str, list[str]] = {}
        self.asked: list[str] = []
        real = push.resolve

        async def resolve(
            host: str, port: int
        ) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
            self.asked.append(host)
            if host in self.answers:
                return [ipaddress.ip_address(a) for a in self.answers[host]]
            return await real(host, port)

        monkeypatch.setattr(push, "resolve", resolve)


def test_a_push_host_rebound_to_loopback_is_refused_at_send(
    make_relay: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = Resolver(monkeypatch)
    trap = socket.socket()  # where a rebound push would land: it must never be connected to
    trap.bind(("127.0.0.1", 0))
    trap.listen()
    trap.setblocking(False)
    port = trap.getsockname()[1]
    server: RelayServer = make_relay()
    acct = server.account()
    endpoint = f"https://push.rebind.test:{port}/x"
    resolver.answers["push.rebind.test"] = ["93.184.216.34"]
    try:
        with phone_client(server, acct.phone_token) as client:
            answer = client.post(
                "/api/push/subscribe", json={"endpoint": endpoint, "keys": BrowserKeys.new().json()}
            )
            assert answer.status_code == 200, answer.text
            resolver.answers["push.rebind.test"] = ["127.0.0.1"]
            tested = client.post("/api/push/test", json={"endpoint": endpoint})
            assert tested.status_code == 200, tested.text
            assert strict_json(tested.text) == {"ok": False, "status": "failed"}
        assert resolver.asked.count("push.rebind.test") == 2  # at subscribe, and again at send
        with pytest.raises(BlockingIOError):
            trap.accept()
    finally:
        trap.close()


def test_a_failed_push_says_only_failed(make_relay: Any) -> None:
    service = PushService()
    try:
        server: RelayServer = make_relay(push_allowed_hosts="127.0.0.1")
        acct = server.account()
        endpoint = f"{service.origin}/push/{uuid.uuid4().hex}"
        with phone_client(server, acct.phone_token) as client:
            answer = client.post(
                "/api/push/subscribe", json={"endpoint": endpoint, "keys": BrowserKeys.new().json()}
            )
            assert answer.status_code == 200, answer.text
            if server.state.store.dialect.postgres:  # kept in the database every node reads
                shared = server.state.part(push.Push)
                assert shared is not None
                listed = shared.book.for_account(acct.account_id)
                assert [s.endpoint for s in listed] == [endpoint]
            else:
                # The subscriptions file is the relay user's only, like the rest of its data (5).
                book = server.config.data_path / "push.json"
                assert stat.S_IMODE(book.stat().st_mode) == 0o600
            service.status = 500
            failed = client.post("/api/push/test", json={"endpoint": endpoint})
            assert strict_json(failed.text) == {"ok": False, "status": "failed"}
            service.status = 201
            sent = client.post("/api/push/test", json={"endpoint": endpoint})
            assert strict_json(sent.text) == {"ok": True, "status": "sent"}
        assert len(service.requests) == 2
    finally:
        service.close()


# -- 7. pairing: forwarded headers only from trusted proxies; a code dies after 5 wrong guesses ----


def _wrong_secret(code: str) -> str:
    """The same public id with another secret: a guess against this very code."""
    code_id, secret = code.split("-", 1)
    flipped = "".join("A" if c != "A" else "B" for c in secret.replace("-", ""))
    return f"{code_id}-{flipped}"


def test_rotating_x_forwarded_for_gives_no_extra_tries(make_relay: Any) -> None:
    server: RelayServer = make_relay(pair_attempts_per_minute=3)
    acct = server.account()
    with phone_client(server, None) as anonymous:
        for n in range(3):
            xff = {"X-Forwarded-For": f"198.51.100.{n + 1}", "X-Real-IP": f"198.51.100.{n + 1}"}
            error_of(anonymous.post("/api/pair", json={"code": "ZZZZ-ZZZZ"}, headers=xff),
                     401, "bad_pair_code")  # fmt: skip
        good = server.state.store.create_pair_code(acct.account_id, "phone", "p")
        limited = anonymous.post(
            "/api/pair", json={"code": good}, headers={"X-Forwarded-For": "203.0.113.50"}
        )
        error_of(limited, 429, "pair_rate_limited")


def test_a_code_dies_after_five_wrong_guesses(make_relay: Any) -> None:
    server: RelayServer = make_relay(trusted_proxies="127.0.0.1", pair_attempts_per_minute=100)
    acct = server.account()
    store = server.state.store
    code = store.create_pair_code(acct.account_id, "phone", "p")
    assert re.fullmatch(r"[A-Z2-9]{4}(-[A-Z2-9]{4}){3}", code), code
    other = store.create_pair_code(acct.account_id, "phone", "p")
    with phone_client(server, None) as anonymous:
        for n in range(5):  # from five addresses: the count is the code's, not an address's
            xff = {"X-Forwarded-For": f"198.51.100.{n + 1}"}
            wrong = anonymous.post("/api/pair", json={"code": _wrong_secret(code)}, headers=xff)
            error_of(wrong, 401, "bad_pair_code")
        dead = anonymous.post("/api/pair", json={"code": code})
        assert "wrong" in error_of(dead, 401, "bad_pair_code")["message"]
        # Another code is untouched, typed as a person types it (lower case, spaces).
        typed = other.lower().replace("-", " ")
        paired = anonymous.post("/api/pair", json={"code": typed})
        assert paired.status_code == 200, paired.text


def test_the_owner_is_not_locked_out_by_another_address(make_relay: Any) -> None:
    server: RelayServer = make_relay(trusted_proxies="127.0.0.1", pair_attempts_per_minute=3)
    acct = server.account()
    attacker = {"X-Forwarded-For": "203.0.113.66"}
    with phone_client(server, None) as anonymous:
        for n in range(3):
            # What the attacker writes before the address the proxy appends proves nothing.
            forged = {"X-Forwarded-For": f"192.0.2.{n + 1}, 203.0.113.66"}
            error_of(anonymous.post("/api/pair", json={"code": "ZZZZ-ZZZZ"}, headers=forged),
                     401, "bad_pair_code")  # fmt: skip
        good = server.state.store.create_pair_code(acct.account_id, "phone", "p")
        error_of(anonymous.post("/api/pair", json={"code": good}, headers=attacker),
                 429, "pair_rate_limited")  # fmt: skip
        owner = anonymous.post(
            "/api/pair", json={"code": good}, headers={"X-Forwarded-For": "198.51.100.7"}
        )
        assert owner.status_code == 200, owner.text


# -- 9. session ids are UUIDs -----------------------------------------------------------------------


class Recorder:
    def __init__(self, data: dict[str, Any] | None = None) -> None:
        self.commands: list[Command] = []
        self.data = data or {}

    async def __call__(self, command: Command) -> CommandResult:
        self.commands.append(command)
        return CommandResult(command_id="", ok=True, data=dict(self.data))


def test_a_session_id_that_is_not_a_uuid_is_refused_before_anything(
    relay: RelayServer, account: Account
) -> None:
    recorder = Recorder()
    headers = {"Authorization": f"Bearer {account.phone_token}"}

    async def go() -> None:
        async with (
            mac(relay, account.device_token, on_command=recorder),
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            for bad in ("../../../x", "x", "", "0" * 36, str(uuid.uuid4()) + "/..", " " * 4):
                answer = await client.post(
                    "/api/sessions",
                    json={"device_id": account.device_id, "cwd": "/tmp", "session_id": bad},
                )
                assert "UUID" in error_of(answer, 422, "bad_session_id")["message"]
            assert recorder.commands == []
            assert (await client.get("/api/sessions")).json()["sessions"] == []
            good = str(uuid.uuid4())
            made = await client.post(
                "/api/sessions",
                json={"device_id": account.device_id, "cwd": "/tmp", "session_id": good.upper()},
            )
            assert made.status_code == 201, made.text
            assert made.json()["id"] == good  # one spelling: the canonical lower-case form
            assert [c.session_id for c in recorder.commands] == [good]
            # An id in a path that is no id at all is a clear 404, and reaches no Mac.
            for path in ("/api/sessions/%2E%2E/messages", "/api/sessions/a%20b/interrupt"):
                error_of(await client.post(path, json={"text": "hi"}), 404, "unknown_session")
            held = f"/api/sessions/{good}/held/%2E%2E/cancel"
            error_of(await client.post(held), 404, "unknown_message")
            assert len(recorder.commands) == 1

    asyncio.run(go())


# -- 11. a reopen by any path clears the mark ---------------------------------------------------------


def test_a_message_that_reopens_a_session_clears_its_mark(
    relay: RelayServer, account: Account
) -> None:
    sid = str(uuid.uuid4())
    push_lines(relay, account, sid)
    recorder = Recorder()
    headers = {"Authorization": f"Bearer {account.phone_token}"}
    base = f"/api/sessions/{sid}"

    async def go() -> None:
        async with (
            mac(relay, account.device_token, on_command=recorder),
            httpx.AsyncClient(base_url=relay.url, headers=headers, timeout=15) as client,
        ):
            for life in ("end", "rest"):
                assert (await client.post(f"{base}/{life}")).status_code == 200
                assert (await client.get(base)).json()["mark"] in ("ended", "resting")
                # The Mac reopens an ended or resting session for a message (protocol §13).
                recorder.data = {"message_id": "m1", "state": "held", "reopened": True}
                sent = await client.post(f"{base}/messages", json={"text": "go on"})
                assert sent.status_code == 200, sent.text
                recorder.data = {}
                assert (await client.get(base)).json()["mark"] is None
            # A message typed into a running session leaves a person's mark alone.
            await client.post(f"{base}/rest")
            await client.post(f"{base}/messages", json={"text": "noted"})
            assert (await client.get(base)).json()["mark"] == "resting"

    asyncio.run(go())


# -- 14. unknown routes, odd bodies, forged forwarded headers -----------------------------------------


def test_unknown_routes_and_odd_bodies_answer_the_error_body(
    relay: RelayServer, account: Account
) -> None:
    sid = str(uuid.uuid4())
    push_lines(relay, account, sid)
    with phone_client(relay, account.phone_token) as client:
        error_of(client.get("/api/no-such-route"), 404, "not_found")
        error_of(client.get("/no-such-page.html"), 404, "not_found")
        error_of(client.delete("/api/health"), 405, "method_not_allowed")
        error_of(client.put(f"/api/sessions/{sid}/messages", json={}), 405, "method_not_allowed")
        deep = "[" * 100_000 + "]" * 100_000
        for body in (deep, '{"text": ' * 50_000 + '"x"' + "}" * 50_000, '{"text": "x"', "\x00"):
            answer = client.post(f"/api/sessions/{sid}/messages", content=body, headers=JSON)
            error_of(answer, 400, "bad_json")
        assert client.get("/api/health").status_code == 200  # the relay still answers


def test_the_origin_check_trusts_no_client_forwarded_host_and_compares_scheme(
    make_relay: Any,
) -> None:
    server: RelayServer = make_relay()
    acct = server.account()
    cookie = {"Cookie": f"cb_login={acct.phone_token}"}
    with httpx.Client(base_url=server.url, headers=cookie, timeout=15) as browser:
        forged = {"Origin": "https://evil.example", "X-Forwarded-Host": "evil.example"}
        error_of(browser.post("/api/logout", headers=forged), 403, "bad_origin")
        other_scheme = {"Origin": f"https://127.0.0.1:{server.port}"}
        error_of(browser.post("/api/logout", headers=other_scheme), 403, "bad_origin")
        assert browser.get("/api/me").status_code == 200  # nothing was logged out

    proxied: RelayServer = make_relay(trusted_proxies="127.0.0.1")
    acct = proxied.account()
    cookie = {"Cookie": f"cb_login={acct.phone_token}"}
    via_proxy = {"X-Forwarded-Host": "bridge.example", "X-Forwarded-Proto": "https"}
    with httpx.Client(base_url=proxied.url, headers=cookie, timeout=15) as browser:
        plain = {**via_proxy, "Origin": "http://bridge.example"}
        error_of(browser.post("/api/logout", headers=plain), 403, "bad_origin")
        out = browser.post("/api/logout", headers={**via_proxy, "Origin": "https://bridge.example"})
        assert out.status_code == 200, out.text


def test_a_full_disk_answers_503_store_unavailable_and_nothing_stored_is_lost(
    make_relay: Any,
) -> None:
    """A database that cannot be written (SQLite's own "database or disk is full"; on PostgreSQL
    a server that refuses writes, as one does in read-only mode or out of disk) is a clear 503 on
    the API and an error on the link, which stays up; once there is room again the Mac's lines are
    stored, and what was stored before is all still there."""
    from tests.support.api import SMALL
    from tests.support.api import push as push_lines
    from wire.protocol import LineRecord

    server = make_relay()
    acct = server.account()
    store = server.state.store
    sid = str(uuid.uuid4())

    postgres = store.dialect.postgres

    def pages(conn: Any) -> int:
        return int(conn.execute("PRAGMA page_count").fetchone()[0])

    async def fill_the_disk() -> None:
        if postgres:  # the writer's own sessions refuse to write from its next transaction on
            await store.write(
                lambda conn: conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            )
            return
        full = await store.write(pages)
        await store.write(lambda conn: conn.execute(f"PRAGMA max_page_count = {full}"))

    async def make_room() -> None:
        if postgres:
            await store.write(
                lambda conn: conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
            )
            return
        await store.write(lambda conn: conn.execute("PRAGMA max_page_count = 1073741823"))

    async def go() -> None:
        async with mac(server, acct.device_token) as link:
            await push_lines(link, sid, SMALL)
            with phone_client(server, acct.phone_token) as phone:
                before = (await asyncio.to_thread(phone.get, f"/api/sessions/{sid}/events")).json()
                await fill_the_disk()
                try:
                    big = {"title": "x" * 400}
                    for _ in range(50):  # until a page more is needed
                        answer = await asyncio.to_thread(
                            phone.patch, f"/api/sessions/{sid}", json=big
                        )
                        if answer.status_code != 200:
                            break
                        big = {"title": big["title"][::-1] + "y"}
                    assert answer.status_code == 503, answer.text
                    assert answer.json()["error"]["code"] == "store_unavailable"
                    words = "read-only transaction" if postgres else "full"
                    assert words in answer.json()["error"]["message"]
                    lines = [
                        LineRecord(offset=10**6 + i, text=_user(f"late {i}")) for i in range(30)
                    ]
                    with pytest.raises(Exception, match="store_unavailable"):
                        await link.send_lines(sid, "conv-late", lines)
                    assert link.connected  # the link stays up
                finally:
                    await make_room()
                await link.send_lines(sid, "conv-late", lines)
                after = (await asyncio.to_thread(phone.get, f"/api/sessions/{sid}/events")).json()
        kept = [e["seq"] for e in after["events"]]
        assert kept[: len(before["events"])] == [e["seq"] for e in before["events"]]
        texts = [e["text"] for e in after["events"] if e["kind"] == "user"]
        assert texts[-30:] == [f"late {i}" for i in range(30)]

    asyncio.run(go())


def _user(text: str) -> str:
    return json.dumps(
        {
            "type": "user",
            "uuid": str(uuid.uuid4()),
            "timestamp": "2026-12-01T10:00:00.000Z",
            "message": {"role": "user", "content": text},
        }
    )
