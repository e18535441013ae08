"""The relay as a cluster: several nodes on one PostgreSQL database, next to one SQLite relay.

Side by side in one run, every server in its own process, one PostgreSQL server (durable:
fsync, synchronous_commit and full_page_writes on) for every node:

* **ingest**: 6 Macs (MacLinks, each its own device and session) push transcript lines in
  batches of 200, each batch awaited until its durable ack; the events/s of the whole relay for
  SQLite on one node, PostgreSQL on one node and PostgreSQL on three nodes (the Macs spread over
  them);
* **fanout**: 1,000 SSE clients of one session, with the Mac on node 1 and the clients spread
  over nodes 1, 2 and 3, against the same clients on one SQLite relay (bench/fanout.py's method:
  each event's text carries ``time.time_ns()`` at sending);
* **failover**: a phone follows a session through Caddy (the shipped deploy/Caddyfile.cluster)
  and the node serving it is killed with SIGKILL: the time until its stream, reopened the page's
  way with Last-Event-ID, gets its first new event; and, for the Macs (the agent's own link
  code, through Caddy) that were on that node, the time until another node shows them online.

    .venv/bin/python -m bench.cluster [--quick] [--only ingest|fanout|failover]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    CLI,
    LineSource,
    RelayProcess,
    Row,
    ServerProcess,
    SSEStream,
    chat_line,
    install_signal_cleanup,
    log,
    markdown_table,
    open_stream,
    percentile,
    proc_cpu,
    raise_fd_limit,
)
from bench.fanout import MARK, TS_DIGITS, Target, _start_publisher
from bench.ingest import GOAL_EVENTS_PER_S

NODES = 3
MACS = 6  # ingest: Macs pushing at once, each with its own device and session
BATCH = 200  # lines per batch, as bench/ingest.py
GOAL_P99_FACTOR = 2.0  # fan-out: cluster p99 at most this times the one SQLite relay's
# PostgreSQL as a production server runs it: every commit is on disk before the relay acks.
DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
# For scale, a published figure (Centrifugo's documentation on its PostgreSQL broker), not
# measured here and on other hardware.
CENTRIFUGO = "Centrifugo's PostgreSQL broker reports ~16k publishes/s at ~1.3 ms"
# The page (web/js/live.js LiveStream): a stream that ended is opened again 1 s later, the pause
# doubling after each failed attempt up to 15 s.
PAGE_RETRY_FIRST = 1.0
PAGE_RETRY_MAX = 15.0
FAILOVER_INTERVAL = 0.05  # seconds between the followed session's events during failover
FAILOVER_MACS = 3  # idle Macs linked through Caddy: some are on the node that is killed
FAILOVER_TIMEOUT = (
    30.0  # seconds a phone or Mac may take to be served again before it counts as lost
)
OWNER_FILE = "bench.owner"  # in a PostgreSQL cluster's folder: the benchmark process that owns it


# -- PostgreSQL, nodes, accounts --------------------------------------------------------------


def sweep_stale_clusters() -> None:
    """Stop and remove PostgreSQL clusters left by a benchmark killed outright (owner gone)."""
    from tests.support.postgres import SYSTEM_USER, bindir

    for base in Path(tempfile.gettempdir()).glob("cb-postgres-*"):
        try:
            owner = int((base / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue  # not ours (the tests' clusters have no owner file)
        try:
            os.kill(owner, 0)
            continue
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        command = [str(bindir() / "pg_ctl"), "-D", str(base / "data"), "stop", "-m", "immediate"]
        if os.geteuid() == 0:
            command = ["runuser", "-u", SYSTEM_USER, "--", *command]
        with contextlib.suppress(OSError, __import__("subprocess").SubprocessError):
            __import__("subprocess").run(command, cwd=base, capture_output=True, timeout=30)
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def postgres_server() -> Iterator[Any]:
    """One throw-away PostgreSQL server with durable settings (tests/support/postgres.py)."""
    from tests.support.postgres import PostgresCluster

    sweep_stale_clusters()
    cluster = PostgresCluster(settings=dict(DURABLE))
    (cluster.base / OWNER_FILE).write_text(str(os.getpid()))
    try:
        cluster.start()
        with cluster.connect() as conn:
            shown = {k: conn.execute(f"SHOW {k}").fetchone()[0] for k in DURABLE}  # type: ignore[index]
        if shown != DURABLE:
            raise RuntimeError(f"PostgreSQL did not take the durable settings: {shown}")
        log(
            f"[cluster] PostgreSQL on port {cluster.port}: {', '.join(f'{k}={v}' for k, v in shown.items())}"
        )
        yield cluster
    finally:
        cluster.destroy()


def postmaster_cpu(cluster: Any) -> float:
    """CPU seconds used so far by the PostgreSQL server: the postmaster and its children."""
    try:
        master = int((cluster.data / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    total = proc_cpu(master)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        with (
            contextlib.suppress(OSError, IndexError, ValueError),
            open(f"/proc/{entry.name}/stat") as f,
        ):
            if int(f.read().rsplit(")", 1)[1].split()[1]) == master:
                total += proc_cpu(int(entry.name))
    return total


@dataclass
class Tokens:
    phone: str
    devices: list[tuple[str, str]]  # (token, device id)


def seed(overrides: dict[str, str], devices: int) -> Tokens:
    """One account with a phone and ``devices`` Macs, written by the store itself (as
    ``claude-bridge token create`` does) before the relays start."""
    from relay.store import Store
    from wire import config as configmod

    store = Store(configmod.load(overrides, environ={}))
    try:
        account = store.ensure_account()
        phone = store.create_token(account, "phone", "bench-phone")[0]
        made = [store.create_token(account, "device", f"bench-mac-{i + 1}") for i in range(devices)]
        return Tokens(phone, [(token, subject) for token, _, subject in made])
    finally:
        store.close()


class SqliteRelay(RelayProcess):
    """The embedded default: ``claude-bridge relay`` on SQLite in its data folder."""

    name = "sqlite"

    def __init__(self, devices: int, synchronous: str = "NORMAL") -> None:
        super().__init__({"CB_STORE_SYNCHRONOUS": synchronous})
        self.label = "SQLite, one node" + (
            "" if synchronous == "NORMAL" else f" (synchronous={synchronous})"
        )
        self.devices = devices
        self.tokens = Tokens("", [])

    def prepare(self) -> None:
        self.tokens = seed({"data_dir": str(self.data_dir)}, self.devices)
        self.phone_token = self.tokens.phone
        self.device_token = self.tokens.devices[0][0]


class PgNode(ServerProcess):
    """One relay node on the shared PostgreSQL database. Its access log (level info) says which
    node a request through Caddy reached."""

    name = "node"

    def __init__(self, label: str, database_url: str, log_level: str = "info") -> None:
        super().__init__({"CB_DATABASE_URL": database_url})
        self.label = label
        self.log_level = log_level

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        assert self.dir is not None
        return [
            str(CLI), "relay", "--data", str(self.dir / "data"), "--port", str(self.port),
            "--log-level", self.log_level,
        ]  # fmt: skip

    def log_text(self) -> str:
        if self.dir is None:
            return ""
        with contextlib.suppress(OSError):
            return (self.dir / "server.log").read_text(errors="replace")
        return ""


def start_together(stack: contextlib.ExitStack, servers: list[Any]) -> None:
    """Start servers side by side, launched one after another from this thread and then waited
    for together; ``stack`` stops them together too."""

    def stop_all() -> None:
        with ThreadPoolExecutor(max_workers=len(servers)) as pool:
            list(pool.map(lambda server: server.stop(), servers))

    stack.callback(stop_all)
    for server in servers:
        server.launch()
    with ThreadPoolExecutor(max_workers=len(servers)) as pool:
        for future in [pool.submit(server.wait_ready) for server in servers]:
            future.result()


def cpu_of(pids: list[int]) -> float:
    return sum(proc_cpu(pid) for pid in pids)


def pids(servers: list[Any]) -> list[int]:
    return [s.proc.pid for s in servers if s.proc is not None]


# -- 1. ingest ------------------------------------------------------------------------------

_SOURCE: list[LineSource] = []


def _lines() -> LineSource:
    """One source for every setup (reading the captured lines takes a while); its offsets only
    grow, and each setup's Macs write sessions of their own."""
    if not _SOURCE:
        _SOURCE.append(LineSource("events"))
    return _SOURCE[0]


