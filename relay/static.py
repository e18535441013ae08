"""The page's files, light on the wire and few: read once at start, bundled, gzip-compressed,
versioned, cached.

Every file is read when the relay starts. Each page's module script (``app.js``, ``pair.js``) is
served as one bundle of it and the modules it imports (relay/bundle.py; the modules stay
servable as they are) — what a page opens rarely (settings, memory, the report, files…) is
left out of it, in lazy chunks fetched when first opened (``chunks/…``, outside the first load and
the service worker's shell) — and the stylesheet a page links goes inline into the page as a
``<style>`` whose hash the Content-Security-Policy names (``inline_styles``, relay/app.py): a
cold open on a slow phone network then waits for the page and one script, not for 24 modules
and a stylesheet. One version (a hash of every body as sent) is appended as ``?v=<version>`` to
every reference between the files — the HTML's ``src``/``href``, the scripts' ``import``
specifiers, the service worker's shell list — so a versioned address names exactly one content:
it is sent ``immutable`` for a year, while the entry points (the HTML pages, the service worker,
the manifest, an address without the right version) are ``no-cache`` (revalidated by ETag). A
page whose script could not be bundled gets a ``modulepreload`` link for every module it
imports instead, so a slow network fetches them side by side. The service worker is told the
files ``index.html`` loads (its shell). Text files go gzip-compressed to a browser that accepts
it. ``/favicon.ico`` is the app icon in an ICO wrapper. Only the files found at start are
served: no path from a request reaches the disk.

A logged-in phone's ``index.html`` also carries its account's snapshot (``page_data``, given by
relay/app.py) in a ``<script type="application/json">`` data block, so the page draws its first
rows without an API round trip; that answer is made for one login and is never stored
(``private, no-store``).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import logging
import re
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from relay.bundle import CHUNK_FOLDER, BundleError, split
from relay.jsontext import dumps

_log = logging.getLogger("relay")

IMMUTABLE: Final = "public, max-age=31536000, immutable"
REVALIDATE: Final = "no-cache"
PERSONAL: Final = "private, no-store"  # index.html with one login's data in it
TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".webmanifest": "application/manifest+json",
    ".json": "application/json",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}
COMPRESSIBLE: Final = {".html", ".js", ".css", ".webmanifest", ".json", ".svg"}
# Entry points: their addresses never change, so a browser must ask each time.
UNVERSIONED: Final = {"index.html", "pair.html", "sw.js", "manifest.webmanifest", "favicon.ico"}
VERSION_MARK: Final = "__CB_VERSION__"  # web/sw.js names its cache and shell after it
SHELL_MARK: Final = '"__CB_SHELL__"'  # web/sw.js's list of the files index.html loads
PAGE_DATA_ID: Final = "account-snapshot"  # the data block's id, read by web/app.js
PERSONAL_GZIP_LEVEL: Final = 6  # per request: fast, and within a few % of level 9 on this size

_HTML_REF = re.compile(r'\b(src|href)="(?![a-z]+:|/|#)([^"?#]+\.(?:js|css|png|svg|webmanifest))"')
_JS_IMPORT = re.compile(r'(\bfrom\s*|\bimport\s*\(\s*|^import\s+)"(\.{1,2}/[^"?]+\.js)"', re.M)
_JS_IMPORTED = re.compile(  # an import as written or as served (with its version)
    r'(\bfrom\s*|\bimport\s*\(\s*|^import\s+)"(\.{1,2}/[^"?]+\.js)(?:\?[^"]*)?"', re.M
)
_MANIFEST_REF = re.compile(r'"src":\s*"(?![a-z]+:|/)([^"?]+)"')
_MODULE_SCRIPT = re.compile(
    r'<script type="module" src="([^"?#]+\.js)(?:\?v=[0-9a-f]+)?"></script>'
)
_STYLESHEET = re.compile(r'<link rel="stylesheet" href="([^"?#]+\.css)(?:\?v=[0-9a-f]+)?">')
_SERVED_REF = re.compile(r'\b(?:src|href)="([^"?#:]+)\?v=')
# In a data block only "</script" or "<!--" could end it early; JSON allows \u escapes anywhere.
_DATA_ESCAPES: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}

PageData = Callable[[HTTPConnection], Awaitable[Any]]
"""What a logged-in phone's index.html carries (JSON-able), or None for the page as it is."""


