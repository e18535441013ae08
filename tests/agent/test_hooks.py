"""The hook path end to end: the real ``hooks/cb-hook`` under a real shell, reporting over a real
socket to a real ``HookServer`` on 127.0.0.1, with payloads Claude Code 2.1.328 really sent
(``tests/fixtures/hooks/*.hooks.log``). Async parts run under ``asyncio.run`` in the test thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import socket
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agent.hookserver import HOOK_EVENTS, HookServer, parse_head, permission_decision
from agent.hooksettings import (
    build_settings,
    hook_command_path,
    hook_env,
    new_secret,
    write_settings,
)
from tests.support.paths import FIXTURES, REPO

HOOK = REPO / "hooks" / "cb-hook"
HOOK_LOGS = FIXTURES / "hooks"
CAPTURED_SETTINGS = FIXTURES / "screens" / "a_startup_trust" / "hooks-settings.json"
AUTO_MODE_SETTINGS = FIXTURES / "auto_mode" / "2.1.332" / "retried" / "hooks-settings.json"

ALLOW = (
    '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'
)
SESSION = "0f6c4a52-6a1e-4d3e-9a57-1c0ffee00001"
OTHER_SESSION = "0f6c4a52-6a1e-4d3e-9a57-1c0ffee00002"

T = TypeVar("T")
Payload = dict[str, Any]
Decide = Callable[[str, str, Payload], Awaitable[str | None]]


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def captured(name: str) -> list[tuple[str, Payload]]:
    """(event, payload) of every hook Claude Code ran in one captured scenario, in order."""
    lines = (HOOK_LOGS / f"{name}.hooks.log").read_text().splitlines()
    return [(d["event"], d["payload"]) for d in map(json.loads, lines)]


def first(name: str, event: str) -> Payload:
    return next(p for e, p in captured(name) if e == event)


def shells() -> list[list[str]]:
    """The POSIX shells here: /bin/sh, dash, and bash in POSIX mode (macOS /bin/sh is bash 3.2)."""
    found = [["/bin/sh"]]
    if shutil.which("dash"):
        found.append([str(shutil.which("dash"))])
    if shutil.which("bash"):
        found.append([str(shutil.which("bash")), "--posix"])
    return found


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env.update(extra)
    return env


@dataclass
class HookRun:
    returncode: int
    stdout: bytes
    stderr: bytes
    elapsed: float


async def run_hook(
    event: str,
    payload: Payload | bytes,
    env: dict[str, str],
    shell: list[str] | None = None,
    command: str | None = None,
) -> HookRun:
    """Run cb-hook like Claude Code does: a shell, the event as argument, the payload on stdin."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    argv = [*(shell or ["/bin/sh"]), str(HOOK), event]
    if command is not None:
        argv = [*(shell or ["/bin/sh"]), "-c", command]
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(data), 30)
    assert proc.returncode is not None
    return HookRun(proc.returncode, out, err, time.perf_counter() - started)


@dataclass
class Agent:
    """A HookServer with a secret registry and a recording callback."""

    server: HookServer
    secrets: dict[str, str]
    calls: list[tuple[str, str, Payload]] = field(default_factory=list)

    def env(self, session: str = SESSION, **extra: str) -> dict[str, str]:
        return clean_env(**hook_env(session, self.secrets[session], self.server.port), **extra)

    async def settle(self, count: int, timeout: float = 5.0) -> None:
        """Wait until ``count`` reports have reached the callback."""
        deadline = time.monotonic() + timeout
        while len(self.calls) < count and time.monotonic() < deadline:
            await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def agent(decide: Decide | None = None, **kwargs: Any) -> AsyncIterator[Agent]:
    registry = {SESSION: new_secret(), OTHER_SESSION: new_secret()}
    calls: list[tuple[str, str, Payload]] = []

    async def on_hook(session: str, event: str, payload: Payload) -> str | None:
        calls.append((session, event, payload))
        return await decide(session, event, payload) if decide else None

    async with HookServer(registry.get, on_hook, **kwargs) as server:
        yield Agent(server, registry, calls)


