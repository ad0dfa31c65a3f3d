"""The project configuration file: found, validated with positions, applied by the CLI
and the action, overridden by flags and inputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.action_harness import run_action
from tests.support.git_repo import GitRepo
from tests.support.github_fake import FakeGitHub
from turncheck.config import ConfigError, ProjectConfig, find_config, parse_config

ROOT = Path(__file__).resolve().parents[2]
SUITE = """\
metadata:
  name: {name}
  model: gpt-4o-mini
  provider: openai
evals:
  - prompt: Say hi.
    checks:
      - match: "*hi*"
"""


def turncheck(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "turncheck", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=120, check=False)


def problems_of(text: str, pyproject: bool = False) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "turncheck.toml" if not pyproject else "pyproject.toml", pyproject)
    return [d.compiler_style() for d in caught.value.diagnostics]


def test_unknown_key_is_an_error_at_its_line_with_a_suggestion() -> None:
    problems = problems_of('suite-globs = ["*.yaml"]\n\nconcurrncy = 4\n')
    assert len(problems) == 1
    assert problems[0].startswith(
        'turncheck.toml:3:1: error: unknown key "concurrncy"; did you mean "concurrency"?')


def test_unknown_key_in_pyproject_points_into_the_tool_table() -> None:
    text = '[project]\nname = "x"\n\n[tool.turncheck]\nmax-depth = 2\n  fail_onn = "none"\n'
    problems = problems_of(text, pyproject=True)
    assert problems[0].startswith('pyproject.toml:6:3: error: unknown key "fail_onn"')


def test_bad_values_are_errors_at_their_line() -> None:
    problems = problems_of('concurrency = "eight"\nmax-depth = 9\nfail-on = "invalid,regresion"\n'
                           'exclude-globs = ["a", 3]\n')
    assert [p.split(": error: ")[0] for p in problems] == [
        "turncheck.toml:1:1", "turncheck.toml:2:1", "turncheck.toml:3:1", "turncheck.toml:4:23"]
    assert "regresion" in problems[2]


def test_toml_syntax_error_has_its_position() -> None:
    problems = problems_of('concurrency = 4\nfail-on = "invalid\n')
    assert problems[0].startswith("turncheck.toml:2:"), problems


def test_keys_are_kebab_case_and_defaults_are_turncheck_s() -> None:
    config = parse_config('fail-on = ["invalid", "cost"]\ncost-threshold-usd = 0.5\n', "t")
    assert config.fail_on == "invalid,cost" and config.cost_threshold_usd == 0.5
    assert ProjectConfig().concurrency == 8 and ProjectConfig().max_depth == 5


def test_turncheck_toml_wins_over_pyproject_and_search_stops_at_the_repository(
    tmp_path: Path,
) -> None:
    repo, nested = tmp_path / "repo", tmp_path / "repo" / "a" / "b"
    nested.mkdir(parents=True)
    (repo / ".git").mkdir()
    (tmp_path / "turncheck.toml").write_text("concurrency = 2\n")  # above the repository
    assert find_config(nested) is None
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\n')  # no [tool.turncheck]
    assert find_config(nested) is None
    (repo / "pyproject.toml").write_text("[tool.turncheck]\nconcurrency = 3\n")
    assert find_config(nested) == (repo / "pyproject.toml").resolve()
    (repo / "turncheck.toml").write_text("concurrency = 4\n")
    assert find_config(nested) == (repo / "turncheck.toml").resolve()


@pytest.fixture
def project(tmp_path: Path) -> GitRepo:
    """A repository whose configuration finds `checks/*.yaml` (vibecheck-style names) and
    leaves `checks/drafts` out; the default globs would find only `evals/other.eval.yaml`."""
    repo = GitRepo(tmp_path / "workspace")
    repo.write("checks/greeting.yaml", SUITE.format(name="greeting"))
    repo.write("checks/drafts/wip.yaml", SUITE.format(name="wip"))
    repo.write("evals/other.eval.yaml", SUITE.format(name="other"))
    repo.write("turncheck.toml", '# project settings\nsuite-globs = ["checks/**/*.yaml"]\n'
               'exclude-globs = ["checks/drafts"]\nconcurrency = 2\n')
    repo.commit("initial")
    return repo


def suites_run(report: dict[str, object]) -> list[str]:
    return sorted(str(s["path"]) for s in report["suites"])  # type: ignore[attr-defined]


def test_cli_run_uses_the_configuration_and_a_flag_overrides_it(project: GitRepo) -> None:
    configured = turncheck(project.path, "run", "--json", "report.json", "--quiet")
    assert "Traceback" not in configured.stderr
    report = json.loads((project.path / "report.json").read_text())
    assert suites_run(report) == ["checks/greeting.yaml"]

    flagged = turncheck(project.path, "run", "--json", "flag.json", "--quiet",
                        "--suite-glob", "**/*.eval.yaml")
    assert suites_run(json.loads((project.path / "flag.json").read_text())) == [
        "evals/other.eval.yaml"]
    assert flagged.returncode == 1  # no recording: the eval errors, the suite still ran

    unexcluded = turncheck(project.path, "validate", "--format", "json", "--exclude-glob", "none")
    assert json.loads(unexcluded.stdout)["files"] == 2  # greeting + drafts/wip


def test_cli_reports_a_typo_in_the_configuration_with_its_line(project: GitRepo) -> None:
    project.write("turncheck.toml", 'suite-globs = ["checks/*.yaml"]\nmax-dept = 3\n')
    for command in ("run", "validate", "calibrate"):
        done = turncheck(project.path, command)
        assert done.returncode == 2, (command, done.stderr)
        assert 'turncheck.toml:2:1: error: unknown key "max-dept"; did you mean "max-depth"?' \
            in done.stderr
        assert "Traceback" not in done.stderr


def push_event(repo: GitRepo) -> dict[str, object]:
    return {"ref": "refs/heads/main", "before": repo.head, "after": repo.head,
            "repository": {"full_name": "octo-org/widgets", "default_branch": "main"}}


def test_action_uses_the_configuration_and_an_input_overrides_it(
    tmp_path: Path, project: GitRepo, github_fake: FakeGitHub
) -> None:
    configured = run_action(project, tmp_path / "r1", github_fake.base_url, "push",
                            push_event(project), {"fail-on": "invalid"})
    assert configured.returncode == 0, configured.stdout + configured.stderr
    assert configured.report is not None
    assert suites_run(configured.report["head"]) == ["checks/greeting.yaml"]
    assert "configuration: turncheck.toml" in configured.stdout

    overridden = run_action(project, tmp_path / "r2", github_fake.base_url, "push",
                            push_event(project),
                            {"fail-on": "invalid", "suite-globs": "**/*.eval.yaml"})
    assert overridden.report is not None
    assert suites_run(overridden.report["head"]) == ["evals/other.eval.yaml"]


def test_action_reports_a_typo_in_the_configuration_as_an_annotation(
    tmp_path: Path, project: GitRepo, github_fake: FakeGitHub
) -> None:
    project.write("turncheck.toml", 'suite-globs = ["checks/*.yaml"]\nfail-onn = "none"\n')
    run = run_action(project, tmp_path / "r", github_fake.base_url, "push", push_event(project))
    assert run.returncode == 1
    assert "::error file=turncheck.toml,line=2,col=1,title=turncheck%3A configuration::" \
           'unknown key "fail-onn"' in run.stdout, run.stdout
    assert "Traceback" not in run.stdout + run.stderr


def test_this_repository_keeps_its_invalid_fixtures_out_of_a_run_at_its_root() -> None:
    done = turncheck(ROOT, "validate", "--format", "json")
    result = json.loads(done.stdout)
    assert result["errors"] == 0, result["diagnostics"][:3]
    assert not any("tests/fixtures" in d["file"] for d in result["diagnostics"])
    assert result["files"] >= 5  # the examples are still found


def test_paths_in_the_configuration_are_relative_to_its_directory(project: GitRepo) -> None:
    project.write("turncheck.toml", 'paths = ["evals"]\n')
    (project.path / "checks" / "deeper").mkdir()
    for cwd in (project.path, project.path / "checks" / "deeper"):
        done = turncheck(cwd, "validate", "--format", "json")
        assert json.loads(done.stdout)["files"] == 1, (cwd, done.stdout, done.stderr)
        assert "other.eval.yaml" not in done.stderr


def test_keys_the_file_sets_become_action_input_defaults_by_their_input_name() -> None:
    from turncheck.config import LoadedConfig, as_input_defaults

    config = parse_config('watch = ["prompts/**", "app/*.py"]\nmax-depth = 3\n'
                          'paths = ["evals"]\ncost-threshold-percent = 12.5\n', "t")
    assert as_input_defaults(LoadedConfig(config, Path("turncheck.toml"))) == {
        "watch": "prompts/**\napp/*.py", "max-depth": "3", "cost-threshold-percent": "12.5"}