@dataclass(frozen=True)
class WebFile:
    body: bytes
    gzipped: bytes | None
    media_type: str
    etag: str
    cache: str


@dataclass(frozen=True)
class WebFiles:
    """Every file the relay serves, and what relay/app.py and the tests need to know of them."""

    version: str
    files: dict[str, WebFile]
    inline_styles: tuple[str, ...]  # CSP sources ('sha256-…') of the pages' inline styles
    shell: tuple[str, ...]  # versioned files index.html loads: the service worker keeps them
    bundled: tuple[str, ...]  # the module scripts served as one bundle each
    chunks: tuple[str, ...] = ()  # the bundles' lazy chunks, fetched when a feature is opened

    def cold_open(self) -> list[str]:
        """The files a phone downloads on its first open of the page: index.html, what it
        loads, and what its service worker keeps (the manifest) besides the worker itself."""
        return sorted(
            {"index.html", "manifest.webmanifest", "sw.js", *self.shell} & set(self.files)
        )

    def weight(self, names: list[str]) -> tuple[int, int]:
        """``names``' bytes as sent raw and as sent compressed."""
        raw = sum(len(self.files[n].body) for n in names)
        packed = sum(len(self.files[n].gzipped or self.files[n].body) for n in names)
        return raw, packed


def _versioned(path: str, version: str) -> str:
    return f"{path}?v={version}"


def _rewrite(name: str, text: str, version: str) -> str:
    """References from one file to the others, given the version."""
    if name.endswith(".html"):
        return _HTML_REF.sub(lambda m: f'{m[1]}="{_versioned(m[2], version)}"', text)
    if name.endswith(".js"):
        text = _JS_IMPORT.sub(lambda m: f'{m[1]}"{_versioned(m[2], version)}"', text)
        return text.replace(VERSION_MARK, version)
    if name.endswith(".webmanifest"):
        return _MANIFEST_REF.sub(lambda m: f'"src": "{_versioned(m[1], version)}"', text)
    return text


def _normalized(base: str, reference: str) -> str:
    parts: list[str] = []
    for part in (base + "/" + reference).split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return "/".join(parts)


def module_graph(files: dict[str, bytes], entry: str, lazy: bool = True) -> list[str]:
    """Every module ``entry`` imports, directly or not, as paths under the web folder; without
    ``lazy``, only what it imports statically (what its first run needs)."""
    seen: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        text = files.get(name, b"").decode("utf-8", "replace")
        for match in _JS_IMPORTED.finditer(text):
            if not lazy and match[1].startswith("import") and "(" in match[1]:
                continue  # import("…"): fetched when the feature is opened
            dep = _normalized(Path(name).parent.as_posix(), match[2])
            if dep in files and dep not in seen:
                seen.append(dep)
                todo.append(dep)
    return sorted(seen)


def _preload(html: str, modules: list[str], version: str) -> str:
    links = "".join(
        f'<link rel="modulepreload" href="{_versioned(m, version)}">\n' for m in modules
    )
    return html.replace("</head>", links + "</head>", 1)


def style_source(css: str) -> str:
    """The CSP source that lets exactly this inline style in: ``'sha256-<base64>'``."""
    return (
        "'sha256-" + base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode() + "'"
    )


def _inline_styles(html: str, raw: dict[str, bytes], sources: set[str]) -> str:
    """Each stylesheet ``html`` links, as a ``<style>`` in its place (its CSP source added to
    ``sources``): the first paint needs no second round trip."""

    def inline(match: re.Match[str]) -> str:
        css = raw.get(match[1], b"").decode("utf-8")
        if not css or "</style" in css.lower():
            return match[0]  # nothing to inline, or it could not be inlined whole: keep the link
        sources.add(style_source(css))
        return f"<style>{css}</style>"

    return _STYLESHEET.sub(inline, html)


