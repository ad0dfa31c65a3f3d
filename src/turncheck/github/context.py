"""What the runner tells the action: `GITHUB_*` variables and the event payload."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turncheck.formats.files import read_bytes_bounded

MAX_EVENT_BYTES = 25 * 1024 * 1024


class ContextError(ValueError):
    """The runner environment is incomplete or the event payload unreadable."""


@dataclass(frozen=True)
class PullRequest:
    number: int
    base_sha: str
    head_sha: str
    base_ref: str
    head_repository: str
    base_repository: str

    action: str = ""
    """The event's activity type (`opened`, `synchronize`, `labeled`, …)."""
    label: str = ""
    """The label just added, for `labeled`."""

    @property
    def from_fork(self) -> bool:
        return self.head_repository != self.base_repository


@dataclass(frozen=True)
class MergeGroup:
    """A merge queue's group: the commit GitHub built (head) on top of the target (base)."""

    head_sha: str
    head_ref: str
    base_ref: str
    base_sha: str | None
    """Missing from older payloads; then the base is found from `base_ref`."""

    @property
    def base_branch(self) -> str:
        return self.base_ref.removeprefix("refs/heads/")


@dataclass(frozen=True)
class WorkflowRun:
    id: int
    head_sha: str
    head_branch: str
    head_owner: str
    event: str
    conclusion: str | None
    pull_numbers: tuple[int, ...]
    head_repository: str = ""
    """`owner/name` of the repository the run's commit came from (a fork's, for forks)."""


@dataclass(frozen=True)
class GitHubContext:
    event_name: str
    repository: str
    sha: str
    workspace: Path
    api_url: str
    server_url: str
    run_id: str
    ref: str
    default_branch: str | None
    output_path: Path | None
    summary_path: Path | None
    payload: dict[str, Any]
    run_attempt: int = 1
    """`GITHUB_RUN_ATTEMPT`: 2 and up when a run's jobs are re-run."""

    @property
    def run_url(self) -> str | None:
        if not self.run_id:
            return None
        return f"{self.server_url}/{self.repository}/actions/runs/{self.run_id}"

    def pull_request(self) -> PullRequest | None:
        pr = self.payload.get("pull_request")
        if not isinstance(pr, dict):
            return None
        try:
            return PullRequest(
                number=int(pr["number"]),
                base_sha=str(pr["base"]["sha"]),
                head_sha=str(pr["head"]["sha"]),
                base_ref=str(pr["base"].get("ref", "")),
                head_repository=str(((pr["head"].get("repo") or {}).get("full_name")) or ""),
                base_repository=str(((pr["base"].get("repo") or {}).get("full_name")) or ""),
                action=str(self.payload.get("action") or ""),
                label=str((self.payload.get("label") or {}).get("name") or ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ContextError(f"pull_request payload is missing {exc}") from exc

    def merge_group(self) -> MergeGroup | None:
        group = self.payload.get("merge_group")
        if not isinstance(group, dict):
            return None
        try:
            base_sha = group.get("base_sha")
            return MergeGroup(
                head_sha=str(group["head_sha"]),
                head_ref=str(group.get("head_ref") or ""),
                base_ref=str(group.get("base_ref") or ""),
                base_sha=str(base_sha) if base_sha else None,
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ContextError(f"merge_group payload is missing {exc}") from exc

    def workflow_run(self) -> WorkflowRun | None:
        run = self.payload.get("workflow_run")
        if not isinstance(run, dict):
            return None
        try:
            return WorkflowRun(
                id=int(run["id"]),
                head_sha=str(run["head_sha"]),
                head_branch=str(run.get("head_branch") or ""),
                head_owner=str(
                    ((run.get("head_repository") or {}).get("owner") or {}).get("login") or ""
                ),
                event=str(run.get("event") or ""),
                conclusion=run.get("conclusion"),
                pull_numbers=tuple(int(p["number"]) for p in run.get("pull_requests") or []),
                head_repository=str((run.get("head_repository") or {}).get("full_name") or ""),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ContextError(f"workflow_run payload is missing {exc}") from exc


def _path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name)
    return Path(value) if value else None


def _payload(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(read_bytes_bounded(path, limit=MAX_EVENT_BYTES))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ContextError(f"cannot read the event payload {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ContextError(f"event payload {path} is not a JSON object")
    return data


def read_context(env: Mapping[str, str]) -> GitHubContext:
    missing = [name for name in ("GITHUB_EVENT_NAME", "GITHUB_REPOSITORY") if not env.get(name)]
    if missing:
        raise ContextError(
            f"{', '.join(missing)} not set: `turncheck action` runs inside GitHub Actions "
            "(use `turncheck run` locally)"
        )
    payload = _payload(_path(env, "GITHUB_EVENT_PATH"))
    repository = payload.get("repository") or {}
    return GitHubContext(
        event_name=env["GITHUB_EVENT_NAME"],
        repository=env["GITHUB_REPOSITORY"],
        sha=env.get("GITHUB_SHA", ""),
        workspace=Path(env.get("GITHUB_WORKSPACE") or "."),
        api_url=env.get("GITHUB_API_URL", "https://api.github.com"),
        server_url=env.get("GITHUB_SERVER_URL", "https://github.com"),
        run_id=env.get("GITHUB_RUN_ID", ""),
        ref=env.get("GITHUB_REF", ""),
        default_branch=repository.get("default_branch") if isinstance(repository, dict) else None,
        output_path=_path(env, "GITHUB_OUTPUT"),
        summary_path=_path(env, "GITHUB_STEP_SUMMARY"),
        payload=payload,
        run_attempt=_attempt(env.get("GITHUB_RUN_ATTEMPT", "")),
    )


def _attempt(value: str) -> int:
    return int(value) if value.isdigit() and int(value) >= 1 else 1
