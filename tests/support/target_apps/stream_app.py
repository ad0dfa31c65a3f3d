"""An app that streams its replies (aiohttp), for the http target's stream tests.

    python stream_app.py PORT      (APP_FORMAT: sse | ndjson | chunked)

POST /chat {message, session_id}: a visitor without a session gets "Hello, new visitor"
and a session id in the `X-Session-Id` header; one who sends it back gets
"Welcome back <id>". The reply is streamed in pieces, the first after a short pause.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from aiohttp import web

PIECES_PAUSE_S = 0.02


async def chat(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    session = body.get("session_id") or ""
    text = f"Welcome back {session}" if session else "Hello, new visitor"
    kind = os.environ.get("APP_FORMAT", "sse")
    content_type = {"sse": "text/event-stream", "ndjson": "application/x-ndjson"}.get(
        kind, "text/plain")
    response = web.StreamResponse(headers={"content-type": content_type,
                                           "x-session-id": session or "s-1"})
    await response.prepare(request)
    for piece in [text[:5], text[5:]]:
        await asyncio.sleep(PIECES_PAUSE_S)
        if kind == "sse":
            data = f"data: {json.dumps({'delta': piece})}\n\n"
        elif kind == "ndjson":
            data = json.dumps({"delta": piece}) + "\n"
        else:
            data = piece
        await response.write(data.encode())
    if kind == "sse":
        await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


async def health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def main() -> None:
    app = web.Application()
    app.router.add_post("/chat", chat)
    app.router.add_get("/health", health)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None)


if __name__ == "__main__":
    main()
