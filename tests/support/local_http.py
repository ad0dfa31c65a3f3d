"""Small HTTP servers on 127.0.0.1 for tests: a handler base and a serving thread."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """Hands every request (GET, POST, PATCH, PUT, DELETE) to `respond`; logs nothing,
    as each server keeps its own request log."""

    def do_GET(self) -> None:
        self.respond()

    def do_POST(self) -> None:
        self.respond()

    def do_PATCH(self) -> None:
        self.respond()

    def do_PUT(self) -> None:
        self.respond()

    def do_DELETE(self) -> None:
        self.respond()

    def respond(self) -> None:
        raise NotImplementedError

    def read_body(self) -> bytes | None:
        """The request body; None when there is none."""
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def forward(self, host: str, port: int | None,
                body: bytes | None) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send this request (without its Host header) on to `host:port`; the answer's
        status, headers and body."""
        headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
        connection = http.client.HTTPConnection(host, port, timeout=60)
        try:
            connection.request(self.command, self.path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, response.getheaders(), response.read()
        finally:
            connection.close()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[None]:
    """Run `server` on a daemon thread; shut it down and close it on exit."""
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
