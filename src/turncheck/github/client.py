"""The GitHub REST operations the action needs, behind a small interface.

`GitHubApi` is what the rest of turncheck depends on; `PyGithubApi` implements it
with PyGithub. Every PyGithub, requests or urllib3 error is translated into
`GitHubApiError` (or its subclass `GitHubPermissionError`) at this boundary.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

import requests
import urllib3.exceptions
from github import Auth, Github, GithubRetry
from github.Artifact import Artifact
from github.CheckRun import CheckRun
from github.GithubException import (
    BadAttributeException,
    GithubException,
    RateLimitExceededException,
)
from github.GithubObject import NotSet
from github.Issue import Issue
from github.IssueComment import IssueComment
from github.Repository import Repository
from github.WorkflowRun import WorkflowRun
from urllib3.util.retry import Retry

from turncheck.git.changes import ChangedFile, FileStatus

DEFAULT_API_URL = "https://api.github.com"
# GITHUB_TOKEN cannot read GET /user; its comments are authored by this login.
ACTIONS_BOT_LOGIN = "github-actions[bot]"

MAX_ANNOTATIONS_PER_REQUEST = 50
# GitHub says "characters" without saying which unit; UTF-8 bytes are the largest count.
MAX_CHECK_OUTPUT_BYTES = 65_535
MAX_ANNOTATION_TITLE_CHARS = 255
MAX_ANNOTATION_MESSAGE_BYTES = 64 * 1024
MAX_STATUS_DESCRIPTION_CHARS = 140
TRUNCATION_SUFFIX = "\n…(truncated)"

CommentMode = Literal["always", "on-change"]
CommentAction = Literal["created", "updated", "unchanged", "skipped"]
AnnotationLevel = Literal["notice", "warning", "failure"]
CheckConclusion = Literal[
    "action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"
]
StatusState = Literal["error", "failure", "pending", "success"]

# GitHub also reports "copied", "changed" and "unchanged"; we fold them into our four.
_FILE_STATUS: dict[str, FileStatus] = {
    "added": "added",
    "copied": "added",
    "removed": "removed",
    "renamed": "renamed",
    "modified": "modified",
    "changed": "modified",
    "unchanged": "modified",
}


@dataclass(frozen=True)
class CommentResult:
    url: str
    id: int
    action: CommentAction


@dataclass(frozen=True)
class Annotation:
    path: str
    start_line: int
    end_line: int
    annotation_level: AnnotationLevel
    message: str
    title: str | None = None


@dataclass(frozen=True)
class ArtifactRef:
    """An unexpired Actions artifact and the run that uploaded it."""

    id: int
    name: str
    size: int
    run_id: int | None
    head_sha: str | None
    head_branch: str | None
    created_at: datetime | None
    download_url: str
    repository_id: int | None = None
    head_repository_id: int | None = None
    """Differs from `repository_id` when the run was for a fork's pull request."""


@dataclass(frozen=True)
class RunOrigin:
    """What triggered a workflow run and on which code: decides whether to trust its output."""

    id: int
    event: str
    head_branch: str
    head_sha: str
    head_repository: str
    repository: str
    created_at: datetime | None = None


@dataclass(frozen=True)
class PullHead:
    """Where a pull request's head is: its commit and the repository it comes from."""

    sha: str
    repository: str
    ref: str = ""
    """The head branch's name (in `repository`)."""


@dataclass(frozen=True)
class RepositoryTree:
    """The paths of a commit's files and directories, as GitHub lists them."""

    files: frozenset[str]
    directories: frozenset[str]
    truncated: bool = False
    """GitHub lists at most 100,000 entries; beyond that some paths are missing."""


class GitHubApiError(Exception):
    """A GitHub API call failed. `status` is None when no HTTP response arrived."""

    def __init__(self, operation: str, status: int | None, message: str) -> None:
        super().__init__(f"{operation}: {message} (HTTP {status})")
        self.operation = operation
        self.status = status
        self.message = message


