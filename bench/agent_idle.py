"""Agent idle cost: CPU of the agent with 20 idle sessions.

A relay process and the agent as people run it (``python -m cli agent --relay URL --token T
--data DIR --claude PATH --mux tmux --socket NAME``: file watching on, the default), with a HOME,
agent data folder and tmux server (``-L`` socket) of its own. Its ``claude`` is the stand-in of
bench/agent_latency.py: it draws a captured idle Claude Code screen, writes the status file
Claude Code keeps (``~/.claude/sessions/<pid>.json``, status idle) and sleeps. 20 sessions are
started through the API (POST /api/sessions, one folder each); once GET /api/sessions says every
one is idle (and 5 s more, so start-up work is over), the CPU time (utime + stime from
/proc/<pid>/stat) of each process is read at the start and the end of a window of 60 s (15 s with
--quick), and shown as a share of one core:

* the agent process (all its threads), split into its main thread (the asyncio loop: screens,
  transcripts, the relay link) and the others (to_thread workers; watchfiles' polling thread where inotify is not used);
* its only child, the tmux control-mode client (``tmux -C``) the agent reads screens through;
* the tmux server of the sessions (it renders the panes and answers capture-pane).

Also printed: the agent's share in each sixth of the window, and a probe of the machine's speed
meanwhile (the CPU time of a few screen classifications run once a second from cold, like the
agent's own short bursts). On a shared or virtual machine the same idle agent measures 2–6 % from
one run to the next, and the probe moves with it: compare runs by both.

    .venv/bin/python -m bench.agent_idle [--sessions 20] [--seconds 60] [--quick]
                                         [--agent cli|watch|poll] [--no-status-files] [--py-spy FILE]

``--agent watch`` / ``--agent poll`` build the agent as bench/agent_latency.py does,
``Agent(AgentOptions(watch=True/False))`` in a process of its own, to compare file watching with
the plain 700 ms polling (the CLI has no switch for it). ``--py-spy FILE`` records raw stacks of
the agent (per thread) during the window; it needs py-spy on PATH and inflates the figure.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    REPO,
    RelayProcess,
    Row,
    _die_with_parent,
    clean_env,
    install_signal_cleanup,
    log,
    markdown_table,
    proc_cpu,
)
from bench.agent_latency import (
    AgentRunner,
    Mac,
    agent_spec,
    online_device,
    phone_client,
    session_states,
    start_session,
    wait_for,
)

GOAL_PERCENT = 3.0
SETTLE = 5.0  # seconds after every session is idle before the window opens


class AgentProcess:
    """``python -m cli agent …`` in its own process; stopped (SIGTERM, then SIGKILL) on exit."""

    def __init__(self, mac: Mac, relay: RelayProcess) -> None:
        self.mac = mac
        self.relay = relay
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __enter__(self) -> AgentProcess:
        self._log = open(self.mac.root / "agent.log", "wb")
        env = clean_env({**self.mac.session_env(), "PYTHONPATH": str(REPO)})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "agent", "--relay", self.relay.url,
             "--token", self.relay.device_token, "--data", str(self.mac.data),
             "--claude", str(self.mac.claude), "--mux", "tmux", "--socket", self.mac.socket,
             "--log-level", "warning"],
            cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )  # fmt: skip
        return self

    def __exit__(self, *exc: object) -> None:
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

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return (self.mac.root / "agent.log").read_text(errors="replace")[-chars:]
        return ""


def children(pid: int) -> list[int]:
    out: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                text = Path(f"/proc/{pid}/task/{task}/children").read_text()
                out += [int(x) for x in text.split()]
    return out


def thread_cpu(pid: int, tid: int) -> float:
    """CPU seconds of one thread of a process (the main thread: tid == pid)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def command_of(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    return "?"


async def start_sessions(relay: RelayProcess, mac: Mac, agent: AgentProcess, count: int) -> float:
    """Start ``count`` sessions and wait until all are idle; returns the seconds that took."""
    started = time.perf_counter()
    async with phone_client(relay) as phone:
        try:
            device_id = await online_device(phone)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}\nagent log:\n{agent.log_tail()}") from None
        ids = []
        for i in range(count):
            try:
                ids.append(await start_session(phone, device_id, mac.folder(f"s{i:02d}")))
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}\nrelay log:\n{relay.log_tail()}\n"
                                   f"agent log:\n{agent.log_tail()}") from None  # fmt: skip
        log(f"[agent_idle] {count} sessions started in {time.perf_counter() - started:.1f} s")

        async def all_idle() -> bool:
            states = await session_states(phone)
            return all(states.get(i) == "idle" for i in ids)

        try:
            await wait_for(all_idle, 90, f"all {count} sessions to be idle", every=0.5)
        except RuntimeError:
            states = await session_states(phone)
            raise RuntimeError(
                f"not all idle: {sorted(states.get(i, '?') for i in ids)}\n{agent.log_tail()}"
            ) from None
    return time.perf_counter() - started


