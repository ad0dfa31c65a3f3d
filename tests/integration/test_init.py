"""`turncheck init` in a fresh repository: lint-clean workflows, a valid starter suite and
configuration, nothing changed by a second run, and vibecheck-style suites found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.workflow_lint import lint

TURNCHECK = [sys.executable, "-m", "turncheck"]
VIBECHECK_SUITE = """\
metadata:
  name: {name}
  model: openai/gpt-4o-mini
evals:
  - prompt: What is 2 + 2?
    checks:
      - match: "*4*"
"""


def turncheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TURNCHECK, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, check=False)


def git_repo(path: Path, branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "-c", f"init.defaultBranch={branch}", "init", "-q", str(path)],
                   check=True)
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def test_init_in_an_empty_repository_writes_valid_lint_clean_files(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", branch="trunk")
    done = turncheck(repo, "init")
    assert done.returncode == 0, done.stderr
    files = snapshot(repo)
    assert sorted(files) == [".github/workflows/turncheck-fork-comment.yml",
                             ".github/workflows/turncheck-trusted.yml",
                             ".github/workflows/turncheck.yml", "evals/starter.eval.yaml",
                             "turncheck.toml"]
    assert "turncheck record evals/   with OPENAI_API_KEY set" in done.stdout
    assert "require the check run `turncheck`" in done.stdout

    workflow = yaml.safe_load(files[".github/workflows/turncheck.yml"])
    triggers = workflow[True]  # PyYAML reads the key `on` as True
    assert set(triggers) == {"pull_request", "merge_group", "push"}
    assert triggers["push"] == {"branches": ["trunk"]}  # the repository's own branch
    fork = yaml.safe_load(files[".github/workflows/turncheck-fork-comment.yml"])
    assert fork[True]["workflow_run"]["workflows"] == [workflow["name"]]
    trusted = yaml.safe_load(files[".github/workflows/turncheck-trusted.yml"])
    assert trusted[True] == {"pull_request_target": {"types": ["labeled"]}}
    # No job is called `turncheck`: only turncheck's own check run carries that name.
    for text in map(bytes.decode, files.values()):
        if text.startswith("#") and "jobs:" in text:
            assert "turncheck" not in yaml.safe_load(text)["jobs"]

    validated = turncheck(repo, "validate", "--format", "json")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert json.loads(validated.stdout)["files"] == 1  # the starter suite, via turncheck.toml

    linted = lint(sorted((repo / ".github" / "workflows").glob("*.yml")), repo)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_a_second_init_changes_nothing_and_never_overwrites_without_force(
    tmp_path: Path,
) -> None:
    repo = git_repo(tmp_path / "repo")
    assert turncheck(repo, "init").returncode == 0
    first = snapshot(repo)
    again = turncheck(repo, "init")
    assert again.returncode == 0 and snapshot(repo) == first
    assert again.stdout.count("unchanged") == 5, again.stdout

    (repo / "turncheck.toml").write_text("concurrency = 2\n")
    kept = turncheck(repo, "init")
    assert (repo / "turncheck.toml").read_text() == "concurrency = 2\n"
    assert "kept      turncheck.toml" in kept.stdout and "--force" in kept.stdout
    forced = turncheck(repo, "init", "--force")
    assert "replaced  turncheck.toml" in forced.stdout
    assert snapshot(repo) == first


def test_init_finds_vibecheck_style_suites_and_sets_the_globs(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "examples").mkdir()
    (repo / "examples" / "math.yaml").write_text(VIBECHECK_SUITE.format(name="math"))
    (repo / "examples" / "geo.yaml").write_text(VIBECHECK_SUITE.format(name="geo"))
    (repo / "mixed").mkdir()
    (repo / "mixed" / "tone.yml").write_text(VIBECHECK_SUITE.format(name="tone"))
    (repo / "mixed" / "settings.yaml").write_text("retries: 3\n")  # not a suite
    before = turncheck(repo, "validate")
    assert "nothing to do" in before.stderr  # the default globs miss them all
    assert "3 vibecheck-style suites such as examples/geo.yaml are not matched: run " \
        "`turncheck init`" in before.stderr

    done = turncheck(repo, "init")
    assert "Found 3 vibecheck-style suites" in done.stdout
    assert not (repo / "evals").exists()  # no starter suite beside real ones
    config = (repo / "turncheck.toml").read_text()
    assert '"examples/*.yaml"' in config and '"mixed/tone.yml"' in config
    validated = turncheck(repo, "validate", "--format", "json")
    assert json.loads(validated.stdout)["files"] == 3, validated.stdout
    assert validated.returncode == 0


def test_init_leaves_a_pyproject_configuration_alone(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo")
    (repo / "pyproject.toml").write_text("[tool.turncheck]\nconcurrency = 2\n")
    assert turncheck(repo, "init").returncode == 0
    assert not (repo / "turncheck.toml").exists()


@pytest.mark.parametrize("target", ["missing", "file.txt"])
def test_init_refuses_a_target_that_is_not_a_directory(tmp_path: Path, target: str) -> None:
    (tmp_path / "file.txt").write_text("x")
    done = turncheck(tmp_path, "init", target)
    assert done.returncode == 2 and "not a directory" in done.stderr
