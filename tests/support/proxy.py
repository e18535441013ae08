"""A TCP proxy that can freeze: connections stay open but no byte passes either way.

This is what a phone sees when its network goes away without a word (a lift, a tunnel, a
sleeping radio): the socket looks open and nothing comes. ``thaw`` drops the frozen connections
(as a real network does once it notices) and lets new ones through.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class FreezableProxy:
    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port: int = self.listener.getsockname()[1]
        self.frozen = threading.Event()
        self.closed = False
        self.lock = threading.Lock()
        self.open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def freeze(self) -> None:
        self.frozen.set()

    def thaw(self) -> None:
        with self.lock:
            dropped, self.open = self.open, []
        for sock in dropped:
            with contextlib.suppress(OSError):
                sock.close()
        self.frozen.clear()

    def close(self) -> None:
        self.closed = True
        self.thaw()
        self.listener.close()

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                while self.frozen.is_set():
                    time.sleep(0.02)  # hold the bytes: the other side hears nothing
                data = src.recv(65536)
                if not data:
                    break
                while self.frozen.is_set():
                    time.sleep(0.02)
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.close()
