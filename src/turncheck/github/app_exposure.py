"""Whether the action may start the pull request's app, and why not (docs/trust-model.md,
"App targets").

Running an app target runs the pull request's code. The trusted run (a write token, maybe
secrets) never does. A pull-request run does, as any CI would, but only when nothing of
the job's own credentials is within the app's reach: the app's environment is an
allow-list (`targets/process.py`), turncheck's process is closed to it, and this module
refuses the two places the job itself leaves a token readable: the git credentials
actions/checkout persists, and a parent process (the step's shell) holding the token in
its environment.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from turncheck import git
from turncheck.git.command import run as run_git
from turncheck.github.context import GitHubContext
from turncheck.github.trust import TRUSTED_RUN_EVENT
from turncheck.providers.factory import API_KEY_ENV_VARS

TOKEN_ENV_VARS = ("GITHUB_TOKEN", "GH_TOKEN", "INPUT_GITHUB-TOKEN", "ACTIONS_RUNTIME_TOKEN",
                  "ACTIONS_ID_TOKEN_REQUEST_TOKEN")
MIN_SECRET_CHARS = 8
MAX_ANCESTORS = 32
EXTRAHEADER_PATTERN = r"^http\..*\.extraheader$"

TRUSTED_RUN_REFUSAL = (
    "not run in the trusted run: this suite's target starts the pull request's own app, and "
    "the trusted run holds a write token (and maybe secrets), so it never runs a fork's "
    "code. The fork's own pull_request run (read-only token, no secrets) ran it: its "
    "figures are in the unverified report. To give it a verdict, review the app's code and "
    "that report, then push the pull request's commits to a branch of this repository and "
    "open a pull request from it (that run is trusted), or merge with an administrator's "
    "override (docs/trust-model.md, 'App targets')")
PERSISTED_CREDENTIALS = (
    "the app was not started: the checkout keeps a GitHub token on disk for git "
    "({key} in its git config, written by actions/checkout), where the pull request's app "
    "could read it. Set `persist-credentials: false` on actions/checkout "
    "(docs/action.md, 'App targets')")
EXPOSING_PARENT = (
    "the app was not started: a parent process of turncheck ({command}, pid {pid}) holds a "
    "token or key in its environment, where the pull request's app could read it. Start "
    "turncheck with `exec turncheck action` in the step's `run:` so the shell does not "
    "stay behind holding it (docs/action.md, 'App targets')")


def apps_refusal(context: GitHubContext, roots: Iterable[Path],
                 env: Mapping[str, str], token: str) -> str | None:
    """Why this job may not start the pull request's app, or None."""
    if context.event_name == TRUSTED_RUN_EVENT:
        return TRUSTED_RUN_REFUSAL
    for root in roots:
        key = persisted_credentials(root)
        if key is not None:
            return PERSISTED_CREDENTIALS.format(key=key)
    exposing = exposing_ancestors(job_secrets(env, token))
    if exposing:
        pid, command = exposing[0]
        return EXPOSING_PARENT.format(command=command, pid=pid)
    return None


def job_secrets(env: Mapping[str, str], token: str) -> list[bytes]:
    """The values an app must never see: the GitHub token, the runner's tokens, the
    provider keys."""
    values = [token, *(env.get(name, "") for name in (*TOKEN_ENV_VARS, *API_KEY_ENV_VARS))]
    return sorted({v.encode() for v in values if len(v) >= MIN_SECRET_CHARS})


def persisted_credentials(root: Path) -> str | None:
    """The git config key holding a credential header in `root`'s checkout, or None."""
    try:
        found = run_git(root, ["config", "--includes", "--get-regexp", EXTRAHEADER_PATTERN],
                        ok_codes=(0, 1))
    except git.GitError:
        return None
    lines = found.stdout.decode("utf-8", "replace").splitlines()
    return lines[0].split(" ", 1)[0] if lines else None


def exposing_ancestors(secrets: list[bytes]) -> list[tuple[int, str]]:
    """turncheck's ancestors (pid, command) whose environment holds one of `secrets` and
    is readable to a process of this user."""
    exposing: list[tuple[int, str]] = []
    pid = _parent_of("self")
    for _ in range(MAX_ANCESTORS):
        if pid is None or pid <= 1:
            break
        environ = _read(Path(f"/proc/{pid}/environ"))
        if environ is not None and secrets and any(s in environ for s in secrets):
            exposing.append((pid, _command(pid)))
        pid = _parent_of(str(pid))
    return exposing


def _parent_of(pid: str) -> int | None:
    status = _read(Path(f"/proc/{pid}/status"))
    for line in (status or b"").splitlines():
        if line.startswith(b"PPid:"):
            return int(line.split()[1])
    return None


def _command(pid: int) -> str:
    raw = _read(Path(f"/proc/{pid}/comm")) or b"?"
    return raw.decode("utf-8", "replace").strip()[:40]


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None