@dataclass
class IngestRun:
    label: str
    macs: int
    nodes: int
    lines: int
    events: int
    seconds: float
    acks: list[float]
    relay_cpu: float  # share of one core, all relay processes together
    pg_cpu: float | None = None  # share of one core, the PostgreSQL server
    macs_cpu: float = 0.0  # share of one core, the benchmark's process (the Macs' side)

    @property
    def events_per_s(self) -> float:
        return self.events / self.seconds


async def ingest(
    label: str,
    servers: list[Any],
    tokens: Tokens,
    lines: int,
    pg: Any = None,
) -> IngestRun:
    """``MACS`` Macs, Mac i on servers[i % len(servers)], each pushing its share of ``lines``."""
    from wire.client import MacLink
    from wire.protocol import DeviceInfo

    source = _lines()
    macs = len(tokens.devices)
    share = [lines // macs + (1 if i < lines % macs else 0) for i in range(macs)]
    # Every batch built first: making lines is not the relay's work.
    plans = [[source.take(min(BATCH, n - j)) for j in range(0, n, BATCH)] for n in share]
    warm = [source.take(BATCH) for _ in range(macs)]
    links = [
        MacLink(servers[i % len(servers)].url, token, DeviceInfo(name=f"bench-mac-{i + 1}"))
        for i, (token, _) in enumerate(tokens.devices)
    ]
    await asyncio.gather(*(link.connect() for link in links))
    acks: list[float] = []
    try:
        # Warm-up on other sessions: first-use costs out of the way, every node's pool opened.
        await asyncio.gather(*(
            link.send_lines(str(uuid.uuid4()), str(uuid.uuid4()), batch, cwd="/tmp/bench", timeout=60)
            for link, batch in zip(links, warm, strict=True)
        ))  # fmt: skip

        async def push(link: MacLink, batches: list[Any]) -> int:
            session, conversation = str(uuid.uuid4()), str(uuid.uuid4())
            last_seq = 0
            for batch in batches:
                t0 = time.perf_counter()
                ack = await link.send_lines(
                    session, conversation, batch, cwd="/tmp/bench", timeout=60
                )
                acks.append(time.perf_counter() - t0)
                if ack.rejected:
                    raise RuntimeError(f"the relay rejected lines: {ack.rejected[:3]}")
                last_seq = ack.last_seq
            return last_seq

        relay_pids = pids(servers)
        cpu0, pg0 = cpu_of(relay_pids), postmaster_cpu(pg) if pg is not None else 0.0
        own0 = time.process_time()
        started = time.perf_counter()
        seqs = await asyncio.gather(
            *(push(link, plan) for link, plan in zip(links, plans, strict=True))
        )
        seconds = time.perf_counter() - started
        relay_cpu = (cpu_of(relay_pids) - cpu0) / seconds
        macs_cpu = (time.process_time() - own0) / seconds
        pg_cpu = (postmaster_cpu(pg) - pg0) / seconds if pg is not None else None
    finally:
        await asyncio.gather(*(link.close() for link in links), return_exceptions=True)
    return IngestRun(
        label, macs, len(servers), lines, sum(seqs), seconds, acks, relay_cpu, pg_cpu, macs_cpu
    )


def report_ingest(run: IngestRun) -> None:
    pg = f", PostgreSQL {run.pg_cpu * 100:.0f}%" if run.pg_cpu is not None else ""
    print(f"  {run.label:26} {run.events_per_s:8,.0f} events/s  ({run.events:,} events from "
          f"{run.lines:,} lines, {run.macs} Macs on {run.nodes} node(s), {run.seconds:.2f} s); "
          f"ack p50 {percentile(run.acks, 50) * 1000:.1f} ms, p99 {percentile(run.acks, 99) * 1000:.1f} ms; "
          f"CPU (share of one core): relay {run.relay_cpu * 100:.0f}%{pg}, Macs (this process) {run.macs_cpu * 100:.0f}%", flush=True)  # fmt: skip


def ingest_rows(runs: list[IngestRun]) -> list[Row]:
    out: list[Row] = []
    for run in runs:
        clustered = run.nodes > 1
        pg = f", PostgreSQL {run.pg_cpu * 100:.0f}%" if run.pg_cpu is not None else ""
        out.append(Row(
            f"cluster ingest, {run.label} ({run.macs} Macs, {run.lines:,} lines in batches of {BATCH}): "
            "events/s, ack p50 / p99, CPU",
            f"**{run.events_per_s:,.0f}** events/s; ack {percentile(run.acks, 50) * 1000:.1f} / "
            f"{percentile(run.acks, 99) * 1000:.1f} ms; relay CPU {run.relay_cpu * 100:.0f}%{pg}",
            f"≥ {GOAL_EVENTS_PER_S:,} (whole cluster)" if clustered else "",
            run.events_per_s >= GOAL_EVENTS_PER_S if clustered else None,
        ))  # fmt: skip
    return out


# -- 2. fan-out -------------------------------------------------------------------------------


@dataclass
class Where:
    """What bench/fanout.py's publisher needs of a server: its URL."""

    url: str


@dataclass
class FanRound:
    label: str
    clients: int
    expected: int
    same: list[float] = field(default_factory=list)  # ms, clients on the Mac's node
    other: list[float] = field(default_factory=list)  # ms, clients on other nodes
    delivered: int = 0
    failed: int = 0
    cpu: float = 0.0  # share of one core: every relay process (and PostgreSQL)
    wall: float = 0.0

    @property
    def all(self) -> list[float]:
        return self.same + self.other

    @property
    def complete(self) -> bool:
        return self.delivered == self.expected * self.clients and not self.failed


def _last_seq(url: str, session_id: str, token: str) -> int:
    request = urllib.request.Request(
        f"{url}/api/sessions/{session_id}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(json.load(response)["last_seq"])


async def start_session(url: str, device_token: str) -> str:
    """A session to watch, made by one line through the link."""
    from wire.client import MacLink
    from wire.protocol import DeviceInfo, LineRecord

    session_id = str(uuid.uuid4())
    link = MacLink(url, device_token, DeviceInfo(name="bench-fanout"))
    await link.connect()
    try:
        text, line_uuid = chat_line("bench: session start")
        await link.send_lines(
            session_id, str(uuid.uuid4()), [LineRecord(offset=0, text=text, uuid=line_uuid)]
        )
    finally:
        await link.close()
    return session_id


async def fan_round(
    label: str,
    mac_url: str,
    client_ports: list[int],
    tokens: Tokens,
    session_id: str,
    clients: int,
    args: argparse.Namespace,
    cpu_pids: list[int],
    pg: Any = None,
) -> FanRound:
    """bench/fanout.py's round, with the clients spread over ``client_ports`` (client i on
    client_ports[i % n]) and the publisher's Mac on ``mac_url``."""
    expected = args.batches * args.lines
    result = FanRound(label, clients, expected)
    mac_port = int(mac_url.rsplit(":", 1)[1])

    def on_event(stream: SSEStream, event: bytes, ident: int | None, data: bytes, now: int) -> None:
        if event != b"event":
            return
        at = data.find(MARK)
        if at < 0:
            return
        start = at + len(MARK)
        port, count = stream.user
        latency = (now - int(data[start : start + TS_DIGITS])) / 1e6
        (result.same if port == mac_port else result.other).append(latency)
        stream.user = (port, count + 1)
        if count + 1 >= expected and not stream.finished.done():
            stream.finished.set_result(None)

    target = Target("relay", Where(mac_url), session_id, tokens.phone, tokens.devices[0][0])
    publisher = await _start_publisher(target, args)
    streams: list[SSEStream] = []
    try:
        after = await asyncio.to_thread(_last_seq, mac_url, session_id, tokens.phone)
        path = f"/api/sessions/{session_id}/stream?after={after}"
        gate = asyncio.Semaphore(args.connect_concurrency)

        async def connect(port: int) -> None:
            async with gate:
                stream = await asyncio.wait_for(
                    open_stream("127.0.0.1", port, path, tokens.phone, on_event), 30
                )
                stream.user = (port, 0)
                streams.append(stream)
                await asyncio.wait_for(asyncio.shield(stream.opened), 60)

        outcomes = await asyncio.gather(
            *(connect(client_ports[i % len(client_ports)]) for i in range(clients)),
            return_exceptions=True,
        )
        bad = [o for o in outcomes if isinstance(o, BaseException)]
        if bad:
            raise RuntimeError(f"{len(bad)} of {clients} clients failed to connect: {bad[0]!r}")
        assert publisher.stdout is not None and publisher.stdin is not None
        ready = await asyncio.wait_for(publisher.stdout.readline(), 120)
        if ready.strip() != b"ready":
            raise RuntimeError(f"the publisher did not start: {ready!r}")
        await asyncio.sleep(args.settle)
        cpu0 = cpu_of(cpu_pids) + (postmaster_cpu(pg) if pg is not None else 0.0)
        t0 = time.perf_counter()
        publisher.stdin.write(b"go\n")
        await publisher.stdin.drain()
        done, pending = await asyncio.wait(
            [s.finished for s in streams], timeout=args.batches * args.interval + args.timeout
        )
        result.wall = time.perf_counter() - t0
        cpu1 = cpu_of(cpu_pids) + (postmaster_cpu(pg) if pg is not None else 0.0)
        result.cpu = (cpu1 - cpu0) / max(result.wall, 1e-9)
        out, err = await asyncio.wait_for(publisher.communicate(), 60)
        if not out.strip():
            raise RuntimeError(f"the publisher failed: {err.decode()[-2000:]}")
        result.failed = len(pending) + sum(1 for d in done if d.exception() is not None)
        result.delivered = sum(s.user[1] for s in streams)
        return result
    finally:
        for stream in streams:
            stream.close()
        if publisher.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                publisher.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(publisher.wait(), 10)


def describe_round(r: FanRound) -> str:
    status = "" if r.complete else f"  INCOMPLETE: {r.delivered:,}/{r.expected * r.clients:,}"
    parts = [f"all p50 {percentile(r.all, 50):7.1f} ms p99 {percentile(r.all, 99):7.1f} ms"]
    if r.same and r.other:
        parts.append(f"on the Mac's node p99 {percentile(r.same, 99):.1f} ms, "
                     f"on the other nodes p99 {percentile(r.other, 99):.1f} ms")  # fmt: skip
    return (f"  {r.label:22} {r.clients:5} clients: {'; '.join(parts)} | {r.delivered:,} deliveries, "
            f"CPU {r.cpu * 100:.0f}% of a core{status}")  # fmt: skip


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def fan_rows(rounds: dict[str, list[FanRound]], args: argparse.Namespace) -> list[Row]:
    single, cluster = rounds.get("sqlite", []), rounds.get("cluster", [])
    s50, s99 = (
        _median([percentile(r.all, 50) for r in single]),
        _median([percentile(r.all, 99) for r in single]),
    )
    c50, c99 = (
        _median([percentile(r.all, 50) for r in cluster]),
        _median([percentile(r.all, 99) for r in cluster]),
    )
    other99 = _median([percentile(r.other, 99) for r in cluster])
    complete = all(r.complete for r in single + cluster)
    note = "" if complete else " (incomplete delivery)"
    ratio = c99 / s99 if s99 > 0 else float("inf")
    print(f"\nfan-out to {args.clients:,} clients (median of {args.repeat} round(s)): SQLite one node "
          f"p50/p99 {s50:.1f}/{s99:.1f} ms; cluster p50/p99 {c50:.1f}/{c99:.1f} ms (clients on the "
          f"other nodes p99 {other99:.1f} ms) -> p99 ratio {ratio:.2f} (goal <= {GOAL_P99_FACTOR:g}){note}",
          flush=True)  # fmt: skip
    return [Row(
        f"cluster fan-out to {args.clients:,} SSE clients ({args.batches} batches × {args.lines} events, "
        f"{args.interval * 1000:.0f} ms apart, median of {args.repeat}): delivery p50 / p99, "
        f"{NODES} PostgreSQL nodes (Mac on node 1, clients spread over nodes 1–{NODES}) vs one SQLite relay",
        f"cluster {c50:.1f} / {c99:.1f} ms (other nodes' clients p99 {other99:.1f} ms); "
        f"SQLite {s50:.1f} / {s99:.1f} ms; p99 ratio **{ratio:.2f}×**{note}",
        f"p99 ≤ {GOAL_P99_FACTOR:g}× SQLite", complete and ratio <= GOAL_P99_FACTOR,
    )]  # fmt: skip


# -- 3. failover ------------------------------------------------------------------------------


@dataclass
class Phone:
    """A phone following one session through Caddy, reopening its stream the page's way: 1 s
    after it ends, the pause doubling after each failed attempt, with Last-Event-ID. Each attempt
    carries a marker in its query so the nodes' access logs tell which node took it."""

    port: int
    token: str
    session_id: str
    last_id: int = 0
    attempts: int = 0
    cut_at: float = 0.0  # time.time() the current stream was seen to end
    reopened_at: float = 0.0  # time.time() the attempt that got through was sent
    first_new_at: float = 0.0  # time.time() its first event arrived
    open_marker: str = ""  # the query marker of the stream that is open now
    last_failure: str = ""
    history: list[tuple[float, float, str]] = field(
        default_factory=list
    )  # attempts: sent, done, how
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def start(self) -> Phone:
        self.task = asyncio.get_running_loop().create_task(self._run())
        return self

    def _on_event(
        self, stream: SSEStream, event: bytes, ident: int | None, data: bytes, now: int
    ) -> None:
        if event != b"event" or ident is None or ident <= self.last_id:
            return
        self.last_id = ident
        if not self.first_new_at:
            self.first_new_at = now / 1e9

    async def _run(self) -> None:
        delay = PAGE_RETRY_FIRST
        while True:
            self.attempts += 1
            marker = f"bench{self.attempts}x"
            headers = {"Last-Event-ID": str(self.last_id)} if self.last_id else None
            sent = time.time()
            stream: SSEStream | None = None
            try:
                stream = await asyncio.wait_for(open_stream(
                    "127.0.0.1", self.port, f"/api/sessions/{self.session_id}/stream?probe={marker}",
                    self.token, self._on_event, headers,
                ), 10)  # fmt: skip
                await asyncio.wait_for(asyncio.shield(stream.opened), 10)
            except (OSError, ConnectionError, TimeoutError) as exc:
                if stream is not None:
                    stream.close()
                self.last_failure = repr(exc) if stream is None else (stream.error or repr(exc))
                self.history.append((sent, time.time(), self.last_failure))
                await asyncio.sleep(delay)
                delay = min(delay * 2, PAGE_RETRY_MAX)
                continue
            self.reopened_at, self.open_marker = sent, marker
            self.history.append((sent, time.time(), "open"))
            self.opened.set()
            delay = PAGE_RETRY_FIRST
            with contextlib.suppress(ConnectionError):
                await stream.finished
            self.opened.clear()
            self.cut_at = time.time()
            self.first_new_at = 0.0
            await asyncio.sleep(delay)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


async def _node_of_marker(nodes: list[PgNode], marker: str, timeout: float = 5.0) -> PgNode:
    deadline = time.monotonic() + timeout
    pattern = f"probe={marker} "
    while time.monotonic() < deadline:
        found = [n for n in nodes if n.proc is not None and pattern in n.log_text()]
        if len(found) == 1:
            return found[0]
        await asyncio.sleep(0.05)
    raise RuntimeError(f"no node's access log shows the phone's stream {marker}")


def _node_pids_of_devices(database_url: str, device_ids: list[str]) -> dict[str, int]:
    """Which relay process holds each Mac's link: device_links names a node, whose id carries
    its pid (relay/cluster.py new_node_id: host-pid-random)."""
    import psycopg

    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT device_id, node_id FROM device_links WHERE device_id = ANY(%s)", (device_ids,)
        ).fetchall()
    out: dict[str, int] = {}
    for device_id, node_id in rows:
        match = re.search(r"-(\d+)-[0-9a-f]+$", str(node_id))
        if match:
            out[str(device_id)] = int(match.group(1))
    return out


@dataclass
class Publisher:
    """The Mac whose session the phone follows: a line every FAILOVER_INTERVAL, linked straight
    to a node that is not the one killed (moved, by its own loop, when the phone lands on its
    node)."""

    token: str
    session_id: str
    conversation_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    offset: int = 0
    link: Any = None
    url: str = ""  # where it is linked
    wanted: str = ""  # where it should be linked
    sent: int = 0
    last_error: str = ""
    task: asyncio.Task[None] | None = None

    async def _relink(self) -> None:
        from wire.client import MacLink
        from wire.protocol import DeviceInfo

        old, self.link, self.url = self.link, None, ""
        if old is not None:
            await old.close()
        link = MacLink(self.wanted, self.token, DeviceInfo(name="bench-publisher"))
        await link.connect()
        self.link, self.url = link, self.wanted

    async def _send_one(self) -> None:
        from wire.protocol import LineRecord

        text, line_uuid = chat_line(f"failover {time.time_ns()}")
        record = LineRecord(offset=self.offset, text=text, uuid=line_uuid)
        self.offset += len(text.encode()) + 1
        await self.link.send_lines(
            self.session_id, self.conversation_id, [record], cwd="/tmp/bench", timeout=30
        )
        self.sent += 1

    async def _run(self) -> None:
        while True:
            try:
                if self.url != self.wanted or self.link is None or not self.link.connected:
                    await self._relink()
                await self._send_one()
            except Exception as exc:  # reported, and the loop goes on
                self.last_error = repr(exc)
                self.url = ""
            await asyncio.sleep(FAILOVER_INTERVAL)

    async def move(self, url: str, timeout: float = 15.0) -> None:
        """Link to ``url`` and return once a line went through it."""
        self.wanted = url
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._run())
        deadline = time.monotonic() + timeout
        sent = self.sent
        while self.url != url or self.sent == sent:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the publisher cannot send through {url}: {self.last_error}")
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task
        if self.link is not None:
            await self.link.close()


