"""Shared parts of the benchmarks: server processes, test lines, a raw-socket SSE client, statistics.

Every server runs as its own OS process (so the load generator never shares its CPU or GIL) and
is stopped, and its temporary folder removed, even when a benchmark fails or is interrupted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid as uuidlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent
TRANSCRIPTS = REPO / "tests" / "fixtures" / "transcripts"
BIN = Path(sys.executable).parent  # the venv's bin (not resolved: keep the venv's python)
CLI = BIN / "claude-bridge"

if str(REPO) not in sys.path:  # `python bench/x.py` as well as `python -m bench.x`
    sys.path.insert(0, str(REPO))


# -- small helpers ---------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raise_fd_limit(wanted: int = 16384) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100) of unsorted values; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (p / 100.0) * (len(ordered) - 1)
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by a process, from /proc (0 where unavailable)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def fmt_ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Row:
    """One line of the results table."""

    metric: str
    result: str
    goal: str = ""
    met: bool | None = None  # None: no goal (information only)


def markdown_table(rows: Sequence[Row]) -> str:
    out = ["| metric | result | goal |", "| --- | --- | --- |"]
    for row in rows:
        goal = row.goal or "—"
        if row.met is True:
            goal += " ✅"
        elif row.met is False:
            goal += " ❌"
        out.append(f"| {row.metric} | {row.result} | {goal} |")
    return "\n".join(out)


# -- cleanup of everything started ------------------------------------------------------------


def _on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds through the `finally` blocks that stop servers


def install_signal_cleanup() -> None:
    """SIGTERM/SIGHUP unwind like Ctrl-C does, so context managers stop the servers."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, _on_sigterm)


def _die_with_parent() -> None:
    """In the child before exec (Linux): get SIGTERM if the benchmark process dies, even by -9."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def clean_env(overrides: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a server: no stray CB_* settings from the caller, plus ``overrides``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CB_")}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(overrides or {})
    return env


TMP_PREFIX = "cb-bench-"


def sweep_stale_dirs() -> None:
    """Remove temp folders left by a benchmark that was killed outright (its owner is gone)."""
    for path in Path(tempfile.gettempdir()).glob(f"{TMP_PREFIX}*"):
        try:
            owner = int((path / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass


class ServerProcess:
    """A server in its own process on 127.0.0.1:<free port>, in its own temp folder."""

    name = "server"
    health_path = "/api/health"

    def __init__(self, env: dict[str, str] | None = None, start_timeout: float = 60.0) -> None:
        self.port = free_port()
        self.env = clean_env(env)
        self.start_timeout = start_timeout
        self.dir: Path | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def prepare(self) -> None:
        """Work done before the process starts (tokens)."""

    def __enter__(self) -> Self:
        self.launch()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def launch(self) -> None:
        """Make the folder, prepare and start the process without waiting for it to answer
        (``wait_ready``). Call it from the main thread: the parent-death signal is tied to the
        thread that starts the process, and fires when that thread ends."""
        sweep_stale_dirs()
        self.dir = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{self.name}-"))
        (self.dir / "owner.pid").write_text(str(os.getpid()))
        try:
            self.prepare()
            self._popen()
        except BaseException:
            self.stop()
            raise

    def _popen(self) -> None:
        assert self.dir is not None
        if self._log_file is None:
            self._log_file = open(self.dir / "server.log", "ab")  # noqa: SIM115 (closed by stop)
        self.proc = subprocess.Popen(
            self.command(),
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )

    def kill(self) -> None:
        """SIGKILL, as a crash would: no cleanup of any kind. The folder stays for a restart."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def relaunch(self) -> None:
        """Start the same command again (same port, same folder) after ``kill``; then
        ``wait_ready``."""
        self._popen()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.proc.returncode}:\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(self.url + self.health_path, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError, TimeoutError):
                pass
            time.sleep(0.1)
        raise RuntimeError(
            f"{self.name} did not answer within {self.start_timeout:g} s:\n{self.log_tail()}"
        )

    def log_tail(self, chars: int = 3000) -> str:
        if self.dir is None:
            return ""
        with contextlib.suppress(OSError):
            return (self.dir / "server.log").read_text(errors="replace")[-chars:]
        return ""

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # uvicorn's graceful shutdown
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)
        if self._log_file is not None:
            with contextlib.suppress(OSError):
                self._log_file.close()
            self._log_file = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def _token(data_dir: Path, kind: str, name: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [str(CLI), "token", "create", "--data", str(data_dir), "--kind", kind, "--name", name],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"claude-bridge token create failed: {done.stderr.strip()}")
    return done.stdout.strip().splitlines()[-1]


class RelayProcess(ServerProcess):
    """``claude-bridge relay`` with a fresh data folder, a device token and a phone token."""

    name = "relay"

    def __init__(
        self, env: dict[str, str] | None = None, log_level: str = "warning", **kw: Any
    ) -> None:
        super().__init__(env, **kw)
        self.log_level = log_level
        self.device_token = ""
        self.phone_token = ""

    @property
    def data_dir(self) -> Path:
        assert self.dir is not None
        return self.dir / "data"

    def prepare(self) -> None:
        self.device_token = _token(self.data_dir, "device", "bench-mac", self.env)
        self.phone_token = _token(self.data_dir, "phone", "bench-phone", self.env)

    def command(self) -> list[str]:
        return [
            str(CLI), "relay", "--data", str(self.data_dir), "--port", str(self.port),
            "--log-level", self.log_level,
        ]  # fmt: skip