class GitHubPermissionError(GitHubApiError):
    """The token may not do this, e.g. a read-only token on a fork pull request."""


class ArtifactTooLarge(GitHubApiError):
    """An artifact is larger than the caller's cap; it was not (fully) downloaded."""


class GitHubApi(Protocol):
    def pr_files(self, number: int) -> list[ChangedFile]: ...

    def upsert_comment(
        self, number: int, body: str, marker: str, mode: CommentMode = "always",
        create: bool = True,
    ) -> CommentResult: ...

    def create_check_run(
        self,
        head_sha: str,
        name: str,
        title: str,
        summary: str,
        text: str,
        conclusion: CheckConclusion,
        annotations: Sequence[Annotation] = (),
        details_url: str | None = None,
        external_id: str | None = None,
    ) -> str: ...

    def check_conclusions(self, sha: str, name: str) -> list[tuple[str | None, str | None]]: ...

    def create_status(
        self,
        sha: str,
        state: StatusState,
        description: str,
        context: str,
        target_url: str | None = None,
    ) -> None: ...

    def pull_head_sha(self, number: int) -> str: ...

    def pull_head(self, number: int) -> PullHead: ...

    def open_pulls_from(self, head_repository: str, branch: str) -> list[int]: ...

    def tree(self, sha: str) -> RepositoryTree: ...

    def download_artifact(self, run_id: int, name: str, max_bytes: int) -> bytes | None: ...

    def download_artifact_by_id(self, artifact: ArtifactRef, max_bytes: int) -> bytes: ...

    def branch_runs(self, branch: str, event: str, *, head_sha: str | None = None,
                    created_before: datetime | None = None,
                    limit: int = 20) -> list[RunOrigin]: ...

    def run_artifacts(self, run_id: int, prefix: str) -> list[ArtifactRef]: ...


def default_retry() -> Retry:
    """Retry 5xx and rate-limit responses a few times, without waiting minutes."""
    return GithubRetry(total=4, backoff_factor=1.0, secondary_rate_wait=60, max_rate_limit_wait=120)


DEFAULT_RETRY = default_retry()