@dataclass
class DeviceWatch:
    """A phone's account stream (/api/stream) on a node that stays up: when each Mac was shown
    online or offline."""

    seen: list[tuple[float, str, bool]] = field(default_factory=list)  # (time, device id, online)
    stream: SSEStream | None = None

    def _on_event(
        self, stream: SSEStream, event: bytes, ident: int | None, data: bytes, now: int
    ) -> None:
        if event != b"device":
            return
        with contextlib.suppress(ValueError, KeyError, TypeError):
            body = json.loads(data)
            self.seen.append((now / 1e9, str(body["id"]), bool(body["online"])))

    async def open(self, port: int, token: str) -> None:
        self.close()
        self.stream = await open_stream("127.0.0.1", port, "/api/stream", token, self._on_event)
        await asyncio.wait_for(asyncio.shield(self.stream.opened), 10)

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
            self.stream = None

    def shown_after(self, device_id: str, since: float, online: bool) -> float | None:
        return next(
            (t for t, d, on in self.seen if d == device_id and on is online and t >= since), None
        )


@dataclass
class FailoverRun:
    served: list[float] = field(default_factory=list)  # kill -> first new event, seconds
    cut: list[float] = field(default_factory=list)  # kill -> the phone saw its stream end
    reopen: list[float] = field(default_factory=list)  # reopening attempt sent -> first new event
    mac_online: list[float] = field(default_factory=list)  # kill -> shown online on another node
    mac_offline: list[float] = field(default_factory=list)  # kill -> shown offline (lease ran out)
    mac_noticed: list[float] = field(default_factory=list)  # kill -> the agent saw its link lost
    mac_relinked: list[float] = field(default_factory=list)  # that -> shown online again
    lost: int = 0  # phones or Macs not served again within FAILOVER_TIMEOUT


