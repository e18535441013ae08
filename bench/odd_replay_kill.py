"""A replay of odd and real transcript lines while the relay, then the agent, is killed with -9.

Part 1 (relay): a Mac (wire/client.py's MacLink, resending every unacked batch after a
reconnect, as the agent does) replays real captured lines mixed with odd ones: lone surrogates
(as JSON.stringify writes half an emoji), lines over the relay's line limit, non-JSON lines, cut
(partial) JSON lines, and lines held back and sent after later ones (out of order). The relay
process (``claude-bridge relay``) is killed with SIGKILL mid-batch a few times and started again
on the same data folder. A phone follows the session's SSE stream throughout, reconnecting with
Last-Event-ID.

Part 2 (agent): the real agent (``python -m cli agent``) runs a session on the fake Claude Code
(tests/fakeclaude) in tmux; the benchmark appends the same mix to that session's transcript file
(odd bytes included: a surrogate as raw UTF-8 bytes, a line written in two halves) while the
agent is killed with SIGKILL and started again.

Counted at the end, from the stored history and the phone's stream (all must be 0):

* **lost**: a line the relay acked (part 1) or that was complete in the transcript (part 2) with
  fewer stored events than it makes (a marker counts for a line that cannot be read), not
  counting lines an ack named as dropped with a reason (printed apart);
* **doubled**: an event stored more than once for one line, or a seq the phone was sent twice;
* **out of order**: stored seqs that are not 1..N, or a seq on the phone's stream that is not the
  one after the last.

    .venv/bin/python -m bench.odd_replay_kill [--lines 3000] [--batch 50] [--kills 3]
                                              [--only relay|agent] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid as uuidlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    CLI,
    REPO,
    TMP_PREFIX,
    LineSource,
    Row,
    _die_with_parent,
    _token,
    clean_env,
    free_port,
    install_signal_cleanup,
    log,
    markdown_table,
    sweep_stale_dirs,
)

MAX_LINE_BYTES = 64 * 1024  # the relay's line limit for this run: "huge" lines stay cheap
FAKE_CLAUDE = REPO / "tests" / "fakeclaude" / "claude"
FAKE_API_KEY = "sk-ant-api03-mockmockmockmockmockmockmockmockmockmockmock-AAAAAAAA"
GIVE_UP_AFTER = 4  # attempts of one batch before it is counted as never acked


# -- the line mix ----------------------------------------------------------------------------


@dataclass
class Line:
    offset: int
    text: str
    uuid: str | None
    kind: str  # real, surrogate, huge, junk, partial
    expect: int  # events the line makes; -1 = at least one (a marker or the text, replaced)
    raw: bytes = b""  # part 2: the bytes written to the transcript (without the newline)


def _user_line(content: str) -> tuple[str, str]:
    ident = str(uuidlib.uuid4())
    body = {
        "type": "user",
        "uuid": ident,
        "timestamp": "2026-11-29T21:33:53.764Z",
        "message": {"role": "user", "content": content},
    }
    return json.dumps(body), ident  # ensure_ascii: a lone surrogate is written as \\ud83d


def events_made(text: str) -> int:
    from relay.convert import ConversionLimits, convert_line
    from wire import config as configmod

    limits = ConversionLimits.from_config(configmod.load({}, environ={}))
    return len(convert_line(text, limits).events)


class Mix:
    """Real captured lines with an odd one every few lines, at growing byte offsets."""

    ODD = ("surrogate", "huge", "junk", "partial", "surrogate_bytes")

    def __init__(self, start: int = 0, raw_bytes: bool = False, odd: tuple[str, ...] = ODD) -> None:
        self.odd = odd or ("real",)
        self.real = LineSource("events")
        self.offset = start
        self.count = 0
        self.raw_bytes = raw_bytes  # part 2 writes a surrogate as raw bytes too

    def take(self, count: int) -> list[Line]:
        out = []
        for _ in range(count):
            self.count += 1
            kind = "real" if self.count % 5 else self.odd[(self.count // 5) % len(self.odd)]
            if kind == "surrogate_bytes" and not self.raw_bytes:
                kind = "surrogate"
            out.append(self._line(kind))
        return out

    def _line(self, kind: str) -> Line:
        if kind == "real":
            record = self.real.take(1)[0]
            line = Line(0, record.text, record.uuid, kind, events_made(record.text))
        elif kind == "surrogate":
            text, ident = _user_line("half an emoji: \ud83d, then more")
            line = Line(0, text, ident, kind, -1)
        elif kind == "surrogate_bytes":
            text, ident = _user_line("raw bytes: SURROGATE, then more")
            raw = text.encode().replace(b"SURROGATE", b"\xed\xa0\xbd")
            line = Line(0, raw.decode("utf-8", "replace"), ident, kind, -1, raw)
        elif kind == "huge":
            text, ident = _user_line("x" * (MAX_LINE_BYTES + 100))
            line = Line(0, text, ident, kind, 1)
        elif kind == "partial":
            full = self.real.take(1)[0].text
            text = full[: len(full) // 2]
            line = Line(0, text, None, kind, events_made(text))
        else:
            text = f"this is not JSON {{ #{self.count} " + "é" * (self.count % 9)
            line = Line(0, text, None, kind, events_made(text))
        if not line.raw:
            line.raw = line.text.encode("utf-8", "surrogatepass")
        line.offset = self.offset
        self.offset += len(line.raw) + 1
        return line


# -- counting ----------------------------------------------------------------------------------


@dataclass
class Tally:
    lines: int = 0
    odd: int = 0
    lost: int = 0
    doubled: int = 0
    out_of_order: int = 0
    dropped_with_reason: int = 0
    events: int = 0
    lost_examples: list[str] = field(default_factory=list)
    restarts: list[float] = field(default_factory=list)  # kill → healthy again
    recoveries: list[float] = field(default_factory=list)  # kill → the next ack / event
    seconds: float = 0.0
    phone_reconnects: int = 0
    mac_reconnects: int = 0
    never_acked_batches: int = 0


def stored_events(url: str, token: str, session_id: str) -> list[dict[str, Any]]:
    import httpx

    out: list[dict[str, Any]] = []
    after = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30) as c:
        while True:
            response = c.get(f"/api/sessions/{session_id}/events", params={"after": after})
            if response.status_code != 200:
                log(f"GET events after={after}: {response.status_code} {response.text[:200]}")
                return out
            page = response.json()
            out += page["events"]
            if not page["has_more"] or not page["events"]:
                return out
            after = page["events"][-1]["seq"]


def tally_history(
    tally: Tally,
    lines: list[Line],
    events: list[dict[str, Any]],
    conversation: str,
    reported: set[int],
) -> None:
    seqs = [e["seq"] for e in events]
    tally.events = len(events)
    tally.out_of_order += sum(1 for i, s in enumerate(seqs) if s != i + 1)
    per_offset: dict[int, int] = {}
    for e in events:
        if e.get("conversation_id") == conversation and e.get("offset") is not None:
            per_offset[e["offset"]] = per_offset.get(e["offset"], 0) + 1
    for line in lines:
        have = per_offset.get(line.offset, 0)
        want = 1 if line.expect == -1 else line.expect
        # A line with a bad code point may be stored replaced (several events) or as a marker.
        tally.doubled += 0 if line.expect == -1 else max(0, have - want)
        if have < want:
            if line.offset in reported:
                tally.dropped_with_reason += 1
                continue
            tally.lost += 1
            if len(tally.lost_examples) < 6:
                tally.lost_examples.append(f"{line.kind}@{line.offset} ({have}/{want} events)")


class PhoneWatch:
    """The phone: the session's SSE stream, reconnecting with Last-Event-ID like EventSource."""

    def __init__(self, url: str, token: str, session_id: str) -> None:
        self.url, self.token, self.session_id = url, token, session_id
        self.seen: list[int] = []
        self.doubled = 0
        self.out_of_order = 0
        self.reconnects = 0
        self.stop = False
        self.last_event_at = 0.0

    async def run(self) -> None:
        import httpx

        while not self.stop:
            headers = {"Authorization": f"Bearer {self.token}"}
            if self.seen:
                headers["Last-Event-ID"] = str(self.seen[-1])
            try:
                async with (
                    httpx.AsyncClient(base_url=self.url, headers=headers, timeout=5) as c,
                    c.stream("GET", f"/api/sessions/{self.session_id}/stream") as r,
                ):
                    if r.status_code != 200:
                        await asyncio.sleep(0.2)
                        continue
                    event, ident = "message", None
                    async for line in r.aiter_lines():
                        if self.stop:
                            return
                        if line.startswith("event:"):
                            event = line[6:].strip()
                        elif line.startswith("id:"):
                            ident = line[3:].strip()
                        elif line == "":
                            if event == "event" and ident is not None:
                                self._seq(int(ident))
                            event, ident = "message", None
            except (httpx.HTTPError, OSError, ValueError):
                pass
            self.reconnects += 1
            await asyncio.sleep(0.1)

    def _seq(self, seq: int) -> None:
        last = self.seen[-1] if self.seen else 0
        if seq <= last:
            self.doubled += 1
            return
        if seq != last + 1:
            self.out_of_order += 1
        self.seen.append(seq)
        self.last_event_at = time.monotonic()


