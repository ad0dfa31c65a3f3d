"""Issue 34, item 4: a fork's app never finds a token.

A fork's pull request adds an app (`tests/support/target_apps/token_hunter.py`) that
reads every environment variable and every file it can reach — the repository with its
`.git/config`, `$HOME`, `$TMPDIR`, `/proc/*/environ` and `cmdline`, its ancestors'
memory — looking for the job's planted credentials. On every way docs/action.md runs the
action it finds none; where the job itself leaves a token readable (persisted checkout
credentials, a shell holding the token) turncheck does not start the app, and the
trusted run never starts it.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.action_harness import (
    PR,
    ActionRun,
    pull_request_event,
    run_action,
    run_pull_request,
)
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.target_helpers import APPS
from turncheck.targets.process import hide_own_environment

HUNTER = APPS / "token_hunter.py"
CREDENTIALS = ("INPUT_GITHUB-TOKEN", "GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
               "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")
EXEC_IN_SHELL = ("/bin/bash", "-e", "-c", 'exec "$0" "$@"')
"""The recommended `run: exec turncheck action` step: the shell becomes turncheck."""
STAY_IN_SHELL = ("/bin/bash", "-e", "-c", '"$0" "$@"; exit $?')
"""`run: turncheck action`: the shell stays, holding the token in its environment."""


@pytest.fixture(autouse=True)
def runner_out_of_reach() -> None:
    """pytest plays the Actions runner and holds the planted credentials in its memory. The
    real runner is out of a job's reach (outside the container's PID namespace; on the
    runner, Yama's ptrace_scope keeps a child from reading a non-descendant's memory):
    this process is closed the same way, here by making it non-dumpable."""
    hide_own_environment()


def planted() -> dict[str, str]:
    return {name: f"tok_PLANTED-SECRET-{secrets.token_hex(16)}" for name in CREDENTIALS}


def digests(credentials: dict[str, str]) -> str:
    return ",".join(hashlib.sha256(v[-32:].encode()).hexdigest() for v in credentials.values())


def hunt_suite(target: str, report: Path, credentials: dict[str, str]) -> str:
    return f"""\
metadata:
  name: hunt
  target:
{target}
    env: {{HUNT_DIGESTS: "{digests(credentials)}", HUNT_REPORT: "{report}"}}
evals:
  - name: finds-nothing
    prompt: Look around.
    checks:
      - match: "clean"