class PyGithubApi:
    """`GitHubApi` for one repository, implemented with PyGithub."""

    def __init__(
        self,
        token: str,
        repository: str,
        api_url: str | None = None,
        *,
        retry: Retry | None = DEFAULT_RETRY,
        seconds_between_requests: float = 0.25,
        seconds_between_writes: float = 1.0,
        timeout: int = 15,
        author_login: str | None = None,
    ) -> None:
        """`repository` is "owner/name"; `retry=None` disables retries (tests).

        `author_login` skips the `GET /user` lookup of the comment author.
        """
        if repository.count("/") != 1:
            raise ValueError(f"repository must be 'owner/name', got {repository!r}")
        self._github = Github(
            auth=Auth.Token(token),
            base_url=api_url or os.environ.get("GITHUB_API_URL") or DEFAULT_API_URL,
            per_page=100,
            retry=retry,
            timeout=timeout,
            seconds_between_requests=seconds_between_requests,
            seconds_between_writes=seconds_between_writes,
            # Lazy objects build URLs locally instead of fetching the repo and PR first.
            lazy=True,
        )
        self._repo: Repository = self._github.get_repo(repository)
        self._author_login = author_login
        self._token = token
        self._timeout = timeout

    def pr_files(self, number: int) -> list[ChangedFile]:
        with _translate_errors("list pull request files"):
            return [
                _changed_file(f.filename, f.status, f.previous_filename)
                for f in self._repo.get_pull(number).get_files()
            ]

    def upsert_comment(
        self, number: int, body: str, marker: str, mode: CommentMode = "always",
        create: bool = True,
    ) -> CommentResult:
        """Edit our comment in place, or create it (unless `create` is False).

        Ours is a comment by this token's login whose body *starts* with `marker`: a
        comment that merely quotes the marker (another workflow posting as the same
        `github-actions[bot]`, or a user quoting ours) is never edited."""
        if not body.startswith(marker):
            raise ValueError(
                "the comment body must start with the marker, or it cannot be found again"
            )
        issue = self._repo.get_issue(number)
        existing = self._find_comment(issue, marker)
        if existing is None and not create:
            return CommentResult("", 0, "skipped")
        if existing is None:
            with _translate_errors("create comment", write=True):
                created = issue.create_comment(body)
                return CommentResult(created.html_url, created.id, "created")
        if mode == "on-change" and existing.body == body:
            return CommentResult(existing.html_url, existing.id, "unchanged")
        with _translate_errors("edit comment", write=True):
            existing.edit(body)
            return CommentResult(existing.html_url, existing.id, "updated")

    def create_check_run(
        self,
        head_sha: str,
        name: str,
        title: str,
        summary: str,
        text: str,
        conclusion: CheckConclusion,
        annotations: Sequence[Annotation] = (),
        details_url: str | None = None,
        external_id: str | None = None,
    ) -> str:
        output: dict[str, Any] = {
            "title": title,
            "summary": _truncate_utf8(summary, MAX_CHECK_OUTPUT_BYTES),
            "text": _truncate_utf8(text, MAX_CHECK_OUTPUT_BYTES),
        }
        first, *rest = _batches([_annotation_json(a) for a in annotations]) or [[]]
        with _translate_errors("create check run", write=True):
            run = self._repo.create_check_run(
                name=name,
                head_sha=head_sha,
                status="completed",
                conclusion=conclusion,
                output={**output, "annotations": first},
                details_url=details_url or NotSet,
                external_id=external_id or NotSet,
            )
        # GitHub appends the annotations of each update to those already on the run.
        for batch in rest:
            self._append_annotations(run, output, batch)
        return run.html_url

    def create_status(
        self,
        sha: str,
        state: StatusState,
        description: str,
        context: str,
        target_url: str | None = None,
    ) -> None:
        optional = {"target_url": target_url} if target_url else {}
        with _translate_errors("create commit status", write=True):
            self._repo.get_commit(sha).create_status(
                state=state,
                description=_truncate_chars(description, MAX_STATUS_DESCRIPTION_CHARS, "…"),
                context=context,
                **optional,
            )

    def pull_head_sha(self, number: int) -> str:
        with _translate_errors("get pull request"):
            return str(self._repo.get_pull(number).head.sha)

    def pull_head(self, number: int) -> PullHead:
        with _translate_errors("get pull request"):
            head = self._repo.get_pull(number).head
            repository = head.repo.full_name if head.repo is not None else ""
            return PullHead(str(head.sha), repository, str(head.ref or ""))

    def open_pulls_from(self, head_repository: str, branch: str) -> list[int]:
        """Numbers of this repository's open pull requests whose head is `branch` of
        `head_repository` (`owner/name`)."""
        owner = head_repository.partition("/")[0]
        with _translate_errors("list pull requests"):
            return [pull.number for pull in
                    self._repo.get_pulls(state="open", head=f"{owner}:{branch}")
                    if pull.head.repo is not None
                    and pull.head.repo.full_name == head_repository]

    def tree(self, sha: str) -> RepositoryTree:
        """Every path of commit `sha` (a fork PR's commits are readable in its base
        repository too)."""
        with _translate_errors("get tree"):
            listed = self._repo.get_git_tree(sha, recursive=True)
            entries = [(element.path, element.type) for element in listed.tree]
            truncated = bool(listed.raw_data.get("truncated"))
        return RepositoryTree(frozenset(p for p, kind in entries if kind == "blob"),
                              frozenset(p for p, kind in entries if kind == "tree"), truncated)

    def check_conclusions(self, sha: str, name: str) -> list[tuple[str | None, str | None]]:
        """(conclusion, external_id) of the check runs called `name` on `sha`; the
        conclusion is None while a run is not completed."""
        with _translate_errors("list check runs"):
            return [(run.conclusion, run.external_id) for run in
                    self._repo.get_commit(sha).get_check_runs(check_name=name)]

    def download_artifact(self, run_id: int, name: str, max_bytes: int) -> bytes | None:
        """The zip of the run's artifact called `name`, or None when there is none.

        Raises GitHubApiError when it is larger than `max_bytes` (artifacts from
        fork pull requests are untrusted input).
        """
        with _translate_errors("list workflow run artifacts"):
            artifacts = [a for a in self._repo.get_workflow_run(run_id).get_artifacts()
                         if a.name == name and not a.expired]
        if not artifacts:
            return None
        artifact = artifacts[0]
        if artifact.size_in_bytes > max_bytes:
            raise ArtifactTooLarge("download artifact", None,
                                   f"artifact {name!r} is larger than {max_bytes} bytes")
        return self._download(artifact.archive_download_url, max_bytes)

    def download_artifact_by_id(self, artifact: ArtifactRef, max_bytes: int) -> bytes:
        if artifact.size > max_bytes:
            raise ArtifactTooLarge("download artifact", None,
                                   f"artifact {artifact.name!r} is larger than {max_bytes} bytes")
        return self._download(artifact.download_url, max_bytes)

    def branch_runs(self, branch: str, event: str, *, head_sha: str | None = None,
                    created_before: datetime | None = None,
                    limit: int = 20) -> list[RunOrigin]:
        """The newest `limit` runs of `event` on `branch` (filtered by GitHub), of commit
        `head_sha` or created no later than `created_before` when given."""
        options: dict[str, Any] = {"branch": branch, "event": event}
        if head_sha is not None:
            options["head_sha"] = head_sha
        if created_before is not None:
            stamp = created_before.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            options["created"] = f"<={stamp}"
        found = []
        with _translate_errors("list workflow runs"):
            for run in self._repo.get_workflow_runs(**options):
                found.append(_run_origin(run))
                if len(found) >= limit:
                    break
        return found

    def run_artifacts(self, run_id: int, prefix: str) -> list[ArtifactRef]:
        """The unexpired artifacts of one run whose name starts with `prefix`."""
        with _translate_errors("list workflow run artifacts"):
            return [_artifact_ref(a) for a in self._repo.get_workflow_run(run_id).get_artifacts()
                    if a.name.startswith(prefix) and not a.expired]

    def _download(self, url: str, max_bytes: int) -> bytes:
        headers = {"Authorization": f"Bearer {self._token}",
                   "Accept": "application/vnd.github+json"}
        # requests drops the Authorization header when GitHub redirects to blob storage.
        with (_translate_errors("download artifact"),
              requests.get(url, headers=headers, timeout=self._timeout, stream=True) as response):
            response.raise_for_status()
            data = bytearray()
            for chunk in response.iter_content(64 * 1024):
                data.extend(chunk)
                if len(data) > max_bytes:
                    raise ArtifactTooLarge("download artifact", None,
                                           f"artifact is larger than {max_bytes} bytes")
            return bytes(data)

    def comment_author(self) -> str:
        """The login our comments carry: the token's user, else the Actions bot."""
        if self._author_login is None:
            self._author_login = self._fetch_login()
        return self._author_login

    def _fetch_login(self) -> str:
        try:
            with _translate_errors("get authenticated user"):
                return self._github.get_user().login
        except GitHubApiError as error:
            if error.status in (403, 404):
                return ACTIONS_BOT_LOGIN
            raise

    def _find_comment(self, issue: Issue, marker: str) -> IssueComment | None:
        author = self.comment_author()
        with _translate_errors("list comments"):
            # PaginatedList fetches every page, so comments beyond the first 100 are found.
            for comment in issue.get_comments():
                if comment.user.login == author and (comment.body or "").startswith(marker):
                    return comment
        return None

    def _append_annotations(
        self, run: CheckRun, output: dict[str, Any], batch: list[dict[str, Any]]
    ) -> None:
        with _translate_errors("update check run", write=True):
            run.edit(output={**output, "annotations": batch})