def _shell(files: dict[str, bytes], page: str) -> list[str]:
    """The versioned files ``page`` (as served) loads: its scripts, icons, preloads and every
    module they import."""
    html = files[page].decode("utf-8")
    found = [ref for ref in _SERVED_REF.findall(html) if ref not in UNVERSIONED]
    for ref in list(found):
        if ref.endswith(".js"):
            found.extend(module_graph(files, ref, lazy=False))
    return sorted(set(found))


def _sw_shell(text: str, shell: list[str]) -> str:
    return text.replace(SHELL_MARK, ", ".join(f'"/{name}"' for name in shell))


def favicon(png: bytes) -> bytes:
    """An ICO file holding one PNG image (the format browsers and Windows read since 2007)."""
    width, height = struct.unpack(">II", png[16:24])  # the PNG's IHDR
    entry = struct.pack("<BBBBHHII", width % 256, height % 256, 0, 0, 1, 32, len(png), 6 + 16)
    return struct.pack("<HHH", 0, 1, 1) + entry + png


def _bundles(raw: dict[str, bytes]) -> dict[str, bytes]:
    """Each page's module script as one bundle, and the lazy chunks it loads when a rarely
    opened feature is first opened (``chunks/…``); one that cannot be bundled is left out (its
    modules are then served as they are, and preloaded)."""
    texts = {n: b.decode("utf-8") for n, b in raw.items() if n.endswith(".js")}
    out: dict[str, bytes] = {}
    for page in sorted(n for n in raw if n.endswith(".html")):
        for entry in _MODULE_SCRIPT.findall(raw[page].decode("utf-8")):
            if entry in texts and entry not in out:
                try:
                    made = split(texts, entry)
                except BundleError as exc:
                    _log.warning("serving %s as separate modules: %s", entry, exc)
                    continue
                out[entry] = made.main.encode("utf-8")
                out.update((path, text.encode("utf-8")) for path, text in made.chunks.items())
    return out


