"""The page's files, light on the wire: read once at start, gzip-compressed, versioned, cached.

Every file is read when the relay starts. One version (a hash of all of them) is appended as
``?v=<version>`` to every reference between them — the HTML's ``src``/``href``, the scripts'
``import`` specifiers, the service worker's shell list — so a versioned address names exactly one
content: it is sent ``immutable`` for a year, while the entry points (the HTML pages, the service
worker, the manifest, an address without the right version) are ``no-cache`` (revalidated by
ETag). ``index.html`` also gets a ``modulepreload`` link for every module the app imports, so a
slow phone network fetches them side by side instead of one import level at a time. Text files
go gzip-compressed to a browser that accepts it. ``/favicon.ico`` is the app icon in an ICO
wrapper. Only the files found at start are served: no path from a request reaches the disk.
"""

from __future__ import annotations

import gzip
import hashlib
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

IMMUTABLE: Final = "public, max-age=31536000, immutable"
REVALIDATE: Final = "no-cache"
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

_HTML_REF = re.compile(r'\b(src|href)="(?![a-z]+:|/|#)([^"?#]+\.(?:js|css|png|svg|webmanifest))"')
_JS_IMPORT = re.compile(r'(\bfrom\s*|\bimport\s*\(\s*|^import\s+)"(\.{1,2}/[^"?]+\.js)"', re.M)
_MANIFEST_REF = re.compile(r'"src":\s*"(?![a-z]+:|/)([^"?]+)"')


@dataclass(frozen=True)
class WebFile:
    body: bytes
    gzipped: bytes | None
    media_type: str
    etag: str
    cache: str


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


def module_graph(files: dict[str, bytes], entry: str) -> list[str]:
    """Every module ``entry`` imports, directly or not, as paths under the web folder."""
    seen: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        text = files.get(name, b"").decode("utf-8", "replace")
        base = Path(name).parent
        for match in _JS_IMPORT.finditer(text):
            dep = (base / match[2]).as_posix()
            parts: list[str] = []
            for part in dep.split("/"):
                if part == "..":
                    if parts:
                        parts.pop()
                elif part not in (".", ""):
                    parts.append(part)
            dep = "/".join(parts)
            if dep in files and dep not in seen:
                seen.append(dep)
                todo.append(dep)
    return sorted(seen)


def _preload(html: str, modules: list[str], version: str) -> str:
    links = "".join(
        f'<link rel="modulepreload" href="{_versioned(m, version)}">\n' for m in modules
    )
    return html.replace("</head>", links + "</head>", 1)


def favicon(png: bytes) -> bytes:
    """An ICO file holding one PNG image (the format browsers and Windows read since 2007)."""
    width, height = struct.unpack(">II", png[16:24])  # the PNG's IHDR
    entry = struct.pack("<BBBBHHII", width % 256, height % 256, 0, 0, 1, 32, len(png), 6 + 16)
    return struct.pack("<HHH", 0, 1, 1) + entry + png


def load(directory: Path) -> tuple[str, dict[str, WebFile]]:
    """The version and every servable file of ``directory``, ready to send."""
    raw: dict[str, bytes] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file() and path.suffix in TYPES and not path.name.startswith("."):
            raw[path.relative_to(directory).as_posix()] = path.read_bytes()
    digest = hashlib.sha256()
    for name, body in raw.items():
        digest.update(name.encode() + b"\0" + hashlib.sha256(body).digest())
    version = digest.hexdigest()[:12]
    if "favicon.ico" not in raw:
        icons = sorted(
            (n for n in raw if n.startswith("icons/icon-") and n.endswith(".png")),
            key=lambda n: len(raw[n]),
        )
        if icons:
            raw["favicon.ico"] = favicon(raw[icons[0]])
    files: dict[str, WebFile] = {}
    for name, body in raw.items():
        suffix = Path(name).suffix
        if suffix in (".html", ".js", ".webmanifest"):
            text = _rewrite(name, body.decode("utf-8"), version)
            if name == "index.html" and "app.js" in raw:
                text = _preload(text, module_graph(raw, "app.js"), version)
            body = text.encode("utf-8")
        gzipped = gzip.compress(body, 9, mtime=0) if suffix in COMPRESSIBLE else None
        if gzipped is not None and len(gzipped) >= len(body):
            gzipped = None
        files[name] = WebFile(
            body=body,
            gzipped=gzipped,
            media_type=TYPES[suffix],
            etag='"' + hashlib.sha256(body).hexdigest()[:16] + '"',
            cache=REVALIDATE if name in UNVERSIONED else IMMUTABLE,
        )
    return version, files


class WebApp:
    """An ASGI app serving the page's files from memory (mounted at ``/`` by relay/app.py)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.version, self.files = load(directory)

    def weight(self) -> tuple[int, int]:
        """The page's bytes as sent raw and as sent compressed (every file once)."""
        raw = sum(len(f.body) for f in self.files.values())
        packed = sum(len(f.gzipped or f.body) for f in self.files.values())
        return raw, packed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        response = self.respond(scope)
        await response(scope, receive, send)

    def respond(self, scope: Scope) -> Response:
        if scope["method"] not in ("GET", "HEAD"):
            # Raised, not answered: the app's handler gives it the relay's JSON error body.
            raise HTTPException(405, headers={"Allow": "GET, HEAD"})
        path = scope["path"].lstrip("/")
        name = path + "index.html" if path == "" or path.endswith("/") else path
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
