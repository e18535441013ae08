"""The hook endpoint: where ``hooks/cb-hook`` reports each Claude Code hook event.

A tiny HTTP/1.1 server on 127.0.0.1 only (asyncio streams, one request per connection, no
keep-alive). It accepts ``POST /hook/<Event>`` for the twelve known events with a JSON object body
of at most 1 MiB, sent with the headers ``X-CB-Session`` (the bridge's session id) and
``X-CB-Secret`` (that session's secret from ``CB_HOOK``). A report whose secret does not match the
one ``secret_for(session_id)`` returns is refused with 403 and never reaches the agent.

Accepted reports go to ``on_hook(bridge_session_id, event, payload)``, in arrival order per
session (one worker per session drains a queue). The payload's own ``session_id`` is Claude
Code's *conversation* id, which changes on ``/clear`` and compaction; it is passed on untouched,
never compared with the bridge's session id.

Responses:

* any event but PermissionRequest, PermissionDenied and PreToolUse: 204 as soon as the report is
  queued; Claude Code never waits for the agent's callback.
* PreToolUse: the callback's text (an "allow once" armed for this call, agent/denials.py) → 200,
  None → 204, within ``decision_timeout``.
* PermissionDenied: the same within ``denial_timeout``; the callback may answer a future (the
  phone's "allow once"), which answers the report when done without holding up the others.
* PermissionRequest: the callback's return value is the decision. Text → 200 with that body
  (``permission_decision`` builds it); None → 204, "ask": Claude Code draws its dialog. With no
  decision within ``decision_timeout`` seconds the answer is 204 as well (the callback still runs
  to completion; its late answer is dropped).
* errors: 400 malformed request or body not a JSON object, 403 bad/missing session or secret,
  404 unknown path or event, 405 not POST, 408 request not read in time, 411 no Content-Length,
  413 body over the limit, 431 headers too large.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from types import TracebackType
from typing import Any, Literal

from agent.errors import HttpError
from wire.tasks import TaskSet, TaskSetClosed

log = logging.getLogger(__name__)

HOOK_EVENTS: tuple[str, ...] = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "Notification",
    "SessionEnd",
    "PermissionRequest",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PermissionDenied",  # auto mode's classifier refused a call (agent/denials.py)
)
"""Every hook event the settings file registers and the endpoint accepts."""

ANSWERED_EVENTS = frozenset({"PermissionRequest", "PermissionDenied", "PreToolUse"})
"""Events whose report waits for the callback's answer (the hook prints it for Claude Code)."""

SESSION_HEADER = "x-cb-session"
SECRET_HEADER = "x-cb-secret"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1"})
MAX_BODY = 1024 * 1024
MAX_HEAD = 16 * 1024
DECISION_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 5.0
SHUTDOWN_GRACE_S = 1.0

SecretFor = Callable[[str], str | None]
# The callback answers text, None, or a future of either: an answer that waits for the person
# (a PermissionDenied's "allow once") without holding up the session's other reports.
HookAnswer = str | None | asyncio.Future[str | None]
OnHook = Callable[[str, str, dict[str, Any]], Awaitable[HookAnswer]]


def permission_decision(behavior: Literal["allow", "deny"], message: str | None = None) -> str:
    """The PermissionRequest hook output Claude Code 2.1.328 honours, compact.

    >>> permission_decision("allow")
    '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}'
    >>> permission_decision("deny", "not from the phone")
    '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"not from the phone"}}}'
    """
    decision: dict[str, str]
    if behavior == "allow":
        if message is not None:
            raise ValueError("an allow decision carries no message")
        decision = {"behavior": "allow"}
    elif behavior == "deny":
        decision = {"behavior": "deny", "message": message or "Denied by claude-bridge"}
    else:
        raise ValueError(f"behavior must be 'allow' or 'deny', not {behavior!r}")
    output = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    return json.dumps(output, separators=(",", ":"), ensure_ascii=False)


@dataclass
class _Report:
    event: str
    payload: dict[str, Any]
    answer: asyncio.Future[str | None] | None = None  # PermissionRequest only


@dataclass
class _SessionQueue:
    reports: deque[_Report] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None


