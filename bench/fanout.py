"""Fan-out latency: one session's live events delivered to 10, 100 and 1,000 SSE clients at once.

Side by side in the same run, with the same client code and the same payload sizes:

* the relay (`claude-bridge relay`): clients read ``/api/sessions/{id}/stream?after=<current>``;
  a MacLink (the real agent link, in its own process) pushes batches of user-prompt lines whose
  text carries ``time.time_ns()`` at sending; each batch is stored durably, numbered and fanned out;
* a bare sse-starlette broadcast server (bench/bare_sse.py): clients read ``/stream``; a
  publisher process POSTs the same events (the same NumberedEvent JSON) to ``/publish``.

Each client notes when each event's bytes arrived; the delivery latency of an event is that
moment minus the send timestamp in its text. p50/p99 are over every (event, client) pair.

    .venv/bin/python -m bench.fanout [--clients 10,100,1000] [--batches N] [--lines 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import sys
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))

from bench._common import (
    REPO,
    BareSSEProcess,
    RelayProcess,
    Row,
    SSEStream,
    _die_with_parent,
    chat_line,
    clean_env,
    install_signal_cleanup,
    log,
    markdown_table,
    open_stream,
    percentile,
    proc_cpu,
    raise_fd_limit,
)

GOAL_RATIO = 1.2
MARK = b"bench-ts:"
TS_DIGITS = 19


# -- the publisher (runs in its own process) --------------------------------------------------


def _text(payload: int) -> str:
    head = f"bench-ts:{time.time_ns():0{TS_DIGITS}d} "
    return head + "x" * max(0, payload - len(head))


class RawPoster:
    """A minimal keep-alive HTTP/1.1 POST client, so the baseline's publisher costs little."""

    def __init__(self, url: str) -> None:
        host_port = url.split("://", 1)[1].rstrip("/")
        self.host, _, port = host_port.partition(":")
        self.port = int(port or 80)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port), 30
        )

    async def post(self, path: str, body: str) -> bytes:
        assert self.reader is not None and self.writer is not None
        data = body.encode()
        self.writer.write(
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = head.split(b" ", 2)[1]
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        answer = await self.reader.readexactly(length)
        if status != b"200":
            raise RuntimeError(f"POST {path}: HTTP {status.decode()} {answer[:200]!r}")
        return answer

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def publish(args: argparse.Namespace) -> dict[str, Any]:
    """Wait for "go" on stdin, then send ``batches`` batches of ``lines`` events, ``interval`` apart."""
    from wire.protocol import DeviceInfo, EventKind, LineRecord, NumberedEvent

    loop = asyncio.get_running_loop()
    durations: list[float] = []
    offset = 0
    seq = 0
    conversation_id = str(uuid.uuid4())
    epoch = "bench0epoch0"
    link = client = None
    if args.publish_to == "relay":
        from wire.client import MacLink

        link = MacLink(args.url, args.token, DeviceInfo(name="bench-fanout"))
        await link.connect()
    else:
        client = RawPoster(args.url)
        await client.connect()
    try:
        print("ready", flush=True)
        go = await asyncio.wait_for(loop.run_in_executor(None, sys.stdin.readline), 300)
        if go.strip() != "go":
            return {"error": "no go"}
        started = time.perf_counter()
        for b in range(args.batches):
            due = started + b * args.interval
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            t0 = time.perf_counter()
            if link is not None:
                records = []
                for _ in range(args.lines):
                    text, line_uuid = chat_line(_text(args.payload))
                    records.append(LineRecord(offset=offset, text=text, uuid=line_uuid))
                    offset += len(text.encode()) + 1
                await link.send_lines(
                    args.session, conversation_id, records, cwd="/tmp/bench", timeout=60
                )
            else:
                assert client is not None
                events = []
                for _ in range(args.lines):
                    seq += 1
                    line_uuid = str(uuid.uuid4())
                    events.append(
                        NumberedEvent(
                            kind=EventKind.USER, text=_text(args.payload), uuid=line_uuid,
                            timestamp=time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                            session_id=args.session, seq=seq, epoch=epoch,
                            conversation_id=conversation_id, offset=offset,
                        ).model_dump_json(exclude_none=True)
                    )  # fmt: skip
                    offset += 600
                await asyncio.wait_for(client.post("/publish", json.dumps({"events": events})), 60)
            durations.append(time.perf_counter() - t0)
        return {"sent": args.batches * args.lines, "durations": durations,
                "seconds": time.perf_counter() - started}  # fmt: skip
    finally:
        if link is not None:
            await link.close()
        if client is not None:
            client.close()


# -- the clients (in the benchmark's process) -----------------------------------------------


@dataclass
class Target:
    kind: str  # "relay" | "bare"
    server: Any
    session_id: str = ""
    token: str = ""  # phone token (relay)
    device_token: str = ""

    def stream_path(self) -> str:
        if self.kind == "bare":
            return "/stream"
        request = urllib.request.Request(
            f"{self.server.url}/api/sessions/{self.session_id}",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            last_seq = json.load(response)["last_seq"]
        return f"/api/sessions/{self.session_id}/stream?after={last_seq}"


@dataclass
class RoundResult:
    kind: str
    clients: int
    expected: int  # events per client
    batches: int = 0
    lines: int = 0
    interval: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    delivered: int = 0
    failed_clients: int = 0
    frame_bytes: float = 0.0
    connect_s: float = 0.0
    send_s: float = 0.0
    publish_ms_p50: float = 0.0
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    wall_s: float = 0.0
    errors: list[str] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return percentile(self.latencies_ms, 50)

    @property
    def p99(self) -> float:
        return percentile(self.latencies_ms, 99)

    @property
    def cpu_us_per_delivery(self) -> float:
        return self.server_cpu_s / self.delivered * 1e6 if self.delivered else float("nan")

    @property
    def complete(self) -> bool:
        return self.delivered == self.expected * self.clients and not self.failed_clients


async def _start_publisher(target: Target, args: argparse.Namespace) -> asyncio.subprocess.Process:
    command = [
        sys.executable, "-m", "bench.fanout", "--publish-to", target.kind, "--url", target.server.url,
        "--token", target.device_token, "--session", target.session_id or str(uuid.uuid4()),
        "--batches", str(args.batches), "--lines", str(args.lines), "--interval", str(args.interval),
        "--payload", str(args.payload),
    ]  # fmt: skip
    return await asyncio.create_subprocess_exec(
        *command, cwd=REPO, env=clean_env(), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )  # fmt: skip


async def measure(target: Target, clients: int, args: argparse.Namespace) -> RoundResult:
    expected = args.batches * args.lines
    result = RoundResult(target.kind, clients, expected, args.batches, args.lines, args.interval)
    latencies = result.latencies_ms

    def on_event(stream: SSEStream, event: bytes, ident: int | None, data: bytes, now: int) -> None:
        if event != b"event":
            return
        at = data.find(MARK)
        if at < 0:
            return
        start = at + len(MARK)
        latencies.append((now - int(data[start : start + TS_DIGITS])) / 1e6)
        stream.user += 1
        if stream.user >= expected and not stream.finished.done():
            stream.finished.set_result(None)

    publisher = await _start_publisher(target, args)
    streams: list[SSEStream] = []
    try:
        path = await asyncio.to_thread(target.stream_path)
        host, port = "127.0.0.1", target.server.port
        token = target.token or None
        gate = asyncio.Semaphore(args.connect_concurrency)

        async def connect() -> None:
            async with gate:
                stream = await asyncio.wait_for(open_stream(host, port, path, token, on_event), 30)
                stream.user = 0
                streams.append(stream)
                await asyncio.wait_for(asyncio.shield(stream.opened), 60)

        t0 = time.perf_counter()
        outcomes = await asyncio.gather(
            *(connect() for _ in range(clients)), return_exceptions=True
        )
        result.connect_s = time.perf_counter() - t0
        bad = [o for o in outcomes if isinstance(o, BaseException)]
        if bad:
            raise RuntimeError(
                f"{len(bad)} of {clients} {target.kind} clients failed to connect: {bad[0]!r}"
            )
        assert publisher.stdout is not None and publisher.stdin is not None
        ready = await asyncio.wait_for(publisher.stdout.readline(), 120)
        if ready.strip() != b"ready":
            raise RuntimeError(f"the publisher did not start: {ready!r}")
        await asyncio.sleep(args.settle)

        spy = await _start_profiler(target, clients, args)
        server_cpu0, client_cpu0 = proc_cpu(target.server.proc.pid), time.process_time()
        t0 = time.perf_counter()
        publisher.stdin.write(b"go\n")
        await publisher.stdin.drain()
        deadline = args.batches * args.interval + args.timeout
        done, pending = await asyncio.wait([s.finished for s in streams], timeout=deadline)
        result.wall_s = time.perf_counter() - t0
        result.server_cpu_s = proc_cpu(target.server.proc.pid) - server_cpu0
        result.client_cpu_s = time.process_time() - client_cpu0
        out, err = await asyncio.wait_for(publisher.communicate(), 60)
        if spy is not None:
            await _stop_profiler(spy)
        try:
            sent = json.loads(out.decode().strip().splitlines()[-1])
        except (ValueError, IndexError):
            raise RuntimeError(f"the publisher failed: {err.decode()[-2000:]}") from None
        result.send_s = float(sent.get("seconds", 0.0))
        result.publish_ms_p50 = percentile(sent.get("durations", []), 50) * 1000
        result.failed_clients = len(pending) + sum(1 for d in done if d.exception() is not None)
        result.delivered = sum(s.user for s in streams)
        total_events = sum(s.events for s in streams)
        result.frame_bytes = (
            sum(s.data_bytes for s in streams) / total_events if total_events else 0.0
        )
        result.errors = [s.error for s in streams if s.error][:3]
        if pending:
            result.errors.append(f"{len(pending)} clients still waiting after {deadline:.0f} s")
        return result
    finally:
        for stream in streams:
            stream.close()
        if publisher.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                publisher.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(publisher.wait(), 10)


async def _start_profiler(target: Target, clients: int, args: argparse.Namespace) -> Any:
    """With --profile DIR: py-spy samples the server during the sending phase (raw stacks)."""
    if not args.profile:
        return None
    spy_bin = args.py_spy or shutil.which("py-spy")
    if not spy_bin:
        log("[fanout] --profile needs py-spy (pip install py-spy) on PATH or --py-spy PATH")
        return None
    out = Path(args.profile) / f"{target.kind}-{clients}-{time.strftime('%H%M%S')}.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    seconds = max(1, int(args.batches * args.interval + 2))
    proc = await asyncio.create_subprocess_exec(
        spy_bin, "record", "-p", str(target.server.proc.pid), "-d", str(seconds), "-r", "250",
        "-f", "raw", "-o", str(out),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    await asyncio.sleep(0.5)  # let it attach
    log(f"[fanout] profiling {target.kind} into {out}")
    return proc


async def _stop_profiler(proc: Any) -> None:
    try:
        await asyncio.wait_for(proc.wait(), 30)
    except TimeoutError:
        proc.kill()
        await proc.wait()


# Every client here reads with one phone token, where real phones have one each: the relay's
# bound on one login's streams (sse_max_streams_per_token) is lifted past the most clients.
MANY_PHONES = {"CB_SSE_MAX_STREAMS_PER_TOKEN": "100000"}


async def _prepare_relay(relay: RelayProcess) -> Target:
    """Create the session the clients will watch (one line through the link)."""
    from wire.client import MacLink
    from wire.protocol import DeviceInfo, LineRecord

    session_id = str(uuid.uuid4())
    link = MacLink(relay.url, relay.device_token, DeviceInfo(name="bench-fanout"))
    await link.connect()
    try:
        text, line_uuid = chat_line("bench: session start")
        await link.send_lines(
            session_id, str(uuid.uuid4()), [LineRecord(offset=0, text=text, uuid=line_uuid)]
        )
    finally:
        await link.close()
    return Target("relay", relay, session_id, relay.phone_token, relay.device_token)


async def _wait_idle(target: Target, timeout: float = 15.0) -> None:
    """Let the server notice the closed clients before the next round."""
    if target.kind == "bare":
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(target.server.url + "/health", timeout=5) as response:
                if json.load(response)["subscribers"] == 0:
                    return
            await asyncio.sleep(0.2)
    else:
        await asyncio.sleep(1.5)


def describe(r: RoundResult) -> str:
    status = (
        "" if r.complete else f"  INCOMPLETE: {r.delivered:,}/{r.expected * r.clients:,} {r.errors}"
    )
    cpu_wall = max(r.wall_s, 1e-9)
    return (f"  {r.kind:5} {r.clients:5} clients: p50 {r.p50:8.1f} ms  p99 {r.p99:8.1f} ms  "
            f"max {max(r.latencies_ms, default=float('nan')):8.1f} ms  | {r.delivered:,} deliveries, "
            f"{r.frame_bytes:.0f} B/event, connect {r.connect_s:.1f} s, server CPU "
            f"{100 * r.server_cpu_s / cpu_wall:.0f}% ({r.cpu_us_per_delivery:.0f} µs/delivery), clients CPU {100 * r.client_cpu_s / cpu_wall:.0f}%, "
            f"send {r.publish_ms_p50:.1f} ms p50{status}")  # fmt: skip


Results = dict[int, dict[str, list[RoundResult]]]  # clients -> server kind -> one per repeat


async def run_async(args: argparse.Namespace) -> Results:
    results: Results = {}
    kinds = [args.only] if args.only else ["bare", "relay"]
    with contextlib.ExitStack() as stack:
        targets: list[Target] = []
        if "bare" in kinds:
            targets.append(Target("bare", stack.enter_context(BareSSEProcess())))
        if "relay" in kinds:
            targets.append(await _prepare_relay(stack.enter_context(RelayProcess(env=MANY_PHONES))))
        if args.warmup:
            warm = argparse.Namespace(**{**vars(args), "batches": 5, "profile": None})
            for target in targets:
                await measure(target, min(10, max(args.clients)), warm)
                await _wait_idle(target)
        for count in args.clients:
            per_kind: dict[str, list[RoundResult]] = {t.kind: [] for t in targets}
            results[count] = per_kind
            round_args = argparse.Namespace(**{**vars(args), "batches": batches_for(args, count)})
            for repeat in range(args.repeat):
                for target in targets:  # alternate: bare, relay, bare, relay…
                    log(f"[fanout] {target.kind}: {count} clients, {round_args.batches} batches of "
                        f"{args.lines} every {args.interval * 1000:.0f} ms "
                        f"(repeat {repeat + 1}/{args.repeat})")  # fmt: skip
                    result = await measure(target, count, round_args)
                    per_kind[target.kind].append(result)
                    print(describe(result), flush=True)
                    await _wait_idle(target)
    return results


def batches_for(args: argparse.Namespace, clients: int) -> int:
    """--batches, or by default more batches for fewer clients (so p99 rests on enough batches)."""
    if args.batches:
        return int(args.batches)
    return 100 if clients <= 10 else 40 if clients <= 100 else 20


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(results: Results) -> list[Row]:
    rows: list[Row] = []
    print(f"\nfan-out p99 ratio relay / bare (median over repeats; goal <= {GOAL_RATIO}):")
    for count, per_kind in results.items():
        relay, bare = per_kind.get("relay", []), per_kind.get("bare", [])
        r50, r99 = _median([r.p50 for r in relay]), _median([r.p99 for r in relay])
        b50, b99 = _median([r.p50 for r in bare]), _median([r.p99 for r in bare])
        complete = all(r.complete for r in relay + bare)
        note = "" if complete else " (incomplete delivery)"
        if relay and bare:
            ratio = r99 / b99 if b99 > 0 else float("inf")
            each = ", ".join(f"{x.p99 / y.p99:.2f}" for x, y in zip(relay, bare, strict=False))
            cpu = (f"server CPU per delivery: relay {_median([r.cpu_us_per_delivery for r in relay]):.0f} µs, "
                   f"bare {_median([r.cpu_us_per_delivery for r in bare]):.0f} µs")  # fmt: skip
            print(f"  {count:5} clients: relay p50/p99 {r50:.1f}/{r99:.1f} ms, bare p50/p99 {b50:.1f}/{b99:.1f} ms"
                  f" -> ratio {ratio:.2f} (each repeat: {each}); {cpu}{note}", flush=True)  # fmt: skip
            rows.append(Row(
                f"fan-out to {count:,} SSE clients ({relay[0].batches} "
                f"batches × {relay[0].lines} events, {relay[0].interval * 1000:.0f} ms apart, median of "
                f"{len(relay)} rounds): delivery latency p50 / p99, relay vs bare sse-starlette",
                f"relay {r50:.1f} / {r99:.1f} ms; bare {b50:.1f} / {b99:.1f} ms; "
                f"p99 ratio **{ratio:.2f}×**{note}",
                f"p99 ≤ {GOAL_RATIO}× bare", complete and ratio <= GOAL_RATIO,
            ))  # fmt: skip
        else:
            only = relay or bare
            kind = only[0].kind if only else "?"
            p50, p99 = _median([r.p50 for r in only]), _median([r.p99 for r in only])
            print(f"  {count:5} clients: {kind} p50/p99 {p50:.1f}/{p99:.1f} ms{note}")
            rows.append(Row(f"fan-out to {count:,} SSE clients ({kind} only): p50 / p99",
                            f"{p50:.1f} / {p99:.1f} ms{note}"))  # fmt: skip
    return rows


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", default="10,100,1000", help="client counts, comma-separated")
    parser.add_argument(
        "--batches",
        type=int,
        default=None,
        help="batches sent per round (default: 100 for <=10 clients, 40 for <=100, else 20)",
    )
    parser.add_argument("--lines", type=int, default=3, help="events per batch (default 3)")
    parser.add_argument(
        "--interval", type=float, default=0.05, help="seconds between batches (0.05)"
    )
    parser.add_argument("--payload", type=int, default=200, help="characters of prompt text (200)")
    parser.add_argument("--settle", type=float, default=0.5, help="idle seconds before sending")
    parser.add_argument(
        "--timeout", type=float, default=60.0, help="seconds allowed after the last batch"
    )
    parser.add_argument("--connect-concurrency", type=int, default=50)
    parser.add_argument(
        "--repeat", type=int, default=3, help="rounds per server and client count (3)"
    )
    parser.add_argument("--no-warmup", dest="warmup", action="store_false")
    parser.add_argument(
        "--quick", action="store_true", help="10 and 100 clients, 20 batches, 1 repeat"
    )
    parser.add_argument("--only", choices=["relay", "bare"], help="measure one server only")
    parser.add_argument(
        "--profile", metavar="DIR", help="record py-spy raw stacks of each server while sending"
    )
    parser.add_argument("--py-spy", help="path of the py-spy binary (default: on PATH)")
    # publisher mode (internal)
    parser.add_argument("--publish-to", choices=["relay", "bare"], help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--token", help=argparse.SUPPRESS)
    parser.add_argument("--session", help=argparse.SUPPRESS)
    return parser


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if args.quick:
        args.clients, args.batches, args.repeat = "10,100", 20, 1
    args.clients = [int(c) for c in str(args.clients).split(",") if c.strip()]
    return args


def run(args: argparse.Namespace) -> list[Row]:
    raise_fd_limit(max(args.clients) * 2 + 1024)
    return report(asyncio.run(run_async(args)))


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.publish_to:
        result = asyncio.run(publish(args))
        print(json.dumps(result), flush=True)
        return 0
    install_signal_cleanup()
    rows = run(args)
    print()
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
