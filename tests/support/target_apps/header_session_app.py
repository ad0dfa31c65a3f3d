"""An app whose sessions travel in a header, as many chat backends do: a request without
`X-Session-Id` opens a session, whose id comes back in the reply's `X-Session-Id`; the
client sends it back on later turns in the same header. No model calls.

    python header_session_app.py PORT

Endpoints: GET /health, POST /chat {message} -> {reply: "turn N of session S"}.
"""

from __future__ import annotations

import json
import sys
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TURNS: dict[str, int] = {}


class Chat(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_json(200, {"ok": True}, None)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        session = self.headers.get("X-Session-Id") or uuid.uuid4().hex[:8]
        TURNS[session] = TURNS.get(session, 0) + 1
        self.send_json(200, {"reply": f"turn {TURNS[session]} of session {session}"}, session)

    def send_json(self, status: int, value: object, session: str | None) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if session is not None:
            self.send_header("X-Session-Id", session)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Chat).serve_forever()
