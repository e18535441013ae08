"""The page's files on the wire (relay/static.py, issue 14): gzip, versioned addresses kept for a
year, entry points revalidated, modulepreload for every module, /favicon.ico, the service worker
caching the versioned shell — against a real relay, and the page still working in Chromium."""

from __future__ import annotations

import gzip
import re

import httpx
from playwright.sync_api import expect

from relay.app import WEB_DIR
from relay.static import IMMUTABLE, REVALIDATE, load, module_graph
from tests.support.relay import Account, RelayServer
from tests.support.web import Phone


def version_of(html: str) -> str:
    match = re.search(r'src="app\.js\?v=([0-9a-f]{12})"', html)
    assert match, html
    return match[1]


def test_entry_points_are_revalidated_and_versioned_files_kept(relay: RelayServer) -> None:
    with httpx.Client(base_url=relay.url) as c:
        index = c.get("/", headers={"Accept-Encoding": "gzip"})
        assert index.status_code == 200
        assert index.headers["content-encoding"] == "gzip"
        assert index.headers["cache-control"] == REVALIDATE
        assert index.headers["vary"] == "Accept-Encoding"
        assert "content-security-policy" in index.headers  # still behind the security headers
        version = version_of(index.text)
        preloads = re.findall(r'<link rel="modulepreload" href="([^"]+)">', index.text)
        assert f"js/live.js?v={version}" in preloads and f"js/api.js?v={version}" in preloads
        assert len(preloads) == len(list((WEB_DIR / "js").glob("*.js")))

        app = c.get(f"/app.js?v={version}")
        assert app.headers["cache-control"] == IMMUTABLE
        assert app.headers["content-type"].startswith("text/javascript")
        assert f'from "./js/live.js?v={version}"' in app.text  # imports name the same version
        stale = c.get("/app.js?v=000000000000")
        assert stale.headers["cache-control"] == REVALIDATE  # not kept as if it were this one
        assert c.get("/app.js").headers["cache-control"] == REVALIDATE

        again = c.get("/", headers={"If-None-Match": index.headers["etag"]})
        assert again.status_code == 304 and again.content == b""

        raw = c.get(f"/style.css?v={version}", headers={"Accept-Encoding": "identity"})
        assert "content-encoding" not in raw.headers
        assert raw.content == (WEB_DIR / "style.css").read_bytes()

        sw = c.get("/sw.js")
        assert sw.headers["cache-control"] == REVALIDATE
        assert f'const VERSION = "{version}"' in sw.text

        ico = c.get("/favicon.ico")
        assert ico.status_code == 200 and ico.headers["content-type"] == "image/x-icon"
        assert ico.content[:4] == b"\0\0\1\0" and b"\x89PNG" in ico.content

        assert c.get("/../relay/app.py").status_code == 404
        assert c.get("/icons/make_icons.py").status_code == 404  # only the page's own kinds
        assert c.get("/nothing.js").status_code == 404
        assert c.post("/index.html").status_code == 405


def test_weight_raw_and_compressed() -> None:
    version, files = load(WEB_DIR)
    raw = sum(len(f.body) for f in files.values())
    packed = sum(len(f.gzipped or f.body) for f in files.values())
    print(f"\npage files: {raw:,} bytes raw, {packed:,} bytes gzip-compressed (version {version})")
    assert packed < raw / 2.5
    for name, f in files.items():
        if f.gzipped is not None:
            assert gzip.decompress(f.gzipped) == f.body, name


def test_module_graph_reaches_every_module_once() -> None:
    files = {
        "app.js": b'import { a } from "./js/a.js";\nimport "./js/b.js";',
        "js/a.js": b'import { b } from "./b.js";\nconst x = await import("../js/c.js");',
        "js/b.js": b"",
        "js/c.js": b'import { a } from "./a.js";',
    }
    assert module_graph(files, "app.js") == ["js/a.js", "js/b.js", "js/c.js"]


def test_the_page_runs_from_versioned_files_and_the_worker_keeps_them(
    phone: Phone, account: Account
) -> None:
    page = phone.login(account).open("/")
    expect(page.locator("#live")).to_have_class("live on")
    names = page.evaluate(
        """async () => {
            await navigator.serviceWorker.ready;
            const keys = await caches.keys();
            const cache = await caches.open(keys.find((k) => k.startsWith("cb-shell-")));
            return { keys, urls: (await cache.keys()).map((r) => new URL(r.url).pathname + new URL(r.url).search) };
        }"""
    )
    assert len(names["keys"]) == 1, names["keys"]
    version = names["keys"][0].removeprefix("cb-shell-")
    assert f"/js/live.js?v={version}" in names["urls"]
    assert "/index.html" in names["urls"]


def test_the_service_worker_keeps_every_module_of_the_page() -> None:
    """Opened without the relay, the page loads from the kept shell: a module missing from the
    service worker's list would fail the whole page offline."""
    sw = (WEB_DIR / "sw.js").read_text()
    start = sw.index("const FILES")
    listed = set(re.findall(r'"(/[^"?]+)"', sw[start : sw.index("];", start)]))
    modules = {"/js/" + p.name for p in (WEB_DIR / "js").glob("*.js")}
    assert modules - listed == set(), "add them to FILES in web/sw.js"
    assert {"/app.js", "/style.css", "/pair.js"} <= listed
