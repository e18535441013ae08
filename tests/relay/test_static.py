"""The page's files on the wire (relay/static.py): gzip, versioned addresses kept for a year,
entry points revalidated, each page's script one bundle and its stylesheet inline under the CSP's
hash, /favicon.ico, the service worker keeping what the page loads — against a real relay, and
the page still working in Chromium."""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, expect

from relay.app import WEB_DIR
from relay.bundle import split
from relay.static import IMMUTABLE, REVALIDATE, load, module_graph
from tests.support.relay import Account, RelayServer
from tests.support.web import Phone

STYLE = re.compile(r"<style>(.*?)</style>", re.S)


def version_of(html: str) -> str:
    match = re.search(r'src="app\.js\?v=([0-9a-f]{12})"', html)
    assert match, html
    return match[1]


def directives(policy: str) -> dict[str, list[str]]:
    return {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}


def test_entry_points_are_revalidated_and_versioned_files_kept(relay: RelayServer) -> None:
    with httpx.Client(base_url=relay.url) as c:
        index = c.get("/", headers={"Accept-Encoding": "gzip"})
        assert index.status_code == 200
        assert index.headers["content-encoding"] == "gzip"
        assert index.headers["cache-control"] == REVALIDATE
        assert index.headers["vary"] == "Accept-Encoding"
        assert "content-security-policy" in index.headers  # still behind the security headers
        version = version_of(index.text)

        app = c.get(f"/app.js?v={version}")
        assert app.headers["cache-control"] == IMMUTABLE
        assert app.headers["content-type"].startswith("text/javascript")
        stale = c.get("/app.js?v=000000000000")
        assert stale.headers["cache-control"] == REVALIDATE  # not kept as if it were this one
        assert c.get("/app.js").headers["cache-control"] == REVALIDATE
        # the modules stay servable as they are, their imports naming the same version
        live = c.get(f"/js/session.js?v={version}")
        assert live.headers["cache-control"] == IMMUTABLE
        assert f'from "./live.js?v={version}"' in live.text

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


def test_a_cold_open_waits_for_the_page_and_one_script(relay: RelayServer) -> None:
    """Nothing before the first paint but the page (its stylesheet inline), and one script
    (the bundle of every module) before the first rows: no import level to wait for."""
    css = (WEB_DIR / "style.css").read_text()
    with httpx.Client(base_url=relay.url) as c:
        for page in ("/", "/pair.html"):
            html = c.get(page).text
            assert STYLE.findall(html) == [css], page
            assert 'rel="stylesheet"' not in html and "modulepreload" not in html
            (script,) = re.findall(r'<script type="module" src="([^"]+)"></script>', html)
            bundle = c.get("/" + script).text
            assert not re.search(r'^\s*import\b|\bfrom\s*"', bundle, re.M), page
        # every module in the script, or in a chunk it loads when a feature is first opened
        scripts = [c.get("/app.js").text]
        chunks = set(re.findall(r'"\./chunks/([a-z]+-[0-9a-f]{10}\.js)\?v=', scripts[0]))
        for name in sorted(chunks):
            scripts.append(c.get("/chunks/" + name).text)
        joined = "".join(scripts)
        for module in sorted((WEB_DIR / "js").glob("*.js")):
            assert f"// ---- js/{module.name}\n" in joined, module.name


def test_the_csp_lets_in_no_inline_code_but_the_pages_own_style(
    relay: RelayServer, account: Account
) -> None:
    with httpx.Client(base_url=relay.url, cookies={"cb_login": account.phone_token}) as c:
        for path in ("/", "/pair.html", "/api/health"):
            policy = directives(c.get(path).headers["content-security-policy"])
            assert policy["script-src"] == ["'self'"], policy  # no inline script, no hash
            assert policy["style-src"][0] == "'self'" and len(policy["style-src"]) == 2, policy
            assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
            for sources in policy.values():
                assert not {"'unsafe-inline'", "'unsafe-eval'", "'unsafe-hashes'"} & set(sources)
        (allowed,) = policy["style-src"][1:]
        for path in ("/", "/pair.html"):
            html = c.get(path).text  # the logged-in page, with its data block
            (style,) = STYLE.findall(html)
            digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
            assert allowed == f"'sha256-{digest}'"
            assert " style=" not in html
            for tag in re.findall(r"<script\b[^>]*>", html):
                assert " src=" in tag or 'type="application/json"' in tag, tag


