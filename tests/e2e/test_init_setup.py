"""Issue 23, defect 1: the setup `turncheck init` writes is safe by construction.

Everything we write (README, docs, example workflows, `init`'s files and advice) names
the check run `turncheck` as the required check and never advises requiring a job
(a fork's pull request runs the fork's copy of the workflow, so its jobs prove nothing);
and with exactly the workflows `init` writes, a fork's pull request gets a verdict:
the fork's run leaves its report, the poster holds `turncheck` for a maintainer, and the
labelled trusted run sets it. Also issue 25: `init` on a feature branch writes the
repository's default branch; issue 21: `@v1` or a pinned commit.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.action_harness import (
    PR,
    REPOSITORY,
    ActionRun,
    pull_request_event,
    run_action,
    run_pull_request,
    suite_text,
    zipped,
)
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from tests.support.pr_fixtures import BASE_EVALS, HEAD_EVALS, feature_branch_repo
from tests.support.scripted_server import ScriptedServer
from tests.support.workflow_lint import lint

ROOT = Path(__file__).resolve().parents[2]
TURNCHECK = [sys.executable, "-m", "turncheck"]
FORK = "someone/widgets"
NEGATION = re.compile(r"\b(not|never|nothing|no)\b|n't", re.IGNORECASE)
REQUIRING = re.compile(
    r"\brequired?\b[^.]*\b(status )?check|\bto require\b|\brequire (the|a|this)\b",
    re.IGNORECASE)


def init(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*TURNCHECK, "init", *args], cwd=repo, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


def new_repo(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True)
    git(path, "-c", f"init.defaultBranch={branch}", "init", "-q")
    git(path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q",
        "--allow-empty", "-m", "first")
    return path


# ---- advice: require the check run, never a job -------------------------------------


def sentences(text: str) -> list[str]:
    """Prose sentences of Markdown or of YAML comments, whitespace collapsed."""
    prose = re.sub(r"^\s*#+ ?", "", text, flags=re.MULTILINE)
    return [" ".join(part.split()) for part in re.split(r"(?<=[.!?])\s+|\n\s*\n", prose)]


def advice_to_require_a_job(text: str) -> list[str]:
    return [s for s in sentences(text)
            if re.search(r"\bjobs?\b", s, re.IGNORECASE) and REQUIRING.search(s)
            and not NEGATION.search(s)]


@pytest.mark.parametrize("sentence", [
    "Make the `evals` job a required status check.",
    "Make the `report` job the required check.",
    "posts the check run, and is the job to require.",
    "After the first pull request, make the `evals` job of the `turncheck` workflow a\n"
    "     required status check (branch protection or a ruleset).",
])
def test_the_detector_finds_advice_to_require_a_job(sentence: str) -> None:
    assert advice_to_require_a_job(sentence)


def test_readme_docs_and_example_workflows_never_advise_requiring_a_job() -> None:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / ".github" / "workflows").glob("*.yml"))]
    found = {p.relative_to(ROOT).as_posix(): advice_to_require_a_job(p.read_text("utf-8"))
             for p in texts}
    assert {path: bad for path, bad in found.items() if bad} == {}
    readme = (ROOT / "README.md").read_text("utf-8")
    assert "require the check run `turncheck`" in " ".join(readme.split()).lower()


def test_init_names_the_check_run_turncheck_and_never_a_job(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    done = init(repo)
    written = {p.relative_to(repo).as_posix(): p.read_text("utf-8")
               for p in (repo / ".github" / "workflows").glob("*.yml")}
    assert sorted(written) == [".github/workflows/turncheck-fork-comment.yml",
                               ".github/workflows/turncheck-trusted.yml",
                               ".github/workflows/turncheck.yml"]
    bad = {name: advice_to_require_a_job(text)
           for name, text in {"stdout": done.stdout, **written}.items()}
    assert {name: found for name, found in bad.items() if found} == {}
    assert "require the check run `turncheck`" in done.stdout
    assert "Require the check run `turncheck`" in written[".github/workflows/turncheck.yml"]


# ---- the action reference: @v1, or a commit before the first release ---------------------


def test_init_uses_v1_and_says_how_to_pin_a_commit_before_a_release(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    done = init(repo)
    workflow = (repo / ".github/workflows/turncheck.yml").read_text()
    assert "uses: turncheck/turncheck@v1" in workflow
    assert "Before turncheck's first tagged release" in done.stdout
    assert "--action-ref" in done.stdout and "builds the image" in done.stdout
    assert "builds the image from its Dockerfile" in workflow  # the comment says which

    sha = "0123456789abcdef0123456789abcdef01234567"
    pinned = init(repo, "--action-ref", sha, "--force")
    for path in (repo / ".github" / "workflows").glob("*.yml"):
        uses = re.findall(r"uses: (turncheck/turncheck@\S+)", path.read_text())
        assert uses and set(uses) == {f"turncheck/turncheck@{sha}"}, path
    assert "a pinned commit, which builds the action's image" in pinned.stdout
    linted = lint(sorted((repo / ".github" / "workflows").glob("*.yml")), repo)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_init_refuses_an_action_ref_that_would_break_the_yaml(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    done = subprocess.run([*TURNCHECK, "init", "--action-ref", "v1\n  evil: x"], cwd=repo,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "--action-ref" in done.stderr
    assert not (repo / ".github").exists()


# ---- issue 25: the default branch, not the branch checked out -------------------------


def pushed_to(repo: Path) -> list[str]:
    workflow = yaml.safe_load((repo / ".github/workflows/turncheck.yml").read_text())
    return list(workflow[True]["push"]["branches"])


def test_init_on_a_feature_branch_of_a_clone_writes_the_default_branch(tmp_path: Path) -> None:
    upstream = new_repo(tmp_path / "upstream", branch="develop")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", upstream.as_uri(), str(clone))
    git(clone, "checkout", "-q", "-b", "feature/add-evals")
    init(clone)
    assert pushed_to(clone) == ["develop"]


def test_init_asks_the_remote_when_origin_head_is_not_known(tmp_path: Path) -> None:
    upstream = new_repo(tmp_path / "upstream", branch="trunk")
    repo = new_repo(tmp_path / "repo", branch="feature")
    git(repo, "remote", "add", "origin", upstream.as_uri())
    git(repo, "fetch", "-q", "origin")  # a fetch sets no origin/HEAD
    init(repo)
    assert pushed_to(repo) == ["trunk"]


def test_init_without_a_remote_prefers_main_over_the_feature_branch(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", branch="main")
    git(repo, "checkout", "-q", "-b", "feature")
    init(repo)
    assert pushed_to(repo) == ["main"]
    init(repo, "--default-branch", "release", "--force")
    assert pushed_to(repo) == ["release"]


# ---- a fork's pull request gets a verdict with exactly what init wrote ------------------


def turncheck_step(workflow: dict[str, Any], job: str) -> dict[str, str]:
    """The `with:` inputs of the job's step that uses turncheck."""
    [step] = [s for s in workflow["jobs"][job]["steps"]
              if str(s.get("uses", "")).startswith("turncheck/turncheck@")]
    return {k: str(v) for k, v in (step.get("with") or {}).items()}


