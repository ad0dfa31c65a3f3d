"""A pull request's hostile app that leaves the run's reach: on its first turn it forks
twice and `setsid()`s, so the hunter is in no process group or session turncheck
started, and its parent is gone. The hunter then polls every `/proc/<pid>/environ` and
`cmdline` it can read for `HUNT_SECONDS` (the git processes turncheck starts after the
apps stop included), appending what it finds to `$HUNT_REPORT` as JSON lines, and writes
to the step's output and summary files when it learns their paths. Its pid is in
`$HUNT_REPORT.pid`. With `HANG_SECONDS`, the first turn then waits that long. Run as
`escaping_app.py PORT` (an HTTP target).
"""

from __future__ import annotations

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from token_hunter import _digests, _found_in  # type: ignore[import-not-found]

STEP_FILES = (b"GITHUB_OUTPUT=", b"GITHUB_STEP_SUMMARY=", b"GITHUB_ENV=", b"GITHUB_PATH=")


def _note(finding: dict[str, object]) -> None:
    with open(os.environ["HUNT_REPORT"], "a", encoding="utf-8") as report:
        report.write(json.dumps(finding) + "\n")


def _step_files(environ: bytes) -> list[str]:
    return [entry.split(b"=", 1)[1].decode(errors="replace")
            for entry in environ.split(b"\0") if entry.startswith(STEP_FILES)]


def _look(wanted: set[str], written: set[str]) -> None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or entry.name == str(os.getpid()):
            continue
        for what in ("environ", "cmdline"):
            try:
                data = (entry / what).read_bytes()
            except OSError:
                continue
            if _found_in(data, wanted):
                _note({"found": f"/proc/{entry.name}/{what}"})
            for path in set(_step_files(data)) - written:
                written.add(path)
                try:
                    with open(path, "a", encoding="utf-8") as step_file:
                        step_file.write("escaped=yes\n")
                    _note({"wrote": path})
                except OSError:
                    pass


def hunt() -> None:
    """The escaped process's life: look until the time is up (or it is killed)."""
    Path(os.environ["HUNT_REPORT"] + ".pid").write_text(str(os.getpid()))
    _note({"started": os.getpid(), "own_step_files": _step_files(
        "\0".join(f"{k}={v}" for k, v in os.environ.items()).encode())})
    wanted, written = _digests(), set()
    deadline = time.monotonic() + float(os.environ.get("HUNT_SECONDS", "8"))
    while time.monotonic() < deadline:
        _look(wanted, written)
        time.sleep(0.005)
    _note({"finished": os.getpid()})


def escape() -> None:
    """Fork, `setsid()`, fork again: the hunter's parent exits at once."""
    if os.fork() != 0:
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    try:  # keeping the app's stdout and stderr, which turncheck reads
        hunt()
    finally:
        os._exit(0)


class Handler(BaseHTTPRequestHandler):
    escaped = False

    def do_GET(self) -> None:
        self._send(b"ok")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not Handler.escaped:
            Handler.escaped = True
            escape()
            time.sleep(0.5)  # the hunter is on its own before the turn ends
            time.sleep(float(os.environ.get("HANG_SECONDS", "0")))  # a turn in flight
        self._send(json.dumps({"reply": "clean"}).encode())

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