async def raw_request(port: int, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send one request by hand; (status, body) of the answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.replace("\n", "\r\n").encode() + body)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    with contextlib.suppress(ConnectionError):
        await writer.wait_closed()
    status_line, _, rest = data.partition(b"\r\n")
    return int(status_line.split(b" ")[1]), rest.partition(b"\r\n\r\n")[2]


def post_head(event: str, length: int, session: str | None, secret: str | None) -> str:
    head = f"POST /hook/{event} HTTP/1.1\nHost: 127.0.0.1\nContent-Length: {length}\n"
    if session is not None:
        head += f"X-CB-Session: {session}\n"
    if secret is not None:
        head += f"X-CB-Secret: {secret}\n"
    return head + "\n"


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- cb-hook: off unless CB_HOOK is set --------------------------------------------------------


@pytest.mark.parametrize("value", [None, ""])
def test_without_cb_hook_the_hook_does_nothing(value: str | None) -> None:
    async def go() -> None:
        async with agent() as a:
            env = clean_env() if value is None else clean_env(CB_HOOK=value)
            for event, payload in captured("d_bash_permission"):
                result = await run_hook(event, payload, env)
                assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            await asyncio.sleep(0.2)
            assert a.calls == []

    run(go())


@pytest.mark.parametrize(
    "value",
    ["garbage", "sid:secret", "sid:secret:notaport", "s d:secret:1", "sid:se$cret:1", ":x:1"],
)
def test_malformed_cb_hook_is_ignored(value: str) -> None:
    async def go() -> None:
        result = await run_hook("PermissionRequest", {"x": 1}, clean_env(CB_HOOK=value))
        assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
        assert result.elapsed < 0.5

    run(go())


# -- reports reach the agent, in order -----------------------------------------------------------


@pytest.mark.parametrize("shell", shells(), ids=lambda s: " ".join(s))
def test_captured_reports_reach_the_agent_in_order(shell: list[str]) -> None:
    reports = captured("d_bash_permission") + captured("ij_clear_compact")

    async def go() -> None:
        async with agent() as a:
            for event, payload in reports:
                result = await run_hook(event, payload, a.env(), shell)
                assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            await a.settle(len(reports))
            assert a.calls == [(SESSION, event, payload) for event, payload in reports]
            # /clear gave Claude Code a new conversation id: both reach the agent, untouched
            conversations = {payload["session_id"] for _, _, payload in a.calls}
            assert len(conversations) == 3

    run(go())


def test_every_captured_event_is_accepted() -> None:
    logs = sorted(HOOK_LOGS.glob("*.hooks.log"))
    reports = [r for path in logs for r in captured(path.name.removesuffix(".hooks.log"))]
    assert {e for e, _ in reports} == set(HOOK_EVENTS)

    async def go() -> None:
        async with agent() as a:
            for event, payload in reports:
                assert (await run_hook(event, payload, a.env())).stdout == b""
            await a.settle(len(reports))
            assert [(e, p) for _, e, p in a.calls] == reports

    run(go())


def test_slow_callback_does_not_hold_claude_code_and_order_is_kept() -> None:
    reports = captured("b_idle")

    async def slow(session: str, event: str, payload: Payload) -> str | None:
        await asyncio.sleep(0.3)
        return None

    async def go() -> None:
        async with agent(slow) as a:
            for event, payload in reports:
                result = await run_hook(event, payload, a.env())
                assert result.elapsed < 0.25, "the hook waited for the callback"
            await a.settle(len(reports))
            assert [(e, p) for _, e, p in a.calls] == reports

    run(go())


def test_sessions_are_kept_apart() -> None:
    async def go() -> None:
        async with agent() as a:
            payload = first("b_idle", "UserPromptSubmit")
            await run_hook("UserPromptSubmit", payload, a.env(SESSION))
            await run_hook("UserPromptSubmit", payload, a.env(OTHER_SESSION))
            await a.settle(2)
            assert [s for s, _, _ in a.calls] == [SESSION, OTHER_SESSION]

    run(go())


