"""Prism serving GitHub's official OpenAPI description, for contract tests.

`prism mock --errors` answers a request that violates GitHub's REST contract with
a 4xx (usually 422) instead of a mock response, so a test can assert that every
request our client sent was valid. Mocks return the spec's examples; nothing is
stored between requests.

Prism sits behind a tiny recording proxy on 127.0.0.1, which:
- records every exchange (method, path, status, error body) for assertions;
- rewrites `https://api.github.com` in response bodies to its own URL, as a real
  server's `url` fields name the API base the client uses (PyGithub refuses to
  follow URLs on other hosts, e.g. when editing a comment it just listed);
- drops the `Link` header: the spec's example points at
  `https://api.github.com/resource?page=2`, which a paginating client would follow
  to a path Prism does not know. Pagination is tested against tests/support/github_fake.py.

Prism serves the part of the description the action can use (`CONTRACT_PATHS`: the
authenticated user, the repository, its issues and comments, check runs, statuses,
pull requests and commits, with every schema they reference, exactly as published):
loading all 800 paths took Prism 16 s, a quarter of that for these (issue 21). A
request outside them gets a 404, which `assert_no_violations` reports like any other
violation.

Install the tools with `tools/install-test-tools.sh`. Without them the fixture
skips, unless TURNCHECK_REQUIRE_PRISM=1 (set it in CI) makes it fail instead.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import IO, Any, NoReturn

import pytest

from tests.support.local_http import QuietHandler, serving

REPO_ROOT = Path(__file__).resolve().parents[2]
TOOLS_DIR = REPO_ROOT / ".tools" / "node_modules"
PRISM_BIN = TOOLS_DIR / ".bin" / "prism"
# The non-dereferenced file (13 MB) starts as fast as the dereferenced one (73 MB).
GITHUB_SPEC = TOOLS_DIR / "@octokit" / "openapi" / "generated" / "api.github.com.json"
CONTRACT_PATHS = re.compile(
    r"^/user$|^/repos/\{owner\}/\{repo\}(/(issues|check-runs|statuses|pulls|commits)(/.*)?)?$"
)
"""The paths of GitHub's description Prism serves: all the action calls, and more."""
STARTUP_TIMEOUT_SECONDS = 120.0
EXAMPLE_API_URL = b"https://api.github.com"
# The proxy answers with HTTP/1.0 and closes, so hop-by-hop headers must not pass through.
DROPPED_RESPONSE_HEADERS = frozenset(
    {"link", "transfer-encoding", "connection", "keep-alive", "content-length"}
)


@dataclass(frozen=True)
class Exchange:
    method: str
    path: str
    status: int
    error_body: str  # Prism's explanation, kept for 4xx/5xx only


@dataclass
class PrismGitHub:
    """A running Prism mock of api.github.com; `base_url` is the API URL to use."""

    base_url: str
    log_path: Path
    startup_seconds: float
    exchanges: list[Exchange] = field(default_factory=list)

    def violations(self) -> list[Exchange]:
        return [e for e in self.exchanges if e.status >= 400]

    def assert_no_violations(self) -> None:
        assert self.exchanges, "no request reached Prism"
        bad = self.violations()
        listing = "\n".join(map(str, bad))
        assert not bad, f"Prism rejected requests (details in {self.log_path}):\n{listing}"\
            + ("\n(a 404: is the path outside tests/support/prism.py's CONTRACT_PATHS?)"
               if any(e.status == 404 for e in bad) else "")


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("TURNCHECK_REQUIRE_PRISM") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _check_tools_installed() -> None:
    hint = "run tools/install-test-tools.sh"
    if shutil.which("node") is None:
        _unavailable("Prism needs Node.js, which is not on PATH")
    if not PRISM_BIN.exists():
        _unavailable(f"Prism is not installed at {PRISM_BIN}; {hint}")
    if not GITHUB_SPEC.exists():
        _unavailable(f"GitHub's OpenAPI description is missing at {GITHUB_SPEC}; {hint}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _references(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        reference = node.get("$ref")
        if isinstance(reference, str):
            found.add(reference)
        for value in node.values():
            _references(value, found)
    elif isinstance(node, list):
        for value in node:
            _references(value, found)


def contract_spec(full: dict[str, Any]) -> dict[str, Any]:
    """GitHub's description cut to `CONTRACT_PATHS` and the components they reference
    (transitively), unchanged."""
    paths = {path: item for path, item in full["paths"].items() if CONTRACT_PATHS.match(path)}
    wanted: set[str] = set()
    _references(paths, wanted)
    components: dict[str, dict[str, Any]] = {}
    done: set[str] = set()
    while wanted - done:
        reference = min(wanted - done)
        done.add(reference)
        _, _, kind, name = reference.split("/", 3)  # "#/components/<kind>/<name>"
        component = full["components"][kind][name]
        components.setdefault(kind, {})[name] = component
        _references(component, wanted)
    kept = {key: full[key] for key in ("openapi", "info", "servers") if key in full}
    return kept | {"paths": paths, "components": components}


def _contract_spec_file(cache_dir: Path) -> Path:
    """`contract_spec` of the installed description, written once per version of it."""
    installed = GITHUB_SPEC.stat()
    stamp = f"{installed.st_size}-{installed.st_mtime_ns}-{CONTRACT_PATHS.pattern}"
    path = cache_dir / f"github-{hashlib.sha256(stamp.encode()).hexdigest()[:16]}.json"
    if not path.exists():
        spec = contract_spec(json.loads(GITHUB_SPEC.read_bytes()))
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(spec), encoding="utf-8")
        partial.replace(path)
    return path


