"""How fast the control page shows up on a slow phone: first paint and "session rows visible".

Debian's Chromium under Playwright, against ``claude-bridge relay`` in its own process with a Mac
linked that has a few sessions (one waiting on a card). Chrome DevTools' "Fast 3G" (562.5 ms
latency, ~1.44 Mbit/s down, ~675 kbit/s up) and a CPU four times slower, set through the DevTools
protocol. Each load is cold (a new browser context: no HTTP cache, no service worker) and then
warm (the same context again, once its service worker is ready). Two ways to reach the relay:

* ``direct``: the relay's own plain HTTP/1.1 on 127.0.0.1 (six connections at most per host);
* ``caddy``: through deploy/Caddyfile as shipped (``tls internal``, HTTP/2 over TLS), the way
  phones reach it. Chromium is told to accept Caddy's local CA (``--ignore-certificate-errors``).

Prints the machine it ran on, the medians, the bytes the page's files took on the wire and after
decoding, and a waterfall of one cold load per mode: every request (start, first byte, end,
bytes on the wire, protocol, connection), the page's module graph (modules, import depth, how
many are preloaded) and the API requests made before the first rows.

    .venv/bin/python -m bench.page_load [--repeat 3] [--mode direct|caddy|both] [--repo PATH]
                                        [--screenshots DIR]

``--repo`` runs the relay from another checkout (e.g. one from before a change) to compare.
``--screenshots`` also saves the overview and a session with a card at 390×844 and 1280×800.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import platform
import re
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._common import REPO, RelayProcess, chat_line, free_port, install_signal_cleanup, log

CHROMIUM = "/usr/bin/chromium"
FAST_3G = {
    "offline": False,
    "latency": 562.5,
    "downloadThroughput": 1.6 * 1024 * 1024 / 8 * 0.9,
    "uploadThroughput": 750 * 1024 / 8 * 0.9,
}
CPU_SLOWDOWN = 4
SESSIONS = 6
PHONE: Any = {"width": 390, "height": 844}  # Playwright's ViewportSize
WIDE: Any = {"width": 1280, "height": 800}
MODES = ("direct", "caddy")
CADDYFILE = REPO / "deploy" / "Caddyfile"
CADDY_START_S = 60
WORKER_READY_MS = 30_000  # a cold open's service worker copies the shell in the background
ROWS_TIMEOUT_MS = 120_000

_MEASURE = """async () => {
  const paint = performance.getEntriesByType("paint");
  const first = paint.find((p) => p.name === "first-contentful-paint") || paint[0];
  const nav = performance.getEntriesByType("navigation")[0];
  const files = [nav, ...performance.getEntriesByType("resource")]
    .filter((e) => !new URL(e.name).pathname.startsWith("/api/"));
  return {
    paint: first ? first.startTime : null,
    wire: files.reduce((n, e) => n + (e.transferSize || 0), 0),
    body: files.reduce((n, e) => n + (e.decodedBodySize || 0), 0),
    requests: files.length,
    fetchStart: nav.fetchStart,
  };
}"""

# The page's module scripts and preloads, as served (to follow their imports).
_MODULE_SCRIPT = re.compile(r'<script type="module" src="([^"]+)"')
_MODULE_PRELOAD = re.compile(r'<link rel="modulepreload" href="([^"]+)"')
_IMPORT = re.compile(r'(?:\bfrom\s*|^import\s+)"([^"]+)"', re.M)
_LAZY_IMPORT = re.compile(r'\bimport\s*\(\s*"([^"]+)"')  # fetched when a feature is opened


# -- the machine -----------------------------------------------------------------------------


def machine_line(chromium: str) -> str:
    """CPU model, cores, Python, Chromium, date and load: what the figures were measured on."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    now = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return (
        f"machine: {model}, {os.cpu_count()} cores · Python {platform.python_version()} · "
        f"Chromium {chromium} · {now} · load average {load}"
    )


