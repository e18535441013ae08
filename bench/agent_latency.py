"""Agent latency: a transcript line written on the Mac → the same line on the phone.

A relay process, an agent pointed at it and one session started the way the phone does it
(POST /api/sessions, device_id from GET /api/devices, cwd a temporary folder). The session's
"claude" is a stand-in script: it prints ``2.1.328 (Claude Code)`` for ``--version`` and
otherwise draws a captured idle Claude Code screen, writes the status file Claude Code keeps
(``~/.claude/sessions/<pid>.json``, status idle) and sleeps, so the agent sees an idle session.
The benchmark then appends real-format user lines (``{"type":"user",…,"content":"lat <time_ns>"}``)
to the session's transcript file at random intervals (50–300 ms) while an SSE client on
``/api/sessions/{id}/stream`` measures write → event latency from the time_ns in the text.

It runs twice, each time with a fresh relay, agent, tmux server and HOME: the agent waking on
file events (``AgentOptions(watch=True)``, the default) and the plain 700 ms polling
(``watch=False``). The CLI has no switch for that, so both modes build the agent the same way,
``Agent(AgentOptions(…, watch=…))``, in a child process of this script (its own interpreter, GIL
and CPU account; ``--in-thread`` runs it in a thread of this process instead, as the e2e tests
do). The agent's ``link.send_lines`` is wrapped to log when it picked lines up and when the relay
acknowledged them (after its COMMIT), so the figure splits into its parts.

    .venv/bin/python -m bench.agent_latency [--lines 200] [--only watch|poll] [--in-thread] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    REPO,
    TMP_PREFIX,
    RelayProcess,
    Row,
    SSEStream,
    _die_with_parent,
    clean_env,
    install_signal_cleanup,
    log,
    markdown_table,
    open_stream,
    percentile,
    proc_cpu,
)

GOAL_P50_MS = 15.0
CLAUDE_VERSION = "2.1.328"
IDLE_SCREEN = (
    REPO / "tests" / "fixtures" / "screens" / "b_idle" / "01_idle_fresh_80x24.screen_ansi.txt"
)
MAC_PREFIX = f"{TMP_PREFIX}mac-"
MODES = {"watch": True, "poll": False}
MODE_LABEL = {"watch": "file watching", "poll": "700 ms polling"}


# -- a throw-away Mac: HOME, agent data, stand-in claude, its own tmux server ------------------


def tmux_program() -> str:
    found = shutil.which("tmux")
    if not found:
        raise RuntimeError("tmux is not installed (apt install tmux)")
    return found


def tmux_socket_path(socket_name: str) -> Path:
    base = os.environ.get("TMUX_TMPDIR") or "/tmp"
    return Path(base) / f"tmux-{os.getuid()}" / socket_name


def kill_tmux_server(socket_name: str) -> None:
    """Stop the tmux server on this (benchmark-only) socket and remove the socket file."""
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run([tmux_program(), "-L", socket_name, "kill-server"],
                       capture_output=True, timeout=10, check=False)  # fmt: skip
    with contextlib.suppress(OSError):
        tmux_socket_path(socket_name).unlink()  # tmux leaves it behind


def sweep_stale_macs() -> None:
    """Kill the tmux servers and remove the folders of benchmarks that were killed outright."""
    for path in Path(tempfile.gettempdir()).glob(f"{MAC_PREFIX}*"):
        try:
            owner = int((path / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(owner, 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        with contextlib.suppress(OSError):
            kill_tmux_server((path / "tmux-socket").read_text().strip())
        shutil.rmtree(path, ignore_errors=True)


STANDIN = """#!/bin/sh
# A stand-in for Claude Code: the version, or an idle Claude screen and nothing else, plus (like
# Claude Code 2.1.328) its status file ~/.claude/sessions/<pid>.json saying "idle".
conversation=""
previous=""
for arg in "$@"; do
  if [ "$arg" = "--version" ]; then echo "{version} (Claude Code)"; exit 0; fi
  if [ "$previous" = "--session-id" ] || [ "$previous" = "--resume" ]; then conversation="$arg"; fi
  previous="$arg"
done
if [ "{status_file}" = "yes" ] && [ -n "$conversation" ]; then
  now="$(date +%s)000"
  mkdir -p "$HOME/.claude/sessions"
  printf '{{"pid":%s,"sessionId":"%s","cwd":"%s","startedAt":%s,"updatedAt":%s,"statusUpdatedAt":%s,"status":"idle","name":"bench","messagingSocketPath":"/tmp/cc-socks/%s.sock"}}' \\
    "$$" "$conversation" "$PWD" "$now" "$now" "$now" "$$" > "$HOME/.claude/sessions/$$.json"