def _start_prism(port: int, log: IO[bytes], spec: Path) -> subprocess.Popen[bytes]:
    command = [str(PRISM_BIN), "mock", str(spec)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--errors"]
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT)


def _answers_http(port: int) -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/")
        connection.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        connection.close()


def _wait_until_ready(process: subprocess.Popen[bytes], port: int, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            tail = log_path.read_text(errors="replace")[-2000:]
            pytest.fail(f"Prism exited with {process.returncode}:\n{tail}")
        if _answers_http(port):
            return
        time.sleep(0.25)
    pytest.fail(f"Prism did not answer within {STARTUP_TIMEOUT_SECONDS:.0f} s; see {log_path}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


class _ProxyHandler(QuietHandler):
    server: _RecordingProxy

    def respond(self) -> None:
        status, headers, payload = self.forward("127.0.0.1", self.server.prism_port,
                                                self.read_body())
        payload = payload.replace(EXAMPLE_API_URL, self.server.prism.base_url.encode())
        self._record(status, payload)
        self._reply(status, headers, payload)

    def _record(self, status: int, payload: bytes) -> None:
        error_body = payload.decode(errors="replace")[:4000] if status >= 400 else ""
        self.server.prism.exchanges.append(Exchange(self.command, self.path, status, error_body))

    def _reply(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            if name.lower() not in DROPPED_RESPONSE_HEADERS:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _RecordingProxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, prism: PrismGitHub, prism_port: int) -> None:
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.prism = prism
        self.prism_port = prism_port


@pytest.fixture(scope="session")
def prism_server(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[PrismGitHub]:
    """One Prism process for the session (a few seconds to load the contract's spec)."""
    _check_tools_installed()
    cache = getattr(pytestconfig, "cache", None)  # None with `-p no:cacheprovider`
    spec = _contract_spec_file(cache.mkdir("prism") if cache is not None
                               else tmp_path_factory.mktemp("prism-spec"))
    port = _free_port()
    log_path = tmp_path_factory.mktemp("prism") / "prism.log"
    started = time.monotonic()
    with log_path.open("wb") as log:
        process = _start_prism(port, log, spec)
        try:
            _wait_until_ready(process, port, log_path)
            yield from _serve_through_proxy(port, log_path, time.monotonic() - started)
        finally:
            _stop(process)


def _serve_through_proxy(port: int, log_path: Path, startup: float) -> Iterator[PrismGitHub]:
    prism = PrismGitHub(base_url="", log_path=log_path, startup_seconds=startup)
    proxy = _RecordingProxy(prism, port)
    prism.base_url = f"http://127.0.0.1:{proxy.server_address[1]}"
    with serving(proxy):
        yield prism


@pytest.fixture
def prism(prism_server: PrismGitHub) -> PrismGitHub:
    """The session's Prism mock with an empty exchange log."""
    prism_server.exchanges.clear()
    return prism_server