def test_the_settings_command_runs_the_hook_through_sh_c(tmp_path: Path) -> None:
    """The command string written in hooks.json, run as Claude Code would (`sh -c`), even from a
    folder whose name holds a space and with no execute bit (as an install may leave it)."""
    spaced = tmp_path / "Application Support" / "cb-hook"
    spaced.parent.mkdir()
    shutil.copy(HOOK, spaced)
    spaced.chmod(0o444)
    settings = build_settings(spaced, 10)
    pre = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    perm = settings["hooks"]["PermissionRequest"][0]["hooks"][0]["command"]

    async def allow(session: str, event: str, payload: Payload) -> str | None:
        return permission_decision("allow") if event == "PermissionRequest" else None

    async def go() -> None:
        async with agent(allow) as a:
            payload = first("n_permissionrequest_allow_hook", "PreToolUse")
            result = await run_hook("", payload, a.env(), command=pre)
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            permission = first("n_permissionrequest_allow_hook", "PermissionRequest")
            result = await run_hook("", permission, a.env(), command=perm)
            assert result.stdout.decode() == ALLOW
            await a.settle(2)
            assert [(e, p) for _, e, p in a.calls] == [
                ("PreToolUse", payload),
                ("PermissionRequest", permission),
            ]

    run(go())


def test_proxies_and_curlrc_are_ignored(tmp_path: Path) -> None:
    """A person's proxy settings and ~/.curlrc must neither see the secret nor change the output."""
    (tmp_path / ".curlrc").write_text('proxy = "http://127.0.0.1:9"\ninclude\nverbose\n')
    proxy = f"http://127.0.0.1:{dead_port()}"
    hostile = {
        "HOME": str(tmp_path),
        "CURL_HOME": str(tmp_path),
        "http_proxy": proxy,
        "HTTP_PROXY": proxy,
        "all_proxy": proxy,
        "ALL_PROXY": proxy,
    }

    async def allow(session: str, event: str, payload: Payload) -> str | None:
        return permission_decision("allow")

    async def go() -> None:
        async with agent(allow) as a:
            payload = first("d_bash_permission", "PermissionRequest")
            result = await run_hook("PermissionRequest", payload, a.env(**hostile))
            assert (result.stdout.decode(), result.stderr) == (ALLOW, b"")
            assert len(a.calls) == 1

    run(go())


def test_payload_from_a_file_and_a_large_payload(tmp_path: Path) -> None:
    """stdin may be a file rather than a pipe; a big PostToolUse (a written file) arrives whole."""
    payload = first("e_write_edit_permission", "PostToolUse")
    payload = {**payload, "tool_response": {"content": "x" * 900_000 + "é"}}
    path = tmp_path / "payload.json"
    path.write_text(json.dumps(payload))

    async def go() -> None:
        async with agent() as a:
            with path.open("rb") as stdin:
                proc = await asyncio.create_subprocess_exec(
                    "/bin/sh", str(HOOK), "PostToolUse", stdin=stdin, env=a.env()
                )
                assert await asyncio.wait_for(proc.wait(), 10) == 0
            assert (await run_hook("PostToolUse", payload, a.env())).returncode == 0
            await a.settle(2)
            assert [p for _, _, p in a.calls] == [payload, payload]

    run(go())


# -- refused reports -----------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["forged secret", "wrong session", "unknown session"])
def test_bad_credentials_are_refused_and_the_hook_stays_silent(case: str) -> None:
    async def allow(session: str, event: str, payload: Payload) -> str | None:
        return permission_decision("allow")

    async def go() -> None:
        async with agent(allow) as a:
            if case == "forged secret":
                env = clean_env(**hook_env(SESSION, new_secret(), a.server.port))
            elif case == "wrong session":  # the other session's secret
                env = clean_env(**hook_env(SESSION, a.secrets[OTHER_SESSION], a.server.port))
            else:
                env = clean_env(**hook_env(new_secret(), a.secrets[SESSION], a.server.port))
            for event, payload in captured("n_permissionrequest_allow_hook")[:6]:
                result = await run_hook(event, payload, env)
                assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            await asyncio.sleep(0.2)
            assert a.calls == []

    run(go())