# -- relay processes ---------------------------------------------------------------------------


class Relay:
    """``claude-bridge relay`` on a fixed data folder and port, killable and restartable."""

    def __init__(self, root: Path) -> None:
        self.data = root / "relay-data"
        self.port = free_port()
        self.env = clean_env(
            {"CB_MAX_LINE_BYTES": str(MAX_LINE_BYTES), "CB_EVENTS_KEPT": "1000000"}
        )
        self.device_token = _token(self.data, "device", "bench-mac", self.env)
        self.phone_token = _token(self.data, "phone", "bench-phone", self.env)
        self.log = root / "relay.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> float:
        import httpx

        started = time.monotonic()
        with self.log.open("ab") as sink:
            self.proc = subprocess.Popen(
                [str(CLI), "relay", "--data", str(self.data), "--port", str(self.port),
                 "--log-level", "warning"],
                cwd=REPO, env=self.env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the relay exited:\n{self.log.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/api/health", timeout=1).status_code == 200:
                    return time.monotonic() - started
            time.sleep(0.05)
        raise RuntimeError("the relay did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def _reported(ack: Any) -> set[int]:
    """Offsets an ack names as dropped or rejected (any field beyond the fixed ones)."""
    body = ack.model_dump()
    for key in ("type", "batch", "session_id", "conversation_id", "through_offset", "last_seq"):
        body.pop(key, None)
    body.pop("epoch", None)
    body.pop("duplicates", None)
    return {int(x) for x in re.findall(r"\d+", json.dumps(body))}


# -- part 1: the relay killed ------------------------------------------------------------------


async def relay_part(
    root: Path, total: int, batch: int, kills: int, odd: tuple[str, ...], hold: bool = True
) -> Tally:
    from wire.client import MacLink
    from wire.protocol import DeviceInfo, LineRecord

    relay = Relay(root)
    relay.start()
    tally = Tally()
    session_id, conversation = str(uuidlib.uuid4()), "conv-odd"
    mix = Mix(odd=odd)
    lines = mix.take(total)
    # Hold every 37th real line back and send it two batches later: out of order.
    held: dict[int, list[Line]] = {}
    batches: list[list[Line]] = []
    reals = 0
    for start in range(0, len(lines), batch):
        chunk = lines[start : start + batch]
        index = len(batches)
        keep = []
        for line in chunk:
            reals += line.kind == "real"
            if hold and line.kind == "real" and line.expect > 0 and reals % 37 == 0:
                held.setdefault(index + 2, []).append(line)
            else:
                keep.append(line)
        batches.append(keep + held.pop(index, []))
    if held:
        batches.append([x for rest in held.values() for x in rest])

    link = MacLink(relay.url, relay.device_token, DeviceInfo(name="bench mac"))
    acked: list[Line] = []
    reported: set[int] = set()
    phone = PhoneWatch(relay.url, relay.phone_token, session_id)
    watcher: asyncio.Task[None] | None = None
    kill_at = {len(batches) * (i + 1) // (kills + 1) for i in range(kills)}
    started = time.monotonic()
    pending_kill: float | None = None

    async def reconnect() -> MacLink:
        nonlocal link
        with contextlib.suppress(Exception):
            await link.abort()
        link = MacLink(relay.url, relay.device_token, link.device, archive=link.archive)
        deadline = time.monotonic() + 60
        while True:
            try:
                await link.connect(open_timeout=2)
                return link
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)

    try:
        await link.connect()
        for index, chunk in enumerate(batches):
            records = [LineRecord(offset=x.offset, text=x.text, uuid=x.uuid) for x in chunk]
            if index in kill_at:
                send = asyncio.create_task(
                    link.send_lines(session_id, conversation, records, cwd="/w", timeout=5)
                )
                await asyncio.sleep(0.005)  # mid-batch: it may or may not be committed
                killed = time.monotonic()
                relay.kill()
                tally.restarts.append(relay.start())
                pending_kill = killed
                with contextlib.suppress(Exception):
                    await send
            for _attempt in range(GIVE_UP_AFTER):
                try:
                    ack = await link.send_lines(
                        session_id, conversation, records, cwd="/w", timeout=5
                    )
                except Exception:
                    tally.mac_reconnects += 1
                    await reconnect()
                    continue
                if pending_kill is not None:
                    tally.recoveries.append(time.monotonic() - pending_kill)
                    pending_kill = None
                acked += chunk
                reported |= _reported(ack)
                break
            else:
                tally.never_acked_batches += 1  # the relay never took it: its lines are lost
                acked += chunk
            if watcher is None:
                watcher = asyncio.create_task(phone.run())
        tally.seconds = time.monotonic() - started
        events = stored_events(relay.url, relay.phone_token, session_id)
        last = events[-1]["seq"] if events else 0
        deadline = time.monotonic() + 30
        while (not phone.seen or phone.seen[-1] < last) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    finally:
        phone.stop = True
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher
        with contextlib.suppress(Exception):
            await link.close()
        relay.stop()
    tally.lines = len(lines)
    tally.odd = sum(1 for x in lines if x.kind != "real")
    tally_history(tally, acked, events, conversation, reported)
    tally.doubled += phone.doubled
    tally.out_of_order += phone.out_of_order
    tally.phone_reconnects = phone.reconnects
    return tally


# -- part 2: the agent killed -----------------------------------------------------------------


def _seed_home(home: Path, cwd: str) -> None:
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    trusted = {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "lastOnboardingVersion": "2.1.328",
                "theme": "dark",
                "customApiKeyResponses": {"approved": [FAKE_API_KEY[-20:]], "rejected": []},
                "autoUpdates": False,
                "bypassPermissionsModeAccepted": True,
                "projects": {cwd: trusted},
            }
        )
    )
    (home / ".claude" / "settings.json").write_text('{"autoUpdates": false}')


class AgentProc:
    def __init__(self, root: Path, relay: Relay) -> None:
        self.root, self.relay = root, relay
        self.home = root / "home"
        self.data = root / "agent-data"
        self.socket = f"cbbench-{uuidlib.uuid4().hex[:8]}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
            "ANTHROPIC_API_KEY": FAKE_API_KEY,
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "TERM": "xterm-256color",
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(REPO),
            "PYTHONUNBUFFERED": "1",
        }

    def start(self) -> None:
        with (self.root / "agent.log").open("ab") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "cli", "agent", "--relay", self.relay.url,
                 "--token", self.relay.device_token, "--data", str(self.data),
                 "--claude", str(FAKE_CLAUDE), "--mux", "tmux", "--socket", self.socket],
                cwd=REPO, env=self.env, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )  # fmt: skip

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def cleanup(self) -> None:
        self.kill()
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)