async def still_idle(relay: RelayProcess) -> tuple[int, int]:
    async with phone_client(relay) as phone:
        states = await session_states(phone)
    return sum(1 for s in states.values() if s == "idle"), len(states)


def start_profile(pid: int, seconds: float, out: str) -> subprocess.Popen[bytes] | None:
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        log("[agent_idle] py-spy not found (pip install py-spy, or put it on PATH): no profile")
        return None
    log(f"[agent_idle] py-spy record of the agent for {seconds:.0f} s → {out}")
    return subprocess.Popen(
        [py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds)), "--rate", "250",
         "--format", "raw", "--output", out, "--nonblocking", "--threads"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


class Probe:
    """How fast this machine is right now, for this kind of work: the CPU time of a few screen
    classifications (bench/screen_speed.py's work), run once a second from a cold start like the
    agent's own bursts. On a shared or virtual machine it varies from run to run, and the agent's
    idle CPU varies with it."""

    def __init__(self) -> None:
        from bench.screen_speed import load_screens

        self.capture = load_screens()[0].capture
        self.samples: list[float] = []

    def __call__(self, count: int = 5) -> None:
        from agent.cards import read_screen
        from agent.screen import render

        started = time.thread_time()
        for _ in range(count):
            read_screen(render(self.capture, 120, 40))
        self.samples.append((time.thread_time() - started) / count)


def measure(
    sessions: int, seconds: float, profile: str | None = None, kind: str = "cli",
    child: list[str] | None = None, status_files: bool = True,
) -> dict[str, Any]:  # fmt: skip
    slice_seconds = seconds / 6
    with contextlib.ExitStack() as stack:
        mac = stack.enter_context(Mac(status_files))
        relay = stack.enter_context(RelayProcess())
        agent: Any
        if kind == "cli":
            agent = stack.enter_context(AgentProcess(mac, relay))
        else:  # Agent(AgentOptions(watch=…)) in its own process, as bench/agent_latency.py runs it
            spec = agent_spec(mac, relay, kind == "watch", None)
            agent = stack.enter_context(AgentRunner(spec, mac.root, child=child))
        took = asyncio.run(start_sessions(relay, mac, agent, sessions))
        log(f"[agent_idle] all {sessions} idle after {took:.1f} s; settling {SETTLE:g} s")
        probe = Probe()
        probe()  # warm the imports
        probe.samples.clear()
        time.sleep(SETTLE)
        server = mac.tmux_server_pid()
        kids = children(agent.pid)
        pids = {"agent": [agent.pid], "tmux control client (child)": kids,
                "tmux server": [server] if server else []}  # fmt: skip

        def read() -> tuple[float, dict[str, float], float]:
            cpu = {k: sum(proc_cpu(p) for p in v) for k, v in pids.items()}
            return time.perf_counter(), cpu, thread_cpu(agent.pid, agent.pid)

        spy = start_profile(agent.pid, seconds, profile) if profile else None
        log(f"[agent_idle] measuring {seconds:.0f} s")
        first = last = read()
        slices: list[float] = []  # the agent's share of a core in each slice of the window
        load_before = os.getloadavg()[0]
        while (now := time.perf_counter()) - first[0] < seconds:
            time.sleep(min(1.0, seconds - (now - first[0])))
            probe()
            if time.perf_counter() - last[0] >= slice_seconds - 0.5:
                current = read()
                slices.append((current[1]["agent"] - last[1]["agent"]) / (current[0] - last[0]))
                last = current
            if not agent.alive():
                raise RuntimeError(f"the agent died:\n{agent.log_tail()}")
        end = read()
        if spy is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                spy.wait(60)
        elapsed = end[0] - first[0]
        idle, total = asyncio.run(still_idle(relay))
        return {
            "sessions": sessions,
            "seconds": elapsed,
            "startup": took,
            "cpu": {k: (end[1][k] - first[1][k]) / elapsed for k in pids},
            "main_thread": (end[2] - first[2]) / elapsed,
            "slices": slices,
            "probe_ms": [x * 1000 for x in probe.samples],
            "load": (load_before, os.getloadavg()[0]),
            "pids": pids,
            "commands": {p: command_of(p) for v in pids.values() for p in v},
            "idle_at_end": (idle, total),
            "profiled": bool(profile),
            "kind": kind,
            "status_files": status_files,
        }