def load(directory: Path) -> WebFiles:
    """Every servable file of ``directory``, ready to send."""
    raw: dict[str, bytes] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.suffix in TYPES and not path.name.startswith("."):
            raw[path.relative_to(directory).as_posix()] = path.read_bytes()
    if "favicon.ico" not in raw:
        icons = sorted(
            (n for n in raw if n.startswith("icons/icon-") and n.endswith(".png")),
            key=lambda n: len(raw[n]),
        )
        if icons:
            raw["favicon.ico"] = favicon(raw[icons[0]])
    bundles = _bundles(raw)
    sent = {**raw, **bundles}
    digest = hashlib.sha256()
    for name, body in sorted(sent.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
    version = digest.hexdigest()[:12]
    styles: set[str] = set()
    bodies: dict[str, bytes] = {}
    for name, body in sent.items():
        if Path(name).suffix in (".html", ".js", ".webmanifest"):
            text = _rewrite(name, body.decode("utf-8"), version)
            if name.endswith(".html"):
                text = _inline_styles(text, raw, styles)
            body = text.encode("utf-8")
        bodies[name] = body
    for page in ("index.html", "pair.html"):
        if page in bodies:
            html = bodies[page].decode("utf-8")
            for entry in _MODULE_SCRIPT.findall(html):
                if entry not in bundles:
                    html = _preload(html, module_graph(bodies, entry, lazy=False), version)
            bodies[page] = html.encode("utf-8")
    shell = _shell(bodies, "index.html") if "index.html" in bodies else []
    if "sw.js" in bodies:
        bodies["sw.js"] = _sw_shell(bodies["sw.js"].decode("utf-8"), shell).encode("utf-8")
    files = {name: _web_file(name, body) for name, body in bodies.items()}
    chunks = tuple(sorted(n for n in bundles if n.startswith(CHUNK_FOLDER + "/")))
    entries = tuple(sorted(n for n in bundles if n not in chunks))
    return WebFiles(version, files, tuple(sorted(styles)), tuple(shell), entries, chunks)


def _web_file(name: str, body: bytes) -> WebFile:
    suffix = Path(name).suffix
    gzipped = gzip.compress(body, 9, mtime=0) if suffix in COMPRESSIBLE else None
    if gzipped is not None and len(gzipped) >= len(body):
        gzipped = None
    return WebFile(
        body=body,
        gzipped=gzipped,
        media_type=TYPES[suffix],
        etag='"' + hashlib.sha256(body).hexdigest()[:16] + '"',
        cache=REVALIDATE if name in UNVERSIONED else IMMUTABLE,
    )


def with_page_data(html: bytes, data: Any) -> bytes:
    """``html`` with ``data`` in a JSON data block before ``</body>`` (a data block is never
    run: the CSP's script-src does not apply to it, and nothing in it can close it)."""
    text = dumps(data)
    for char, escape in _DATA_ESCAPES.items():
        text = text.replace(char, escape)
    block = f'<script type="application/json" id="{PAGE_DATA_ID}">{text}</script>\n'
    at = html.rfind(b"</body>")
    at = len(html) if at < 0 else at
    return html[:at] + block.encode("utf-8") + html[at:]


class WebApp:
    """An ASGI app serving the page's files from memory (mounted at ``/`` by relay/app.py)."""

    def __init__(self, directory: Path, page_data: PageData | None = None) -> None:
        self.directory = directory
        self.page_data = page_data
        self.served = load(directory)
        self.version = self.served.version
        self.files = self.served.files
        self.inline_styles = self.served.inline_styles

    def weight(self) -> tuple[int, int]:
        """The page's bytes as a phone downloads them on its first open, raw and compressed."""
        return self.served.weight(self.served.cold_open())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        personal = scope["method"] == "GET" and self._name(scope) == "index.html"
        if personal and self.page_data is not None:
            data = await self.page_data(HTTPConnection(scope))
            if data is not None:
                await self._personal(scope, data)(scope, receive, send)
                return
        response = self.respond(scope)
        await response(scope, receive, send)

    @staticmethod
    def _name(scope: Scope) -> str:
        path = str(scope["path"]).lstrip("/")
        return path + "index.html" if path == "" or path.endswith("/") else path

    def _personal(self, scope: Scope, data: Any) -> Response:
        body = with_page_data(self.files["index.html"].body, data)
        out = {"Cache-Control": PERSONAL, "Vary": "Accept-Encoding, Cookie"}
        if "gzip" in Headers(scope=scope).get("accept-encoding", ""):
            body = gzip.compress(body, PERSONAL_GZIP_LEVEL, mtime=0)
            out["Content-Encoding"] = "gzip"
        return Response(body, 200, headers=out, media_type=TYPES[".html"])

    def respond(self, scope: Scope) -> Response:
        if scope["method"] not in ("GET", "HEAD"):
            # Raised, not answered: the app's handler gives it the relay's JSON error body.
            raise HTTPException(405, headers={"Allow": "GET, HEAD"})
        name = self._name(scope)
        file = self.files.get(name)
        if file is None:
            raise HTTPException(404)
        headers = Headers(scope=scope)
        query = scope.get("query_string", b"").decode("latin-1")
        # An old or missing version is still answered, but must not be kept as if it were this one.
        cache = file.cache
        if cache == IMMUTABLE and f"v={self.version}" not in query.split("&"):
            cache = REVALIDATE
        zipped = file.gzipped is not None and "gzip" in headers.get("accept-encoding", "")
        etag = file.etag[:-1] + '-gz"' if zipped else file.etag
        out = {"Cache-Control": cache, "ETag": etag, "Vary": "Accept-Encoding"}
        if etag in [t.strip() for t in headers.get("if-none-match", "").split(",")]:
            return Response(status_code=304, headers=out)
        if zipped:
            out["Content-Encoding"] = "gzip"
        body = file.gzipped if zipped and file.gzipped is not None else file.body
        return Response(body, 200, headers=out, media_type=file.media_type)