async def failover(
    nodes: list[PgNode],
    database_url: str,
    tokens: Tokens,
    caddy_port: int,
    repeats: int,
    with_macs: bool = True,
) -> FailoverRun:
    from agent.link import RelayLink
    from wire.client import MemoryArchive
    from wire.protocol import Command, CommandResult, DeviceInfo, Welcome

    out = FailoverRun()
    publisher = Publisher(tokens.devices[0][0], str(uuid.uuid4()))
    await publisher.move(nodes[0].url)

    async def no_command(command: Command) -> CommandResult:
        return CommandResult(command_id=command.command_id, ok=False, error="bench")

    async def linked(welcome: Welcome) -> None:
        return None

    caddy = f"http://127.0.0.1:{caddy_port}"
    unlinked: dict[str, list[float]] = {}  # device id -> when its link saw it was lost

    def on_unlinked(device_id: str) -> Callable[[], None]:
        return lambda: unlinked.setdefault(device_id, []).append(time.time())

    chosen = tokens.devices[1 : 1 + FAILOVER_MACS]
    macs = [
        RelayLink(caddy, token, DeviceInfo(name=f"bench-idle-{i + 1}"), MemoryArchive(),
                  no_command, linked, on_unlinked(device_id))
        for i, (token, device_id) in enumerate(chosen)
    ]  # fmt: skip
    mac_ids = [device_id for _, device_id in chosen]
    for mac in macs:
        mac.start()
    phone = Phone(caddy_port, tokens.phone, publisher.session_id).start()
    watch = DeviceWatch()
    try:
        await asyncio.wait_for(asyncio.gather(*(m.linked.wait() for m in macs)), 30)
        for rep in range(repeats):
            await asyncio.wait_for(phone.opened.wait(), FAILOVER_TIMEOUT)
            victim = await _node_of_marker(nodes, phone.open_marker)
            alive = [n for n in nodes if n is not victim]
            if publisher.url == victim.url:
                await publisher.move(alive[0].url)
            watch_node = next(n for n in alive if n.url == publisher.url)
            await watch.open(watch_node.port, tokens.phone)
            held = _node_pids_of_devices(database_url, mac_ids)
            on_victim = [
                d for d, pid in held.items() if victim.proc is not None and pid == victim.proc.pid
            ]
            await asyncio.sleep(0.5)  # the phone receives events before the kill
            before = phone.attempts
            killed_at = time.time()
            victim.kill()
            deadline = time.monotonic() + FAILOVER_TIMEOUT
            while time.monotonic() < deadline:
                if phone.attempts > before and phone.opened.is_set() and phone.first_new_at:
                    break
                await asyncio.sleep(0.01)
            else:
                out.lost += 1
            served_again = phone.opened.is_set() and phone.first_new_at > killed_at
            if served_again:
                out.served.append(phone.first_new_at - killed_at)
                out.cut.append(phone.cut_at - killed_at)
                out.reopen.append(phone.first_new_at - phone.reopened_at)
            # Back (from this thread: see ServerProcess.launch) while the Macs find their way.
            victim.relaunch()
            ready = asyncio.get_running_loop().create_task(asyncio.to_thread(victim.wait_ready))
            if not with_macs:
                on_victim = []
            while time.monotonic() < deadline and any(
                watch.shown_after(d, killed_at, True) is None for d in on_victim
            ):
                await asyncio.sleep(0.02)
            online_now: list[float] = []
            for device_id in on_victim:
                at = watch.shown_after(device_id, killed_at, True)
                if at is None:
                    out.lost += 1
                    continue
                online_now.append(at - killed_at)
                noticed = next((t for t in unlinked.get(device_id, []) if t >= killed_at), None)
                if noticed is not None:
                    out.mac_noticed.append(noticed - killed_at)
                    out.mac_relinked.append(at - noticed)
                gone = watch.shown_after(device_id, killed_at, False)
                if gone is not None and gone < at:
                    out.mac_offline.append(gone - killed_at)
            out.mac_online += online_now
            served = out.served[-1] * 1000 if served_again else float("nan")
            if not served_again or served > 1000 * (PAGE_RETRY_FIRST + 2):
                tried = "; ".join(f"+{a - killed_at:.2f} s..+{b - killed_at:.2f} s {how}"
                                  for a, b, how in phone.history if a >= killed_at)  # fmt: skip
                log(f"[cluster] slow: the phone's attempts since the kill: {tried}")
            if not served_again:
                log(f"[cluster] the phone was not served again: {phone.attempts - before} attempts "
                    f"since the kill, last failure {phone.last_failure!r}; the Mac sent "
                    f"{publisher.sent} lines, last error {publisher.last_error!r}")  # fmt: skip
            macs_text = ", ".join(f"{t * 1000:,.0f} ms" for t in online_now) or "-"
            log(f"[cluster] failover {rep + 1}/{repeats}: killed {victim.label} (the phone's node, "
                f"{len(on_victim)} Mac(s) on it): phone served again after {served:,.0f} ms; "
                f"Macs online again after {macs_text}")  # fmt: skip
            await ready
    finally:
        watch.close()
        await phone.stop()
        await asyncio.gather(*(m.stop() for m in macs), return_exceptions=True)
        await publisher.stop()
    return out