# -- the scene: a Mac with sessions ------------------------------------------------------------


async def link_sessions(relay: RelayProcess) -> tuple[Any, str]:
    """A Mac with SESSIONS sessions, the first waiting on a permission card; returns the link and
    that session's id."""
    from wire.client import MacLink
    from wire.protocol import Card, CardOption, DeviceInfo, LineRecord, SessionInfo

    link = MacLink(relay.url, relay.device_token, DeviceInfo(name="bench-mac"))
    await link.connect()
    waiting = ""
    for i in range(SESSIONS):
        sid = str(uuid.uuid4())
        text, line_uuid = chat_line(f"make the page fast, part {i}")
        await link.send_lines(sid, "conv-" + sid[:8], [LineRecord(offset=0, text=text, uuid=line_uuid)],
                              cwd=f"/Users/ada/src/p{i}")  # fmt: skip
        if i == 0:
            waiting = sid
            card = Card(
                id="card-1", kind="permission", title="Bash command",
                text="Do you want to proceed?", tool="Bash",
                tool_input={"command": "npm run build", "description": "Build the site"},
                options=[CardOption(key="1", label="Yes"), CardOption(key="3", label="No")],
            )  # fmt: skip
            await link.update(SessionInfo(session_id=sid, state="waiting", card=card))
        else:
            await link.update(SessionInfo(session_id=sid, state="idle"))
    return link, waiting


# -- Caddy in front --------------------------------------------------------------------------