@pytest.mark.parametrize(
    ("session", "secret"),
    [(None, None), (SESSION, None), (None, "x"), (SESSION, ""), ("", "")],
)
def test_missing_headers_get_403(session: str | None, secret: str | None) -> None:
    async def go() -> None:
        async with agent() as a:
            body = json.dumps(first("b_idle", "Stop")).encode()
            status, _ = await raw_request(
                a.server.port, post_head("Stop", len(body), session, secret), body
            )
            assert status == 403
            # the right secret, sent by hand, is accepted
            good = post_head("Stop", len(body), SESSION, a.secrets[SESSION])
            assert (await raw_request(a.server.port, good, body))[0] == 204
            await a.settle(1)
            assert len(a.calls) == 1

    run(go())


def test_a_second_secret_header_is_refused() -> None:
    async def go() -> None:
        async with agent() as a:
            head = post_head("Stop", 2, SESSION, a.secrets[SESSION])
            head = head[:-1] + "X-CB-Secret: other\n\n"
            assert (await raw_request(a.server.port, head, b"{}"))[0] == 400
            assert a.calls == []

    run(go())


@pytest.mark.parametrize(
    ("head", "body", "status"),
    [
        ("POST /hook/Stop HTTP/1.1\nContent-Length: 8\n{auth}\n", b"not json", 400),
        ("POST /hook/Stop HTTP/1.1\nContent-Length: 2\n{auth}\n", b"[]", 400),
        ("POST /hook/Stop HTTP/1.1\nContent-Length: 2\n{auth}\n", b"\xff\xfe", 400),
        ("POST /hook/Stop HTTP/1.1\nContent-Length: 2097152\n{auth}\n", b"", 413),
        ("POST /hook/Stop HTTP/1.1\n{auth}\n", b"{}", 411),
        ("POST /hook/Stop HTTP/1.1\nContent-Length: -1\n{auth}\n", b"{}", 400),
        ("POST /hook/Stop HTTP/1.1\nTransfer-Encoding: chunked\n{auth}\n", b"", 411),
        ("POST /hook/NoSuchEvent HTTP/1.1\nContent-Length: 2\n{auth}\n", b"{}", 404),
        ("POST /hook/Stop/ HTTP/1.1\nContent-Length: 2\n{auth}\n", b"{}", 404),
        ("POST /hook/stop HTTP/1.1\nContent-Length: 2\n{auth}\n", b"{}", 404),
        ("POST / HTTP/1.1\nContent-Length: 2\n{auth}\n", b"{}", 404),
        ("GET /hook/Stop HTTP/1.1\n{auth}\n", b"", 405),
        ("POST /hook/Stop\nContent-Length: 2\n{auth}\n", b"{}", 400),
        ("POST /hook/Stop HTTP/1.1\nContent-Length 2\n{auth}\n", b"{}", 400),
        ("POST /hook/Stop HTTP/1.1\nX-Big: " + "a" * 20000 + "\n{auth}\n", b"{}", 431),
    ],
)
def test_bad_requests_are_refused(head: str, body: bytes, status: int) -> None:
    async def go() -> None:
        async with agent() as a:
            auth = f"X-CB-Session: {SESSION}\nX-CB-Secret: {a.secrets[SESSION]}\n"
            got, answer = await raw_request(a.server.port, head.replace("{auth}", auth), body)
            assert got == status
            assert answer == b"" or "error" in json.loads(answer)
            await asyncio.sleep(0.05)
            assert a.calls == []

    run(go())


def test_a_huge_payload_from_the_hook_is_dropped_quietly() -> None:
    payload = {**first("b_idle", "UserPromptSubmit"), "prompt": "y" * (1024 * 1024)}

    async def allow(session: str, event: str, payload: Payload) -> str | None:
        return permission_decision("allow")

    async def go() -> None:
        async with agent(allow) as a:
            for event in ("UserPromptSubmit", "PermissionRequest"):
                result = await run_hook(event, payload, a.env())
                assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            await asyncio.sleep(0.1)
            assert a.calls == []

    run(go())


def test_slow_request_is_cut_off() -> None:
    async def go() -> None:
        async with agent(read_timeout=0.3) as a:
            started = time.perf_counter()
            status, _ = await raw_request(a.server.port, "POST /hook/Stop HTTP/1.1\n")
            assert status == 408
            assert time.perf_counter() - started < 2

    run(go())