def report(result: dict[str, Any]) -> list[Row]:
    cpu = result["cpu"]
    n, secs = result["sessions"], result["seconds"]
    idle, total = result["idle_at_end"]
    how = {
        "cli": "`python -m cli agent` (file watching on, the default)",
        "watch": "Agent(AgentOptions(watch=True)) in its own process",
        "poll": "Agent(AgentOptions(watch=False)) in its own process (700 ms polling)",
    }[result["kind"]]
    for pid, command in result["commands"].items():
        log(f"[agent_idle] pid {pid}: {command[:120]}")
    files = "with" if result["status_files"] else "without"
    print(f"agent idle: {n} idle sessions (stand-in claude {files} status files), agent = {how}, "
          f"window {secs:.0f} s; all idle {result['startup']:.1f} s after the first was started; "
          f"idle at the end: {idle}/{total}"
          + (" — py-spy was attached (inflates the agent's figure)" if result["profiled"] else ""))  # fmt: skip
    print("| process | CPU, % of one core | per session |")
    print("| --- | --- | --- |")
    for name, share in cpu.items():
        print(f"| {name} | {share * 100:.2f} % | {share * 100 / n:.3f} % |")
        if name == "agent":
            main, rest = result["main_thread"], share - result["main_thread"]
            print(
                f"| … its main thread (asyncio loop) | {main * 100:.2f} % | {main * 100 / n:.3f} % |"
            )
            print(f"| … its other threads (to_thread, watchfiles) | {rest * 100:.2f} % | "
                  f"{rest * 100 / n:.3f} % |")  # fmt: skip
    print(f"| all three | {sum(cpu.values()) * 100:.2f} % | {sum(cpu.values()) * 100 / n:.3f} % |")
    slices = result["slices"]
    if slices:
        print(f"agent CPU in each {secs / len(slices):.0f} s slice: "
              + ", ".join(f"{x * 100:.2f}" for x in slices) + " %")  # fmt: skip
    probe = result["probe_ms"]
    if probe:
        print(f"machine speed meanwhile (one 120×40 screen classification, cold, CPU time): "
              f"median {statistics.median(probe):.3f} ms, min {min(probe):.3f} ms; "
              f"load average {result['load'][0]:.2f} → {result['load'][1]:.2f}")  # fmt: skip
    print(flush=True)
    agent = cpu["agent"] * 100
    label = {"cli": "", "watch": ", in-process, watching", "poll": ", in-process, 700 ms polling"}
    return [
        Row(f"agent CPU, {n} idle sessions, {secs:.0f} s (agent process{label[result['kind']]})",
            f"{agent:.2f} % of one core", f"≤ {GOAL_PERCENT:g} %", agent <= GOAL_PERCENT),
        Row(f"agent CPU, {n} idle sessions: tmux server + control client",
            f"{cpu['tmux server'] * 100:.2f} % + "
            f"{cpu['tmux control client (child)'] * 100:.2f} % of one core"),
    ]  # fmt: skip


def run(quick: bool = False, sessions: int = 20, seconds: float | None = None,
        profile: str | None = None, kind: str = "cli", status_files: bool = True) -> list[Row]:  # fmt: skip
    window = seconds or (15.0 if quick else 60.0)
    return report(measure(sessions, window, profile, kind, status_files=status_files))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20, help="idle sessions (20)")
    parser.add_argument("--seconds", type=float, default=None, help="window (60; --quick: 15)")
    parser.add_argument("--quick", action="store_true", help="a 15 s window")
    parser.add_argument("--py-spy", metavar="FILE", default=None,
                        help="record py-spy raw stacks of the agent during the window into FILE")  # fmt: skip
    parser.add_argument("--agent", choices=["cli", "watch", "poll"], default="cli",
                        help="cli: `python -m cli agent` (default); watch / poll: "
                        "Agent(AgentOptions(watch=True/False)) in its own process")  # fmt: skip
    parser.add_argument("--no-status-files", action="store_true",
                        help="the stand-in writes no ~/.claude/sessions/<pid>.json")  # fmt: skip
    args = parser.parse_args(argv)
    install_signal_cleanup()
    rows = run(args.quick, args.sessions, args.seconds, args.py_spy, args.agent,
               not args.no_status_files)  # fmt: skip
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