def _ms(values: list[float], p: float | None = None) -> str:
    """p50 etc. in ms, or the maximum (p=None)."""
    if not values:
        return "n/a"
    return f"{(max(values) if p is None else percentile(values, p)) * 1000:,.0f}"


def failover_rows(run: FailoverRun, repeats: int) -> list[Row]:
    lost = f"; **{run.lost} not served again** within {FAILOVER_TIMEOUT:g} s" if run.lost else ""
    offline = (
        f"; shown offline first, after p50 {_ms(run.mac_offline, 50)} ms (the node's lease), "
        f"{len(run.mac_offline)} of {len(run.mac_online)}"
        if run.mac_offline
        else ""
    )
    print(f"\nfailover ({repeats} kills): phone served again p50 {_ms(run.served, 50)} ms, max "
          f"{_ms(run.served)} ms (its stream's end seen after p50 {_ms(run.cut, 50)} ms; then the "
          f"page's pause of {PAGE_RETRY_FIRST:g} s; reopening -> first event p50 {_ms(run.reopen, 50)} ms)"
          f"{lost}", flush=True)  # fmt: skip
    if run.mac_online:
        print(f"  Macs that were on the killed node, online again through another node "
              f"({len(run.mac_online)}): p50 {_ms(run.mac_online, 50)} ms, max {_ms(run.mac_online)} ms"
              f"{offline}\n  of which: kill -> the agent's link saw it was lost p50 "
              f"{_ms(run.mac_noticed, 50)} ms, max {_ms(run.mac_noticed)} ms (the socket's close); "
              f"then -> online again p50 "
              f"{_ms(run.mac_relinked, 50)} ms, max {_ms(run.mac_relinked)} ms", flush=True)  # fmt: skip
    rows = [Row(
        f"cluster failover ({repeats} SIGKILLs of the phone's node, through Caddy): kill → the "
        f"phone's reopened stream (Last-Event-ID) gets its first new event, p50 / max (includes "
        f"the page's {PAGE_RETRY_FIRST:g} s pause before reopening)",
        f"{_ms(run.served, 50)} / {_ms(run.served)} ms (reopening → first event p50 "
        f"{_ms(run.reopen, 50)} ms){lost}",
    )]  # fmt: skip
    if run.mac_online:
        rows.append(Row(
            f"cluster failover: kill → a Mac that was on that node (the agent's link code, through "
            f"Caddy) shown online by another node, p50 / max ({len(run.mac_online)} Macs)",
            f"{_ms(run.mac_online, 50)} / {_ms(run.mac_online)} ms (the agent saw its link lost "
            f"after p50 {_ms(run.mac_noticed, 50)} ms, as its socket closed; "
            f"from there to online again p50 {_ms(run.mac_relinked, 50)} ms){offline}",
        ))  # fmt: skip
    return rows