"""


HTTP_TARGET = f"""\
    start: {sys.executable} token_hunter.py serve {{port}}
    ready: /health
    http: {{path: /chat, body: {{message: "{{{{ last_message }}}}"}}, reply: reply}}"""
PYTHON_TARGET = "    python: token_hunter:answer"


def fork_repo(root: Path, suite: str) -> tuple[GitRepo, str, str]:
    repo = GitRepo(root)
    repo.write("README.md", "widgets")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    repo.write("bot/token_hunter.py", HUNTER.read_text())
    repo.write("bot/hunt.eval.yaml", suite)
    return repo, base, repo.commit("a fork adds an app")


def run_fork_pr(tmp_path: Path, github: FakeGitHub, target: str = HTTP_TARGET,
                wrapper: tuple[str, ...] = (), persisted: bool = False
                ) -> tuple[ActionRun, dict[str, Any] | None]:
    credentials = planted()
    report = tmp_path / "findings.json"
    repo, base, head = fork_repo(tmp_path / "workspace", hunt_suite(target, report,
                                                                     credentials))
    if persisted:  # what actions/checkout leaves without `persist-credentials: false`
        repo.git("config", "http.https://github.com/.extraheader",
                 f"AUTHORIZATION: basic {credentials['GITHUB_TOKEN']}")
    (tmp_path / "tmp").mkdir()
    github.writes_forbidden = True  # a fork's pull_request run: a read-only token
    env = {**credentials, "TMPDIR": str(tmp_path / "tmp")}
    run = run_pull_request(repo, tmp_path / "runner", github, base, head,
                           {"github-token": credentials["INPUT_GITHUB-TOKEN"]}, fork=True,
                           extra_env=env, wrapper=wrapper)
    findings = json.loads(report.read_text()) if report.exists() else None
    return run, findings


def eval_result(run: ActionRun) -> dict[str, Any]:
    assert run.report is not None, run.stdout + run.stderr
    [suite] = run.report["head"]["suites"]
    [result] = suite["evals"]
    return dict(result)


@pytest.mark.parametrize(("target", "wrapper"), [
    (HTTP_TARGET, ()),               # the container: turncheck is the entrypoint
    (HTTP_TARGET, EXEC_IN_SHELL),    # on the runner: `run: exec turncheck action`
    (PYTHON_TARGET, ()),             # a python target runs in its own process
], ids=["http-container", "http-runner-step", "python-target"])
def test_a_fork_s_app_reads_everything_it_can_and_finds_no_token(
        tmp_path: Path, github_fake: FakeGitHub, target: str,
        wrapper: tuple[str, ...]) -> None:
    run, findings = run_fork_pr(tmp_path, github_fake, target, wrapper)
    assert "Traceback" not in run.stderr, run.stderr
    assert findings is not None, run.stdout + run.stderr
    assert findings["found"] == [], (findings["found"], findings["ancestors"])
    # It did look: the checkout's git config, the environments of its ancestors.
    assert any(path.endswith(".git/config") for path in findings["read"])
    assert findings["ancestors"]
    assert eval_result(run)["status"] == "pass", run.stdout


def test_without_the_protection_the_hunter_finds_the_token(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    """The hunter is not blind: a shell left holding the token is found when turncheck
    does not refuse (here asked directly, as the app would do it)."""
    credentials = planted()
    env = {**credentials, "HUNT_DIGESTS": digests(credentials),
           "HUNT_REPORT": str(tmp_path / "findings.json"), "PATH": "/usr/bin:/bin"}
    import subprocess

    subprocess.run(["/bin/bash", "-c", f'{sys.executable} -c "import sys; '
                    f"sys.path.insert(0, '{APPS}'); import token_hunter; token_hunter.hunt()\"; "
                    "exit $?"], env=env, check=True, cwd=tmp_path, timeout=120)
    findings = json.loads((tmp_path / "findings.json").read_text())
    assert any(path.endswith("/environ") for path in findings["found"])


def test_persisted_checkout_credentials_keep_the_app_from_starting(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    run, findings = run_fork_pr(tmp_path, github_fake, persisted=True)
    assert findings is None  # the app never ran
    result = eval_result(run)
    assert result["status"] == "error"
    assert "persist-credentials: false" in json.dumps(result)
    assert "Traceback" not in run.stderr


def test_a_shell_holding_the_token_keeps_the_app_from_starting(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    run, findings = run_fork_pr(tmp_path, github_fake, wrapper=STAY_IN_SHELL)
    assert findings is None
    result = eval_result(run)
    assert result["status"] == "error"
    assert "exec turncheck action" in json.dumps(result)


def test_the_trusted_run_never_starts_a_fork_s_app(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    credentials = planted()
    report = tmp_path / "findings.json"
    repo, base, head = fork_repo(tmp_path / "fork", hunt_suite(HTTP_TARGET, report,
                                                                credentials))
    workspace = GitRepo(tmp_path / "trusted")
    workspace.write("README.md", "default branch")
    workspace.commit("default branch")
    repo.clone(workspace.path / "pr").checkout(head)
    github_fake.pull_head_shas[PR] = head
    github_fake.pull_head_repos[PR] = "someone/widgets"
    event = {**pull_request_event(PR, base, head, fork=True), "action": "labeled",
             "label": {"name": "turncheck:trusted"}}
    run = run_action(workspace, tmp_path / "runner", github_fake.base_url,
                     "pull_request_target", event,
                     {"pr-checkout": "pr", "github-token": credentials["GITHUB_TOKEN"]},
                     extra_env=credentials)
    assert report.exists() is False, run.stdout + run.stderr
    result = eval_result(run)
    assert result["status"] == "error"
    assert "never runs a fork's code" in json.dumps(result)
    [comment] = github_fake.comments_on(PR)
    assert "trusted run" in comment.body


def test_the_step_init_writes_runs_the_app_and_keeps_the_token_from_it(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    """`init --target http`'s step, run by bash as the runner runs a `run:` step, with the
    token in the step's environment: the app runs and finds nothing."""
    import subprocess

    import yaml

    project = tmp_path / "project"
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run([sys.executable, "-m", "turncheck", "init", "--target", "http"],
                   cwd=project, check=True, capture_output=True, timeout=120)
    workflow = yaml.safe_load((project / ".github/workflows/turncheck.yml").read_text())
    [step] = [s for s in workflow["jobs"]["evals"]["steps"] if s.get("name") == "turncheck"]
    assert set(step["env"]) == {"GITHUB_TOKEN"}
    # The runner writes the step's script to a file and runs `bash -e {0}`.
    script = tmp_path / "step.sh"
    script.write_text(step["run"] + "\n")
    run, findings = run_fork_pr(tmp_path, github_fake, wrapper=("/bin/bash", "-e",
                                                                str(script)))
    assert findings is not None, run.stdout + run.stderr
    assert findings["found"] == [], findings["found"]
    assert eval_result(run)["status"] == "pass", run.stdout


def test_the_action_replays_the_python_example_in_its_own_process(
        tmp_path: Path, github_fake: FakeGitHub) -> None:
    """In the action a python target runs in a child process: the example FAQ bot's own
    model calls still go through the recording proxy and replay from its cassette."""
    pytest.importorskip("openai")
    import shutil

    examples = Path(__file__).resolve().parents[2] / "examples" / "python-target"
    repo = GitRepo(tmp_path / "workspace")
    repo.write("README.md", "faq")
    base = repo.commit("base")
    repo.branch("feature", checkout=True)
    shutil.copytree(examples, repo.path / "examples" / "python-target",
                    ignore=shutil.ignore_patterns("__pycache__"))
    head = repo.commit("the FAQ bot")
    run = run_pull_request(repo, tmp_path / "runner", github_fake, base, head,
                           {"fail-on": "invalid,error,failure"})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.report is not None
    [suite] = run.report["head"]["suites"]
    assert {e["status"] for e in suite["evals"]} == {"pass"}