def _wait(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            value = check()
            if value:
                return value
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


async def agent_part(root: Path, total: int, chunk: int, kills: int, odd: tuple[str, ...]) -> Tally:
    import httpx

    from agent.transcript import transcript_path

    relay = Relay(root)
    relay.start()
    agent = AgentProc(root, relay)
    work = root / "work"
    work.mkdir()
    cwd = os.path.realpath(work)
    _seed_home(agent.home, cwd)
    tally = Tally()
    phone_http = httpx.Client(
        base_url=relay.url, headers={"Authorization": f"Bearer {relay.phone_token}"}, timeout=30
    )
    watcher: asyncio.Task[None] | None = None
    phone: PhoneWatch | None = None
    try:
        agent.start()
        device = _wait(
            lambda: [d for d in phone_http.get("/api/devices").json()["devices"] if d["online"]],
            60,
            "the agent online",
        )[0]["id"]
        created = phone_http.post(
            "/api/sessions", json={"device_id": device, "cwd": cwd, "prompt": "hello"}
        )
        if created.status_code != 201:
            raise RuntimeError(f"POST /api/sessions: {created.status_code} {created.text}")
        session_id = created.json()["id"]
        conversation = _wait(
            lambda: phone_http.get(f"/api/sessions/{session_id}").json().get("conversation_id"),
            60,
            "the session's conversation",
        )
        path = transcript_path(agent.home / ".claude", cwd, conversation)
        _wait(lambda: path.exists(), 30, "the transcript file")
        # Let the fake claude's own turn finish writing before lines are appended.
        _wait(
            lambda: phone_http.get(f"/api/sessions/{session_id}").json().get("state") == "idle",
            60,
            "the session idle",
        )
        phone = PhoneWatch(relay.url, relay.phone_token, session_id)
        watcher = asyncio.create_task(phone.run())
        mix = Mix(start=path.stat().st_size, raw_bytes=True, odd=odd)
        planned = mix.take(total)
        kill_at = {(i + 1) * len(planned) // (kills + 1) for i in range(kills)}
        lines: list[Line] = []  # as written, with their real offsets in the file
        started = time.monotonic()
        with path.open("ab") as transcript:
            position = transcript.seek(0, os.SEEK_END)

            def write(line: Line, data: bytes) -> None:
                nonlocal position
                transcript.write(data)
                transcript.flush()
                position += len(data)

            for start in range(0, len(planned), chunk):
                for line in planned[start : start + chunk]:
                    # Written in two halves: the first half alone is a partial line the agent
                    # must not send.
                    line.offset = position
                    half = len(line.raw) // 2
                    write(line, line.raw[:half])
                    write(line, line.raw[half:] + b"\n")
                    lines.append(line)
                if any(start <= k < start + chunk for k in kill_at):
                    half_line = mix.take(1)[0]
                    half_line.offset = position
                    half = len(half_line.raw) // 2
                    write(half_line, half_line.raw[:half])
                    await asyncio.sleep(0.3)  # the agent is mid-read
                    killed = time.monotonic()
                    agent.kill()
                    write(half_line, half_line.raw[half:] + b"\n")
                    lines.append(half_line)
                    agent.start()
                    before = len(phone.seen)
                    deadline = time.monotonic() + 30
                    while len(phone.seen) <= before and time.monotonic() < deadline:
                        await asyncio.sleep(0.05)
                    if len(phone.seen) <= before:
                        log("no new event within 30 s of an agent restart")
                        tally.never_acked_batches += 1
                    tally.restarts.append(time.monotonic() - killed)
                await asyncio.sleep(0.05)
        # Every complete line must reach the relay: wait until the stored history stops growing.
        last, still = -1, 0
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and still < 80:  # 8 s without a new event
            now = len(phone.seen)
            still = still + 1 if now == last else 0
            last = now
            await asyncio.sleep(0.1)
        tally.seconds = time.monotonic() - started
        events = stored_events(relay.url, relay.phone_token, session_id)
        # Claude Code writes to the same file (the revived session's own lines), so find each
        # line where it really landed; each is unique (a fresh uuid or a counter).
        blob = path.read_bytes()
        cursor = lines[0].offset
        for line in lines:
            at = blob.find(b"\n" + line.raw + b"\n", cursor - 1)
            line.offset = at + 1 if at >= 0 else -1
            cursor = max(cursor, line.offset + len(line.raw))
        if os.environ.get("CB_BENCH_DEBUG"):
            snap = phone_http.get(f"/api/sessions/{session_id}").json()
            log(
                f"lines from offset {lines[0].offset}; kills at line {sorted(kill_at)}; "
                f"conversation now {snap.get('conversation_id')} (followed {conversation}), "
                f"state {snap.get('state')}"
            )
            convs: dict[str, list[int]] = {}
            for e in events:
                convs.setdefault(str(e.get("conversation_id")), []).append(e.get("offset") or 0)
            for c, offs in convs.items():
                log(f"  {c}: {len(offs)} events, offsets {min(offs)}..{max(offs)}")
            log(f"  line offsets: {[x.offset for x in lines][::20]}")
            blob = path.read_bytes()
            wrong = [x for x in lines if blob[x.offset : x.offset + len(x.raw)] != x.raw]
            log(
                f"  file {len(blob)} bytes; lines not at their offsets: {len(wrong)}; first: "
                f"{[(x.offset, x.kind) for x in wrong[:3]]}"
            )
            if wrong:
                at = wrong[0].offset
                log(f"  file near {at}: {blob[at - 200 : at + 300]!r}")
            stored_offsets = sorted({e.get("offset") or 0 for e in events})
            mine = [(x.offset, x.kind) for x in lines]
            lost_at = next((o for o, _ in mine if o not in stored_offsets), None)
            if lost_at is not None:
                log(
                    f"  first missing {lost_at}; mine near: "
                    f"{[m for m in mine if abs(m[0] - lost_at) < 3000]}; stored near: "
                    f"{[o for o in stored_offsets if abs(o - lost_at) < 3000]}; stored after: "
                    f"{[o for o in stored_offsets if o > lost_at][:8]}; mine after: "
                    f"{[m for m in mine if m[0] > lost_at][:8]}"
                )
        ours = [x for x in events if (x.get("offset") or 0) >= lines[0].offset]
        tally.lines = len(lines)
        tally.odd = sum(1 for x in lines if x.kind != "real")
        located = [x for x in lines if x.offset >= 0]
        if len(located) < len(lines):
            # Cut in two by the other writer of the file: not a line the agent could send.
            log(f"{len(lines) - len(located)} line(s) interleaved with Claude Code's own writes")
        tally_history(tally, located, events, conversation, set())
        tally.events = len(ours)
        tally.doubled += phone.doubled
        tally.out_of_order += phone.out_of_order
        tally.phone_reconnects = phone.reconnects
    finally:
        if phone is not None:
            phone.stop = True
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(BaseException):
                await watcher
        phone_http.close()
        agent.cleanup()
        relay.stop()
    return tally


# -- output -----------------------------------------------------------------------------------


def rows(name: str, tally: Tally, kills: int) -> list[Row]:
    zero = tally.lost == 0 and tally.doubled == 0 and tally.out_of_order == 0
    restarts = ", ".join(f"{x:.2f}" for x in tally.restarts) or "—"
    out = [
        Row(
            f"odd replay, {name} kill -9 ×{kills} ({tally.lines:,} lines, {tally.odd:,} odd): "
            "lost / doubled / out of order",
            f"{tally.lost} / {tally.doubled} / {tally.out_of_order}",
            "0 / 0 / 0",
            zero,
        ),
        Row(
            f"odd replay, {name} kill -9: events stored, replay time, restart times (s)",
            f"{tally.events:,} events; {tally.seconds:.1f} s; restarts {restarts}",
        ),
    ]
    if tally.recoveries:
        rec = ", ".join(f"{x:.2f}" for x in tally.recoveries)
        out.append(Row(f"odd replay, {name} kill -9: kill → next ack (s)", rec))
    if tally.dropped_with_reason or tally.never_acked_batches:
        out.append(
            Row(
                f"odd replay, {name} kill -9: lines dropped with a reason / batches never acked",
                f"{tally.dropped_with_reason} / {tally.never_acked_batches}",
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--agent-lines", type=int, default=600)
    parser.add_argument("--only", choices=["relay", "agent"])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--odd",
        default=",".join(Mix.ODD),
        help="odd kinds in the mix (comma-separated; empty = real lines only), to find which "
        "kind a failure comes from",
    )
    parser.add_argument("--no-hold", action="store_true", help="send no line out of order")
    args = parser.parse_args()
    odd = tuple(k for k in args.odd.split(",") if k)
    unknown = set(odd) - set(Mix.ODD)
    if unknown:
        parser.error(f"unknown odd kinds {sorted(unknown)}; choose from {Mix.ODD}")
    if args.quick:
        args.lines, args.agent_lines, args.kills = 600, 200, 2
    install_signal_cleanup()
    sweep_stale_dirs()
    root = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}odd-"))
    (root / "owner.pid").write_text(str(os.getpid()))
    results: list[Row] = []
    try:
        if args.only in (None, "relay"):
            log(f"part 1: {args.lines} lines, batches of {args.batch}, relay kill -9 ×{args.kills}")
            (root / "r").mkdir()
            tally = asyncio.run(
                relay_part(root / "r", args.lines, args.batch, args.kills, odd, not args.no_hold)
            )
            results += rows("relay", tally, args.kills)
            if tally.lost_examples:
                log("lost lines (first): " + ", ".join(tally.lost_examples))
        if args.only in (None, "agent"):
            if shutil.which("tmux") is None:
                log("part 2 skipped: tmux is not installed")
            else:
                log(f"part 2: {args.agent_lines} lines appended, agent kill -9 ×{args.kills}")
                (root / "a").mkdir()
                tally = asyncio.run(agent_part(root / "a", args.agent_lines, 20, args.kills, odd))
                results += rows("agent", tally, args.kills)
                if tally.lost_examples:
                    log("lost lines (first): " + ", ".join(tally.lost_examples))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(markdown_table(results))


if __name__ == "__main__":
    main()
