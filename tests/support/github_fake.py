"""A small stateful fake of the GitHub REST endpoints turncheck calls.

It runs a stdlib HTTP server on 127.0.0.1 (random port), keeps comments, check runs
and statuses in memory, logs every request, and enforces the documented limits
(≤ 50 annotations per request, comment body ≤ 65,536 characters, …) with 422s.
GitHub does not say which unit its "characters" are; the fake counts UTF-8 bytes, the
strictest reading, so whatever passes here passes whichever unit GitHub counts.

Use the `github_fake` fixture; point a client at `github_fake.base_url`.
"""

from __future__ import annotations

import json
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from tests.support.local_http import QuietHandler, serving

FORBIDDEN_MESSAGE = "Resource not accessible by integration"
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
MAX_COMMENT_CHARS = 65_536
MAX_CHECK_OUTPUT_CHARS = 65_535
MAX_ANNOTATIONS = 50
MAX_STATUS_DESCRIPTION = 140
ANNOTATION_LEVELS = frozenset({"notice", "warning", "failure"})
STATUS_STATES = frozenset({"error", "failure", "pending", "success"})
TIMESTAMP = "2026-01-01T00:00:00Z"

Json = Any
Response = tuple[int, Json, dict[str, str]]


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, str]
    body: Json


@dataclass
class Comment:
    id: int
    issue: int
    body: str
    login: str


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    output: dict[str, Any] = field(default_factory=dict)
    external_id: str | None = None
    details_url: str | None = None
    annotations: list[dict[str, Any]] = field(default_factory=list)


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class FakeGitHub:
    """State and behaviour switches of the fake; the HTTP layer calls `handle`."""

    def __init__(self, owner: str = "octo-org", repo: str = "widgets") -> None:
        self.owner = owner
        self.repo = repo
        self.base_url = ""  # set once the server is listening
        self.token_login = "turncheck-bot"
        self.user_endpoint_forbidden = False  # GITHUB_TOKEN cannot read GET /user
        self.writes_forbidden = False  # fork pull request: read-only token
        self.pull_head_shas: dict[int, str] = {}
        self.pull_head_repos: dict[int, str] = {}  # PR → head repository (default: this one)
        self.pull_head_refs: dict[int, str] = {}  # PR → head branch (default: feature)
        self.trees: dict[str, list[str]] = {}  # commit → its file paths (else 404)
        self.artifacts: dict[int, list[tuple[str, bytes]]] = {}  # run id → (name, zip bytes)
        # run id → {"head_sha", "head_branch", "created_at", "event", "head_repository"}:
        # the run behind each artifact (defaults: a push run of main in this repository)
        self.artifact_runs: dict[int, dict[str, str]] = {}
        self.checks_forbidden = False  # token without `checks: write`
        self.requests: list[LoggedRequest] = []
        self.comments: list[Comment] = []
        self.check_runs: dict[int, CheckRun] = {}
        self.statuses: list[dict[str, Any]] = []
        self.pr_files: dict[int, list[dict[str, Any]]] = {}
        self._forced_errors: list[tuple[str, re.Pattern[str], int, str]] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        self._routes = self._build_routes()

    # ---- test helpers ---------------------------------------------------------

    def simulate_github_token(self) -> None:
        """Behave like Actions' GITHUB_TOKEN: /user is 403, comments by the bot."""
        self.user_endpoint_forbidden = True
        self.token_login = "github-actions[bot]"

    def add_comment(self, issue: int, body: str, login: str) -> Comment:
        with self._lock:
            comment = Comment(self._new_id(), issue, body, login)
            self.comments.append(comment)
            return comment

    def add_pr_file(
        self, pr: int, filename: str, status: str = "modified", previous: str | None = None
    ) -> None:
        entry: dict[str, Any] = {"filename": filename, "status": status}
        if previous is not None:
            entry["previous_filename"] = previous
        self.pr_files.setdefault(pr, []).append(entry)

    def force_error(self, method: str, path_regex: str, status: int, message: str) -> None:
        """Answer matching requests with this error instead of handling them."""
        self._forced_errors.append((method, re.compile(path_regex), status, message))

    def comments_on(self, issue: int) -> list[Comment]:
        return [c for c in self.comments if c.issue == issue]

    def requests_matching(self, method: str, path_regex: str) -> list[LoggedRequest]:
        pattern = re.compile(path_regex)
        return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    # ---- request handling -----------------------------------------------------

    def handle(self, method: str, url: str, body: Json) -> Response:
        parts = urlsplit(url)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with self._lock:
            self.requests.append(LoggedRequest(method, parts.path, query, body))
            try:
                return self._dispatch(method, parts.path, query, body)
            except ApiError as error:
                return _error(error.status, error.message)

    def _dispatch(self, method: str, path: str, query: dict[str, str], body: Json) -> Response:
        self._check_forced_errors(method, path)
        self._check_permissions(method, path)
        for route_method, pattern, handler in self._routes:
            match = pattern.fullmatch(path)
            if route_method == method and match:
                return handler(query, body, *match.groups())
        raise ApiError(404, "Not Found")

    def _check_forced_errors(self, method: str, path: str) -> None:
        for forced_method, pattern, status, message in self._forced_errors:
            if forced_method == method and pattern.search(path):
                raise ApiError(status, message)

    def _check_permissions(self, method: str, path: str) -> None:
        if method not in WRITE_METHODS:
            return
        if self.writes_forbidden or (self.checks_forbidden and "/check-runs" in path):
            raise ApiError(403, FORBIDDEN_MESSAGE)

    def _build_routes(self) -> list[tuple[str, re.Pattern[str], Callable[..., Response]]]:
        repo = rf"/repos/{re.escape(self.owner)}/{re.escape(self.repo)}"
        table: list[tuple[str, str, Callable[..., Response]]] = [
            ("GET", r"/user", self._get_user),
            ("GET", repo, self._get_repo),
            ("GET", repo + r"/pulls", self._list_pulls),
            ("GET", repo + r"/git/trees/([0-9a-fA-F]+)", self._get_tree),
            ("GET", repo + r"/pulls/(\d+)", self._get_pull),
            ("GET", repo + r"/pulls/(\d+)/files", self._list_pr_files),
            ("GET", repo + r"/issues/(\d+)/comments", self._list_comments),
            ("POST", repo + r"/issues/(\d+)/comments", self._create_comment),
            ("PATCH", repo + r"/issues/comments/(\d+)", self._edit_comment),
            ("POST", repo + r"/check-runs", self._create_check_run),
            ("PATCH", repo + r"/check-runs/(\d+)", self._update_check_run),
            ("GET", repo + r"/commits/([0-9a-fA-F]+)/check-runs", self._list_check_runs),
            ("POST", repo + r"/statuses/([0-9a-fA-F]+)", self._create_status),
            ("GET", repo + r"/actions/artifacts", self._list_repo_artifacts),
            ("GET", repo + r"/actions/runs", self._list_workflow_runs),
            ("GET", repo + r"/actions/runs/(\d+)", self._get_workflow_run),
            ("GET", repo + r"/actions/runs/(\d+)/artifacts", self._list_artifacts),
            ("GET", repo + r"/actions/artifacts/(\d+)/zip", self._download_artifact),
        ]
        return [(method, re.compile(path), handler) for method, path, handler in table]

    # ---- endpoints --------------------------------------------------------------

    def _get_user(self, query: dict[str, str], body: Json) -> Response:
        if self.user_endpoint_forbidden:
            raise ApiError(403, FORBIDDEN_MESSAGE)
        return 200, self._user_json(self.token_login), {}

    def _get_repo(self, query: dict[str, str], body: Json) -> Response:
        return 200, self._repo_json(), {}

    def _get_pull(self, query: dict[str, str], body: Json, number: str) -> Response:
        return 200, self._pull_json(int(number)), {}

    def _list_pulls(self, query: dict[str, str], body: Json) -> Response:
        """GET /pulls with its `head=owner:branch` filter; the open PRs are those the
        test gave a head commit."""
        pulls = [self._pull_json(n) for n in sorted(self.pull_head_shas)]
        if "head" in query:
            owner, _, branch = query["head"].partition(":")
            pulls = [p for p in pulls if p["head"]["repo"]["owner"]["login"] == owner
                     and p["head"]["ref"] == branch]
        return self._paginate(f"/repos/{self._full_name}/pulls", query, pulls)

    def _get_tree(self, query: dict[str, str], body: Json, sha: str) -> Response:
        """GET /git/trees/{sha}?recursive=1: blobs, and the directories above them."""
        if sha not in self.trees:
            raise ApiError(404, "Not Found")
        files = self.trees[sha]
        directories = sorted({"/".join(p.split("/")[:i]) for p in files
                              for i in range(1, p.count("/") + 1)})
        entries = [{"path": d, "mode": "040000", "type": "tree", "sha": "d" * 40}
                   for d in directories]
        entries += [{"path": f, "mode": "100644", "type": "blob", "sha": "f" * 40, "size": 1}
                    for f in files]
        url = self._api(f"/repos/{self._full_name}/git/trees/{sha}")
        return 200, {"sha": sha, "url": url, "tree": entries, "truncated": False}, {}

    def _list_pr_files(self, query: dict[str, str], body: Json, number: str) -> Response:
        files = [self._file_json(f) for f in self.pr_files.get(int(number), [])]
        return self._paginate(f"/repos/{self._full_name}/pulls/{number}/files", query, files)

    def _list_repo_artifacts(self, query: dict[str, str], body: Json) -> Response:
        items = [self._artifact_json(run_id, index, name, len(data))
                 for run_id, entries in sorted(self.artifacts.items(), reverse=True)
                 for index, (name, data) in enumerate(entries)]
        return 200, {"total_count": len(items), "artifacts": items}, {}

    def _list_workflow_runs(self, query: dict[str, str], body: Json) -> Response:
        """GET /actions/runs with GitHub's `branch`, `event`, `head_sha` and `created=<=T`
        filters, newest first: the runs that uploaded artifacts or were described."""
        ids = sorted(set(self.artifacts) | set(self.artifact_runs),
                     key=lambda i: (self._run(i)["created_at"], i), reverse=True)
        runs = [self._get_workflow_run(query, body, str(i))[1] for i in ids]
        for key in ("branch", "event", "head_sha"):
            field_name = "head_branch" if key == "branch" else key
            if key in query:
                runs = [r for r in runs if r[field_name] == query[key]]
        if query.get("created", "").startswith("<="):
            runs = [r for r in runs if r["created_at"] <= query["created"][2:]]
        return 200, {"total_count": len(runs), "workflow_runs": runs}, {}

    def _get_workflow_run(self, query: dict[str, str], body: Json, run_id: str) -> Response:
        """GET /actions/runs/{id}: the fields of GitHub's `workflow-run` schema we read."""
        runs = f"/repos/{self._full_name}/actions/runs/{run_id}"
        run = self._run(int(run_id))
        head_repository = self._repo_json(run["head_repository"])
        return 200, {
            "id": int(run_id), "node_id": f"WFR_{run_id}", "name": "turncheck",
            "url": self._api(runs), "html_url": f"https://github.com/{self._full_name}"
            f"/actions/runs/{run_id}", "artifacts_url": self._api(runs + "/artifacts"),
            "event": run["event"], "status": "completed", "conclusion": "success",
            "head_branch": run["head_branch"], "head_sha": run["head_sha"],
            "repository": self._repo_json(), "head_repository": head_repository,
            "head_repository_id": head_repository["id"], "repository_id": 1,
            "pull_requests": [], "created_at": run["created_at"], "updated_at": TIMESTAMP,
        }, {}

    def _run(self, run_id: int) -> dict[str, str]:
        given = self.artifact_runs.get(run_id, {})
        return {"head_sha": "0" * 40, "head_branch": "main", "created_at": TIMESTAMP,
                "event": "push", "head_repository": self._full_name, **given}

    def _list_artifacts(self, query: dict[str, str], body: Json, run_id: str) -> Response:
        items = [self._artifact_json(int(run_id), index, name, len(data))
                 for index, (name, data) in enumerate(self.artifacts.get(int(run_id), []))]
        return 200, {"total_count": len(items), "artifacts": items}, {}

    def _download_artifact(self, query: dict[str, str], body: Json, artifact: str) -> Response:
        run_id, index = divmod(int(artifact), 1000)
        return 200, self.artifacts[run_id][index][1], {"Content-Type": "application/zip"}

    def _artifact_json(self, run_id: int, index: int, name: str, size: int) -> Json:
        artifact_id = run_id * 1000 + index
        run = self._run(run_id)
        # GitHub's `artifact.workflow_run`: id, repository_id, head_repository_id,
        # head_branch, head_sha (no event: that needs GET /actions/runs/{id}).
        return {
            "workflow_run": {"id": run_id, "repository_id": 1,
                             "head_repository_id": self._repo_json(run["head_repository"])["id"],
                             "head_sha": run["head_sha"], "head_branch": run["head_branch"]},
            "id": artifact_id, "node_id": f"A_{artifact_id}", "name": name,
            "size_in_bytes": size, "expired": False,
            "url": self._api(f"/repos/{self._full_name}/actions/artifacts/{artifact_id}"),
            "archive_download_url": self._api(
                f"/repos/{self._full_name}/actions/artifacts/{artifact_id}/zip"),
            "created_at": run["created_at"], "updated_at": TIMESTAMP,
            "expires_at": "2099-01-01T00:00:00Z",
        }

    def _list_comments(self, query: dict[str, str], body: Json, number: str) -> Response:
        items = [self._comment_json(c) for c in self.comments_on(int(number))]
        return self._paginate(f"/repos/{self._full_name}/issues/{number}/comments", query, items)

    def _create_comment(self, query: dict[str, str], body: Json, number: str) -> Response:
        text = _required_str(body, "body")
        _check_comment_length(text)
        comment = Comment(self._new_id(), int(number), text, self.token_login)
        self.comments.append(comment)
        return 201, self._comment_json(comment), {}

    def _edit_comment(self, query: dict[str, str], body: Json, comment_id: str) -> Response:
        text = _required_str(body, "body")
        _check_comment_length(text)
        comment = next((c for c in self.comments if c.id == int(comment_id)), None)
        if comment is None:
            raise ApiError(404, "Not Found")
        if comment.login != self.token_login:
            raise ApiError(403, FORBIDDEN_MESSAGE)
        comment.body = text
        return 200, self._comment_json(comment), {}

    def _create_check_run(self, query: dict[str, str], body: Json) -> Response:
        run = CheckRun(
            id=self._new_id(),
            name=_required_str(body, "name"),
            head_sha=_required_str(body, "head_sha"),
            status=body.get("status", "queued"),
            conclusion=body.get("conclusion"),
            external_id=body.get("external_id"),
            details_url=body.get("details_url"),
        )
        if run.status == "completed" and not run.conclusion:
            raise ApiError(422, "conclusion is required when status is completed")
        self._apply_output(run, body.get("output"))
        self.check_runs[run.id] = run
        return 201, self._check_run_json(run), {}

    def _list_check_runs(self, query: dict[str, str], body: Json, sha: str) -> Response:
        """GET /commits/{ref}/check-runs, with its `check_name` filter."""
        runs = [self._check_run_json(r) for r in self.check_runs.values()
                if r.head_sha == sha and query.get("check_name", r.name) == r.name]
        return 200, {"total_count": len(runs), "check_runs": runs}, {}

    def check_runs_named(self, name: str) -> list[CheckRun]:
        return [r for r in self.check_runs.values() if r.name == name]

    def _update_check_run(self, query: dict[str, str], body: Json, run_id: str) -> Response:
        run = self.check_runs.get(int(run_id))
        if run is None:
            raise ApiError(404, "Not Found")
        for key in ("name", "status", "conclusion"):
            if key in body:
                setattr(run, key, body[key])
        self._apply_output(run, body.get("output"))
        return 200, self._check_run_json(run), {}

    def _apply_output(self, run: CheckRun, output: Json) -> None:
        if output is None:
            return
        _required_str(output, "title")
        _required_str(output, "summary")
        for key in ("summary", "text"):
            if _size(output.get(key) or "") > MAX_CHECK_OUTPUT_CHARS:
                raise ApiError(422, f"output.{key} is too long")
        annotations = output.get("annotations") or []
        if len(annotations) > MAX_ANNOTATIONS:
            raise ApiError(422, "Only 50 annotations may be sent per request")
        for annotation in annotations:
            _check_annotation(annotation)
        run.output = {k: v for k, v in output.items() if k != "annotations"}
        run.annotations.extend(annotations)  # GitHub appends, it does not replace

    def _create_status(self, query: dict[str, str], body: Json, sha: str) -> Response:
        state = _required_str(body, "state")
        if state not in STATUS_STATES:
            raise ApiError(422, f"state must be one of {sorted(STATUS_STATES)}")
        if len(body.get("description") or "") > MAX_STATUS_DESCRIPTION:
            raise ApiError(422, "description is too long (maximum is 140 characters)")
        status = {**body, "sha": sha, "id": self._new_id()}
        self.statuses.append(status)
        return 201, self._status_json(status), {}

    # ---- pagination -------------------------------------------------------------

    def _paginate(self, path: str, query: dict[str, str], items: list[Json]) -> Response:
        per_page = min(int(query.get("per_page", "30")), 100)
        page = max(int(query.get("page", "1")), 1)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page : page * per_page]
        links = {"first": 1, "prev": page - 1, "next": page + 1, "last": last}
        wanted = [(rel, n) for rel, n in links.items() if 1 <= n <= last and n != page]
        header = ", ".join(
            f'<{self.base_url}{path}?{urlencode({"per_page": per_page, "page": n})}>; rel="{rel}"'
            for rel, n in wanted
        )
        return 200, chunk, ({"Link": header} if header else {})

    # ---- JSON shapes (the fields PyGithub reads) ----------------------------------

    @property
    def _full_name(self) -> str:
        return f"{self.owner}/{self.repo}"

    def _new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _api(self, path: str) -> str:
        return f"{self.base_url}{path}"

    def _user_json(self, login: str) -> Json:
        is_bot = login.endswith("[bot]")
        return {
            "login": login,
            "id": zlib.crc32(login.encode()),
            "node_id": "U_fake",
            "type": "Bot" if is_bot else "User",
            "site_admin": False,
            "url": self._api(f"/users/{login}"),
            "html_url": f"https://github.com/{login}",
        }

    def _repo_json(self, full_name: str | None = None) -> Json:
        """This repository, or (by `full_name`) a fork of it with another id."""
        full_name = full_name or self._full_name
        owner, name = full_name.split("/")
        return {
            "id": 1 if full_name == self._full_name else zlib.crc32(full_name.encode()),
            "node_id": "R_fake",
            "name": name,
            "full_name": full_name,
            "private": False,
            "owner": self._user_json(owner),
            "url": self._api(f"/repos/{full_name}"),
            "html_url": f"https://github.com/{full_name}",
            "default_branch": "main",
        }

    def _pull_json(self, number: int) -> Json:
        return {
            "id": number,
            "number": number,
            "state": "open",
            "url": self._api(f"/repos/{self._full_name}/pulls/{number}"),
            "html_url": f"https://github.com/{self._full_name}/pull/{number}",
            "head": {"sha": self.pull_head_shas.get(number, "a" * 40),
                     "ref": self.pull_head_refs.get(number, "feature"),
                     "repo": self._repo_json(self.pull_head_repos.get(number))},
            "base": {"sha": "b" * 40, "ref": "main", "repo": self._repo_json()},
            "changed_files": len(self.pr_files.get(number, [])),
        }

    def _file_json(self, entry: dict[str, Any]) -> Json:
        return {
            "sha": "c" * 40,
            "additions": 1,
            "deletions": 0,
            "changes": 1,
            "blob_url": f"https://github.com/{self._full_name}/blob/x/{entry['filename']}",
            "raw_url": f"https://github.com/{self._full_name}/raw/x/{entry['filename']}",
            "contents_url": self._api(f"/repos/{self._full_name}/contents/{entry['filename']}"),
            **entry,
        }

    def _comment_json(self, comment: Comment) -> Json:
        return {
            "id": comment.id,
            "node_id": f"IC_{comment.id}",
            "url": self._api(f"/repos/{self._full_name}/issues/comments/{comment.id}"),
            "html_url": (
                f"https://github.com/{self._full_name}/pull/{comment.issue}"
                f"#issuecomment-{comment.id}"
            ),
            "issue_url": self._api(f"/repos/{self._full_name}/issues/{comment.issue}"),
            "body": comment.body,
            "user": self._user_json(comment.login),
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "author_association": "NONE",
        }

    def _check_run_json(self, run: CheckRun) -> Json:
        return {
            "id": run.id,
            "node_id": f"CR_{run.id}",
            "name": run.name,
            "head_sha": run.head_sha,
            "external_id": run.external_id or "",
            "status": run.status,
            "conclusion": run.conclusion,
            "url": self._api(f"/repos/{self._full_name}/check-runs/{run.id}"),
            "html_url": f"https://github.com/{self._full_name}/runs/{run.id}",
            "details_url": f"https://github.com/{self._full_name}/runs/{run.id}",
            "started_at": TIMESTAMP,
            "completed_at": TIMESTAMP if run.status == "completed" else None,
            "output": {
                **run.output,
                "annotations_count": len(run.annotations),
                "annotations_url": self._api(
                    f"/repos/{self._full_name}/check-runs/{run.id}/annotations"
                ),
            },
            "check_suite": {"id": 1},
            "app": {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
            "pull_requests": [],
        }

    def _status_json(self, status: dict[str, Any]) -> Json:
        return {
            "id": status["id"],
            "node_id": f"SC_{status['id']}",
            "url": self._api(f"/repos/{self._full_name}/statuses/{status['sha']}"),
            "state": status["state"],
            "description": status.get("description"),
            "target_url": status.get("target_url"),
            "context": status.get("context", "default"),
            "created_at": TIMESTAMP,
            "updated_at": TIMESTAMP,
            "creator": self._user_json(self.token_login),
        }


def _error(status: int, message: str) -> Response:
    body = {"message": message, "documentation_url": "https://docs.github.com/rest"}
    return status, body, {}


def _required_str(body: Json, key: str) -> str:
    value = body.get(key) if isinstance(body, dict) else None
    if not isinstance(value, str) or not value:
        raise ApiError(422, f"Invalid request: {key} is required")
    return value


def _size(text: str) -> int:
    """The largest of GitHub's possible counts: UTF-8 bytes (≥ UTF-16 units ≥ code points)."""
    return len(text.encode("utf-8"))


def _check_comment_length(text: str) -> None:
    if _size(text) > MAX_COMMENT_CHARS:
        raise ApiError(422, "Body is too long (maximum is 65536 characters)")


def _check_annotation(annotation: Json) -> None:
    for key in ("path", "annotation_level", "message"):
        _required_str(annotation, key)
    if annotation["annotation_level"] not in ANNOTATION_LEVELS:
        raise ApiError(422, "annotation_level is not included in the list")
    if not all(isinstance(annotation.get(k), int) for k in ("start_line", "end_line")):
        raise ApiError(422, "start_line and end_line are required")
    if len(annotation.get("title") or "") > 255:
        raise ApiError(422, "annotation title is too long (maximum is 255 characters)")
    if len(annotation["message"].encode("utf-8")) > 64 * 1024:
        raise ApiError(422, "annotation message is too long (maximum is 64 KB)")


class _Handler(QuietHandler):
    server: _FakeServer

    def respond(self) -> None:
        if not self.headers.get("Authorization"):
            status, body, headers = _error(401, "Requires authentication")
        else:
            status, body, headers = self.server.fake.handle(self.command, self.path, self._body())
        binary = isinstance(body, bytes)
        payload = body if binary else json.dumps(body).encode()
        self.send_response(status)
        if not binary:
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _body(self) -> Json:
        raw = self.read_body()
        return json.loads(raw) if raw else None


class _FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeGitHub) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


@pytest.fixture
def github_fake() -> Iterator[FakeGitHub]:
    """A fresh fake GitHub API on 127.0.0.1; use `.base_url` as the API URL."""
    fake = FakeGitHub()
    server = _FakeServer(fake)
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    with serving(server):
        yield fake