def test_the_browser_runs_no_inline_code_but_the_pages_own_style(
    phone: Phone, account: Account
) -> None:
    page = phone.login(account).open("/")
    expect(page.locator("#live")).to_have_class("live on")
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") != "rgba(0, 0, 0, 0)"
    phone.problems.clear()
    refused = page.evaluate(
        """async () => {
            const seen = [];
            document.addEventListener("securitypolicyviolation", (e) => seen.push(e.violatedDirective));
            const style = document.createElement("style");
            style.textContent = "body { outline: 7px solid rgb(1, 2, 3); }";
            document.head.append(style);
            const script = document.createElement("script");
            script.textContent = "window.__ran = true;";
            document.head.append(script);
            await new Promise((r) => setTimeout(r, 200));
            return { seen, outline: getComputedStyle(document.body).outlineWidth, ran: window.__ran === true };
        }"""
    )
    assert refused["ran"] is False and refused["outline"] != "7px", refused
    assert sorted(d.split("-elem")[0] for d in refused["seen"]) == ["script-src", "style-src"]
    phone.problems.clear()  # the refusals above were this test's own


def test_weight_raw_and_compressed() -> None:
    served = load(WEB_DIR)
    raw = sum(len(f.body) for f in served.files.values())
    packed = sum(len(f.gzipped or f.body) for f in served.files.values())
    print(f"\npage files: {raw:,} bytes raw, {packed:,} bytes gzip-compressed ({served.version})")
    assert packed < raw / 2.5
    for name, f in served.files.items():
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


def test_a_script_that_cannot_be_bundled_is_served_as_modules_and_preloaded(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, make_relay: Any, browser: Browser
) -> None:
    """A page folder of one's own (setting web_dir) with syntax the bundler does not take still
    works, as separate modules fetched side by side; the relay's log says why."""
    web = tmp_path / "web"
    shutil.copytree(WEB_DIR, web, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    session = web / "js" / "session.js"  # the pairing page's script does not import it
    session.write_text(session.read_text() + "\nexport default function extra() {}\n")
    served = load(web)
    assert served.bundled == ("pair.js",)
    html = served.files["index.html"].body.decode()
    preloads = re.findall(r'<link rel="modulepreload" href="([^"?]+)\?v=', html)
    # every module the first run needs (what features load lazily is fetched when opened)
    texts = {p.relative_to(WEB_DIR).as_posix(): p.read_text() for p in WEB_DIR.rglob("*.js")}
    lazy = {
        n
        for t in split(texts, "app.js").chunks.values()
        for n in re.findall(r"^// ---- (\S+)$", t, re.M)
    }
    assert lazy and sorted(preloads) == sorted(
        f"js/{p.name}" for p in (web / "js").glob("*.js") if f"js/{p.name}" not in lazy
    )
    app = served.files["app.js"].body.decode()
    assert f'from "./js/live.js?v={served.version}"' in app
    assert set(preloads) <= set(served.shell)  # the worker keeps them all, then
    assert "serving app.js as separate modules: js/session.js:" in caplog.text
    relay = make_relay(web_dir=str(web))
    phone = Phone(browser, relay)
    try:
        page = phone.login(relay.account()).open("/")
        expect(page.locator("#live")).to_have_class("live on")
    finally:
        phone.close()


def test_the_service_worker_keeps_what_the_page_loads() -> None:
    """Opened without the relay, the page loads from the kept shell: a file of index.html missing
    from the worker's list would fail the page offline. The list is the relay's to write."""
    assert 'const FILES = ["__CB_SHELL__"];' in (WEB_DIR / "sw.js").read_text()
    served = load(WEB_DIR)
    sw = served.files["sw.js"].body.decode()
    start = sw.index("const FILES")
    listed = set(re.findall(r'"/([^"?]+)"', sw[start : sw.index("];", start)]))
    html = served.files["index.html"].body.decode()
    loads = set(re.findall(r'(?:src|href)="([^"?]+)\?v=', html)) - {"manifest.webmanifest"}
    assert listed == loads == {"app.js", "icons/icon-192.png", "icons/apple-touch-icon.png"}
    assert set(served.shell) == listed
    entries = sw[sw.index("const ENTRY") : start]
    assert '"/"' in entries and '"/manifest.webmanifest"' in entries


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
    assert f"/app.js?v={version}" in names["urls"]
    assert "/" in names["urls"] and "/manifest.webmanifest" in names["urls"]