# -- PermissionRequest decisions -------------------------------------------------------------------


@pytest.mark.parametrize("shell", shells(), ids=lambda s: " ".join(s))
@pytest.mark.parametrize(
    ("decision", "printed"),
    [
        (permission_decision("allow"), ALLOW),
        (
            permission_decision("deny", 'Refused on the phone: "rm" ✋'),
            '{"hookSpecificOutput":{"hookEventName":"PermissionRequest",'
            '"decision":{"behavior":"deny","message":"Refused on the phone: \\"rm\\" ✋"}}}',
        ),
        (None, ""),
        ("", ""),
        ('{"x": 1}\n\n', '{"x": 1}\n\n'),  # exactly as received, trailing newlines kept
    ],
)
def test_permission_request_prints_the_decision(
    shell: list[str], decision: str | None, printed: str
) -> None:
    payload = first("d_bash_permission", "PermissionRequest")

    async def decide(session: str, event: str, got: Payload) -> str | None:
        assert (session, event, got) == (SESSION, "PermissionRequest", payload)
        return decision

    async def go() -> None:
        async with agent(decide) as a:
            result = await run_hook("PermissionRequest", payload, a.env(), shell)
            assert (result.returncode, result.stdout.decode(), result.stderr) == (0, printed, b"")
            assert len(a.calls) == 1

    run(go())


def test_only_the_answered_events_print() -> None:
    """PermissionRequest, PermissionDenied and PreToolUse print the agent's answer
    (agent/denials.py: "allow once"); every other event prints nothing, whatever it answers."""

    async def always(session: str, event: str, payload: Payload) -> str | None:
        return permission_decision("allow")

    async def go() -> None:
        async with agent(always) as a:
            for event, payload in captured("d_bash_permission") + captured("auto_mode_retried"):
                result = await run_hook(event, payload, a.env())
                answered = ("PermissionRequest", "PermissionDenied", "PreToolUse")
                expected = ALLOW if event in answered else ""
                assert result.stdout.decode() == expected

    run(go())


def test_a_decision_past_the_deadline_means_ask() -> None:
    deadline = 0.5

    async def slow(session: str, event: str, payload: Payload) -> str | None:
        await asyncio.sleep(3)
        return permission_decision("allow")

    async def go() -> None:
        async with agent(slow, decision_timeout=deadline) as a:
            payload = first("n_permissionrequest_allow_hook", "PermissionRequest")
            result = await run_hook("PermissionRequest", payload, a.env())
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            assert deadline <= result.elapsed < deadline + 0.5

    run(go())


def test_the_hook_gives_up_on_its_own_wait() -> None:
    """Even if the agent took longer than CB_HOOK_WAIT, Claude Code is not held."""

    async def slow(session: str, event: str, payload: Payload) -> str | None:
        await asyncio.sleep(3)
        return permission_decision("allow")

    async def go() -> None:
        async with agent(slow, decision_timeout=10) as a:
            env = clean_env(
                **hook_env(SESSION, a.secrets[SESSION], a.server.port, permission_wait_s=0.4)
            )
            payload = first("n_permissionrequest_allow_hook", "PermissionRequest")
            result = await run_hook("PermissionRequest", payload, env)
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            assert result.elapsed < 0.9

    run(go())


def test_the_secret_never_appears_in_an_argument_list() -> None:
    """Any local user can read argument lists (`ps`); the secret travels through curl's stdin."""
    if not Path("/proc/self/cmdline").exists():
        pytest.skip("no /proc here")
    seen: list[bytes] = []

    async def look(session: str, event: str, payload: Payload) -> str | None:
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            with contextlib.suppress(OSError):
                seen.append(cmdline.read_bytes())
        return None

    async def go() -> None:
        async with agent(look) as a:
            payload = first("d_bash_permission", "PermissionRequest")
            await run_hook("PermissionRequest", payload, a.env())
            assert len(a.calls) == 1
            curls = [c for c in seen if b"curl" in c and b"/hook/PermissionRequest" in c]
            assert curls, "curl was not running while the agent decided"
            assert not [c for c in seen if a.secrets[SESSION].encode() in c]

    run(go())


