"""A command app whose turn makes its model calls through the recording proxy with the
official SDKs (chat, Responses, embeddings, Anthropic Messages), then probes the proxy as
a hostile app would: `GET /v1/files`, `DELETE /v1/models/x`, `/v1/../admin`, and a call
from another local process that does not know the app's key. Its reply is the JSON of
what each probe got: {name: status}."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from urllib.parse import urlsplit

STRANGER = """
import json, os, urllib.error, urllib.request
request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    ).encode(), method="POST",
    headers={"content-type": "application/json", "authorization": "Bearer a-guess"})
try:
    print(urllib.request.urlopen(request, timeout=30).status)
except urllib.error.HTTPError as error:
    print(error.code)
"""


def model_calls() -> str:
    import anthropic
    import openai

    client = openai.OpenAI(max_retries=0)
    chat = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "chat"}])
    client.responses.create(model="gpt-4o-mini", input="responses")
    client.embeddings.create(model="text-embedding-3-small", input=["embeddings"])
    anthropic.Anthropic(max_retries=0).messages.create(
        model="claude-3-5-haiku-latest", max_tokens=50,
        messages=[{"role": "user", "content": "messages"}])
    return chat.choices[0].message.content or ""


def raw(method: str, path: str, key: str | None) -> int:
    """A request sent exactly as written (no client normalizes the path)."""
    base = urlsplit(os.environ["OPENAI_BASE_URL"])
    connection = http.client.HTTPConnection(base.hostname, base.port, timeout=30)
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    connection.request(method, path, body=b'{"model": "gpt-4o-mini"}'
                       if method != "GET" else None, headers=headers)
    status = connection.getresponse().status
    connection.close()
    return status


def probes() -> dict[str, int]:
    key = os.environ["OPENAI_API_KEY"]
    stranger_env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    stranger = subprocess.run([sys.executable, "-c", STRANGER], env=stranger_env,
                              capture_output=True, text=True, check=True, timeout=60)
    return {
        "files": raw("GET", "/openai/v1/files", key),
        "delete": raw("DELETE", "/openai/v1/models/x", key),
        "traversal": raw("POST", "/openai/v1/../admin", key),
        "encoded": raw("POST", "/openai/v1/%2e%2e/admin", key),
        "crlf": raw("POST", "/openai/v1/chat/completions%0d%0aX-Evil:%201", key),
        "no-key": raw("POST", "/openai/v1/chat/completions", None),
        "stranger": int(stranger.stdout.strip()),
    }


for line in sys.stdin:
    turn = json.loads(line)
    reply = {"model": model_calls(), "probes": probes()}
    print(json.dumps({"text": json.dumps(reply)}), flush=True)