class BareSSEProcess(ServerProcess):
    """bench/bare_sse.py: a plain sse-starlette broadcast server, the fan-out baseline."""

    name = "bare-sse"
    health_path = "/health"

    def command(self) -> list[str]:
        return [
            sys.executable,
            str(BENCH / "bare_sse.py"),
            "--port",
            str(self.port),
            "--log-level",
            "warning",
        ]


# -- transcript lines ------------------------------------------------------------------------


def _captured() -> list[tuple[str, str | None, int]]:
    """Every captured transcript line: (text, uuid, number of display events it makes)."""
    from relay.convert import ConversionLimits, convert_line
    from wire import config as configmod

    limits = ConversionLimits.from_config(configmod.load({}, environ={}))
    out: list[tuple[str, str | None, int]] = []
    for path in sorted(TRANSCRIPTS.glob("*.jsonl")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            if not raw.strip():
                continue
            uuid = None
            with contextlib.suppress(ValueError, AttributeError):
                found = json.loads(raw).get("uuid")
                uuid = found if isinstance(found, str) else None
            out.append((raw, uuid, len(convert_line(raw, limits).events)))
    return out


def chat_line(text: str, role: str = "user", uuid: str | None = None) -> tuple[str, str]:
    """A user prompt or assistant text line in the captured Claude Code format: (json, uuid)."""
    uuid = uuid or str(uuidlib.uuid4())
    ts = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    if role == "user":
        line: dict[str, Any] = {
            "parentUuid": None, "isSidechain": False, "type": "user",
            "message": {"role": "user", "content": text}, "uuid": uuid, "timestamp": ts,
            "permissionMode": "default", "userType": "external", "entrypoint": "cli",
            "cwd": "/tmp/bench", "sessionId": "bench", "version": "2.1.328",
        }  # fmt: skip
    else:
        line = {
            "parentUuid": None, "isSidechain": False, "type": "assistant",
            "message": {
                "id": "msg_" + uuid.replace("-", "")[:24], "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": text}],
                "stop_reason": None, "usage": {"input_tokens": 3, "output_tokens": 12},
            },
            "uuid": uuid, "timestamp": ts, "userType": "external", "cwd": "/tmp/bench",
            "sessionId": "bench", "version": "2.1.328",
        }  # fmt: skip
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False), uuid


MIXES = ("events", "all", "chat")


@dataclass
class LineSource:
    """Endless fresh transcript lines (new uuids, growing byte offsets) for one conversation.

    mix="events": the captured lines that make at least one display event (≈1.05 events a line);
    mix="all": every captured line, bookkeeping lines included (≈0.2 events a line);
    mix="chat": made-up user prompts and assistant replies (1 event a line).
    """

    mix: str = "events"
    offset: int = 0
    _pool: list[tuple[str, str | None, int]] = field(default_factory=list)
    _index: int = 0

    def __post_init__(self) -> None:
        if self.mix not in MIXES:
            raise ValueError(f"mix must be one of {MIXES}")
        if self.mix == "chat":
            self._pool = []
            for i in range(50):
                text = f"Message {i}: " + "lorem ipsum dolor sit amet " * (2 + i % 12)
                self._pool.append(
                    (chat_line(text, "user" if i % 2 == 0 else "assistant")[0], "x", 1)
                )
        else:
            captured = _captured()
            self._pool = [c for c in captured if c[2] > 0] if self.mix == "events" else captured

    @property
    def events_per_line(self) -> float:
        return sum(c[2] for c in self._pool) / len(self._pool)

    def take_events(self, events: int) -> list[Any]:
        """Lines that make exactly ``events`` display events (a line that would overshoot is skipped)."""
        out: list[Any] = []
        made = 0
        while made < events:
            count = self._pool[self._index % len(self._pool)][2]
            if made + count > events:
                self._index += 1
                continue
            out += self.take(1)
            made += count
        return out

    def take(self, count: int) -> list[Any]:
        from wire.protocol import LineRecord

        out = []
        for _ in range(count):
            text, old_uuid, _ = self._pool[self._index % len(self._pool)]
            self._index += 1
            new_uuid = None
            if old_uuid is not None:
                new_uuid = str(uuidlib.uuid4())
                text = text.replace(f'"uuid":"{old_uuid}"', f'"uuid":"{new_uuid}"', 1)
            out.append(LineRecord(offset=self.offset, text=text, uuid=new_uuid))
            self.offset += len(text.encode("utf-8")) + 1
        return out


# -- a raw-socket SSE client -----------------------------------------------------------------

OnEvent = Callable[["SSEStream", bytes, int | None, bytes, int], None]