def test_a_failing_callback_means_ask_and_later_reports_still_flow() -> None:
    async def broken(session: str, event: str, payload: Payload) -> str | None:
        if event == "PermissionRequest":
            raise RuntimeError("boom")
        return None

    async def go() -> None:
        async with agent(broken) as a:
            reports = captured("d_bash_permission")[:6]
            outputs = [(await run_hook(e, p, a.env())).stdout for e, p in reports]
            assert outputs == [b""] * len(reports)
            await a.settle(len(reports))
            assert [e for _, e, _ in a.calls] == [e for e, _ in reports]

    run(go())


def test_permission_decision_text() -> None:
    assert permission_decision("allow") == ALLOW
    deny = json.loads(permission_decision("deny", "no"))
    assert deny == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "no"},
        }
    }
    assert json.loads(permission_decision("deny"))["hookSpecificOutput"]["decision"]["message"]
    with pytest.raises(ValueError):
        permission_decision("allow", "a message")
    with pytest.raises(ValueError):
        permission_decision("ask")  # type: ignore[arg-type]


# -- the agent is down or stuck -------------------------------------------------------------------


@pytest.mark.parametrize("event", ["PreToolUse", "PermissionRequest"])
def test_agent_down_the_hook_exits_at_once(event: str) -> None:
    async def go() -> None:
        env = clean_env(**hook_env(SESSION, new_secret(), dead_port()))
        payload = first("d_bash_permission", event)
        for _ in range(3):
            result = await run_hook(event, payload, env)
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            assert result.elapsed < 0.5

    run(go())


def test_agent_stuck_the_hook_gives_up() -> None:
    """Something listens on the port but never answers: the hook still returns in time."""

    async def go() -> None:
        with socket.socket() as listener:
            listener.bind(("127.0.0.1", 0))
            listener.listen(16)
            port = listener.getsockname()[1]
            env = clean_env(**hook_env(SESSION, new_secret(), port), CB_HOOK_MAX_TIME="0.3")
            result = await run_hook("Stop", first("b_idle", "Stop"), env)
            assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")
            assert result.elapsed < 0.8

    run(go())


# -- the server itself ------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "localhost", "192.168.1.10", ""])
def test_the_server_refuses_non_loopback_hosts(host: str) -> None:
    async def never(session: str, event: str, payload: Payload) -> str | None:
        return None

    with pytest.raises(ValueError, match="loopback"):
        HookServer(lambda s: None, never, host=host)


def test_the_server_binds_loopback_and_shuts_down_cleanly() -> None:
    async def go() -> None:
        async with agent() as a:
            port = a.server.port
            assert port > 0 and a.server.host == "127.0.0.1"
            await run_hook("Stop", first("b_idle", "Stop"), a.env())
            await a.settle(1)
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", port)
        with pytest.raises(RuntimeError):
            _ = a.server.port

    run(go())


def test_ipv6_loopback_is_allowed() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")

    async def go() -> None:
        async def never(session: str, event: str, payload: Payload) -> str | None:
            return None

        try:
            async with HookServer(lambda s: None, never, host="::1") as server:
                assert server.port > 0
        except OSError:
            pytest.skip("::1 is not configured here")

    run(go())


def test_closing_with_a_decision_pending_answers_ask() -> None:
    async def forever(session: str, event: str, payload: Payload) -> str | None:
        await asyncio.sleep(60)
        return None

    async def go() -> None:
        a_ctx = agent(forever, decision_timeout=30)
        a = await a_ctx.__aenter__()
        hook = asyncio.create_task(
            run_hook("PermissionRequest", first("d_bash_permission", "PermissionRequest"), a.env())
        )
        await a.settle(1)
        started = time.perf_counter()
        await a_ctx.__aexit__(None, None, None)
        assert time.perf_counter() - started < 3
        result = await hook
        assert (result.returncode, result.stdout) == (0, b"")

    run(go())


def test_parse_head() -> None:
    method, target, headers = parse_head(
        b"POST /hook/Stop HTTP/1.1\r\nHost: x\r\nX-CB-Session:  abc \r\n\r\n"
    )
    assert (method, target, headers) == ("POST", "/hook/Stop", {"host": "x", "x-cb-session": "abc"})