def _run_origin(run: WorkflowRun) -> RunOrigin:
    head = run.head_repository
    return RunOrigin(
        id=run.id, event=run.event or "", head_branch=run.head_branch or "",
        head_sha=run.head_sha or "", head_repository=head.full_name if head else "",
        repository=run.repository.full_name if run.repository else "",
        created_at=run.created_at,
    )


def _artifact_ref(artifact: Artifact) -> ArtifactRef:
    run = artifact.workflow_run
    return ArtifactRef(
        id=artifact.id, name=artifact.name, size=artifact.size_in_bytes,
        run_id=run.id if run is not None else None,
        head_sha=run.head_sha if run is not None else None,
        head_branch=run.head_branch if run is not None else None,
        created_at=artifact.created_at, download_url=artifact.archive_download_url,
        repository_id=_run_field(run, "repository_id"),
        head_repository_id=_run_field(run, "head_repository_id"),
    )


def _run_field(run: WorkflowRun | None, name: str) -> int | None:
    """An id of the artifact's `workflow_run` summary; None when GitHub left it out."""
    try:
        value = getattr(run, name, None)
    except GithubException:  # absent: PyGithub tries to fetch it, without a URL
        return None
    return value if isinstance(value, int) else None


def _changed_file(path: str, github_status: str, previous: str | None) -> ChangedFile:
    status = _FILE_STATUS.get(github_status, "modified")
    return ChangedFile(path, status, previous if status == "renamed" else None)