fi
cat "{screen}"
exec sleep 2147483647
"""


class Mac:
    """A temp folder with a HOME, the agent's data folder, the stand-in ``claude`` and the name
    of a tmux socket of its own. Leaving it kills that tmux server and removes the folder."""

    def __init__(self, status_files: bool = True) -> None:
        self.status_files = status_files
        self.root = Path()
        self.socket = f"cb-agentbench-{uuid.uuid4().hex[:10]}"

    def __enter__(self) -> Mac:
        sweep_stale_macs()
        self.root = Path(tempfile.mkdtemp(prefix=MAC_PREFIX))
        (self.root / "owner.pid").write_text(str(os.getpid()))
        (self.root / "tmux-socket").write_text(self.socket)
        try:
            (self.home / ".claude" / "projects").mkdir(parents=True)
            self.data.mkdir()
            bin_dir = self.root / "bin"
            bin_dir.mkdir()
            shutil.copy(IDLE_SCREEN, bin_dir / "idle.screen")
            self.claude.write_text(
                STANDIN.format(
                    version=CLAUDE_VERSION,
                    screen=bin_dir / "idle.screen",
                    status_file="yes" if self.status_files else "no",
                )
            )
            self.claude.chmod(0o755)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        kill_tmux_server(self.socket)
        shutil.rmtree(self.root, ignore_errors=True)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def claude_home(self) -> Path:
        return self.home / ".claude"

    @property
    def data(self) -> Path:
        return self.root / "agent"

    @property
    def claude(self) -> Path:
        return self.root / "bin" / "claude"

    def folder(self, name: str) -> str:
        path = self.root / "work" / name
        path.mkdir(parents=True, exist_ok=True)
        return os.path.realpath(path)

    def session_env(self) -> dict[str, str]:
        """The environment of the agent and of the sessions it starts."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
        }

    def transcript(self, cwd: str, session_id: str) -> Path:
        from agent.transcript import transcript_path

        return transcript_path(self.claude_home, cwd, session_id)

    def tmux_server_pid(self) -> int | None:
        done = subprocess.run(
            [tmux_program(), "-L", self.socket, "display-message", "-p", "#{pid}"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
        text = done.stdout.strip()
        return int(text) if text.isdigit() else None


# -- the agent, built in-process from AgentOptions (child process or thread) -------------------


def agent_spec(mac: Mac, relay: RelayProcess, watch: bool, ack_log: Path | None) -> dict[str, Any]:
    return {
        "data": str(mac.data),
        "relay": relay.url,
        "token": relay.device_token,
        "claude": str(mac.claude),
        "socket": mac.socket,
        "claude_home": str(mac.claude_home),
        "env": mac.session_env(),
        "watch": watch,
        "ack_log": str(ack_log) if ack_log else None,
    }


def _instrument(agent: Any, ack_log: str) -> None:
    """Log, per batch of transcript lines, when the agent sent it and when the relay acked it."""
    out = open(ack_log, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 (closed at exit)
    send = agent.link.send_lines

    async def timed(
        session_id: str, conversation_id: str, lines: list[Any], cwd: str | None
    ) -> Any:
        sent = time.time_ns()
        ack = await send(session_id, conversation_id, lines, cwd)
        acked = time.time_ns()
        out.write(json.dumps({"conversation": conversation_id, "sent": sent, "acked": acked,
                              "offsets": [line.offset for line in lines]}) + "\n")  # fmt: skip
        return ack

    agent.link.send_lines = timed


async def _run_agent(
    spec: dict[str, Any], stop: asyncio.Event, started: threading.Event | None = None
) -> None:
    from agent.daemon import Agent, AgentOptions
    from wire import config as configmod

    options = AgentOptions(
        data_dir=Path(spec["data"]),
        relay_url=spec["relay"],
        token=spec["token"],
        claude=spec["claude"],
        mux_program=tmux_program(),
        mux_socket=spec["socket"],
        claude_home=Path(spec["claude_home"]),
        device_name="bench mac",
        revive=False,
        env=spec["env"],
        watch=spec["watch"],
    )
    agent = Agent(options, configmod.load(environ={}))
    if spec.get("ack_log"):
        _instrument(agent, spec["ack_log"])
    await agent.start()
    if started is not None:
        started.set()
    try:
        await stop.wait()
    finally:
        await agent.stop()


def agent_child_main(spec_path: str) -> int:
    """``python -m bench.agent_latency --agent-child SPEC.json``: run one agent until SIGTERM."""
    spec = json.loads(Path(spec_path).read_text())

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await _run_agent(spec, stop)

    asyncio.run(main())
    return 0


class AgentRunner:
    """An agent built from AgentOptions, in a child process (default) or in a thread here."""

    def __init__(
        self, spec: dict[str, Any], folder: Path, in_thread: bool = False,
        child: list[str] | None = None,
    ) -> None:  # fmt: skip
        self.spec = spec
        self.child = child or [sys.executable, "-m", "bench.agent_latency"]
        self.folder = folder
        self.in_thread = in_thread
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.stop_event: asyncio.Event | None = None
        self.errors: list[BaseException] = []
        self._log: Any = None

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else os.getpid()

    def __enter__(self) -> AgentRunner:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self.in_thread:
            started = threading.Event()

            def run() -> None:
                loop = asyncio.new_event_loop()
                self.loop = loop
                self.stop_event = asyncio.Event()
                try:
                    loop.run_until_complete(_run_agent(self.spec, self.stop_event, started))
                except BaseException as exc:
                    self.errors.append(exc)
                finally:
                    started.set()
                    loop.close()

            self.thread = threading.Thread(target=run, name="agent", daemon=True)
            self.thread.start()
            started.wait(60)
            if self.errors:
                raise self.errors[0]
            return
        spec_path = self.folder / "agent-spec.json"
        spec_path.write_text(json.dumps(self.spec))
        self._log = open(self.folder / "agent.log", "wb")  # noqa: SIM115
        env = clean_env({**self.spec["env"], "PYTHONPATH": str(REPO)})
        self.proc = subprocess.Popen(
            [*self.child, "--agent-child", str(spec_path)],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )  # fmt: skip

    def alive(self) -> bool:
        if self.in_thread:
            return self.thread is not None and self.thread.is_alive()
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return (self.folder / "agent.log").read_text(errors="replace")[-chars:]
        return ""

    def stop(self) -> None:
        if self.in_thread:
            if self.loop is not None and self.stop_event is not None and self.thread is not None:
                with contextlib.suppress(RuntimeError):  # the loop is already closed
                    self.loop.call_soon_threadsafe(self.stop_event.set)
                self.thread.join(30)
            self.thread = None
            return
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(5)
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None


# -- the phone's side: devices, sessions ------------------------------------------------------


async def wait_for(check: Any, timeout: float, what: str, every: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = await check()
        except Exception as exc:
            last = exc
        else:
            if last:
                return last
        await asyncio.sleep(every)
    raise RuntimeError(f"timed out after {timeout:g} s waiting for {what}; last seen: {last!r}")


async def online_device(phone: Any, timeout: float = 60) -> str:
    async def check() -> str | None:
        devices = (await phone.get("/api/devices")).json()["devices"]
        return next((d["id"] for d in devices if d.get("online")), None)

    return str(await wait_for(check, timeout, "the agent to link to the relay"))


async def start_session(phone: Any, device_id: str, cwd: str) -> str:
    response = await phone.post("/api/sessions", json={"device_id": device_id, "cwd": cwd})
    if response.status_code != 201:
        raise RuntimeError(f"POST /api/sessions: HTTP {response.status_code} {response.text[:300]}")
    return str(response.json()["id"])


async def session_states(phone: Any) -> dict[str, str]:
    listed = (await phone.get("/api/sessions")).json()["sessions"]
    return {s["id"]: s["state"] for s in listed}


def phone_client(relay: RelayProcess) -> Any:
    import httpx

    return httpx.AsyncClient(
        base_url=relay.url, headers={"Authorization": f"Bearer {relay.phone_token}"}, timeout=30
    )


# -- the measurement ---------------------------------------------------------------------------


def user_line(session_id: str, text: str) -> bytes:
    line = {
        "parentUuid": None, "isSidechain": False, "type": "user",
        "message": {"role": "user", "content": text}, "uuid": str(uuid.uuid4()),
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
        "userType": "external", "cwd": "/tmp", "sessionId": session_id, "version": CLAUDE_VERSION,
    }  # fmt: skip
    return (json.dumps(line, separators=(",", ":")) + "\n").encode()


_STAMP = re.compile(rb"lat (\d+)")


@dataclass
class ModeResult:
    mode: str
    lines: int
    phone_ms: list[float] = field(default_factory=list)  # write → SSE event
    picked_ms: list[float] = field(default_factory=list)  # write → agent sends it
    ack_ms: list[float] = field(default_factory=list)  # write → relay ack (durable)
    relay_ms: list[float] = field(default_factory=list)  # agent sends → relay ack
    missing: int = 0
    agent_cpu: float = float("nan")  # share of one core while lines were written
    seconds: float = 0.0
    batches: int = 0
    written: dict[int, int] = field(default_factory=dict)  # byte offset → time_ns written


async def measure(
    mode: str, lines: int, in_thread: bool, seed: int, child: list[str] | None = None
) -> ModeResult:
    """One mode on a fresh relay, agent, tmux server and HOME. ``child``: another command that
    takes ``--agent-child SPEC`` (an agent with experimental changes, for A/B runs)."""
    watch = MODES[mode]
    result = ModeResult(mode, lines)
    with Mac() as mac, RelayProcess() as relay:
        ack_log = mac.root / "acks.jsonl"
        spec = agent_spec(mac, relay, watch, ack_log)
        with AgentRunner(spec, mac.root, in_thread, child) as agent:
            async with phone_client(relay) as phone:
                try:
                    device_id = await online_device(phone)
                except RuntimeError as exc:
                    raise RuntimeError(f"{exc}\nagent log:\n{agent.log_tail()}") from None
                cwd = mac.folder("work")
                session_id = await start_session(phone, device_id, cwd)
                try:
                    await wait_for(
                        lambda: _is_idle(phone, session_id), 30, "the session to be idle"
                    )
                except RuntimeError as exc:
                    log(f"[agent_latency] {exc} (measuring anyway)")
                await _write_and_listen(relay, mac, session_id, lines, seed, agent, result)
        _read_acks(ack_log, result)
    return result


async def _is_idle(phone: Any, session_id: str) -> bool:
    return (await session_states(phone)).get(session_id) == "idle"


async def _write_and_listen(
    relay: RelayProcess, mac: Mac, session_id: str, lines: int, seed: int,
    agent: AgentRunner, result: ModeResult,
) -> None:  # fmt: skip
    path = mac.transcript(mac.folder("work"), session_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    seen: dict[int, float] = {}  # time_ns in the text → latency (ms)
    waiting: dict[int, asyncio.Future[None]] = {}

    def on_event(stream: SSEStream, event: bytes, ident: int | None, data: bytes, now: int) -> None:
        if event != b"event":
            return
        match = _STAMP.search(data)
        if match is None:
            return
        stamp = int(match.group(1))
        seen[stamp] = (now - stamp) / 1e6
        fut = waiting.pop(stamp, None)
        if fut is not None and not fut.done():
            fut.set_result(None)

    stream = await asyncio.wait_for(
        open_stream("127.0.0.1", relay.port, f"/api/sessions/{session_id}/stream?after=0",
                    relay.phone_token, on_event), 30)  # fmt: skip
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    offset = 0
    try:
        await asyncio.wait_for(asyncio.shield(stream.opened), 30)

        async def write_one() -> tuple[int, int]:
            nonlocal offset
            stamp = time.time_ns()
            data = user_line(session_id, f"lat {stamp}")
            waiting[stamp] = loop.create_future()
            os.write(fd, data)
            at = offset
            offset += len(data)
            return stamp, at

        # Warm-up: a few lines that are not counted (the first read of a new file, first commit).
        for _ in range(5):
            stamp, _ = await write_one()
            await asyncio.wait_for(asyncio.shield(waiting.get(stamp) or _done(loop)), 15)
            await asyncio.sleep(0.1)
        seen.clear()
        written: dict[int, int] = {}  # offset → time_ns written
        stamps: list[int] = []
        cpu0, t0 = proc_cpu(agent.pid), time.perf_counter()
        for i in range(lines):
            await asyncio.sleep(rng.uniform(0.05, 0.3))
            stamp, at = await write_one()
            written[at] = stamp
            stamps.append(stamp)
            if not agent.alive():
                raise RuntimeError(f"the agent died:\n{agent.log_tail()}")
            if (i + 1) % 50 == 0:
                log(f"[agent_latency] {MODE_LABEL[result.mode]}: {i + 1}/{lines} lines written")
        pending = [f for f in waiting.values() if not f.done()]
        if pending:
            await asyncio.wait(pending, timeout=10)
        result.seconds = time.perf_counter() - t0
        result.agent_cpu = (proc_cpu(agent.pid) - cpu0) / result.seconds
        result.phone_ms = [seen[s] for s in stamps if s in seen]
        result.missing = sum(1 for s in stamps if s not in seen)
        result.written = written
    finally:
        os.close(fd)
        stream.close()


def _done(loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
    fut: asyncio.Future[None] = loop.create_future()
    fut.set_result(None)
    return fut


def _read_acks(ack_log: Path, result: ModeResult) -> None:
    written = result.written
    try:
        records = [json.loads(x) for x in ack_log.read_text().splitlines() if x.strip()]
    except OSError:
        return
    for record in records:
        counted = [written[o] for o in record["offsets"] if o in written]
        if counted:
            result.batches += 1
        for stamp in counted:
            result.picked_ms.append((record["sent"] - stamp) / 1e6)
            result.ack_ms.append((record["acked"] - stamp) / 1e6)
            result.relay_ms.append((record["acked"] - record["sent"]) / 1e6)


# -- report ------------------------------------------------------------------------------------


def _pcts(values: list[float]) -> str:
    if not values:
        return "—"
    return (
        " / ".join(f"{percentile(values, p):.1f}" for p in (50, 90, 99))
        + f" (max {max(values):.1f})"
    )


def report(results: list[ModeResult], in_thread: bool) -> list[Row]:
    where = "a thread of the benchmark" if in_thread else "its own process"
    print(f"agent latency: one idle session, lines appended every 50–300 ms (random); "
          f"agent = Agent(AgentOptions(watch=…)) in {where}")  # fmt: skip
    head = "| p50 / p90 / p99 in ms | " + " | ".join(MODE_LABEL[r.mode] for r in results) + " |"
    print(head)
    print("| --- |" + " --- |" * len(results))
    for label, attr in (
        ("written → on the phone (SSE event)", "phone_ms"),
        ("written → agent sends it (picked up)", "picked_ms"),
        ("written → relay ack (stored, COMMIT)", "ack_ms"),
        ("agent sends → relay ack", "relay_ms"),
    ):
        print(f"| {label} | " + " | ".join(_pcts(getattr(r, attr)) for r in results) + " |")
    print("| lines measured / missing | "
          + " | ".join(f"{len(r.phone_ms)} / {r.missing}" for r in results) + " |")  # fmt: skip
    print("| batches sent (lines per batch) | "
          + " | ".join(f"{r.batches} ({len(r.ack_ms) / max(r.batches, 1):.2f})" for r in results)
          + " |")  # fmt: skip
    if not in_thread:
        print("| agent CPU while writing (one core) | "
              + " | ".join(f"{r.agent_cpu * 100:.1f} %" for r in results) + " |")  # fmt: skip
    print(flush=True)
    rows: list[Row] = []
    for r in results:
        p50 = percentile(r.phone_ms, 50)
        detail = (f"p50 {p50:.1f} ms, p90 {percentile(r.phone_ms, 90):.1f}, "
                  f"p99 {percentile(r.phone_ms, 99):.1f} ({len(r.phone_ms)} lines"
                  + (f", {r.missing} missing" if r.missing else "") + ")")  # fmt: skip
        if r.mode == "watch":
            rows.append(Row("agent: transcript line written → on the phone, file watching",
                            detail, f"p50 ≤ {GOAL_P50_MS:g} ms",
                            p50 <= GOAL_P50_MS and r.missing == 0))  # fmt: skip
        else:
            rows.append(Row("agent: transcript line written → on the phone, 700 ms polling",
                            detail))  # fmt: skip
        if r.ack_ms:
            rows.append(Row(f"agent: transcript line written → relay ack, {MODE_LABEL[r.mode]}",
                            f"p50 {percentile(r.ack_ms, 50):.1f} ms, "
                            f"p99 {percentile(r.ack_ms, 99):.1f} ms"))  # fmt: skip
    return rows


def run(quick: bool = False, lines: int | None = None, modes: tuple[str, ...] = ("watch", "poll"),
        in_thread: bool = False, seed: int = 1) -> list[Row]:  # fmt: skip
    count = lines or (50 if quick else 200)
    results = []
    for mode in modes:
        log(f"[agent_latency] {MODE_LABEL[mode]}: {count} lines")
        results.append(asyncio.run(measure(mode, count, in_thread, seed)))
    return report(results, in_thread)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=None, help="measured lines per mode (200)")
    parser.add_argument("--only", choices=sorted(MODES), help="one mode only")
    parser.add_argument(
        "--in-thread",
        action="store_true",
        help="run the agent in a thread of this process (as the e2e tests do)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of the random intervals")
    parser.add_argument("--quick", action="store_true", help="50 lines per mode")
    parser.add_argument("--agent-child", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.agent_child:
        return agent_child_main(args.agent_child)
    install_signal_cleanup()
    modes = (args.only,) if args.only else ("watch", "poll")
    rows = run(args.quick, args.lines, modes, args.in_thread, args.seed)
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
