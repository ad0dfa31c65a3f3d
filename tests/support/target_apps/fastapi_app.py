"""A FastAPI chat app served by uvicorn, as app teams write them: an async `openai`
client built at import (base URL and key from the environment), no error handling of
its own, so a failed model call is uvicorn's HTTP 500 (after which uvicorn closes the
connection).

    python fastapi_app.py PORT

Endpoints: GET /health, POST /chat {message} -> {reply}.
"""

from __future__ import annotations

import sys

import uvicorn
from fastapi import FastAPI
from openai import AsyncOpenAI
from pydantic import BaseModel

app = FastAPI()
client = AsyncOpenAI()


class Chat(BaseModel):
    message: str


@app.get("/health")
async def health() -> dict[str, bool]:
    return {"ok": True}


@app.post("/chat")
async def chat(request: Chat) -> dict[str, str]:
    done = await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": request.message}])
    return {"reply": done.choices[0].message.content or ""}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