def _annotation_json(annotation: Annotation) -> dict[str, Any]:
    data: dict[str, Any] = {
        "path": annotation.path,
        "start_line": annotation.start_line,
        "end_line": max(annotation.end_line, annotation.start_line),
        "annotation_level": annotation.annotation_level,
        "message": _truncate_utf8(annotation.message, MAX_ANNOTATION_MESSAGE_BYTES),
    }
    if annotation.title:
        data["title"] = _truncate_chars(annotation.title, MAX_ANNOTATION_TITLE_CHARS, "…")
    return data


def _batches(items: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    size = MAX_ANNOTATIONS_PER_REQUEST
    return [items[start : start + size] for start in range(0, len(items), size)]


def _truncate_chars(text: str, limit: int, suffix: str = TRUNCATION_SUFFIX) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - len(suffix)] + suffix


def _truncate_utf8(text: str, limit: int) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    room = limit - len(TRUNCATION_SUFFIX.encode("utf-8"))
    # errors="ignore" drops a code point cut in half at the boundary.
    return encoded[:room].decode("utf-8", errors="ignore") + TRUNCATION_SUFFIX


@contextmanager
def _translate_errors(operation: str, *, write: bool = False) -> Iterator[None]:
    try:
        yield
    except GithubException as error:
        raise _api_error(operation, error, write) from error
    except BadAttributeException as error:
        raise GitHubApiError(operation, None, f"unexpected response: {error}") from error
    except (requests.RequestException, urllib3.exceptions.HTTPError) as error:
        raise GitHubApiError(operation, None, f"request failed: {error}") from error


def _api_error(operation: str, error: GithubException, write: bool) -> GitHubApiError:
    message = _error_message(error)
    if _is_permission_failure(error, write):
        return GitHubPermissionError(operation, error.status, message)
    return GitHubApiError(operation, error.status, message)


def _is_permission_failure(error: GithubException, write: bool) -> bool:
    if isinstance(error, RateLimitExceededException):
        return False
    # GitHub answers 404 rather than 403 when a token may not write to a resource.
    return error.status == 403 or (error.status == 404 and write)


def _error_message(error: GithubException) -> str:
    if isinstance(error.data, dict) and isinstance(error.data.get("message"), str):
        return str(error.data["message"])
    return error.message or str(error)