# -- settings ---------------------------------------------------------------------------------------


def test_build_settings_covers_every_hook_like_the_captured_file() -> None:
    path = hook_command_path()
    settings = build_settings(path, 12)
    hooks = settings["hooks"]
    assert list(hooks) == list(HOOK_EVENTS) and len(hooks) == 13
    captured_hooks = json.loads(CAPTURED_SETTINGS.read_text())["hooks"]
    # PermissionDenied is newer than that capture: as 2.1.332 ran it (tests/fixtures/auto_mode)
    denied = json.loads(AUTO_MODE_SETTINGS.read_text())["hooks"]["PermissionDenied"]
    captured_hooks["PermissionDenied"] = denied
    assert set(hooks) == set(captured_hooks)
    for event, entries in hooks.items():
        (entry,) = entries
        assert set(entry) == set(captured_hooks[event][0]), event  # same matcher form
        assert entry.get("matcher") == captured_hooks[event][0].get("matcher")
        (hook,) = entry["hooks"]
        assert hook["type"] == "command"
        argv = shlex.split(hook["command"])
        assert argv == ["/bin/sh", str(path), event]
        assert Path(argv[1]).is_absolute()
        assert hook["timeout"] == (12 if event == "PermissionRequest" else 5)


def test_build_settings_checks_its_input() -> None:
    with pytest.raises(ValueError):
        build_settings(Path("hooks/cb-hook"), 10)
    with pytest.raises(ValueError):
        build_settings(HOOK, 0)


def test_hook_command_path_is_the_repo_hook_and_executable() -> None:
    path = hook_command_path()
    assert path == HOOK.resolve() and path.is_absolute()
    mode = path.stat().st_mode
    try:
        path.chmod(0o644)
        assert hook_command_path() == path
        assert path.stat().st_mode & 0o111 == 0o111
    finally:
        path.chmod(stat.S_IMODE(mode) | 0o755)


def test_write_settings_is_atomic(tmp_path: Path) -> None:
    target = tmp_path / "data" / "hooks.json"
    settings = build_settings(HOOK, 10)
    write_settings(target, settings)
    assert json.loads(target.read_text()) == settings
    write_settings(target, build_settings(HOOK, 20))  # replaces
    assert (
        json.loads(target.read_text())["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"] == 20
    )
    before = target.read_text()
    with pytest.raises(TypeError):
        write_settings(target, {"hooks": object()})
    assert target.read_text() == before  # a failed write leaves the old file whole
    assert sorted(p.name for p in target.parent.iterdir()) == ["hooks.json"]  # no temp left


def test_hook_env_and_secret() -> None:
    secret = new_secret()
    assert len(secret) >= 43 and secret != new_secret()
    assert hook_env(SESSION, secret, 4321) == {"CB_HOOK": f"{SESSION}:{secret}:4321"}
    assert hook_env(SESSION, secret, 1, permission_wait_s=3)["CB_HOOK_WAIT"] == "3.000"
    for bad in [("a:b", secret, 1), (SESSION, "x y", 1), (SESSION, "", 1), (SESSION, secret, 0)]:
        with pytest.raises(ValueError):
            hook_env(*bad)


def test_a_payload_on_a_socket_stdin_arrives_whole() -> None:
    """Claude Code hands the payload over a socket, not a pipe or a file (seen on 2.1.328)."""
    import socket
    import subprocess

    event, payload = captured("d_bash_permission")[0]

    async def go() -> None:
        async with agent() as a:
            ours, theirs = socket.socketpair()
            with ours, theirs:
                proc = subprocess.Popen(
                    ["/bin/sh", str(HOOK), event],
                    stdin=theirs.fileno(),
                    env=a.env(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
                ours.sendall(json.dumps(payload).encode())
                ours.shutdown(socket.SHUT_WR)
                out, err = await asyncio.to_thread(proc.communicate, None, 10)
            assert (proc.returncode, out, err) == (0, b"", b"")
            await a.settle(1)
            assert a.calls == [(SESSION, event, payload)]

    run(go())
