"""The shape of OpenAI's quickstart chat app (openai-quickstart-python), on FastAPI
instead of Flask: a turn is two requests. POST /chat {message} stores the user's
message in a module-level history and answers {"success": true, "id": ...}; GET
/stream?id=... then streams the model's answer as server-sent events, one `data:` line
per chunk of text (not JSON), and stores it in the history. Unlike the quickstart, the
stream must name the id the POST handed out (HTTP 400 otherwise), so a turn passes only
when the second request's template read the first reply. A module-level client, base
URL and key from the environment.

    python quickstart_app.py PORT
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, StreamingResponse
from openai import OpenAI

app = FastAPI()
client = OpenAI()
chat_history = [{"role": "system", "content": "You are a helpful assistant."}]
pending: set[str] = set()


@app.get("/")
def index() -> HTMLResponse:
    return HTMLResponse("<html><body>chat</body></html>")


@app.post("/chat")
async def chat(request: Request) -> dict[str, bool | str]:
    content = (await request.json())["message"]
    chat_history.append({"role": "user", "content": content})
    message_id = uuid.uuid4().hex
    pending.add(message_id)
    return {"success": True, "id": message_id}


@app.get("/stream")
def stream(id: str = "") -> StreamingResponse:
    if id not in pending:
        raise HTTPException(400, f"no message {id!r} to answer: POST /chat first")
    pending.discard(id)

    def generate() -> Iterator[str]:
        assistant_response_content = ""
        with client.chat.completions.create(
                model="gpt-3.5-turbo", messages=chat_history, stream=True) as chunks:  # type: ignore[arg-type]
            for chunk in chunks:
                if chunk.choices and chunk.choices[0].delta and chunk.choices[0].delta.content:
                    assistant_response_content += chunk.choices[0].delta.content
                    yield f"data: {chunk.choices[0].delta.content}\n\n"
                if chunk.choices and chunk.choices[0].finish_reason == "stop":
                    break
        chat_history.append({"role": "assistant", "content": assistant_response_content})

    return StreamingResponse(generate(), media_type="text/event-stream")


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
