"""The real `turncheck action` against Prism serving GitHub's OpenAPI description.

Every request the action sends (comment listing and creation, check-run creation and
annotation PATCHes, commit statuses, the pull-request files API) must satisfy GitHub's
published REST contract: Prism (`--errors`) answers a violating request with a 4xx,
which `prism.assert_no_violations()` reports. Prism returns the spec's examples and
stores nothing, so these tests check the contract only; behaviour over several
requests is covered against tests/support/github_fake.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.action_harness import PR, REPOSITORY, run_pull_request, suite_text
from tests.support.git_repo import GitRepo
from tests.support.local_http import QuietHandler, serving
from tests.support.pr_fixtures import (
    FAILING_EVALS,
    REWORDED_TURN_EVALS,
    TURN_EVALS,
    feature_branch_repo,
)
from tests.support.prism import Exchange, PrismGitHub
from tests.support.scripted_server import ScriptedServer

pytestmark = pytest.mark.prism


def pr_repo(root: Path, model: ScriptedServer, head_text: str | None = None) -> tuple[GitRepo,
                                                                                       str, str]:
    """A repository whose feature branch changes one suite (recorded cassettes)."""
    base_text = suite_text(model.base_url, TURN_EVALS + FAILING_EVALS)
    if head_text is not None:
        return feature_branch_repo(root, base_text, head_text, record_head=False)
    return feature_branch_repo(root, base_text,
                               suite_text(model.base_url, REWORDED_TURN_EVALS + FAILING_EVALS))


def calls(exchanges: list[Exchange]) -> list[tuple[str, str]]:
    """(method, path without the query) of each request, with the repository abstracted."""
    return [(e.method, urlsplit(e.path).path.replace(f"/repos/{REPOSITORY}", "/repos/R"))
            for e in exchanges]


def test_pull_request_run_speaks_githubs_contract(
    tmp_path: Path, model: ScriptedServer, prism: PrismGitHub
) -> None:
    repo, base, head = pr_repo(tmp_path / "workspace", model)
    run = run_pull_request(repo, tmp_path / "runner", prism.base_url, base, head,
                           {"fail-on": "failure,regression"})

    log = run.stdout + run.stderr
    assert "Traceback" not in log
    assert "PR comment created" in run.stdout, log
    assert "check run: " in run.stdout, log
    prism.assert_no_violations()
    made = calls(prism.exchanges)
    assert ("POST", f"/repos/R/issues/{PR}/comments") in made
    assert ("GET", f"/repos/R/issues/{PR}/comments") in made
    assert ("POST", "/repos/R/check-runs") in made
    # The eval that fails (Lyon is not Paris) and the turn regression fail the job.
    assert run.returncode == 1
    assert run.outputs["failed"] == "1"
    assert run.outputs["comment-url"].startswith("https://github.com/")


def test_more_than_fifty_annotations_are_appended_by_valid_patches(
    tmp_path: Path, model: ScriptedServer, prism: PrismGitHub
) -> None:
    broken = "".join(f"  - prompt: q{i}\n    checks: [{{mtch: x}}]\n" for i in range(120))
    repo, base, head = pr_repo(tmp_path / "workspace", model,
                               head_text=suite_text(model.base_url, broken))
    run = run_pull_request(repo, tmp_path / "runner", prism.base_url, base, head,
                           {"fail-on": "invalid"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert "check run: " in run.stdout
    prism.assert_no_violations()
    check_runs = [(m, p) for m, p in calls(prism.exchanges) if "/check-runs" in p]
    # 120 annotations: 50 with the creation, then two PATCHes of 50 and 20.
    assert [m for m, _ in check_runs] == ["POST", "PATCH", "PATCH"]


class _DenyChecksGate(ThreadingHTTPServer):
    """Sits in front of Prism and answers check-run writes like a token without
    `checks: write` does; every other request goes on to Prism to be validated."""

    daemon_threads = True

    def __init__(self, upstream: str) -> None:
        super().__init__(("127.0.0.1", 0), _GateHandler)
        self.upstream = urlsplit(upstream)
        self.denied: list[str] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _GateHandler(QuietHandler):
    server: _DenyChecksGate

    def respond(self) -> None:
        body = self.read_body()
        if self.command != "GET" and "/check-runs" in self.path:
            self.server.denied.append(f"{self.command} {self.path}")
            self._reply(403, {}, json.dumps({
                "message": "Resource not accessible by integration",
                "documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run",
            }).encode())
            return
        upstream = self.server.upstream
        status, headers, payload = self.forward(upstream.hostname or "127.0.0.1", upstream.port,
                                                body)
        passed = {k: v for k, v in headers
                  if k.lower() not in ("content-length", "connection", "transfer-encoding")}
        self._reply(status, passed, payload)

    def _reply(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        headers.setdefault("Content-Type", "application/json; charset=utf-8")
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def checks_denied(prism: PrismGitHub) -> Iterator[_DenyChecksGate]:
    gate = _DenyChecksGate(prism.base_url)
    with serving(gate):
        yield gate


def test_commit_status_fallback_is_a_valid_request(
    tmp_path: Path, model: ScriptedServer, prism: PrismGitHub, checks_denied: _DenyChecksGate
) -> None:
    repo, base, head = pr_repo(tmp_path / "workspace", model)
    run = run_pull_request(repo, tmp_path / "runner", checks_denied.base_url, base, head,
                           {"fail-on": "failure"})

    assert run.returncode == 1, run.stdout + run.stderr
    assert checks_denied.denied, "the action never tried to create a check run"
    assert "setting a commit status instead" in run.stdout
    assert "PR comment created" in run.stdout
    prism.assert_no_violations()
    assert ("POST", f"/repos/R/statuses/{head}") in calls(prism.exchanges)
    assert "cannot write here" not in run.stdout  # the status was accepted


def test_pull_request_files_api_request_is_valid(
    tmp_path: Path, model: ScriptedServer, prism: PrismGitHub
) -> None:
    origin, base, head = pr_repo(tmp_path / "origin", model)
    shallow = origin.clone(tmp_path / "workspace", branch="feature", depth=1)
    shallow.git("remote", "set-url", "origin", str(tmp_path / "unreachable"))
    run = run_pull_request(shallow, tmp_path / "runner", prism.base_url, base, head)

    assert "fetch-depth: 0" in run.stdout, run.stdout + run.stderr
    assert "check run: " in run.stdout
    prism.assert_no_violations()
    assert ("GET", f"/repos/R/pulls/{PR}/files") in calls(prism.exchanges)
    # The spec's example PR touches `file1.txt` only: no suite changed, so no comment.
    assert "PR comment" not in run.stdout
    assert run.returncode == 0, run.stdout + run.stderr
