"""How fast the control page shows up on a slow phone: first paint and "session rows visible".

Debian's Chromium under Playwright, against ``claude-bridge relay`` in its own process with a Mac
linked that has a few sessions. Chrome DevTools' "Fast 3G" (562.5 ms latency, ~1.44 Mbit/s down,
~675 kbit/s up) and a CPU four times slower, set through the DevTools protocol. Each load is cold
(a new browser context: no HTTP cache, no service worker) and then warm (the same context again).
Prints the medians and the bytes the page's files took on the wire and after decoding.

    .venv/bin/python -m bench.page_load [--repeat 3] [--repo PATH]

``--repo`` runs the relay from another checkout (e.g. one from before a change) to compare.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

from bench._common import RelayProcess, chat_line, install_signal_cleanup, log

CHROMIUM = "/usr/bin/chromium"
FAST_3G = {
    "offline": False,
    "latency": 562.5,
    "downloadThroughput": 1.6 * 1024 * 1024 / 8 * 0.9,
    "uploadThroughput": 750 * 1024 / 8 * 0.9,
}
CPU_SLOWDOWN = 4
SESSIONS = 6

_MEASURE = """async () => {
  const paint = performance.getEntriesByType("paint");
  const first = paint.find((p) => p.name === "first-contentful-paint") || paint[0];
  const files = [performance.getEntriesByType("navigation")[0],
                 ...performance.getEntriesByType("resource")]
    .filter((e) => !new URL(e.name).pathname.startsWith("/api/"));
  return {
    paint: first ? first.startTime : null,
    wire: files.reduce((n, e) => n + (e.transferSize || 0), 0),
    body: files.reduce((n, e) => n + (e.decodedBodySize || 0), 0),
    requests: files.length,
  };
}"""


async def link_sessions(relay: RelayProcess) -> Any:
    from wire.client import MacLink
    from wire.protocol import DeviceInfo, LineRecord, SessionInfo

    link = MacLink(relay.url, relay.device_token, DeviceInfo(name="bench-mac"))
    await link.connect()
    for i in range(SESSIONS):
        sid = str(uuid.uuid4())
        text, line_uuid = chat_line(f"make the page fast, part {i}")
        await link.send_lines(sid, "conv-" + sid[:8], [LineRecord(offset=0, text=text, uuid=line_uuid)],
                              cwd=f"/Users/ada/src/p{i}")  # fmt: skip
        await link.update(SessionInfo(session_id=sid, state="idle"))
    return link


async def load_once(context: Any, url: str) -> dict[str, Any]:
    page = await context.new_page()
    cdp = await context.new_cdp_session(page)
    await cdp.send("Network.enable")
    await cdp.send("Network.emulateNetworkConditions", FAST_3G)
    await cdp.send("Emulation.setCPUThrottlingRate", {"rate": CPU_SLOWDOWN})
    await page.goto(url, wait_until="commit")
    rows = await page.wait_for_function(
        "() => document.querySelector('.session-row') && performance.now()",
        polling="raf", timeout=120_000,
    )  # fmt: skip
    figures: dict[str, Any] = await page.evaluate(_MEASURE)
    figures["rows"] = await rows.json_value()
    await page.wait_for_timeout(1500)  # let the service worker install before the next load
    await page.close()
    return figures


async def run(repeat: int) -> dict[str, list[dict[str, Any]]]:
    from playwright.async_api import async_playwright

    out: dict[str, list[dict[str, Any]]] = {"cold": [], "warm": []}
    with RelayProcess() as relay:
        link = await link_sessions(relay)
        try:
            async with async_playwright() as p:
                browser = await p.chromium.launch(
                    executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
                )
                for i in range(repeat):
                    log(f"load {i + 1}/{repeat}")
                    context = await browser.new_context(
                        viewport={"width": 390, "height": 844}, base_url=relay.url
                    )
                    await context.add_cookies([{"name": "cb_login", "value": relay.phone_token,
                                                "url": relay.url, "httpOnly": True}])  # fmt: skip
                    out["cold"].append(await load_once(context, "/"))
                    out["warm"].append(await load_once(context, "/"))
                    await context.close()
                await browser.close()
        finally:
            await link.close()
    return out


def median(rows: list[dict[str, Any]], key: str) -> float:
    values = [r[key] for r in rows if r[key] is not None]
    return statistics.median(values) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--repo", type=Path, help="run the relay from this checkout")
    args = parser.parse_args(argv)
    install_signal_cleanup()
    if args.repo:
        import bench._common as common

        original = common.clean_env

        def with_repo(overrides: dict[str, str] | None = None) -> dict[str, str]:
            env = original(overrides)
            env["PYTHONPATH"] = str(args.repo.resolve())
            return env

        common.clean_env = with_repo
    results = asyncio.run(run(args.repeat))
    print(f"page load at 390×844, Fast 3G + {CPU_SLOWDOWN}× CPU, median of {args.repeat}:")
    for kind, rows in results.items():
        print(
            f"  {kind:4}: first paint {median(rows, 'paint'):7.0f} ms · rows visible "
            f"{median(rows, 'rows'):7.0f} ms · page files {median(rows, 'wire') / 1024:6.1f} KiB "
            f"on the wire ({median(rows, 'body') / 1024:.1f} KiB decoded, "
            f"{median(rows, 'requests'):.0f} files)"
        )
    try:
        from relay.app import WEB_DIR
        from relay.static import load

        _, files = load(WEB_DIR)
        raw = sum(len(f.body) for f in files.values())
        packed = sum(len(f.gzipped or f.body) for f in files.values())
        print(
            f"  this checkout's page files: {raw / 1024:.1f} KiB raw, {packed / 1024:.1f} KiB gzip"
        )
    except ImportError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