@pytest.fixture
def setup(tmp_path: Path) -> dict[str, Any]:
    """What `turncheck init` writes into a repository with suites."""
    repo = new_repo(tmp_path / "init")
    (repo / "evals").mkdir()
    (repo / "evals" / "math.eval.yaml").write_text(suite_text("http://127.0.0.1:9", BASE_EVALS))
    init(repo)
    workflows = {p.name: yaml.safe_load(p.read_text())
                 for p in (repo / ".github" / "workflows").glob("*.yml")}
    return {"workflows": workflows, "config": (repo / "turncheck.toml").read_text()}


def test_with_inits_workflows_a_fork_pr_gets_a_verdict_it_cannot_forge(
    tmp_path: Path, model: ScriptedServer, github_fake: FakeGitHub, setup: dict[str, Any],
) -> None:
    workflows = setup["workflows"]
    pr_workflow = workflows["turncheck.yml"]
    poster = workflows["turncheck-fork-comment.yml"]
    trusted = workflows["turncheck-trusted.yml"]
    repo, base, head = feature_branch_repo(tmp_path / "workspace",
                                           suite_text(model.base_url, BASE_EVALS),
                                           suite_text(model.base_url, HEAD_EVALS))
    (repo.path / "turncheck.toml").write_text(setup["config"])  # init's, as committed

    # 1. The fork's pull_request run (read-only token) keeps its report as the artifact.
    github_fake.writes_forbidden = True
    fork_run = run_pull_request(repo, tmp_path / "fork-run", github_fake, base, head,
                                turncheck_step(pr_workflow, "evals"), fork=True)
    github_fake.writes_forbidden = False
    assert fork_run.report is not None, fork_run.stdout + fork_run.stderr
    [upload] = [s for s in pr_workflow["jobs"]["evals"]["steps"]
                if str(s.get("uses", "")).startswith("actions/upload-artifact")
                and s["with"]["name"] == "turncheck-report"]
    assert "head.repo.full_name != github.repository" in upload["if"]
    assert upload["with"]["path"] == "turncheck-report.json"
    github_fake.pull_head_repos[PR] = FORK

    # 2. The poster runs on that workflow's completion: a forged all-pass report is
    #    shown unverified, and the required check waits for a maintainer.
    assert poster[True]["workflow_run"]["workflows"] == [pr_workflow["name"]]
    forged = json.loads(json.dumps(fork_run.report))
    for suite in forged["head"]["suites"]:
        for item in suite["evals"]:
            item.update(status="pass", passed_on_turn=1, error=None)
    forged["base"] = forged["head"]
    artifact = tmp_path / "artifact" / upload["with"]["path"]
    artifact.parent.mkdir()
    artifact.write_text(json.dumps(forged))
    github_fake.artifacts[99] = [(upload["with"]["name"], zipped(artifact))]
    event = {"workflow_run": {"id": 99, "head_sha": head, "head_branch": "feature",
                              "event": "pull_request", "conclusion": "success",
                              "pull_requests": [], "head_repository": {"full_name": FORK}},
             "repository": {"full_name": REPOSITORY, "default_branch": "main"}}
    poster_workspace = GitRepo(tmp_path / "poster")
    poster_workspace.write("turncheck.toml", setup["config"])
    poster_workspace.commit("default branch")
    posted = run_action(poster_workspace, tmp_path / "poster-runner", github_fake.base_url,
                        "workflow_run", event, turncheck_step(poster, "post"))
    assert "Traceback" not in posted.stdout + posted.stderr, posted.stdout
    assert [c.conclusion for c in github_fake.check_runs_named("turncheck")] == \
        ["action_required"]

    # 3. A maintainer adds the label init's trusted workflow listens for.
    label = re.search(r"== '([^']+)'", trusted["jobs"]["verdict"]["if"])
    assert label is not None and trusted[True] == {"pull_request_target": {"types": ["labeled"]}}
    checkouts = [s for s in trusted["jobs"]["verdict"]["steps"]
                 if str(s.get("uses", "")).startswith("actions/checkout")]
    pr_path = next(s["with"]["path"] for s in checkouts if "path" in s.get("with", {}))
    inputs = turncheck_step(trusted, "verdict")
    assert inputs["pr-checkout"] == pr_path and inputs["mode"] == "replay"
    workspace = GitRepo(tmp_path / "trusted")
    workspace.write("turncheck.toml", setup["config"])
    workspace.commit("default branch")
    repo.clone(workspace.path / pr_path).checkout(head)
    approved = {**pull_request_event(PR, base, head, fork=True), "action": "labeled",
                "label": {"name": label.group(1)}}
    verdict_run: ActionRun = run_action(workspace, tmp_path / "trusted-runner",
                                        github_fake.base_url, "pull_request_target",
                                        approved, inputs)
    assert "Traceback" not in verdict_run.stdout + verdict_run.stderr, verdict_run.stdout
    verdicts = [c for c in github_fake.check_runs_named("turncheck")
                if c.external_id == "turncheck-verdict"]
    assert [(c.head_sha, c.conclusion) for c in verdicts] == [(head, "success")]
    [comment] = github_fake.comments_on(PR)
    assert "Unverified" not in comment.body