class SSEStream(asyncio.Protocol):
    """One SSE client on a raw socket: HTTP/1.1 GET, chunked decoding, frame parsing.

    Cheap enough to run a thousand of them in one asyncio process: no task per client, one
    callback per read. ``on_event(stream, event, id, data, now_ns)`` is called for each frame with
    data; ``now_ns`` is ``time.time_ns()`` taken when the bytes were read from the socket.
    """

    def __init__(
        self,
        host: str,
        port: int,
        path: str,
        token: str | None,
        on_event: OnEvent,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        headers = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Accept: text/event-stream",
                   "Cache-Control: no-cache"]  # fmt: skip
        if token:
            headers.append(f"Authorization: Bearer {token}")
        headers += [f"{name}: {value}" for name, value in (extra_headers or {}).items()]
        self.request = ("\r\n".join(headers) + "\r\n\r\n").encode()
        self.on_event = on_event
        self.transport: asyncio.Transport | None = None
        loop = asyncio.get_running_loop()
        self.opened: asyncio.Future[None] = loop.create_future()  # first frame ("hello") seen
        self.finished: asyncio.Future[None] = loop.create_future()  # set by the owner's callback
        self.status = 0
        self.headers_done = False
        self.chunked = False
        self.ended = False
        self.error: str | None = None
        self.events = 0
        self.last_id = 0
        self.data_bytes = 0
        self.user: Any = None  # the owner's per-client state
        self._raw = bytearray()
        self._sse = bytearray()
        self._chunk_left = 0

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = time.time_ns()
        raw = self._raw
        raw += data
        if not self.headers_done:
            end = raw.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(raw[:end]).decode("latin-1").split("\r\n")
            del raw[: end + 4]
            self.headers_done = True
            parts = head[0].split(" ", 2)
            self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
            lowered = [h.lower() for h in head[1:]]
            self.chunked = any(
                h.startswith("transfer-encoding:") and "chunked" in h for h in lowered
            )
            if self.status != 200:
                self._fail(f"HTTP {self.status}: {bytes(raw[:300])!r}")
                return
        if self.chunked:
            self._dechunk()
        else:
            self._sse += raw.replace(b"\r", b"")
            raw.clear()
        self._frames(now)
        if self.ended:  # the last chunk: a proxy may keep the connection open after it
            self._fail("the server ended the stream")

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(f"connection lost: {exc}" if exc else "the server closed the stream")

    # internals

    def _fail(self, reason: str) -> None:
        if self.error is None and not self.finished.done():
            self.error = reason
        for fut in (self.opened, self.finished):
            if not fut.done():
                fut.set_exception(ConnectionError(reason))
                fut.exception()  # mark retrieved: a failure is reported through .error
        if self.transport is not None:
            self.transport.close()

    def _dechunk(self) -> None:
        raw = self._raw
        pos = 0
        size_len = len(raw)
        while pos < size_len:
            if self._chunk_left == 0:
                eol = raw.find(b"\r\n", pos)
                if eol < 0:
                    break
                line = bytes(raw[pos:eol])
                pos = eol + 2
                if not line:
                    continue  # the CRLF after a chunk's data
                size = int(line.split(b";", 1)[0], 16)
                if size == 0:
                    self.ended = True
                    break
                self._chunk_left = size
            take = min(self._chunk_left, size_len - pos)
            if take <= 0:
                break
            self._sse += raw[pos : pos + take].replace(b"\r", b"")
            pos += take
            self._chunk_left -= take
        del raw[:pos]

    def _frames(self, now: int) -> None:
        buf = self._sse
        start = 0
        while True:
            end = buf.find(b"\n\n", start)
            if end < 0:
                break
            frame = bytes(buf[start:end])
            start = end + 2
            event = b"message"
            ident: int | None = None
            data: bytes | None = None
            for line in frame.split(b"\n"):
                if line.startswith(b"data:"):
                    value = line[6:] if line[5:6] == b" " else line[5:]
                    data = value if data is None else data + b"\n" + value
                elif line.startswith(b"event:"):
                    event = line[6:].strip()
                elif line.startswith(b"id:"):
                    with contextlib.suppress(ValueError):
                        ident = int(line[3:])
            if data is None:
                continue  # a comment (keep-alive) or an empty frame
            self.events += 1
            self.data_bytes += len(data)
            if ident is not None:
                self.last_id = ident
            if not self.opened.done():
                self.opened.set_result(None)
            self.on_event(self, event, ident, data, now)
        if start:
            del buf[:start]

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def open_stream(
    host: str,
    port: int,
    path: str,
    token: str | None,
    on_event: OnEvent,
    extra_headers: dict[str, str] | None = None,
) -> SSEStream:
    loop = asyncio.get_running_loop()
    stream = SSEStream(host, port, path, token, on_event, extra_headers)
    await loop.create_connection(lambda: stream, host, port)
    return stream


@contextlib.contextmanager
def timer() -> Iterator[Callable[[], float]]:
    started = time.perf_counter()
    ended: list[float] = []
    yield lambda: (ended[0] if ended else time.perf_counter()) - started
    ended.append(time.perf_counter())
