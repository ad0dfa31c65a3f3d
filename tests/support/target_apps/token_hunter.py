"""A pull request's hostile app: it looks for the job's credentials everywhere it can.

It reads its environment, every file under the repository it runs in (`.git/config`
included), `$HOME` and `$TMPDIR`, and, for every process it can see, `/proc/<pid>/environ`
and `cmdline`, and its ancestors' memory (`/proc/<pid>/mem` through `maps`). Planted
credentials contain a marker; a candidate counts only when its sha256 is one of
`HUNT_DIGESTS` (so this file holds no credential and no marker in one piece). The
findings go to `$HUNT_REPORT` as JSON. Run as `token_hunter.py serve PORT` (an HTTP
target) or import `hunt` (a python target).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MARKER = ("PLANTED" + "-" + "SECRET").encode()
CANDIDATE = re.compile(re.escape(MARKER) + rb"-[0-9a-f]{32}")
MAX_FILES = 20_000
MAX_FILE_BYTES = 2_000_000
MAX_REGION_BYTES = 64_000_000


def _digests() -> set[str]:
    return set(os.environ.get("HUNT_DIGESTS", "").split(","))


def _found_in(data: bytes, wanted: set[str]) -> bool:
    return any(hashlib.sha256(m[0][-32:]).hexdigest() in wanted
               for m in CANDIDATE.finditer(data))


def _repository_root() -> Path:
    here = Path.cwd().resolve()
    return next((p for p in (here, *here.parents) if (p / ".git").exists()), here)


def _files(roots: list[Path]) -> list[Path]:
    seen: list[Path] = []
    for root in roots:
        for folder, _, names in os.walk(root):
            seen.extend(Path(folder) / name for name in names)
            if len(seen) > MAX_FILES:
                return seen
    return seen


def _read(path: Path) -> bytes | None:
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_FILE_BYTES)
    except OSError:
        return None


def _ancestors() -> list[int]:
    chain, pid = [], os.getppid()
    while pid > 1 and len(chain) < 32:
        chain.append(pid)
        status = _read(Path(f"/proc/{pid}/status")) or b""
        ppid = [line.split()[1] for line in status.splitlines() if line.startswith(b"PPid:")]
        pid = int(ppid[0]) if ppid else 0
    return chain


def _memory(pid: int) -> bytes | None:
    """The process's writable memory, as far as this process may read it."""
    maps = _read(Path(f"/proc/{pid}/maps"))
    if maps is None:
        return None
    chunks = []
    try:
        with open(f"/proc/{pid}/mem", "rb") as memory:
            for line in maps.decode().splitlines():
                span, perms = line.split()[:2]
                start, end = (int(x, 16) for x in span.split("-"))
                if "r" in perms and "w" in perms and end - start <= MAX_REGION_BYTES:
                    try:
                        memory.seek(start)
                        chunks.append(memory.read(end - start))
                    except (OSError, ValueError, OverflowError):
                        continue
    except OSError:
        return None
    return b"".join(chunks)


def hunt() -> dict[str, object]:
    wanted = _digests()
    found: list[str] = []
    read: list[str] = []
    if _found_in("\n".join(f"{k}={v}" for k, v in os.environ.items()).encode(), wanted):
        found.append("os.environ")
    roots = [_repository_root(), *(Path(os.environ[v]) for v in ("HOME", "TMPDIR")
                                   if os.environ.get(v))]
    proc = [Path(f"/proc/{p.name}/{what}") for p in Path("/proc").iterdir()
            if p.name.isdigit() for what in ("environ", "cmdline")]
    for path in [*_files(roots), Path("/proc/self/environ"), *proc]:
        data = _read(path)
        if data is None:
            continue
        read.append(str(path))
        if _found_in(data, wanted):
            found.append(str(path))
    ancestors = _ancestors()
    for pid in ancestors:
        memory = _memory(pid)
        if memory is not None:
            read.append(f"/proc/{pid}/mem")
            if _found_in(memory, wanted):
                found.append(f"/proc/{pid}/mem")
    report = {"found": found, "read": read, "ancestors": ancestors}
    Path(os.environ["HUNT_REPORT"]).write_text(json.dumps(report), encoding="utf-8")
    return report


def answer(last_message: str) -> str:
    report = hunt()
    return "found: " + ", ".join(map(str, report["found"])) if report["found"] else "clean"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._send(b"ok")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(json.dumps({"reply": answer("")}).encode())

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
