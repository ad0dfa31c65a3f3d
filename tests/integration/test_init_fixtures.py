"""Issue 33, item 8: `init` in a repository with deliberately invalid test fixtures leaves
them out of what the workflows run (so the default-branch job, which fails on invalid
files, is not red on every push), says which and why, and how to include them."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.integration.test_init import VIBECHECK_SUITE
from tests.support.git_repo import GitRepo

TURNCHECK = [sys.executable, "-m", "turncheck"]
GOOD_SUITE = """\
metadata:
  name: good
  model: gpt-4o-mini
evals:
  - name: add
    prompt: What is 2 + 2?
    checks: [{match: "*4*"}]
"""
UNKNOWN_CHECK = GOOD_SUITE.replace("match:", "mach:")
BROKEN_YAML = "metadata: [1\n"
NO_GRADER_MODEL = "[grader]\nprompt = 'x'\n"


def turncheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TURNCHECK, *args], cwd=cwd, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, check=False)


def fixture_repo(root: Path) -> GitRepo:
    repo = GitRepo(root)
    repo.write("evals/good.eval.yaml", GOOD_SUITE)
    repo.write("tests/fixtures/unknown-check.eval.yaml", UNKNOWN_CHECK)
    repo.write("tests/fixtures/broken.eval.yaml", BROKEN_YAML)
    repo.write("tests/fixtures/bad.samples.toml", NO_GRADER_MODEL)
    return repo


def test_init_excludes_the_files_it_cannot_validate_and_says_why(tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path / "repo")
    assert turncheck(repo.path, "validate").returncode == 1  # as the baseline job would see it

    done = turncheck(repo.path, "init")
    assert done.returncode == 0, done.stderr
    left_out = ["tests/fixtures/bad.samples.toml", "tests/fixtures/broken.eval.yaml",
                "tests/fixtures/unknown-check.eval.yaml"]
    config = tomllib.loads((repo.path / "turncheck.toml").read_text(encoding="utf-8"))
    assert sorted(config["exclude-globs"]) == left_out
    for path in left_out:
        assert path in done.stdout
    assert 'unknown key "mach"' in done.stdout and "YAML syntax error" in done.stdout
    assert "would fail the default-branch job" in done.stdout
    assert "delete its line from exclude-globs" in done.stdout  # how to include one
    text = (repo.path / "turncheck.toml").read_text(encoding="utf-8")
    assert '"tests/fixtures/broken.eval.yaml",  # 2:1: YAML syntax error' in text
    assert not (repo.path / "evals" / "starter.eval.yaml").exists()

    # What the workflows run now validates: the baseline job (fail-on: invalid) is green.
    validated = turncheck(repo.path, "validate", "--format", "json")
    assert validated.returncode == 0, validated.stdout
    assert json.loads(validated.stdout)["files"] == 1
    # A second run changes nothing.
    again = turncheck(repo.path, "init")
    assert again.stdout.count("unchanged") == 4, again.stdout


def test_an_invalid_vibecheck_style_suite_is_left_out_too(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write("examples/math.yaml", VIBECHECK_SUITE.format(name="math"))
    repo.write("examples/bad.yaml", VIBECHECK_SUITE.format(name="bad").replace(
        "match:", "matsch:"))
    done = turncheck(repo.path, "init")
    assert done.returncode == 0, done.stderr
    config = tomllib.loads((repo.path / "turncheck.toml").read_text(encoding="utf-8"))
    assert config["exclude-globs"] == ["examples/bad.yaml"]
    validated = turncheck(repo.path, "validate", "--format", "json")
    assert validated.returncode == 0 and json.loads(validated.stdout)["files"] == 1


def test_only_invalid_fixtures_still_get_a_starter_suite(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.write("tests/fixtures/broken.eval.yaml", BROKEN_YAML)
    done = turncheck(repo.path, "init")
    assert done.returncode == 0, done.stderr
    assert (repo.path / "evals" / "starter.eval.yaml").exists()
    validated = turncheck(repo.path, "validate", "--format", "json")
    assert validated.returncode == 0 and json.loads(validated.stdout)["files"] == 1


def test_with_a_kept_configuration_init_says_what_to_add(tmp_path: Path) -> None:
    repo = fixture_repo(tmp_path / "repo")
    repo.write("turncheck.toml", "concurrency = 2\n")
    done = turncheck(repo.path, "init")
    assert "add them to exclude-globs in turncheck.toml" in done.stdout, done.stdout
    assert (repo.path / "turncheck.toml").read_text() == "concurrency = 2\n"


def test_many_fixtures_are_all_excluded_and_the_list_on_screen_is_capped(
    tmp_path: Path,
) -> None:
    repo = GitRepo(tmp_path / "repo")
    for index in range(25):
        repo.write(f"tests/fixtures/bad{index:02}.eval.yaml", BROKEN_YAML)
    done = turncheck(repo.path, "init")
    config = tomllib.loads((repo.path / "turncheck.toml").read_text(encoding="utf-8"))
    assert len(config["exclude-globs"]) == 25
    assert "… and 5 more" in done.stdout and "bad19.eval.yaml" in done.stdout
    assert "bad20.eval.yaml" not in done.stdout
