"""Issue 44: in replay nothing an app does leaves the machine, whatever its language. A
shell app calling curl and a Node app calling `fetch` each try a real host and this
machine's own non-loopback address (a listener there would see any connection that
left): each such eval errors naming the host, the listener sees nothing, the run's
output names each host once, and the eval that stays on the machine still passes."""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

CURL_APP = r"""
while read -r line; do
  url=$(printf '%s' "$line" | sed -n 's/.*"last_message": "\([^"]*\)".*/\1/p')
  case "$url" in
    http*) curl -sS --max-time 5 "$url" > answer.txt 2>&1; echo '"fetched"' ;;
    *) echo '"Hello from the shell"' ;;
  esac
done
"""

NODE_APP = """\
const http = require('http');
http.createServer((request, response) => {
  let body = '';
  request.on('data', chunk => { body += chunk; });
  request.on('end', async () => {
    const message = body ? JSON.parse(body).message : '';
    let reply = 'Hello from Node';
    if (message.startsWith('http')) {
      try {  // the app swallows the failure and answers anyway
        reply = `fetched ${(await fetch(message)).status}`;
      } catch (error) {
        reply = `no weather today (${error.cause ? error.cause.message : error.message})`;
      }
    }
    response.writeHead(200, {'Content-Type': 'application/json'});
    response.end(JSON.stringify({reply}));
  });
}).listen(Number(process.argv[2]), '127.0.0.1');
"""


def evals(trap: str) -> str:
    return f"""\
evals:
  - name: greets
    prompt: hi
    checks:
      - match: "*Hello from*"
  - name: a real host
    prompt: https://api.github.com/zen
    checks:
      - match: "*"
  - name: the same host again
    prompt: https://api.github.com/octocat
    checks:
      - match: "*"
  - name: this machine's other address
    prompt: http://{trap}/today
    checks:
      - match: "*"
"""


def this_machine_address() -> str | None:
    """An address of this machine that is not loopback (a UDP connect sends nothing)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if ipaddress.ip_address(address).is_loopback else address


@pytest.fixture
def trap() -> Iterator[tuple[str, socket.socket]]:
    """A listener on this machine's non-loopback address: whatever reaches it left the
    loopback guard's reach."""
    address = this_machine_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    listener = socket.create_server((address, 0))
    listener.setblocking(False)
    try:
        yield f"{address}:{listener.getsockname()[1]}", listener
    finally:
        listener.close()


def connections_to(listener: socket.socket) -> int:
    count = 0
    while True:
        try:
            accepted, _ = listener.accept()
        except BlockingIOError:
            return count
        accepted.close()
        count += 1


def write_app(tmp_path: Path, name: str, source: str, suite: str) -> Path:
    """The app's folder: the app as `name`, its suite beside it."""
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / name).write_text(source)
    (folder / "app.eval.yaml").write_text(suite)
    return folder


def run_replay(folder: Path) -> str:
    env = {name: value for name, value in os.environ.items()
           if not name.endswith(("_API_KEY", "_BASE_URL"))}
    ran = subprocess.run([sys.executable, "-m", "turncheck", "run", str(folder)],
                         cwd=folder.parent, env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    return ran.stdout + ran.stderr


def assert_stayed_on_the_machine(out: str, suite: str, where: str) -> None:
    assert f"pass  {suite} › greets" in out, out
    for name in ("a real host", "the same host again", "this machine's other address"):
        assert f"error {suite} › {name}" in out, out
    for host in ("api.github.com:443", where):
        # Turns run at once: an error names every host refused while its turn was open.
        assert re.search(rf"the app tried to reach [^\n]*{re.escape(host)}[^\n]* directly: "
                         "in replay nothing leaves the machine", out), out
        assert out.count(f"turncheck replay: the app tried to reach {host}: refused") == 1
    assert f"Eval 3: the same host again\n  Overall: 💥 ERROR: the same as {suite} › a real " \
        "host" in out, out


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_a_shell_app_calling_curl_in_replay_reaches_no_other_host(
        tmp_path: Path, trap: tuple[str, socket.socket]) -> None:
    where, listener = trap
    folder = write_app(tmp_path, "app.sh", CURL_APP,
                       "metadata:\n  name: shell\n  target:\n    command: sh app.sh\n" +
                       evals(where))
    out = run_replay(folder)
    assert_stayed_on_the_machine(out, "shell", where)
    assert connections_to(listener) == 0
    # curl itself was told why, in the body of the refusal it got (plain HTTP)
    assert f"connection to {where} refused: nothing leaves the machine in replay" in \
        (folder / "answer.txt").read_text()


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_node_app_calling_fetch_in_replay_reaches_no_other_host(
        tmp_path: Path, trap: tuple[str, socket.socket]) -> None:
    where, listener = trap
    folder = write_app(tmp_path, "app.js", NODE_APP, """\
metadata:
  name: node
  target:
    start: node app.js {port}
    ready: /health
    http:
      path: /chat
      body: {message: "{{ last_message }}"}
      reply: reply
""" + evals(where))
    out = run_replay(folder)
    assert_stayed_on_the_machine(out, "node", where)
    assert connections_to(listener) == 0
    assert "ENOTFOUND" not in out  # refused before any name lookup