class HookServer:
    """``async with HookServer(secret_for, on_hook) as server: server.port``.

    ``secret_for(bridge_session_id)`` returns the session's secret, or None for an unknown
    session. ``on_hook(bridge_session_id, event, payload)`` receives each accepted report; for
    PermissionRequest its return value is the decision text (None = ask).
    """

    def __init__(
        self,
        secret_for: SecretFor,
        on_hook: OnHook,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        decision_timeout: float = DECISION_TIMEOUT_S,
        denial_timeout: float = DECISION_TIMEOUT_S,
        max_body: int = MAX_BODY,
        read_timeout: float = READ_TIMEOUT_S,
    ) -> None:
        if host not in LOOPBACK_HOSTS:
            raise ValueError(
                f"the hook endpoint listens on loopback only (127.0.0.1 or ::1), not {host!r}"
            )
        self._secret_for = secret_for
        self._on_hook = on_hook
        self._host = host
        self._wanted_port = port
        self.decision_timeout = decision_timeout
        self.denial_timeout = denial_timeout  # PermissionDenied: the phone's "allow once"
        self.max_body = max_body
        self.read_timeout = read_timeout
        self._server: asyncio.Server | None = None
        self._port = 0
        self._connections = TaskSet("hook connections", log)  # one per request
        self._workers = TaskSet("hook reports", log)  # one per session with reports queued
        self._sessions: dict[str, _SessionQueue] = {}

    # -- life cycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound TCP port (after ``start``)."""
        if self._server is None:
            raise RuntimeError("the hook server is not started")
        return self._port

    @property
    def host(self) -> str:
        return self._host

    async def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the hook server is already started")
        self._connections = TaskSet("hook connections", log)
        self._workers = TaskSet("hook reports", log)
        self._server = await asyncio.start_server(
            self._handle, self._host, self._wanted_port, limit=MAX_HEAD
        )
        self._port = int(self._server.sockets[0].getsockname()[1])
        log.info("hook endpoint listening on %s:%d", self._host, self._port)

    async def close(self) -> None:
        """Stop listening, drop open requests, give queued reports a short grace, then stop."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        await self._connections.close()
        await server.wait_closed()
        await self._workers.wait(SHUTDOWN_GRACE_S)
        await self._workers.close()
        self._sessions.clear()

    async def __aenter__(self) -> HookServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- one connection = one request -----------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The request is served by a task of the server's own set, so closing drops it.
        try:
            served = self._connections.start(self._request(reader, writer), name="request")
        except TaskSetClosed:
            writer.close()
            return
        await asyncio.wait({served})  # its end, cancelled by close() or not, ends this one

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body = await self._serve(reader, writer)
            await _respond(writer, status, body)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[HTTPStatus, bytes]:
        try:
            async with asyncio.timeout(self.read_timeout):
                session_id, event, payload = await self._read_request(reader, writer)
        except HttpError as err:
            log.warning("hook report refused: %s", err)
            return err.status, json.dumps({"error": err.reason}).encode()
        except TimeoutError:
            return HTTPStatus.REQUEST_TIMEOUT, b""

        if event not in ANSWERED_EVENTS:
            self._enqueue(session_id, _Report(event, payload))
            return HTTPStatus.NO_CONTENT, b""

        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._enqueue(session_id, _Report(event, payload, answer))
        wait = self.denial_timeout if event == "PermissionDenied" else self.decision_timeout
        try:
            async with asyncio.timeout(wait):
                decision = await asyncio.shield(answer)
        except TimeoutError:
            log.info("no %s answer within %.1f s", event, wait)
            decision = None
        if not decision:
            return HTTPStatus.NO_CONTENT, b""
        return HTTPStatus.OK, decision.encode()

    async def _read_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[str, str, dict[str, Any]]:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise HttpError(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "headers too large"
            ) from None
        method, target, headers = parse_head(head)

        prefix = "/hook/"
        if not target.startswith(prefix) or target[len(prefix) :] not in HOOK_EVENTS:
            raise HttpError(HTTPStatus.NOT_FOUND, f"no such hook endpoint: {target[:80]!r}")
        event = target[len(prefix) :]
        if method != "POST":
            raise HttpError(HTTPStatus.METHOD_NOT_ALLOWED, f"{method[:16]!r} is not POST")

        session_id = self._authenticate(headers)

        if "transfer-encoding" in headers:
            raise HttpError(HTTPStatus.LENGTH_REQUIRED, "chunked bodies are not accepted")
        length_text = headers.get("content-length")
        if length_text is None:
            raise HttpError(HTTPStatus.LENGTH_REQUIRED, "Content-Length is required")
        if not length_text.isdigit() or not length_text.isascii():
            raise HttpError(HTTPStatus.BAD_REQUEST, "bad Content-Length")
        length = int(length_text)
        if length > self.max_body:
            raise HttpError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"body of {length} bytes is over the {self.max_body} byte limit",
            )
        if headers.get("expect", "").lower() == "100-continue":
            writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = await reader.readexactly(length)
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, ValueError):
            raise HttpError(HTTPStatus.BAD_REQUEST, "body is not JSON") from None
        if not isinstance(payload, dict):
            raise HttpError(HTTPStatus.BAD_REQUEST, "body is not a JSON object")
        return session_id, event, payload

    def _authenticate(self, headers: dict[str, str]) -> str:
        session_id = headers.get(SESSION_HEADER, "")
        given = headers.get(SECRET_HEADER, "")
        expected = self._secret_for(session_id) if session_id else None
        # compare_digest even for an unknown session, so timing tells nothing about which exist
        ok = hmac.compare_digest(given.encode(), (expected or "\0" * 43).encode())
        if not (ok and expected and given):
            raise HttpError(HTTPStatus.FORBIDDEN, "unknown session or wrong secret")
        return session_id

    # -- reports, in order per session -----------------------------------------------------------

    def _enqueue(self, session_id: str, report: _Report) -> None:
        queue = self._sessions.get(session_id)
        if queue is None:
            queue = self._sessions[session_id] = _SessionQueue()
        queue.reports.append(report)
        if queue.worker is None:
            try:
                queue.worker = self._workers.start(self._drain(session_id, queue), name=session_id)
            except TaskSetClosed:  # closing: nobody reads it; its hook gets no answer
                queue.reports.pop()
                if report.answer is not None and not report.answer.done():
                    report.answer.set_result(None)

    async def _drain(self, session_id: str, queue: _SessionQueue) -> None:
        try:
            while queue.reports:
                report = queue.reports.popleft()
                try:
                    result = await self._on_hook(session_id, report.event, report.payload)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("hook callback failed for %s %s", session_id, report.event)
                    result = None
                if isinstance(result, asyncio.Future):
                    _answer_later(result, report.answer)
                elif report.answer is not None and not report.answer.done():
                    report.answer.set_result(result if isinstance(result, str) else None)
        finally:
            # single-threaded: nothing can be appended between the last check and this removal
            queue.worker = None
            if self._sessions.get(session_id) is queue:
                del self._sessions[session_id]
            for report in queue.reports:
                if report.answer is not None and not report.answer.done():
                    report.answer.set_result(None)


def _answer_later(
    later: asyncio.Future[str | None], answer: asyncio.Future[str | None] | None
) -> None:
    """Answer the report once ``later`` is done (nobody waits for it here)."""

    def done(future: asyncio.Future[str | None]) -> None:
        value = None if future.cancelled() or future.exception() else future.result()
        if answer is not None and not answer.done():
            answer.set_result(value if isinstance(value, str) else None)

    later.add_done_callback(done)


def parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    """Request line and headers of one HTTP/1.x request head (ending in a blank line).

    Header names are lower-cased; a header sent twice with different values is refused (so a
    forged second ``X-CB-Secret`` or ``Content-Length`` cannot confuse the checks).
    """
    try:
        text = head.decode("latin-1")
    except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
        raise HttpError(HTTPStatus.BAD_REQUEST, "bad request head") from None
    lines = text[: -len("\r\n\r\n")].split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HttpError(HTTPStatus.BAD_REQUEST, "bad request line")
    method, target, _version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        raw_name, sep, value = line.partition(":")
        name = raw_name.lower()
        if not sep or not name or any(c in name for c in " \t"):
            raise HttpError(HTTPStatus.BAD_REQUEST, "bad header line")
        value = value.strip()
        if headers.setdefault(name, value) != value:
            raise HttpError(HTTPStatus.BAD_REQUEST, f"conflicting {name} headers")
    return method, target, headers


async def _respond(writer: asyncio.StreamWriter, status: HTTPStatus, body: bytes) -> None:
    head = f"HTTP/1.1 {status.value} {status.phrase}\r\nConnection: close\r\n"
    if status != HTTPStatus.NO_CONTENT:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    writer.write(
        head.encode("ascii") + b"\r\n" + (b"" if status == HTTPStatus.NO_CONTENT else body)
    )
    await writer.drain()
