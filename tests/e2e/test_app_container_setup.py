"""Issue 34, item 5 (a): the action's container runs the app with `setup` installing the
app's dependencies into it. No Docker engine here: `turncheck action` runs as the image's
entrypoint does (the program itself, no shell), and `setup` installs a wheel the app
imports before `start` (the image's pip; here into the app's folder, not the test's
environment)."""

from __future__ import annotations

import base64
import hashlib
import io
import sys
import zipfile
from pathlib import Path

from tests.support.action_harness import run_pull_request
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub

WHEEL = "greeting-1.0-py3-none-any.whl"
APP = """\
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
sys.path.insert(0, "deps")
from greeting import hello  # installed by the suite's `setup`

class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.reply(b"ok")
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.reply(json.dumps({"reply": hello(body["message"])}).encode())
    def reply(self, data):
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""
SUITE = f"""\
metadata:
  name: greeter
  target:
    setup: {sys.executable} -m pip install --no-index --quiet --target deps {WHEEL}
    start: {sys.executable} app.py {{port}}
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}
evals:
  - name: greets
    prompt: Ada
    checks:
      - match: "Hello, Ada!"
"""


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel() -> bytes:
    files = {
        "greeting.py": b"def hello(name):\n    return f'Hello, {name}!'\n",
        "greeting-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: greeting\n"
                                           b"Version: 1.0\n",
        "greeting-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\n"
                                        b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},sha256={_digest(data)},{len(data)}\n"
                     for name, data in files.items()) + "greeting-1.0.dist-info/RECORD,,\n"
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as handle:
        for name, data in {**files, "greeting-1.0.dist-info/RECORD": record.encode()}.items():
            handle.writestr(name, data)
    return archive.getvalue()


def test_the_container_s_setup_installs_the_app_s_dependencies_before_it_starts(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    repo = GitRepo(tmp_path / "workspace")
    repo.write("README.md", "greeter")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    repo.write("bot/app.py", APP)
    repo.write(f"bot/{WHEEL}", wheel())
    repo.write("bot/greeter.eval.yaml", SUITE)
    head = repo.commit("the greeter app")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "invalid,error,failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report is not None
    [suite] = run.report["head"]["suites"]
    [result] = suite["evals"]
    assert result["status"] == "pass"
