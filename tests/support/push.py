"""A browser's push keys and a push service on loopback that records what the relay sends."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from relay.features import push


@dataclass
class BrowserKeys:
    """A push subscription's keys, made like a browser makes them."""

    private: ec.EllipticCurvePrivateKey
    auth: bytes

    @classmethod
    def new(cls) -> BrowserKeys:
        return cls(ec.generate_private_key(ec.SECP256R1()), os.urandom(16))

    def json(self) -> dict[str, str]:
        public = self.private.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {"p256dh": push.b64u(public), "auth": push.b64u(self.auth)}


# The tests' push service is plain http on loopback: allowed only because a relay names it in
# push_allowed_hosts (a relay refuses such endpoints otherwise, see tests/relay/test_api_hardening.py).
LOCAL_PUSH_HOST = "127.0.0.1"


class PushService:
    """A push service on 127.0.0.1 that records every request and answers ``status``."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.status = 201
        received = self.requests
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                received.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(service.status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def wait(self, count: int, timeout: float = 10.0) -> list[tuple[str, dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.requests) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"the relay sent {len(self.requests)} pushes, not {count}")
            time.sleep(0.02)
        return self.requests

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
