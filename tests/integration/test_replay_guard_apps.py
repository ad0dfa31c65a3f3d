"""Issue 44: in replay nothing an http or command app does leaves the machine, when the
app is Python. turncheck starts the app with a `sitecustomize` that refuses connections
to other hosts before any name lookup; the eval errors naming the host even when the app
swallows the refusal, and the app's own `sitecustomize` still runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

APP = '''\
import builtins, json, sys, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self._send(b"ok")

    def do_POST(self):
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["message"]
        if message.startswith("fetch "):
            try:  # the app swallows the failure and answers anyway
                urllib.request.urlopen(message.removeprefix("fetch "), timeout=5).read()
                answer = "fetched"
            except Exception as exc:
                answer = f"no weather today ({type(exc).__name__})"
        else:
            answer = f"Hello ({getattr(builtins, 'APP_SITE', 'no app sitecustomize')})"
        self._send(json.dumps({"reply": answer}).encode())

    def _send(self, body):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
'''
APP_SITECUSTOMIZE = "import builtins\nbuiltins.APP_SITE = 'app sitecustomize ran'\n"
SUITE = """\
metadata:
  name: weather
  target:
    start: {python} app.py {{port}}
    ready: /health
    http:
      path: /chat
      body: {{message: "{{{{ last_message }}}}"}}
      reply: reply
    env: {{PYTHONPATH: site}}
evals:
  - name: greets
    prompt: hi
    checks:
      - match: "*app sitecustomize ran*"
  - name: unroutable address
    prompt: fetch http://10.255.255.1/today
    checks:
      - match: "*weather*"
  - name: unresolvable name
    prompt: fetch https://weather.turncheck-test.invalid/today
    checks:
      - match: "*weather*"
"""


def run_suite(tmp_path: Path, mode: str) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "evals"
    (folder / "site").mkdir(parents=True)
    (folder / "app.py").write_text(APP)
    (folder / "site" / "sitecustomize.py").write_text(APP_SITECUSTOMIZE)
    (folder / "weather.eval.yaml").write_text(SUITE.format(python=sys.executable))
    env = {name: value for name, value in os.environ.items()
           if not name.endswith(("_API_KEY", "_BASE_URL"))}
    return subprocess.run([sys.executable, "-m", "turncheck", mode, str(folder)],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_an_http_app_calling_other_hosts_in_replay_errors_naming_each_host(
        tmp_path: Path) -> None:
    ran = run_suite(tmp_path, "run")
    out = ran.stdout + ran.stderr
    assert "pass  weather › greets" in out, out  # the app's own sitecustomize ran too
    # Turns run at once: each names every host the app tried while it was open.
    refusals = [line for line in out.splitlines() if "the app tried to reach " in line and
                "directly: in replay nothing leaves the machine" in line]
    for host in ("10.255.255.1:80", "weather.turncheck-test.invalid:443"):
        assert any(host in line for line in refusals), out
    assert "error weather › unroutable address" in out
    assert "error weather › unresolvable name" in out
    assert "timed out" not in out and "Name or service not known" not in out
    assert not list((tmp_path / "evals").glob("*.cassette.yaml"))


COMMAND_APP = '''\
import json, socket, sys
for line in sys.stdin:
    try:
        socket.create_connection(("10.255.255.1", 443), timeout=5)
        answer = "connected"
    except OSError as exc:
        answer = f"offline ({type(exc).__name__})"
    print(json.dumps(answer), flush=True)
'''


def test_a_command_app_connecting_elsewhere_in_replay_errors_naming_the_host(
        tmp_path: Path) -> None:
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "app.py").write_text(COMMAND_APP)
    (folder / "cli.eval.yaml").write_text(f"""\
metadata:
  name: cli
  target:
    command: [{sys.executable}, app.py]
evals:
  - name: asks
    prompt: hi
    checks:
      - match: "*"
""")
    ran = subprocess.run([sys.executable, "-m", "turncheck", "run", str(folder)],
                         cwd=tmp_path, env=dict(os.environ), capture_output=True, text=True,
                         timeout=120, check=False)
    out = ran.stdout + ran.stderr
    assert "error cli › asks" in out, out
    assert "the app tried to reach 10.255.255.1:443 directly" in out