# -- the run ----------------------------------------------------------------------------------

PARTS = ("ingest", "fanout", "failover")


def centrifugo_row() -> Row:
    print(f"\nfor scale: {CENTRIFUGO} (published figure, other hardware; not measured here)")
    return Row("for scale (published, not measured here)", CENTRIFUGO)


async def run_async(args: argparse.Namespace) -> list[Row]:
    from tests.support.nodes import RelayNode, caddy_in_front

    rows: list[Row] = []
    parts = args.only or list(PARTS)
    devices = max(MACS, 1 + FAILOVER_MACS)
    with contextlib.ExitStack() as stack:
        pg = stack.enter_context(postgres_server())
        log("[cluster] starting the SQLite relay and the PostgreSQL nodes")
        sqlite = (
            SqliteRelay(devices, args.sqlite_synchronous)
            if "ingest" in parts or "fanout" in parts
            else None
        )
        # The nodes' database and the lone node's (ingest), each migrated before its nodes start.
        cluster_url, one_url = pg.new_database("bench"), pg.new_database("bench1")
        cluster_tokens = seed({"database_url": cluster_url, "data_dir": "/nonexistent"}, devices)
        one_tokens = seed({"database_url": one_url, "data_dir": "/nonexistent"}, devices)
        nodes = [PgNode(f"node{i + 1}", cluster_url) for i in range(NODES)]
        single = PgNode("single", one_url, "warning") if "ingest" in parts else None
        start_together(stack, [s for s in (sqlite, *nodes, single) if s is not None])

        if "ingest" in parts:
            assert sqlite is not None
            print(f"\n## cluster ingest ({args.lines:,} lines, {MACS} Macs)\n", flush=True)
            runs = []
            log("[cluster] ingest: SQLite, one node")
            runs.append(await ingest(sqlite.label, [sqlite], sqlite.tokens, args.lines))
            report_ingest(runs[-1])
            assert single is not None
            log("[cluster] ingest: PostgreSQL, one node")
            runs.append(await ingest("PostgreSQL, one node", [single], one_tokens, args.lines, pg))
            report_ingest(runs[-1])
            single.stop()  # not needed any more: its CPU stays out of the other figures
            log(f"[cluster] ingest: PostgreSQL, {NODES} nodes")
            runs.append(
                await ingest(f"PostgreSQL, {NODES} nodes", nodes, cluster_tokens, args.lines, pg)
            )
            report_ingest(runs[-1])
            rows += ingest_rows(runs)

        if "fanout" in parts:
            assert sqlite is not None
            raise_fd_limit(args.clients * 2 + 1024)
            fan = fan_args(args)
            print(f"\n## cluster fan-out ({args.clients:,} clients)\n", flush=True)
            s_session = await start_session(sqlite.url, sqlite.tokens.devices[0][0])
            c_session = await start_session(nodes[0].url, cluster_tokens.devices[0][0])
            node_ports = [n.port for n in nodes]
            warm = argparse.Namespace(**{**vars(fan), "batches": 5})
            if not args.quick:  # a warm-up round per setup, discarded (as bench/fanout.py)
                await fan_round("warm-up", sqlite.url, [sqlite.port], sqlite.tokens, s_session,
                                10, warm, pids([sqlite]))  # fmt: skip
                await fan_round("warm-up", nodes[0].url, node_ports, cluster_tokens, c_session,
                                30, warm, pids(nodes))  # fmt: skip
            rounds: dict[str, list[FanRound]] = {"sqlite": [], "cluster": []}
            for repeat in range(args.repeat):
                log(f"[cluster] fan-out round {repeat + 1}/{args.repeat}: {args.clients} clients")
                rounds["sqlite"].append(await fan_round(
                    sqlite.label, sqlite.url, [sqlite.port], sqlite.tokens, s_session,
                    args.clients, fan, pids([sqlite]),
                ))  # fmt: skip
                print(describe_round(rounds["sqlite"][-1]), flush=True)
                await asyncio.sleep(1.5)  # let the server notice the closed clients
                rounds["cluster"].append(await fan_round(
                    f"PostgreSQL, {NODES} nodes", nodes[0].url, node_ports, cluster_tokens, c_session,
                    args.clients, fan, pids(nodes), pg,
                ))  # fmt: skip
                print(describe_round(rounds["cluster"][-1]), flush=True)
                await asyncio.sleep(1.5)
            rows += fan_rows(rounds, fan)

        if "failover" in parts:
            print(f"\n## cluster failover ({args.kills} kills)\n", flush=True)
            root = Path(tempfile.mkdtemp(prefix="cb-bench-caddy-"))
            (root / "owner.pid").write_text(str(os.getpid()))
            stack.callback(shutil.rmtree, root, True)
            # Caddy needs only each node's address: described as the tests' RelayNode, not started.
            described = [RelayNode(n.label, cluster_url, root, port=n.port) for n in nodes]
            balancer = stack.enter_context(caddy_in_front(root, described))
            run = await failover(
                nodes, cluster_url, cluster_tokens, balancer.port, args.kills, not args.quick
            )
            rows += failover_rows(run, args.kills)
    rows.append(centrifugo_row())
    return rows


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", action="append", choices=PARTS, help="run only these (repeatable)"
    )
    parser.add_argument("--lines", type=int, default=None, help="ingest: lines per setup (20000)")
    parser.add_argument("--clients", type=int, default=None, help="fan-out: SSE clients (1000)")
    parser.add_argument("--batches", type=int, default=None, help="fan-out: batches a round (20)")
    parser.add_argument("--lines-per-batch", dest="lines_per_batch", type=int, default=3)
    parser.add_argument(
        "--interval", type=float, default=0.05, help="fan-out: seconds between batches"
    )
    parser.add_argument("--payload", type=int, default=200, help="fan-out: characters of text")
    parser.add_argument("--repeat", type=int, default=None, help="fan-out: rounds per setup (3)")
    parser.add_argument("--kills", type=int, default=None, help="failover: nodes killed (5)")
    parser.add_argument(
        "--sqlite-synchronous",
        default="NORMAL",
        choices=["NORMAL", "FULL"],
        help="the SQLite relay's store_synchronous (default NORMAL, the embedded default; FULL "
        "syncs every commit, as PostgreSQL does here)",
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    args = parser.parse_args(argv)
    quick = args.quick
    args.lines = args.lines or (2400 if quick else 20000)
    args.clients = args.clients or (200 if quick else 1000)
    args.batches = args.batches or (10 if quick else 20)
    args.repeat = args.repeat or (1 if quick else 3)
    args.kills = args.kills or (1 if quick else 5)
    return args


def fan_args(args: argparse.Namespace) -> argparse.Namespace:
    """What bench/fanout.py's publisher and a round read (``lines``: events per batch)."""
    return argparse.Namespace(
        clients=args.clients, batches=args.batches, lines=args.lines_per_batch,
        interval=args.interval, payload=args.payload, repeat=args.repeat,
        settle=0.5, timeout=60.0, connect_concurrency=50,
    )  # fmt: skip


def run(args: argparse.Namespace) -> list[Row]:
    return asyncio.run(run_async(args))


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    install_signal_cleanup()
    rows = run(args)
    print()
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