@contextlib.contextmanager
def caddy_in_front(relay_port: int) -> Iterator[str]:
    """deploy/Caddyfile as shipped (CB_TLS=internal) on a free port in front of the relay; yields
    its https address once it answers."""
    if shutil.which("caddy") is None:
        raise RuntimeError("caddy is not installed (scripts/test-deps)")
    root = Path(tempfile.mkdtemp(prefix="cb-bench-caddy-"))
    https_port = free_port()
    (root / "Caddyfile").write_text(
        "{\n\tadmin off\n"
        f"\thttp_port {free_port()}\n\thttps_port {https_port}\n"
        "\tauto_https disable_redirects\n\tskip_install_trust\n\tgrace_period 1s\n}\n"
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
    url = f"https://localhost:{https_port}"
    with (root / "caddy.log").open("w") as out:
        process = subprocess.Popen(
            ["caddy", "run", "--config", str(root / "Caddyfile"), "--adapter", "caddyfile"],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    ca = root / "data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    try:
        deadline = time.monotonic() + CADDY_START_S
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("caddy did not start:\n" + (root / "caddy.log").read_text())
            if ca.exists():
                with contextlib.suppress(OSError):
                    context = ssl.create_default_context(cafile=str(ca))
                    with urllib.request.urlopen(url + "/api/health", context=context, timeout=5):
                        break
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(root, ignore_errors=True)


# -- the module graph as served ----------------------------------------------------------------


@dataclass
class ModuleGraph:
    modules: int  # module scripts the page loads, its entry included
    depth: int  # the longest chain of imports: 1 = the entry imports nothing
    preloaded: int  # modulepreload links in index.html
    lazy: int = 0  # scripts fetched only when a feature is first opened (import("…"))


def served_module_graph(base: str, cookie: str) -> ModuleGraph:
    """Follow index.html's module script through the imports of each module, as the relay sends
    them (to a logged-in phone)."""

    def get(path: str) -> str:
        request = urllib.request.Request(base + path, headers={"Cookie": f"cb_login={cookie}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return str(response.read().decode("utf-8"))

    html = get("/")
    entries = ["/" + src for src in _MODULE_SCRIPT.findall(html)]
    depth_of: dict[str, int] = {}
    lazy: set[str] = set()

    def depth(path: str, seen: tuple[str, ...]) -> int:
        if path in depth_of:
            return depth_of[path]
        if path in seen:
            return 0
        text = get(path)
        folder = path.rsplit("/", 1)[0]
        deepest = 0
        for spec in _LAZY_IMPORT.findall(text):
            lazy.add(urllib.parse.urljoin(base + folder + "/", spec)[len(base) :])
        for spec in _IMPORT.findall(text):
            target = urllib.parse.urljoin(base + folder + "/", spec)[len(base) :]
            deepest = max(deepest, depth(target, (*seen, path)))
        depth_of[path] = deepest + 1
        return depth_of[path]

    longest = max((depth(e, ()) for e in entries), default=0)
    first = set(depth_of)
    for path in sorted(lazy):  # and what those import in turn
        depth(path, ())
    return ModuleGraph(
        len(first), longest, len(_MODULE_PRELOAD.findall(html)), len(set(depth_of) - first)
    )


# -- one load, its waterfall ------------------------------------------------------------------


@dataclass
class Request:
    url: str
    start: float  # CDP monotonic seconds
    first_byte: float | None = None
    end: float | None = None
    wire: int = 0
    status: int = 0
    protocol: str = ""
    connection: int | None = None
    source: str = ""  # "" network, "sw" service worker, "cache" memory or disk cache


@dataclass
class Waterfall:
    requests: dict[str, Request] = field(default_factory=dict)

    def attach(self, cdp: Any) -> None:
        cdp.on("Network.requestWillBeSent", self._sent)
        cdp.on("Network.responseReceived", self._received)
        cdp.on("Network.dataReceived", self._data)
        cdp.on("Network.loadingFinished", self._finished)
        cdp.on("Network.loadingFailed", self._failed)

    def _sent(self, event: dict[str, Any]) -> None:
        self.requests[event["requestId"]] = Request(event["request"]["url"], event["timestamp"])

    def _received(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is None:
            return
        response = event["response"]
        request.first_byte = event["timestamp"]
        request.status = response.get("status", 0)
        request.protocol = response.get("protocol", "")
        request.connection = response.get("connectionId")
        if response.get("fromServiceWorker"):
            request.source = "sw"
        elif response.get("fromDiskCache") or response.get("fromPrefetchCache"):
            request.source = "cache"

    def _data(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is not None:
            request.wire += event.get("encodedDataLength", 0)

    def _finished(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is not None:
            request.end = event["timestamp"]
            request.wire = max(request.wire, int(event.get("encodedDataLength", 0)))

    def _failed(self, event: dict[str, Any]) -> None:
        request = self.requests.get(event["requestId"])
        if request is not None:
            request.end = event["timestamp"]
            request.source = "failed"

    def report(self, figures: dict[str, Any], graph: ModuleGraph | None) -> str:
        """The load as text: one line per request, times in ms since the navigation started."""
        ordered = sorted(self.requests.values(), key=lambda r: r.start)
        if not ordered:
            return "  (no requests seen)"
        zero = ordered[0].start - figures["fetchStart"] / 1000  # CDP time of the page's time 0

        def ms(t: float | None) -> str:
            return "    …" if t is None else f"{(t - zero) * 1000:5.0f}"

        rows_at, paint_at = figures["rows"], figures["paint"]
        lines = [
            f"  {'start':>5} {'1st B':>5} {'end':>5} {'KiB':>6}  {'proto':8} {'conn':>5}  request"
        ]
        for r in ordered:
            path = urllib.parse.urlsplit(r.url)
            name = path.path + ("?" + path.query[:14] if path.query else "")
            conn = "" if r.connection is None else str(r.connection)
            source = f" [{r.source}]" if r.source else ""
            lines.append(
                f"  {ms(r.start)} {ms(r.first_byte)} {ms(r.end)} {r.wire / 1024:6.1f}  "
                f"{r.protocol or '-':8} {conn:>5}  {name}{source}"
            )
        lines.append(f"  first paint at {paint_at:.0f} ms, rows visible at {rows_at:.0f} ms")
        connections = {r.connection for r in ordered if r.connection and not r.source}
        api = [r for r in ordered if urllib.parse.urlsplit(r.url).path.startswith("/api/")]
        sent = [r for r in api if (r.start - zero) * 1000 < rows_at]
        answered = [r for r in sent if r.first_byte and (r.first_byte - zero) * 1000 < rows_at]

        def paths(requests: list[Request]) -> str:
            named = ", ".join(urllib.parse.urlsplit(r.url).path for r in requests)
            return f"{len(requests)}" + (f" ({named})" if named else "")

        lines.append(
            f"  {len(ordered)} requests on {len(connections)} connections; before the first "
            f"rows, API requests answered: {paths(answered)}, sent: {paths(sent)}"
        )
        if graph is not None:
            lines.append(
                f"  module graph as served: {graph.modules} module scripts, import depth "
                f"{graph.depth}, {graph.preloaded} modulepreload links, "
                f"{graph.lazy} more fetched when a feature is first opened"
            )
        return "\n".join(lines)


async def load_once(context: Any, url: str, waterfall: Waterfall | None = None) -> dict[str, Any]:
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    if waterfall is not None:
        waterfall.attach(cdp)
    await cdp.send("Network.enable")
    await cdp.send("Network.emulateNetworkConditions", FAST_3G)
    await cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
    await page.goto(url, wait_until="commit")
    rows = await page.wait_for_function(
        "() => document.querySelector('.session-row') && performance.now()",
        polling="raf", timeout=ROWS_TIMEOUT_MS,
    )  # fmt: skip
    figures: dict[str, Any] = await page.evaluate(_MEASURE)
    figures["rows"] = await rows.json_value()
    # The next (warm) load is served by the service worker once it has copied the shell.
    await page.evaluate(
        "(ms) => Promise.race([navigator.serviceWorker.ready,"
        " new Promise((r) => setTimeout(r, ms))])",
        WORKER_READY_MS,
    )
    await page.close()
    return figures


@dataclass
class Target:
    mode: str
    url: str
    cookie: str
    chromium_args: list[str]


async def measure(
    target: Target, repeat: int, shots: Path | None, waiting: str, graph: ModuleGraph
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, str], str]:
    """``repeat`` cold and warm loads; returns the figures, the first cold and warm loads'
    waterfalls and Chromium's version."""
    from playwright.async_api import async_playwright

    out: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
    reports: dict[str, str] = {}
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", *target.chromium_args],
        )
        for i in range(repeat):
            log(f"{target.mode}: load {i + 1}/{repeat}")
            context = await browser.new_context(viewport=PHONE, base_url=target.url)
            await context.add_cookies([{"name": "cb_login", "value": target.cookie,
                                        "url": target.url, "httpOnly": True}])  # fmt: skip
            cold = Waterfall() if i == 0 else None
            out["cold"].append(await load_once(context, "/", cold))
            warm = Waterfall() if i == 0 else None
            out["warm"].append(await load_once(context, "/", warm))
            if cold is not None and warm is not None:
                reports["cold"] = cold.report(out["cold"][-1], graph)
                reports["warm"] = warm.report(out["warm"][-1], None)
            await context.close()
        if shots is not None:
            await screenshots(browser, target, shots, waiting)
        version = browser.version
        await browser.close()
    return out, reports, version


async def screenshots(browser: Any, target: Target, folder: Path, waiting: str) -> None:
    """The overview and the waiting session (its card) at phone and desktop size, unthrottled."""
    folder.mkdir(parents=True, exist_ok=True)
    for label, viewport in (("390x844", PHONE), ("1280x800", WIDE)):
        context = await browser.new_context(viewport=viewport, base_url=target.url)
        await context.add_cookies([{"name": "cb_login", "value": target.cookie,
                                    "url": target.url, "httpOnly": True}])  # fmt: skip
        page = await context.new_page()
        await page.goto("/")
        await page.wait_for_selector(".session-row")
        await page.wait_for_selector("#live.on")
        await page.wait_for_timeout(500)  # the summaries' refresh
        await page.screenshot(path=str(folder / f"overview-{label}.png"))
        await page.goto(f"/#/s/{waiting}")
        await page.wait_for_selector(".card")
        await page.wait_for_timeout(500)
        await page.screenshot(path=str(folder / f"session-card-{label}.png"))
        await context.close()
    log(f"screenshots in {folder}")


def median(rows: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else float("nan")


async def run(
    modes: list[str], repeat: int, shots: Path | None, env: dict[str, str]
) -> tuple[dict[str, tuple[dict[str, list[dict[str, Any]]], dict[str, str]]], str]:
    results: dict[str, tuple[dict[str, list[dict[str, Any]]], dict[str, str]]] = {}
    version = ""
    # The relay trusts Caddy (loopback) as its proxy, as `claude-bridge up --public-url` does.
    with RelayProcess(env={"CB_TRUSTED_PROXIES": "127.0.0.1,::1", **env}) as relay:
        link, waiting = await link_sessions(relay)
        try:
            graph = await asyncio.to_thread(served_module_graph, relay.url, relay.phone_token)
            for mode in modes:
                with contextlib.ExitStack() as stack:
                    if mode == "caddy":
                        url = stack.enter_context(caddy_in_front(relay.port))
                        target = Target(mode, url, relay.phone_token,
                                        ["--ignore-certificate-errors"])  # fmt: skip
                    else:
                        target = Target(mode, relay.url, relay.phone_token, [])
                    folder = shots / mode if shots is not None else None
                    figures, reports, version = await measure(
                        target, repeat, folder, waiting, graph
                    )
                    results[mode] = (figures, reports)
        finally:
            await link.close()
    return results, version


def summary(mode: str, rows_by_kind: dict[str, list[dict[str, Any]]]) -> list[str]:
    out = []
    for kind, rows in rows_by_kind.items():
        out.append(
            f"  {mode:6} {kind:4}: first paint {median(rows, 'paint'):6.0f} ms · rows visible "
            f"{median(rows, 'rows'):6.0f} ms · page files {median(rows, 'wire') / 1024:5.1f} KiB "
            f"on the wire ({median(rows, 'body') / 1024:.1f} KiB decoded, "
            f"{median(rows, 'requests'):.0f} files)"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mode", choices=[*MODES, "both"], default="both")
    parser.add_argument("--repo", type=Path, help="run the relay from this checkout")
    parser.add_argument("--screenshots", type=Path, help="save screenshots in this folder")
    args = parser.parse_args(argv)
    install_signal_cleanup()
    env = {"PYTHONPATH": str(args.repo.resolve())} if args.repo else {}
    modes = list(MODES) if args.mode == "both" else [args.mode]
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results, chromium = asyncio.run(run(modes, args.repeat, args.screenshots, env))
    print(machine_line(chromium) + f" (before the run: {load_before})")
    print(
        f"page load at 390×844, Fast 3G ({FAST_3G['latency']} ms) + {CPU_SLOWDOWN}× CPU, "
        f"{SESSIONS} sessions, median of {args.repeat}"
        + (f", relay from {args.repo}" if args.repo else "")
        + ":"
    )
    for mode, (figures, _) in results.items():
        print("\n".join(summary(mode, figures)))
    for mode, (_, reports) in results.items():
        for kind, report in reports.items():
            print(f"\na {kind} load, {mode} (ms since the navigation started):\n{report}")
    if not args.repo:
        from relay.app import WEB_DIR
        from relay.static import load

        served = load(WEB_DIR)
        names = served.cold_open()
        raw, packed = served.weight(names)
        print(
            f"\nthis checkout's page as a first open downloads it ({', '.join(names)}): "
            f"{raw / 1024:.1f} KiB raw, {packed / 1024:.1f} KiB gzip"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
